"""Rate rules in the SSA's hybrid loop (a piecewise-deterministic Markov process): parameters that
evolve as ODEs between firings, driving reactions whose hazards are integrated exactly.

Exact references: a decaying input x' = -c x driving 0 -> A at rate k x (A(t) Poisson with mean
k x0 (1 - e^{-ct}) / c); two coupled rate rules (x' = -c x, y' = c x, rate k y); an event that
resets the input; the crossing times of the integrated hazard; the SBML reader's rate rules; event
delays with known timelines (values from trigger or execution time, non-persistent cancellation).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from distsim.errors import ModelError
from distsim.models.arith import BinOp, Neg, Num, Param, Piecewise, Relation, Species, Time
from distsim.models.compile_reactions import compile_network
from distsim.models.events import Assignment, AssignmentRule, Compare, Event, Logic, RateRule
from distsim.models.formats.sbml import read_sbml_string
from distsim.models.reactions import Reaction, ReactionNetwork
from distsim.ssa import cpu, gpu_events, simulate
from distsim.ssa.errors import ERR_MAX_EVENTS, SimulationError
from distsim.ssa.methods import METHODS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_sbml_semantics import EVENTS, MATHML, model, par, rx, sp  # noqa: E402
from test_ssa_time_dependent import poisson_checks, targets  # noqa: E402

K, X0, C = 3.0, 4.0, 0.7


def decay(events=(), **kw) -> ReactionNetwork:
    law = BinOp("*", Param("k"), Param("X"))
    return ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), law=law, name="driven")],
                                  {"k": K, "X": X0, "c": C, "x0": X0},
                                  rate_rules=[RateRule("rX", "X", -1, Neg(BinOp("*", Param("c"), Param("X"))))],
                                  events=events, **kw)


def decay_mean(t):
    return K * X0 * (1.0 - np.exp(-C * t)) / C


def test_decaying_input_drives_a_poisson_count():
    R = 4000
    ds = simulate(decay(), t_end=5.0, points=6, realizations=R, seed=11, backend="cpu", quantiles=None)
    poisson_checks(ds["mean"].values[:, 0], ds["variance"].values[:, 0], decay_mean(ds["time"].values), R)


def test_decaying_input_crossings_are_exact():
    c = compile_network(decay())
    assert c.events.rr_param.tolist() == [0] and (c.events.hz_of >= 0).tolist() == [True]
    done = 0
    for rid in range(20):
        target = targets(11, rid, 2)
        if target >= K * X0 / C:  # the hazard never gets there: no second firing
            continue
        word, t2, x, _ = cpu.replay(c, METHODS["direct"].cpu, rid, seed=11, grid=np.array([0.0, 1e3]), max_events=1)
        assert word == ERR_MAX_EVENTS and x.tolist() == [1]
        assert abs(decay_mean(t2) - target) <= 1e-8 * (1.0 + target), (rid, t2)
        done += 1
    assert done >= 15


def test_coupled_rate_rules():
    """x' = -c x, y' = c x (y = x0 (1 - e^{-ct})), 0 -> A at rate k y: mean k x0 (t - (1 - e^{-ct}) / c)."""
    rr = [RateRule("rX", "X", -1, Neg(BinOp("*", Param("c"), Param("X")))),
          RateRule("rY", "Y", -1, BinOp("*", Param("c"), Param("X")))]
    net = ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), law=BinOp("*", Param("k"), Param("Y")))],
                                 {"k": K, "X": X0, "Y": 0.0, "c": C}, rate_rules=rr)
    R = 4000
    ds = simulate(net, t_end=3.0, points=4, realizations=R, seed=2, backend="cpu", quantiles=None)
    t = ds["time"].values
    poisson_checks(ds["mean"].values[:, 0], ds["variance"].values[:, 0],
                   K * X0 * (t - (1.0 - np.exp(-C * t)) / C), R)


def test_an_event_resets_the_input():
    """At t = 1 the input is set back to x0: the hazard restarts its decay."""
    refill = Event("refill", Compare(">=", Time(), Num(1.0)), (Assignment("X", -1, Param("x0")),))
    net = decay(events=[refill])
    R = 4000
    ds = simulate(net, t_end=3.0, points=4, realizations=R, seed=8, backend="cpu", quantiles=None)
    t = ds["time"].values
    mu = np.where(t < 1.0, decay_mean(t), decay_mean(1.0) + decay_mean(np.maximum(t - 1.0, 0.0)))
    poisson_checks(ds["mean"].values[:, 0], ds["variance"].values[:, 0], mu, R)


@pytest.mark.parametrize("build,phrase", [
    (lambda: ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), rate="k")], {"k": 1.0},
                                    rate_rules=[RateRule("rA", "A", 0, Num(1.0))]),
     "rate rule 'rA': 'A' is a species"),
    (lambda: compile_network(ReactionNetwork.create(
        ["A"], [0], [Reaction((), ((0, 1),), law=Piecewise(((Num(1.0), Relation("<", (Time(), Param("X")))),),
                                                            Num(0.0)))],
        {"X": 1.0}, rate_rules=[RateRule("rX", "X", -1, Num(1.0))])),
     "compares time with 'X', which a rate rule changes continuously"),
    (lambda: compile_network(decay(rules=[AssignmentRule("r", "A", 0, BinOp("*", Num(2.0), Param("X")))])),
     "assignment rule 'r' for 'A' reads 'X'.*'A' is a species"),
    (lambda: compile_network(ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), rate="X")], {"X": 1.0},
                                                    rate_rules=[RateRule("rX", "X", -1, Num(1.0))])),
     "mass-action rate 'X' has a rate rule"),
])
def test_refused_with_a_clear_error(build, phrase):
    with pytest.raises(ModelError, match=phrase):
        build()


def test_sbml_rate_rule_for_a_parameter():
    rule = ('<listOfRules><rateRule variable="X"><math xmlns="http://www.w3.org/1998/Math/MathML"><apply><times/>'
            '<cn>-1</cn><ci>c</ci><ci>X</ci></apply></math></rateRule></listOfRules>')
    body = model(sp("A", 0), par("k", K) + par("c", C) + par("X", X0, constant=False),
                 rx("R", {}, {"A": 1}, "k * X"), rule)
    net = read_sbml_string(body)
    assert [(r.target, r.species) for r in net.rate_rules] == [("X", -1)] and net.hybrid
    assert net.reactions[0].law is not None  # X is not a constant: never a mass-action rate
    R = 3000
    ds = simulate(net, t_end=4.0, points=5, realizations=R, seed=4, backend="cpu", quantiles=None)
    poisson_checks(ds["mean"].values[:, 0], ds["variance"].values[:, 0], decay_mean(ds["time"].values), R)
    on_species = model(sp("A", 0) + sp("S", 1), par("k", K), rx("R", {}, {"A": 1}, "k * S"),
                       rule.replace('variable="X"', 'variable="S"').replace("<ci>X</ci>", "<ci>S</ci>")
                       .replace("<ci>c</ci>", "<cn>0.5</cn>"))
    continuous = read_sbml_string(on_species)  # a species with a rate rule: a reported continuous variable
    assert continuous.species == ("A",) and [(r.target, r.reported) for r in continuous.rate_rules] == [("S", True)]


# ---- event delays (CPU; the GPU kernels: test_ssa_events_host.py) ---------------------------------

def delayed(trigger, assignments, delay=2.0, persistent=True, values_at_trigger=True) -> ReactionNetwork:
    """0 -> A at rate 1 (a clock of random firings), D and C changed only by the delayed event."""
    ev = Event("late", trigger, assignments, persistent=persistent, use_values_from_trigger_time=values_at_trigger,
               delay=Num(delay))
    return ReactionNetwork.create(["A", "C", "D"], [0, 0, 0], [Reaction((), ((0, 1),), rate="k")], {"k": 1.0},
                                  events=[ev])


def trajectories(net, t_end=6.0, points=13, realizations=200):
    ds = simulate(net, t_end=t_end, points=points, realizations=realizations, seed=6, backend="cpu", quantiles=None,
                  keep_trajectories=True)
    return ds["time"].values, ds["trajectory"].values  # (realization, time, species)


def test_delay_known_timeline():
    net = delayed(Compare(">=", Time(), Num(1.0)), (Assignment("D", 2, BinOp("+", Species(2), Num(1.0))),))
    t, tr = trajectories(net)
    assert np.array_equal(tr[:, :, 2], np.broadcast_to((t >= 3.0).astype(np.int64), tr[:, :, 2].shape))


@pytest.mark.parametrize("at_trigger,when", [(True, 1.0), (False, 2.5)])
def test_delay_values_from_trigger_or_execution_time(at_trigger, when):
    """C := A, triggered at t = 1, executed at 2.5: A of time 1 or of time 2.5, realization by realization."""
    net = delayed(Compare(">=", Time(), Num(1.0)), (Assignment("C", 1, Species(0)),), delay=1.5,
                  values_at_trigger=at_trigger)
    t, tr = trajectories(net)
    src, late = list(t).index(when), list(t).index(3.0)
    assert np.all(tr[:, list(t).index(2.0), 1] == 0)
    assert np.array_equal(tr[:, late, 1], tr[:, src, 0]) and tr[:, late, 1].sum() > 0


@pytest.mark.parametrize("persistent", [True, False])
def test_non_persistent_delayed_event_is_cancelled_when_its_trigger_falls(persistent):
    window = Logic("and", (Compare(">=", Time(), Num(1.0)), Compare("<", Time(), Num(2.0))))
    net = delayed(window, (Assignment("D", 2, Num(7.0)),), delay=3.0, persistent=persistent)
    t, tr = trajectories(net)
    expect = 7 * (t >= 4.0) if persistent else 0 * t
    assert np.array_equal(tr[:, :, 2], np.broadcast_to(expect.astype(np.int64), tr[:, :, 2].shape))


def test_delayed_refill_of_a_rate_rule_parameter():
    """test_an_event_resets_the_input with the refill triggered at 0.5 and delayed by 0.5."""
    refill = Event("refill", Compare(">=", Time(), Num(0.5)), (Assignment("X", -1, Param("x0")),), delay=Num(0.5))
    R = 4000
    ds = simulate(decay(events=[refill]), t_end=3.0, points=4, realizations=R, seed=8, backend="cpu", quantiles=None)
    t = ds["time"].values
    mu = np.where(t < 1.0, decay_mean(t), decay_mean(1.0) + decay_mean(np.maximum(t - 1.0, 0.0)))
    poisson_checks(ds["mean"].values[:, 0], ds["variance"].values[:, 0], mu, R)


def test_negative_delay_and_gpu_acceptance():
    net = delayed(Compare(">=", Time(), Num(1.0)), (Assignment("D", 2, Num(1.0)),), delay=-1.0)
    with pytest.raises(SimulationError, match=r"the delay of event 'late', -1(\.0)?, is negative or not finite"):
        simulate(net, t_end=3.0, points=4, realizations=10, seed=1, backend="cpu", quantiles=None)
    gpu_events.check_gpu(net, compile_network(net))  # GPUs run delays too (tests/unit/test_ssa_events_host.py)


def test_sbml_event_delay():
    ev = EVENTS.replace("<trigger", '<delay><math xmlns="{}"><cn>1.5</cn></math></delay><trigger'.format(MATHML))
    net = read_sbml_string(model(sp("A", 8) + sp("C", 3, hosu=False), par("k", 0.1, constant=False),
                                 rx("R", {"A": 1}, {}, "k * A"), ev))
    assert net.events[0].delay == Num(1.5) and not net.events[0].persistent
