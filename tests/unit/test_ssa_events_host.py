"""CPU == GPU for SBML events and rules without a GPU: ``kernels/ssa_events.cu`` compiled for the host
by g++ (``cuda_host.h``: CUDA's keywords and intrinsics, IEEE doubles, no contraction) and launched
by the unchanged ``distsim.ssa.gpu_events`` code with NumPy standing in for CuPy
(``cuda_on_host.py``) gives the Numba loop's realizations bit for bit, for every method (its raw
outputs: grid states, firings per reaction, events and error words per realization), delayed events
included (their queue of scheduled executions), and so does ``kernels/ssa_hybrid.cu`` for a hybrid
network with a delayed event. It checks the CUDA twin's logic and the launch code's argument order;
the device itself is checked by tests/gpu/test_ssa_events_gpu.py. Skipped where g++ is not installed."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from distsim.models.arith import Num
from distsim.models.compile_reactions import compile_network
from distsim.models.events import Assignment, Compare, Logic
from distsim.ssa import cpu, gpu, gpu_events, load
from distsim.ssa.block import SSABlock
from distsim.ssa.errors import ERR_EVENT_DELAY, ERR_EVENT_QUEUE, ERR_MASK, ERR_MAX_EVENTS, ERR_NONE, ERR_PROPENSITY
from distsim.ssa.methods import METHODS

from cuda_on_host import GXX, HostModule, fake_cupy
from test_ssa import DSMTS
from test_ssa_events import BIRTH, STILL, event, ex, with_events
from test_ssa_hybrid import decay, delayed

DELAYS = DSMTS.parent / "sbml_delays" / "delayed_events.xml"

pytestmark = pytest.mark.skipif(GXX is None, reason="g++ not on PATH")


@pytest.fixture(scope="module")
def host_kernel_dir(tmp_path_factory):
    """One build directory per module: each kernel source is compiled once (HostModule keys by its hash)."""
    return tmp_path_factory.mktemp("host_kernels")


@pytest.fixture
def host_gpu(monkeypatch, host_kernel_dir):
    """distsim.ssa's GPU launches with kernels compiled for the host and NumPy for CuPy."""
    workdir = host_kernel_dir
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    monkeypatch.setattr(gpu, "_module", lambda key, source, options=(): HostModule(source(), workdir))


def sbml_boost():
    """The events-and-rules SBML model of test_sbml_semantics (concentrations, a parameter assigned by
    a non-persistent event with a priority, two rules), with a reaction that makes the trigger rise."""
    from test_sbml_semantics import EVENTS, RULES, model, par, rx, sp

    from distsim.models.formats.sbml import read_sbml_string

    species = sp("A", 8) + sp("C", 3, hosu=False) + sp("total", 0)
    params = par("k", 0.1, constant=False) + par("double", 0, constant=False)
    return read_sbml_string(model(species, params, rx("R", {"A": 1}, {}, "k * A") + rx("B", {}, {"A": 1}, "0.3"),
                                  RULES + EVENTS, size=2.0))


def birth_stop_resume():
    plain = load(BIRTH["law"], format="text")
    return with_events(plain, [event(plain, "stop", "time >= 3", {"k": "0"}),
                               event(plain, "resume", "time >= 4", {"k": "5"})])


def delayed_in_a_window(persistent: bool):
    """test_ssa_hybrid's delayed event, triggered in the window 1 <= t < 2 and executed 3 later: a
    non-persistent one is cancelled when the window closes."""
    from distsim.models.arith import Time

    window = Logic("and", (Compare(">=", Time(), Num(1.0)), Compare("<", Time(), Num(2.0))))
    return delayed(window, (Assignment("D", 2, Num(7.0)),), delay=3.0, persistent=persistent)


def delayed_values(at_trigger: bool):
    """C := A triggered at t = 1, executed at 2.5: A of the trigger time or of the execution time."""
    from distsim.models.arith import Species, Time

    return delayed(Compare(">=", Time(), Num(1.0)), (Assignment("C", 1, Species(0)),), delay=1.5,
                   values_at_trigger=at_trigger)


CASES = {
    "00019-rule": lambda: load(DSMTS / "00019" / "00019-sbml-l3v1.xml"),
    "00028-time-event": lambda: load(DSMTS / "00028" / "00028-sbml-l3v1.xml"),
    "00032-time-event": lambda: load(DSMTS / "00032" / "00032-sbml-l3v1.xml"),
    "00033-state-event": lambda: load(DSMTS / "00033" / "00033-sbml-l3v1.xml"),
    "sbml-events-and-rules": sbml_boost,
    "parameter-changes": birth_stop_resume,
    "delays-sbml": lambda: load(DELAYS),
    "delay-trigger-values": lambda: delayed_values(True),
    "delay-execution-values": lambda: delayed_values(False),
    "delay-persistent": lambda: delayed_in_a_window(True),
    "delay-cancelled": lambda: delayed_in_a_window(False),
}


def both(net, method: str, realizations: int = 150, seed: int = 5, grid=None) -> tuple[dict, dict]:
    """The events kernel's raw outputs (one launch; grid states as [realization, time, species]) and
    the CPU's."""
    c = compile_network(net)
    grid = np.linspace(0.0, 20.0, 21) if grid is None else grid
    b = SSABlock(c, seed, 0, realizations, grid, method, True, True)
    firings = np.zeros(c.n_reactions, np.uint64)
    (rec, ev, er), = gpu_events._chunks(b, METHODS[method], firings)
    on_gpu = {"trajectories": rec.transpose(2, 0, 1), "events": ev, "errors": er, "firings": firings}
    on_cpu = cpu.simulate_block(c, method=METHODS[method].cpu, real0=0, realizations=realizations, seed=seed,
                                grid=grid, keep_trajectories=True)
    return on_gpu, on_cpu


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("case", CASES)
def test_events_kernel_on_the_host_equals_the_cpu(host_gpu, case, method):
    on_gpu, on_cpu = both(CASES[case](), method)
    assert not on_cpu["errors"].any()
    for k in ("trajectories", "events", "errors", "firings"):
        assert np.array_equal(on_gpu[k].astype(np.int64), on_cpu[k].astype(np.int64)), k


@pytest.mark.parametrize("method", ["direct", "tree"])
def test_event_errors_on_the_host_equal_the_cpu(host_gpu, method):
    """The same error words (code and event or assignment index) at the same realizations."""
    plain = load(STILL, format="text")
    bad_value = with_events(plain, [event(plain, "halve", "time >= 1.5", {"X": "X / 2"})])
    loop = with_events(plain, [event(plain, "up", "X < 5 and time >= 1", {"X": "9"}),
                               event(plain, "down", "X > 5", {"X": "1"})])
    for net in (bad_value, loop):
        on_gpu, on_cpu = both(net, method, realizations=3, grid=np.array([0.0, 2.0]))
        assert on_cpu["errors"].all()
        for k in ("errors", "events"):
            assert np.array_equal(on_gpu[k].astype(np.int64), on_cpu[k].astype(np.int64)), k


def delay_errors() -> dict:
    """A birth-death process X (mean 10) with a delayed event that stops realizations with an error: a delay
    that is negative where X >= 10 at t = 1 (some realizations), NaN (all), or more than MAX_DELAYED
    executions scheduled 100 later, one per rise of X > 10 (all, the process being fast)."""
    slow = load("0 -> X ; b = 20\nX -> 0 ; d = 2\nspecies: Y\ninit: X = 10", format="text")
    fast = load("0 -> X ; b = 100\nX -> 0 ; d = 10\nspecies: Y\ninit: X = 10", format="text")
    return {
        "negative": with_events(slow, [event(slow, "soon", "time >= 1", {"Y": "1"}, delay=ex(slow, "9.5 - X"))]),
        "nan": with_events(slow, [event(slow, "soon", "time >= 1", {"Y": "1"}, delay=ex(slow, "(X - X) / (X - X)"))]),
        "queue": with_events(fast, [event(fast, "pile", "X > 10", {"Y": "Y + 1"}, delay=ex(fast, "100"))]),
    }


@pytest.mark.parametrize("method", ["direct", "tree"])
@pytest.mark.parametrize("case", ["negative", "nan", "queue"])
def test_delay_errors_on_the_host_equal_the_cpu(host_gpu, case, method):
    """ERR_EVENT_DELAY (negative or NaN delay) and ERR_EVENT_QUEUE: the same error words (code and event) at the
    same realizations, after the same events and firings."""
    code = {"negative": ERR_EVENT_DELAY, "nan": ERR_EVENT_DELAY, "queue": ERR_EVENT_QUEUE}[case]
    on_gpu, on_cpu = both(delay_errors()[case], method, realizations=40)
    codes = on_cpu["errors"] & ERR_MASK
    assert (codes == code).any() and set(codes.tolist()) <= {ERR_NONE, code}
    for k in ("errors", "events", "firings"):
        assert np.array_equal(on_gpu[k].astype(np.int64), on_cpu[k].astype(np.int64)), k


def test_hybrid_kernel_with_a_delayed_event_on_the_host_equals_the_cpu(host_gpu):
    """kernels/ssa_hybrid.cu (the same queue): test_ssa_hybrid's decaying input refilled by an event triggered
    at 0.5 and delayed by 0.5 (its reference moments are checked there), bit for bit."""
    from distsim.models.arith import Param, Time
    from distsim.models.events import Event

    refill = Event("refill", Compare(">=", Time(), Num(0.5)), (Assignment("X", -1, Param("x0")),), delay=Num(0.5))
    c = compile_network(decay(events=[refill]))
    grid, R = np.linspace(0.0, 3.0, 13), 150
    b = SSABlock(c, 8, 0, R, grid, "direct", True, True)
    firings = np.zeros(c.n_reactions, np.uint64)
    (rec, ev, er), = gpu_events._hybrid_chunks(b, firings, [])
    on_cpu = cpu.simulate_block(c, method=METHODS["direct"].cpu, real0=0, realizations=R, seed=8, grid=grid,
                                keep_trajectories=True)
    assert not on_cpu["errors"].any() and on_cpu["trajectories"][:, -1, 0].sum() > 0
    on_gpu = {"trajectories": rec.transpose(2, 0, 1), "events": ev, "errors": er, "firings": firings}
    for k in ("trajectories", "events", "errors", "firings"):
        assert np.array_equal(on_gpu[k].astype(np.int64), on_cpu[k].astype(np.int64)), k


def hybrid_cases() -> dict:
    """Hybrid networks for kernels/ssa_hybrid.cu's SSA kernel (its loop is ds_hybrid_loop, shared with the
    particle advance): a sine birth rate, a piecewise law of time, a rate-rule input with a mass-action loss
    (static and moving propensities), a rate-rule species recorded on the grid, and a law that turns negative
    (an error word)."""
    from distsim.models.arith import BinOp, Time
    from distsim.models.formats.sbml import read_sbml_string
    from distsim.models.reactions import Reaction, ReactionNetwork

    from test_hybrid_species import input_species
    from test_ssa_time_dependent import sine_birth, switched

    net = decay()
    loss = ReactionNetwork.create(["A"], [0], [*net.reactions, Reaction(((0, 1),), (), rate="c")], net.params,
                                  rate_rules=net.rate_rules)
    fading = ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), law=BinOp("-", Num(0.2), Time()))])
    return {"sine": sine_birth, "piecewise": switched, "decay-with-loss": lambda: loss,
            "species-rate-rule": lambda: read_sbml_string(input_species()), "fading": lambda: fading}


@pytest.mark.parametrize("max_events", [0, 7])
@pytest.mark.parametrize("case", list(hybrid_cases()))
def test_hybrid_kernel_on_the_host_equals_the_cpu(host_gpu, case, max_events):
    """ssa_hybrid (ds_hybrid_loop recording the grid) == cpu.simulate_block bit for bit: grid states, events,
    error words, firings and the rate-rule values on the grid; with max_events, rows stopped by it too."""
    c = compile_network(hybrid_cases()[case]())
    grid, R = np.linspace(0.0, 4.0, 9), 60
    b = SSABlock(c, 3, 0, R, grid, "direct", True, True, max_events=max_events)
    firings = np.zeros(c.n_reactions, np.uint64)
    cont: list = []
    (rec, ev, er), = gpu_events._hybrid_chunks(b, firings, cont)
    on_cpu = cpu.simulate_block(c, method=METHODS["direct"].cpu, real0=0, realizations=R, seed=3, grid=grid,
                                keep_trajectories=True, max_events=max_events)
    on_gpu = {"trajectories": rec.transpose(2, 0, 1), "events": ev, "errors": er, "firings": firings}
    codes = set((on_cpu["errors"] & ERR_MASK).tolist())
    stops = {ERR_MAX_EVENTS} if max_events else set()
    expected = {ERR_PROPENSITY} if case == "fading" else stops
    assert expected <= codes <= expected | stops | {ERR_NONE}, codes
    for k in ("events", "errors", "firings"):
        assert np.array_equal(on_gpu[k].astype(np.int64), on_cpu[k].astype(np.int64)), k
    kept = np.isin(on_cpu["errors"] & ERR_MASK, [ERR_NONE, ERR_MAX_EVENTS])  # (a row stopped by an error: no grid)
    assert kept.any() == (case != "fading")
    assert np.array_equal(on_gpu["trajectories"][kept].astype(np.int64), on_cpu["trajectories"][kept])
    if "continuous" in on_cpu:
        got = np.concatenate(cont)[:, :, c.events.reported]
        assert np.array_equal(got, on_cpu["continuous"], equal_nan=True)
