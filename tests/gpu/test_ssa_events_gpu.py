"""SBML events and assignment rules on the GPU (kernels/ssa_events.cu): the CPU's realizations bit for
bit, for every method ('warp' runs the tree's selection here, as on CPUs), delayed events included
(CASES' 'delay*' entries), and the same errors.
The DSMTS event and rule cases against their analytic moments are in tests/unit/test_ssa.py."""

import sys
from pathlib import Path

import numpy as np
import pytest

from distsim.ssa import simulate
from distsim.ssa.errors import SimulationError
from distsim.ssa.methods import METHODS

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "unit"))
from test_ssa_events import STILL, event, rule, with_events  # noqa: E402
from test_ssa_events_host import CASES, delay_errors  # noqa: E402

from distsim.ssa import load  # noqa: E402


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("case", CASES)
def test_events_gpu_equals_cpu(case, method):
    net = CASES[case]()
    kw = dict(t_end=40.0, points=41, realizations=3000, seed=17, method=method, keep_trajectories=True,
              keep_final=True)
    a = simulate(net, backend="cpu", **kw)
    b = simulate(net, backend="gpu", **kw)
    assert b.attrs["backend"] == "gpu"
    for v in ("trajectory", "final_state", "events", "firings", "mean", "variance", "histogram", "quantile_value"):
        assert np.array_equal(a[v].values, b[v].values), v


@pytest.mark.parametrize("method", ["direct", "warp"])
def test_event_errors_gpu_equal_cpu(method):
    plain = load(STILL, format="text")
    bad_value = with_events(plain, [event(plain, "halve", "time >= 1.5", {"X": "X / 2"})])
    loop = with_events(plain, [event(plain, "up", "X < 5 and time >= 1", {"X": "9"}),
                               event(plain, "down", "X > 5", {"X": "1"})])
    for net in (bad_value, loop):
        messages = []
        for backend in ("cpu", "gpu"):
            with pytest.raises(SimulationError) as info:
                simulate(net, t_end=2, points=3, realizations=300, seed=1, method=method, backend=backend,
                         quantiles=None)
            messages.append(str(info.value))
        assert messages[0] == messages[1]


@pytest.mark.parametrize("method", ["direct", "tree"])
@pytest.mark.parametrize("case", ["negative", "nan", "queue"])
def test_delay_errors_gpu_equal_cpu(case, method):
    """A negative or NaN delay, more than MAX_DELAYED scheduled executions: the same first failed
    realization and message."""
    net = delay_errors()[case]
    messages = []
    for backend in ("cpu", "gpu"):
        with pytest.raises(SimulationError) as info:
            simulate(net, t_end=20, points=21, realizations=300, seed=1, method=method, backend=backend,
                     quantiles=None)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("method", ["direct", "warp"])
def test_round_off_assignments_gpu_equal_cpu(method):
    """A rule whose value is a whole number up to round-off (806.9999999999999) gives that number on
    both backends, bit for bit."""
    plain = load(STILL, format="text")
    net = with_events(plain, rules=[rule(plain, "W", "X * (0.1 + 0.2) / 0.3 * 269 - 0.0000000000001")])
    kw = dict(t_end=2, points=3, realizations=300, seed=1, method=method, keep_trajectories=True, quantiles=None)
    a, b = (simulate(net, backend=be, **kw)["trajectory"].values for be in ("cpu", "gpu"))
    assert np.array_equal(a, b) and (a[:, :, 1] == 807).all()  # species Z, W, X, Y


def test_many_realizations_in_several_launches(monkeypatch):
    """Chunks of realizations (several launches) give the realizations of one launch."""
    from distsim.ssa import gpu

    net = CASES["00033-state-event"]()
    kw = dict(t_end=50.0, points=51, realizations=20_000, seed=23, method="tree", quantiles=None, keep_final=True,
              backend="gpu")
    one = simulate(net, **kw)
    monkeypatch.setattr(gpu, "REC_BYTES_PER_LAUNCH", 51 * 2 * 4 * 3000)  # ~3000 realizations per launch
    many = simulate(net, **kw)
    for v in ("final_state", "events", "mean", "variance"):
        assert np.array_equal(one[v].values, many[v].values), v
