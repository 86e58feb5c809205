"""The SSA's hybrid loop on the GPU (kernels/ssa_hybrid.cu, twin of distsim.ssa.cpu.run_realization_hybrid):
the CPU's realizations bit for bit (time-dependent laws with sin and piecewise, rate rules, events on top)
and the same errors, delayed events included. The exact references (Poisson moments, crossing times) are in
tests/unit/test_ssa_time_dependent.py and tests/unit/test_ssa_hybrid.py."""

import sys
from pathlib import Path

import numpy as np
import pytest

from distsim.models.arith import BinOp, Num, Time
from distsim.models.events import Assignment, Compare, Event
from distsim.models.reactions import Reaction, ReactionNetwork
from distsim.ssa import simulate
from distsim.ssa.errors import SimulationError

pytestmark = pytest.mark.gpu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_ssa_hybrid import decay  # noqa: E402
from test_ssa_time_dependent import sine_birth, switched  # noqa: E402


def timed_event() -> ReactionNetwork:
    reset = Event("reset", Compare(">=", Time(), Num(2.0)), (Assignment("A", 0, Num(0.0)),))
    return ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), law=BinOp("*", Num(1.3), Time()))],
                                  events=[reset])


def refilled() -> ReactionNetwork:
    from distsim.models.arith import Param
    return decay(events=[Event("refill", Compare(">=", Time(), Num(1.0)), (Assignment("X", -1, Param("x0")),))])


def delayed_refill() -> ReactionNetwork:
    """test_ssa_hybrid's refill triggered at 0.5 and executed 0.5 later (the events kernel's queue)."""
    from distsim.models.arith import Param
    return decay(events=[Event("refill", Compare(">=", Time(), Num(0.5)), (Assignment("X", -1, Param("x0")),),
                               delay=Num(0.5))])


def decay_with_loss() -> ReactionNetwork:
    """The decaying input plus a mass-action loss A -> 0 (static and moving propensities together)."""
    net = decay()
    return ReactionNetwork.create(["A"], [0], [*net.reactions, Reaction(((0, 1),), (), rate="c")], net.params,
                                  rate_rules=net.rate_rules)


CASES = {"sine_birth": sine_birth, "decay": decay, "timed_event": timed_event, "refilled": refilled,
         "decay_with_loss": decay_with_loss, "piecewise_time": switched, "delayed_refill": delayed_refill}


@pytest.mark.parametrize("method", ["direct", "warp"])
@pytest.mark.parametrize("case", CASES)
def test_hybrid_gpu_equals_cpu(case, method):
    net = CASES[case]()
    kw = dict(t_end=5.0, points=21, realizations=3000, seed=17, method=method, keep_trajectories=True,
              keep_final=True)
    a = simulate(net, backend="cpu", **kw)
    b = simulate(net, backend="gpu", **kw)
    assert b.attrs["backend"] == "gpu"
    for v in ("trajectory", "final_state", "events", "firings", "mean", "variance", "histogram", "quantile_value"):
        assert np.array_equal(a[v].values, b[v].values), v


def test_hybrid_errors_gpu_equal_cpu():
    net = ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), law=BinOp("-", Num(0.2), Time()),
                                                       name="fading")])
    msgs = []
    for backend in ("cpu", "gpu"):
        with pytest.raises(SimulationError) as e:
            simulate(net, t_end=3.0, points=4, realizations=200, seed=1, backend=backend, quantiles=None)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "fading" in msgs[0]
