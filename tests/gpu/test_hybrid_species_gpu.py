"""GPU twins of tests/unit/test_hybrid_species.py: an SBML species with a rate rule (its values on the grid
too) and assignment rules reading ``time`` or a rate-rule variable (inlined into the hybrid programs) give
the CPU's realizations bit for bit on kernels/ssa_hybrid.cu; ODE models (no species, no reactions) are
refused on GPUs, clearly."""

import sys
from pathlib import Path

import numpy as np
import pytest

from distsim.errors import ModelError
from distsim.models.formats.sbml import read_sbml_string
from distsim.ssa import simulate

pytestmark = pytest.mark.gpu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_hybrid_species import birth, input_species, ode_model, rule_on_rate_rule  # noqa: E402

CASES = {"rule_reads_time": birth, "rule_reads_rate_rule": lambda: read_sbml_string(rule_on_rate_rule()),
         "species_rate_rule": lambda: read_sbml_string(input_species())}


@pytest.mark.parametrize("method", ["direct", "warp"])
@pytest.mark.parametrize("case", CASES)
def test_moving_rules_gpu_equal_cpu(case, method):
    net = CASES[case]()
    kw = dict(t_end=4.0, points=21, realizations=3000, seed=17, method=method, keep_trajectories=True,
              keep_final=True)
    a = simulate(net, backend="cpu", **kw)
    b = simulate(net, backend="gpu", **kw)
    assert b.attrs["backend"] == "gpu"
    names = ["trajectory", "final_state", "events", "firings", "mean", "variance", "histogram", "quantile_value"]
    if "continuous" in a.coords:
        names += ["continuous_trajectory", "continuous_mean", "continuous_variance"]
    for v in names:
        assert np.array_equal(a[v].values, b[v].values, equal_nan=True), v


def test_gpu_refuses_ode_models():
    net = read_sbml_string(ode_model())
    with pytest.raises(ModelError, match="GPU backend does not run models without species or reactions"):
        simulate(net, t_end=3.0, points=4, realizations=10, seed=1, backend="gpu", quantiles=None)
