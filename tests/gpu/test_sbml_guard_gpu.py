"""GPU twin of tests/unit/test_sbml_guard.py: laws read with ``guard=True`` (a constant flux guarded by its
reactant; a sign-changing net rate split into max(0, v) and a guarded max(0, -v)) give the CPU's
realizations bit for bit (min/max in the law programs: no kernel changes)."""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from distsim.models.formats.sbml import read_sbml_string
from distsim.ssa import simulate

pytestmark = pytest.mark.gpu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_sbml_guard import LEAK, NET  # noqa: E402

CASES = {"guarded": LEAK, "split": NET}


@pytest.mark.parametrize("method", ["direct", "tree", "ar"])  # (warp: not bit-identical by design)
@pytest.mark.parametrize("case", CASES)
def test_guard_gpu_equal_cpu(case, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = read_sbml_string(CASES[case], guard=True)
    assert dict(net.metadata)["guard"] != "split: none; guarded: none"
    kw = dict(t_end=3.0, points=11, realizations=2000, seed=5, method=method, keep_final=True)
    a = simulate(net, backend="cpu", **kw)
    b = simulate(net, backend="gpu", **kw)
    assert b.attrs["backend"] == "gpu"
    for v in ["final_state", "events", "firings", "mean", "variance", "histogram", "quantile_value"]:
        assert np.array_equal(a[v].values, b[v].values, equal_nan=True), v
