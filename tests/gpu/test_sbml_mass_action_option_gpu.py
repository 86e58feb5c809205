"""GPU twin of tests/unit/test_sbml_mass_action_option.py: laws read with ``mass_action="stochastic"``
(a general law with falling factorials at Omega = 1, a mass-action reaction with a derived rate at
Omega = 5, split reversible channels) give the CPU's realizations bit for bit."""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from distsim.models.formats.sbml import read_sbml_string
from distsim.ssa import simulate

pytestmark = pytest.mark.gpu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_sbml_semantics import model, par, rx, sp  # noqa: E402
from test_sbml_mass_action_option import DIMER  # noqa: E402

SPLIT = model(sp("A", 40) + sp("B", 4), par("kf", 0.7) + par("kr", 0.2),
              rx("R", {"A": 2}, {"B": 2}, "kf * A^2 - kr * B^2", reversible=True))
CASES = {"general_law": (DIMER, None), "derived_rate": (DIMER, 5.0), "split": (SPLIT, None)}


@pytest.mark.parametrize("method", ["direct", "tree"])
@pytest.mark.parametrize("case", CASES)
def test_stochastic_mass_action_gpu_equal_cpu(case, method):
    text, omega = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = read_sbml_string(text, mass_action="stochastic", system_size=omega)
    assert dict(net.metadata)["mass_action_stochastic"] != "none"
    kw = dict(t_end=2.0, points=11, realizations=2000, seed=5, method=method, keep_final=True)
    a = simulate(net, backend="cpu", **kw)
    b = simulate(net, backend="gpu", **kw)
    assert b.attrs["backend"] == "gpu"
    for v in ["final_state", "events", "firings", "mean", "variance", "histogram", "quantile_value"]:
        assert np.array_equal(a[v].values, b[v].values, equal_nan=True), v
