"""GPU twins of tests/unit/test_hybrid_species.py: assignment rules reading ``time`` or a rate-rule variable
(inlined into the hybrid programs) give the CPU's realizations bit for bit on kernels/ssa_hybrid.cu; networks
that report rate-rule variables (SBML species with a rate rule, ODE models) are refused on GPUs, clearly."""

import sys
from pathlib import Path

import numpy as np
import pytest

from distsim.errors import ModelError
from distsim.models.formats.sbml import read_sbml_string
from distsim.ssa import simulate

pytestmark = pytest.mark.gpu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_hybrid_species import birth, input_species, rule_on_rate_rule  # noqa: E402

CASES = {"rule_reads_time": birth, "rule_reads_rate_rule": lambda: read_sbml_string(rule_on_rate_rule())}


@pytest.mark.parametrize("method", ["direct", "warp"])
@pytest.mark.parametrize("case", CASES)
def test_moving_rules_gpu_equal_cpu(case, method):
    net = CASES[case]()
    kw = dict(t_end=4.0, points=21, realizations=3000, seed=17, method=method, keep_trajectories=True,
              keep_final=True)
    a = simulate(net, backend="cpu", **kw)
    b = simulate(net, backend="gpu", **kw)
    assert b.attrs["backend"] == "gpu"
    for v in ("trajectory", "final_state", "events", "firings", "mean", "variance", "histogram", "quantile_value"):
        assert np.array_equal(a[v].values, b[v].values), v


def test_gpu_refuses_reported_rate_rule_variables():
    net = read_sbml_string(input_species())
    with pytest.raises(ModelError, match="GPU backend cannot report rate-rule variables"):
        simulate(net, t_end=3.0, points=4, realizations=10, seed=1, backend="gpu", quantiles=None)
