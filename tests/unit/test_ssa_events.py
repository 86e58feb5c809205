"""SBML events and assignment rules in the SSA (CPU): exact checks of the semantics of
distsim/models/events.py on deterministic networks (order, priorities, simultaneous assignment,
persistent, initialValue, the instant of a time comparison, parameter changes, state triggers,
rules and their dependencies), the random-number layout, the errors, and that event-free networks
keep their path. The DSMTS event and rule cases are in test_ssa.py; CPU == GPU in
tests/gpu/test_ssa_events_gpu.py and, without a GPU, test_ssa_events_host.py."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import numpy as np
import pytest

from distsim.errors import ModelError
from distsim.models.arith import Param, Species, Time, parse_arith
from distsim.models.compile_reactions import compile_network
from distsim.models.events import MAX_CASCADE, Assignment, AssignmentRule, Compare, Event, Logic
from distsim.models.formats.reaction_text import parse_reactions
from distsim.ssa import cpu, load, simulate
from distsim.ssa.errors import SimulationError
from distsim.ssa.methods import METHODS

from test_ssa import DSMTS

METHODS_CPU = ["direct", "tree", "ar"]  # 'warp' runs the tree's CPU functions


def ex(net, text: str):
    """An arith expression over the network's species, parameters and ``time``."""
    def resolve(name: str):
        if name == "time":
            return Time()
        if name in net.species:
            return Species(net.species.index(name))
        if name in net.params:
            return Param(name)
        raise KeyError(name)

    return parse_arith(text, resolve)


def cond(net, text: str):
    """'L op R' or 'L op R and L op R' (one level of 'and')."""
    parts = [p.strip() for p in text.split(" and ")]
    cmps = []
    for p in parts:
        left, op, right = re.match(r"(.+?)\s*(<=|>=|==|!=|<|>)\s*(.+)", p).groups()
        cmps.append(Compare(op, ex(net, left), ex(net, right)))
    return cmps[0] if len(cmps) == 1 else Logic("and", tuple(cmps))


def event(net, eid: str, trigger: str, assign: dict[str, str], **kw) -> Event:
    asg = tuple(Assignment(t, net.species.index(t) if t in net.species else -1, ex(net, v)) for t, v in assign.items())
    if isinstance(kw.get("priority"), str):
        kw["priority"] = ex(net, kw["priority"])
    return Event(eid, cond(net, trigger), asg, **kw)


def rule(net, target: str, text: str) -> AssignmentRule:
    return AssignmentRule(target, target, net.species.index(target) if target in net.species else -1, ex(net, text))


def with_events(net, events=(), rules=()):
    return replace(net, events=tuple(events), rules=tuple(rules))


# a network whose only reaction never fires: everything that happens is an event
STILL = "Z -> 0 ; p = 0\nspecies: W, X, Y\ninit: X = 3, Y = 7"


def trajectories(net, grid, *, realizations=3, seed=1, method="direct") -> np.ndarray:
    """[realization, time, species] on an arbitrary grid (the CPU kernel directly)."""
    out = cpu.simulate_block(compile_network(net), method=METHODS[method].cpu, real0=0, realizations=realizations,
                             seed=seed, grid=np.asarray(grid, float), keep_trajectories=True)
    assert not out["errors"].any(), out["errors"]
    return out["trajectories"]


def series(net, name, grid, **kw) -> list[int]:
    traj = trajectories(net, grid, **kw)
    i = net.species.index(name)
    assert (traj[:, :, i] == traj[:1, :, i]).all()  # deterministic: every realization the same
    return traj[0, :, i].tolist()


# ------------------------------------------------------------------------------------------------
# order of events at one instant

@pytest.mark.parametrize("prio_a,prio_b,expected", [
    ("2", "1", 15),     # A (Y := 10) then B (Y := Y + 5)
    ("1", "2", 10),     # B then A
    (None, None, 15),   # no priorities: document order
    ("3", "3", 15),     # equal priorities: document order
    (None, "0", 10),    # a number ranks above no priority
    ("-1e300", None, 15),
])
def test_priorities_order_events_at_one_instant(prio_a, prio_b, expected):
    net = parse_reactions(STILL)
    net = with_events(net, [event(net, "A", "time >= 1", {"Y": "10"}, priority=prio_a),
                            event(net, "B", "time >= 1", {"Y": "Y + 5"}, priority=prio_b)])
    assert series(net, "Y", [0, 0.5, 1, 2]) == [7, 7, expected, expected]


def test_priority_is_evaluated_when_the_choice_is_made():
    """A (priority X) raises B's priority above its own while both are pending: the choice after A
    sees the new values (B before C although C came first in the document)."""
    net = parse_reactions(STILL)
    net = with_events(net, [event(net, "A", "time >= 1", {"X": "100"}, priority="50"),
                            event(net, "C", "time >= 1", {"Y": "Y * 2"}, priority="10"),
                            event(net, "B", "time >= 1", {"Y": "Y + 1"}, priority="X")])
    assert series(net, "Y", [0, 1]) == [7, 16]  # B first: (7 + 1) * 2; C first would give 15


def test_assignments_are_evaluated_before_any_is_applied():
    net = parse_reactions(STILL)
    net = with_events(net, [event(net, "swap", "time >= 1", {"X": "Y", "Y": "X"})])
    grid = [0, 1, 2]
    assert series(net, "X", grid) == [3, 7, 7] and series(net, "Y", grid) == [7, 3, 3]


def test_events_triggered_by_an_event_run_at_the_same_instant():
    net = parse_reactions(STILL)
    net = with_events(net, [event(net, "first", "time >= 1", {"X": "10"}),
                            event(net, "chained", "X > 5", {"W": "W + 1", "Y": "X + Y"})])
    grid = [0, 1, 3]
    assert series(net, "W", grid) == [0, 1, 1] and series(net, "Y", grid) == [7, 17, 17]


def test_persistent_false_is_cancelled_by_an_earlier_event():
    """At t = 1 both rise; A (higher priority) sets Y = 0, so B's trigger is false when B's turn
    comes: a non-persistent B is dropped, a persistent one runs."""
    for persistent, w in ((False, 0), (True, 99)):
        net = parse_reactions(STILL)
        net = with_events(net, [event(net, "A", "time >= 1", {"Y": "0"}, priority="2"),
                                event(net, "B", "time >= 1 and Y > 0", {"W": "99"}, priority="1",
                                      persistent=persistent)])
        assert series(net, "W", [0, 1, 2]) == [0, w, w]


@pytest.mark.parametrize("initial_value,expected", [(False, [1, 1, 1]), (True, [0, 0, 0])])
def test_initial_value(initial_value, expected):
    """A trigger already true at t = 0 fires at t = 0 only when its initialValue is false; the
    grid state at t = 0 is the state after it."""
    net = parse_reactions(STILL)
    net = with_events(net, [event(net, "E", "X >= 0", {"W": "W + 1"}, initial_value=initial_value)])
    assert series(net, "W", [0, 1, 2]) == expected


def test_an_event_fires_once_per_rise():
    """X > 4 rises at t = 1 (X := 5), falls at t = 2 (X := 0) and rises again at t = 3."""
    net = parse_reactions(STILL)
    net = with_events(net, [event(net, "up", "time >= 1", {"X": "5"}), event(net, "down", "time >= 2", {"X": "0"}),
                            event(net, "again", "time >= 3", {"X": "6"}),
                            event(net, "count", "X > 4", {"W": "W + 1"})])
    assert series(net, "W", [0, 1, 2, 3, 4]) == [0, 1, 1, 2, 2]


# ------------------------------------------------------------------------------------------------
# the instant at which a time comparison changes

AFTER = math.nextafter(2.5, math.inf)


@pytest.mark.parametrize("trigger,initial_value,expected", [
    ("time >= 2.5", True, [0, 1, 1, 1]),    # true from 2.5 on
    ("2.5 <= time", True, [0, 1, 1, 1]),    # mirrored
    ("time > 2.5", True, [0, 0, 1, 1]),     # true from the next double after 2.5
    ("2.5 < time", True, [0, 0, 1, 1]),
    ("time == 2.5", True, [0, 1, 1, 1]),    # true at 2.5 only: fires once
    ("time != 2.5", True, [0, 0, 1, 1]),    # false at 2.5, rises again just after
    ("time < 2.5", True, [0, 0, 0, 0]),     # only falls
    ("time < 2.5", False, [1, 1, 1, 1]),    # fires at t = 0
    ("time >= X - 0.5", True, [0, 1, 1, 1]),  # X = 3: a threshold read from the state
    ("time >= p", True, [0, 0, 0, 0]),      # p = 0 <= t = 0: true from the start, so no rise ...
    ("time >= p", False, [1, 1, 1, 1]),     # ... unless initialValue is false: it fires at t = 0
])
def test_time_comparisons_change_at_the_exact_instant(trigger, initial_value, expected):
    net = parse_reactions(STILL)
    net = with_events(net, [event(net, "E", trigger, {"W": "W + 1"}, initial_value=initial_value)])
    assert series(net, "W", [0, 2.5, AFTER, 3]) == expected


def test_a_threshold_moved_by_an_event_is_followed():
    """'time >= X' with X raised by an event: the stop moves with it (periodic dosing)."""
    net = parse_reactions(STILL)
    net = with_events(net, [event(net, "dose", "time >= X", {"W": "W + 1", "X": "X + 2"})])  # X = 3, 5, 7, ...
    assert series(net, "W", [0, 2.9, 3, 4.9, 5, 7, 9.5]) == [0, 0, 1, 1, 2, 3, 4]


# ------------------------------------------------------------------------------------------------
# parameters changed by events; random numbers

BIRTH = {"mass action": "0 -> X ; k = 5\nX -> 0 ; 0", "law": "0 -> X ; law: k * (1 + 0 * X)\nX -> 0 ; 0\nk = 5"}


@pytest.mark.parametrize("kind", BIRTH)
@pytest.mark.parametrize("method", METHODS_CPU)
def test_an_event_changes_a_rate_parameter(kind, method):
    """Pure birth at rate k = 5 stopped by k := 0 at t = 3: X is constant from t = 3 on and X(3) ~
    Poisson(15); before t = 3 the realizations are those of the network without the event (same
    draws), after a second event k := 5 at t = 4 births resume."""
    plain = parse_reactions(BIRTH[kind])
    net = with_events(plain, [event(plain, "stop", "time >= 3", {"k": "0"}),
                              event(plain, "resume", "time >= 4", {"k": "5"})])
    grid = np.linspace(0, 6, 25)
    n = 4000
    traj = trajectories(net, grid, realizations=n, seed=3, method=method)[:, :, 0]
    stop, resume = np.searchsorted(grid, 3.0), np.searchsorted(grid, 4.0)
    assert (traj[:, stop:resume + 1] == traj[:, [stop]]).all()
    assert (traj[:, -1] > traj[:, resume]).mean() > 0.99  # P(no birth in (4, 6]) = e^-10
    ref = trajectories(plain, grid, realizations=n, seed=3, method=method)[:, :, 0]
    assert np.array_equal(traj[:, :stop], ref[:, :stop])
    x3 = traj[:, stop]
    assert abs(x3.mean() - 15) < 4 * math.sqrt(15 / n)  # 4 sigma
    assert abs(x3.var() - 15) < 4 * math.sqrt((15 + 2 * 15**2) / n)  # Poisson: m4 - sigma^4 = lambda + 2 lambda^2


def test_parameter_used_by_mass_action_and_a_law_is_patched_in_both():
    """k is the mass-action rate of R1 and read by R2's law: after k := 0 neither fires."""
    plain = parse_reactions("R1: 0 -> X ; k = 2\nR2: 0 -> Y ; law: k * 3")
    net = with_events(plain, [event(plain, "off", "time >= 1", {"k": "0"})])
    c = compile_network(net)
    q = 0
    assert c.events.par_theta[c.events.par_theta_start[q]:c.events.par_theta_start[q + 1]].tolist() == [0]
    law_slots = c.events.par_law[c.events.par_law_start[q]:c.events.par_law_start[q + 1]].tolist()
    assert [c.law_arg[i] for i in law_slots] == [2.0]
    traj = trajectories(net, [0, 1, 5], realizations=200, seed=4)
    assert (traj[:, 1] == traj[:, 2]).all() and (traj[:, 1] > 0).any()


def test_random_stream_of_a_rules_only_network_is_the_plain_one():
    """DSMTS 00019 is 00001 plus the rule y = 2 X: no stops, so the same draws give the same X."""
    a = load(DSMTS / "00019" / "00019-sbml-l3v1.xml")
    b = load(DSMTS / "00001" / "00001-sbml-l3v1.xml")
    for method in METHODS_CPU:
        kw = dict(t_end=20, points=21, realizations=300, seed=8, method=method, keep_trajectories=True,
                  quantiles=None)
        ta = simulate(a, **kw)["trajectory"].values
        tb = simulate(b, **kw)["trajectory"].values
        assert np.array_equal(ta[:, :, 0], tb[:, :, 0]), method
        assert np.array_equal(ta[:, :, 1], 2 * ta[:, :, 0])


def test_realizations_do_not_depend_on_the_split():
    net = load(DSMTS / "00033" / "00033-sbml-l3v1.xml")
    c = compile_network(net)
    grid = np.linspace(0, 50, 51)
    kw = dict(method=METHODS["tree"].cpu, seed=2, grid=grid, keep_trajectories=True)
    whole = cpu.simulate_block(c, real0=0, realizations=300, **kw)["trajectories"]
    parts = [cpu.simulate_block(c, real0=r0, realizations=n, **kw)["trajectories"] for r0, n in ((0, 37), (37, 263))]
    assert np.array_equal(whole, np.concatenate(parts))


# ------------------------------------------------------------------------------------------------
# state-triggered events and rules

def test_state_triggered_refill_is_exact():
    """Pure death from 10, refilled to 10 (and counted) whenever X <= 5: every death either moves
    X down or precedes a refill, so per realization deaths = 5 C + 10 - X exactly."""
    plain = parse_reactions("X -> 0 ; mu = 1\nspecies: C\ninit: X = 10")
    net = with_events(plain, [event(plain, "refill", "X <= 5", {"X": "10", "C": "C + 1"})])
    ds = simulate(net, t_end=20, points=41, realizations=500, seed=6, keep_trajectories=True, keep_final=True)
    x = ds.trajectory.sel(species="X").values
    assert x.min() == 6 and x.max() == 10
    fin = ds.final_state.values
    assert np.array_equal(ds.events.values, 5 * fin[:, 1] + 10 - fin[:, 0])
    assert int(ds.firings.values.sum()) == int(ds.events.values.sum())


@pytest.mark.parametrize("method", METHODS_CPU)
def test_rules_keep_their_targets_and_dependencies(method):
    """A rule for a parameter (k = 0.01 Y) read by a law, and for a species (y2 = 2 X) read by a law:
    bit for bit the network that reads the expressions directly (the dependency graph of the tree
    must carry R1 -> k -> R2 and R2 -> y2 -> R3)."""
    direct = parse_reactions("R1: 0 -> Y ; 1\nR2: X -> 0 ; law: 0.01 * Y * X\nR3: 0 -> Z ; law: 0.05 * (2 * X)\n"
                             "species: y2\ninit: X = 200, y2 = 400")
    ruled = parse_reactions("R1: 0 -> Y ; 1\nR2: X -> 0 ; law: k * X\nR3: 0 -> Z ; law: 0.05 * y2\nk = 0\n"
                            "species: y2\ninit: X = 200, y2 = 400")
    ruled = with_events(ruled, rules=[rule(ruled, "k", "0.01 * Y"), rule(ruled, "y2", "2 * X")])
    c = compile_network(ruled)
    deps = lambda j: c.dep_list[c.dep_start[j]:c.dep_start[j + 1]].tolist()  # noqa: E731
    assert 1 in deps(0) and 2 in deps(1)
    kw = dict(t_end=30, points=31, realizations=300, seed=9, method=method, keep_trajectories=True, quantiles=None)
    a = simulate(direct, **kw)["trajectory"].values
    b = simulate(ruled, **kw)["trajectory"].values
    assert np.array_equal(a[:, :, :3], b[:, :, :3])  # Y, X, Z
    assert np.array_equal(b[:, :, 3], 2 * b[:, :, 1])


# ------------------------------------------------------------------------------------------------
# errors

def test_an_assigned_count_must_be_a_whole_number():
    plain = parse_reactions(STILL)
    net = with_events(plain, [event(plain, "halve", "time >= 1.5", {"X": "X / 2"})])
    with pytest.raises(SimulationError, match=r"event 'halve' set species 'X' to X / 2.0 \(1.5\).*at t = 1.5 .*X = 3"):
        simulate(net, t_end=2, points=3, realizations=5, seed=1)
    net = with_events(plain, rules=[rule(plain, "W", "X - 4")])
    with pytest.raises(SimulationError, match=r"assignment rule 'W' set species 'W' to X - 4.0 \(-1.0\).*at t = 0 "):
        simulate(net, t_end=2, points=3, realizations=5, seed=1)


def test_an_assigned_count_within_round_off_of_a_whole_number_is_that_number():
    """Rules computed in floating point give 806.9999999999999 (BIOMD0000000107): within COUNT_TOL
    (relative) of a whole number it is that number; 2.5 is still refused."""
    plain = parse_reactions(STILL)
    net = with_events(plain, rules=[rule(plain, "W", "X * (0.1 + 0.2) / 0.3 * 269 - 0.0000000000001")])
    ds = simulate(net, t_end=2, points=3, realizations=5, seed=1, keep_trajectories=True, quantiles=None)
    assert (ds["trajectory"].sel(species="W").values == 3 * 269).all()  # 806.9999999998999 -> 807
    net = with_events(plain, rules=[rule(plain, "W", "X - 0.5")])
    with pytest.raises(SimulationError, match=r"assignment rule 'W' set species 'W' to X - 0.5 \(2.5\)"):
        simulate(net, t_end=2, points=3, realizations=5, seed=1)


def test_events_that_retrigger_forever_stop_with_an_error():
    plain = parse_reactions(STILL)
    net = with_events(plain, [event(plain, "up", "X < 5 and time >= 1", {"X": "9"}),
                              event(plain, "down", "X > 5", {"X": "1"})])
    with pytest.raises(SimulationError, match=f"more than {MAX_CASCADE} events executed at one instant at t = 1 .*"
                                              "'(up|down)'"):
        simulate(net, t_end=2, points=3, realizations=2, seed=1)


@pytest.mark.parametrize("trigger,phrase", [
    ("2 * time >= 5", "compares '2.0 \\* time >= 5.0'"),
    ("time >= time / 2 + 1", "compares 'time >= time / 2.0 \\+ 1.0'"),
    ("exp(time) > X", "compares 'exp\\(time\\) > X'"),
])
def test_time_inside_a_trigger_expression_is_refused_at_compile_time(trigger, phrase):
    plain = parse_reactions(STILL)
    net = with_events(plain, [event(plain, "odd", trigger, {"W": "1"})])
    with pytest.raises(ModelError, match=f"event 'odd': its trigger {phrase}; distsim simulates time in a trigger "):
        simulate(net, t_end=2, points=3, realizations=2)


def test_time_in_a_rule_is_refused_at_compile_time():
    plain = parse_reactions(STILL)
    net = with_events(plain, rules=[rule(plain, "W", "floor(time)")])
    with pytest.raises(ModelError, match="assignment rule 'W' for 'W' reads time"):
        compile_network(net)


def test_rate_inference_still_refuses_events_and_rules():
    from distsim.mcmc.priors import rate_model

    net = load(DSMTS / "00028" / "00028-sbml-l3v1.xml")
    with pytest.raises(ModelError, match="rate inference does not support SBML events or assignment rules"):
        rate_model(net, None)


# ------------------------------------------------------------------------------------------------
# event-free networks keep their path

def test_event_free_networks_keep_the_plain_path(monkeypatch):
    """No CompiledEvents, the plain dependency graph, and the CPU never enters the events loop."""
    from distsim.models import compile_reactions

    def boom(*a, **k):
        raise AssertionError("the events machinery was used for an event-free network")

    monkeypatch.setattr(compile_reactions, "compile_events", boom)
    monkeypatch.setattr(compile_reactions, "rule_dependents", boom)
    monkeypatch.setattr(cpu, "_simulate_events", boom)
    monkeypatch.setattr(cpu, "run_realization_events", boom)
    net = load(DSMTS / "00001" / "00001-sbml-l3v1.xml")
    c = compile_network(net)
    assert c.events is None
    ds = simulate(net, t_end=5, points=6, realizations=100, seed=1)
    assert ds.attrs["realizations"] == 100
    cpu.replay(c, METHODS["direct"].cpu, 3, seed=1, grid=np.linspace(0, 5, 6))


def test_gpu_shards_take_the_events_kernel_only_for_networks_with_events(monkeypatch):
    """On a GPU worker, every method of a network with events or rules runs kernels/ssa_events.cu
    (distsim.ssa.gpu_events); an event-free network runs the method's own GPU path."""
    from distsim.engine import ShardContext
    from distsim.ssa import gpu_events, shard
    from distsim.ssa.block import SSABlock

    calls = []
    monkeypatch.setattr(gpu_events, "simulate", lambda b, m: calls.append(("events", m.name)) or {})
    own = {name: replace(m, gpu=lambda b, m: calls.append(("own", m.name)) or {}) for name, m in METHODS.items()}
    monkeypatch.setattr(shard, "METHODS", own)
    plain = load(DSMTS / "00001" / "00001-sbml-l3v1.xml")
    ruled = load(DSMTS / "00019" / "00019-sbml-l3v1.xml")
    grid = np.linspace(0.0, 1.0, 2)
    for name in METHODS:
        for net, path in ((plain, "own"), (ruled, "events")):
            calls.clear()
            shard.simulate_block(ShardContext("run", 0, 0, "gpu"), SSABlock(compile_network(net), 1, 0, 4, grid, name))
            assert calls == [(path, name)]
