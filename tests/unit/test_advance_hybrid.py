"""Advancing particles of hybrid networks (time-dependent propensities, rate rules; CPU):
distsim.ssa.advance_events with distsim.ssa.cpu.hybrid_loop, the SSA's loop.

Bit for bit: one call from 0 to t1 with e_hi = 0 gives realization p's SSA state at t1 (counts and
rate-rule values) of a run whose grid ends at t1. In law: particles advanced interval by interval
(a fresh waiting time per call) have the SSA's law (the interval ends inside or at a time event's
instant): immigration-death with the birth rate
k(t) = a + b sin(t) is Poisson with mean m(t) = a/d (1 - e^{-dt}) + b (d sin t - cos t + e^{-dt}) / (d^2 + 1);
a decaying rate-rule input x' = -c x driving births at rate k x is Poisson with mean k x0 (1 - e^{-ct}) / c,
and every particle carries x(t) = x0 e^{-ct}. Mean and variance within 4 standard errors (fixed seeds).
The GPU twin: tests/unit/test_advance_hybrid_host.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from distsim.models.arith import BinOp, Call, Num, Param, Time
from distsim.models.compile_reactions import compile_network
from distsim.models.events import Assignment, Compare, Event
from distsim.models.formats.sbml import read_sbml_string
from distsim.models.reactions import Reaction, ReactionNetwork
from distsim.ssa import cpu
from distsim.ssa.advance_events import LOCATED_CPU_ONLY, _check, advance_events, new_works, start_events
from distsim.ssa.errors import ERR_MAX_EVENTS
from distsim.ssa.methods import METHODS

from test_advance_events import advance_poisson
from test_hybrid_species import ODE_TOL, input_species
from test_ssa_hybrid import C as DECAY_C, X0 as DECAY_X0, decay, decay_mean

A, B, D = 2.0, 1.5, 0.3  # k(t) = a + b sin(t), death rate d


def sine_immigration_death(a: float = A, b: float = B, d: float = D) -> ReactionNetwork:
    law = BinOp("+", Param("a"), BinOp("*", Param("b"), Call("sin", (Time(),))))
    return ReactionNetwork.create(["X"], [0], [Reaction((), ((0, 1),), law=law, name="birth"),
                                               Reaction(((0, 1),), (), rate="d", name="death")],
                                  {"a": a, "b": b, "d": d})


def sine_mean(t: float, a: float = A, b: float = B, d: float = D) -> float:
    return a / d * (1 - math.exp(-d * t)) + b * (d * math.sin(t) - math.cos(t) + math.exp(-d * t)) / (d * d + 1)


def refilled() -> ReactionNetwork:
    """The decaying input set back to x0 at t = 1 (a time event on a rate-rule variable)."""
    return decay(events=[Event("refill", Compare(">=", Time(), Num(1.0)), (Assignment("X", -1, Param("x0")),))])


def located() -> ReactionNetwork:
    """The input refilled whenever it falls below 2 (a trigger on a rate-rule variable: located)."""
    return decay(events=[Event("low", Compare("<", Param("X"), Num(2.0)), (Assignment("X", -1, Param("x0")),))])


def _start(c, n):
    X = np.repeat(c.x0[None, :].astype(np.int64), n, axis=0)
    W, err, _ = start_events(c, c.events, X, c.theta, c.law_arg)
    assert not err.any()
    return X, W


BUILDERS = {"sine": sine_immigration_death, "refilled": refilled, "located": located,
            "species": lambda: read_sbml_string(input_species())}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_one_call_from_zero_is_the_ssa_realization(name):
    c = compile_network(BUILDERS[name]())
    assert c.events.hybrid
    R, seed = 48, 2024
    m = METHODS["direct"].cpu
    for t1 in (0.7, 2.5):
        ref = cpu.simulate_block(c, method=m, real0=0, realizations=R, seed=seed, grid=np.array([0.5 * t1, t1]),
                                 keep_trajectories=True)
        assert not ref["errors"].any()
        X, W = _start(c, R)
        n, err, _, _ = advance_events(c, c.events, m, X, W, 0.0, t1, key=seed, e_hi=0)
        assert not err.any()
        assert np.array_equal(X, ref["trajectories"][:, -1, :]), (name, t1)
        assert np.array_equal(n, ref["events"])
        if "continuous" in ref:  # the rate-rule values the result reports (p of the work row)
            y = W[2][:, c.events.rr_param][:, c.events.reported]
            assert np.array_equal(y, ref["continuous"][:, -1, :])
    X2, W2 = _start(c, R)  # another word: other draws
    advance_events(c, c.events, m, X2, W2, 0.0, 2.5, key=seed, e_hi=1)
    assert not np.array_equal(X2, ref["trajectories"][:, -1, :])


@pytest.mark.parametrize("cuts", [[0.5, 1.3, 2.0, 3.7], [2.9, 6.0]])
def test_sine_birth_interval_by_interval_is_poisson(cuts):
    # Poisson(m): var = m, fourth central moment m + 3 m^2
    c = compile_network(sine_immigration_death())
    X, W = _start(c, 20_000)
    advance_poisson(c, X, W, cuts, "direct", 11, sine_mean)


def test_rate_rule_state_is_carried_across_calls():
    c = compile_network(decay())
    X, W = _start(c, 20_000)
    col = int(c.events.rr_param[0])  # X's slot among the mutable parameters

    def ode_state(t):
        exact = DECAY_X0 * math.exp(-DECAY_C * t)
        assert np.all(np.abs(W[2][:, col] - exact) <= ODE_TOL * DECAY_X0), t
        assert np.all(W[16][:, 0] > 0.0)  # each particle keeps its integrator's next step size

    advance_poisson(c, X, W, [0.4, 1.0, 2.2, 3.0], "tree", 3, lambda t: float(decay_mean(t)), ode_state)


@pytest.mark.parametrize("cuts", [[0.5, 1.0, 2.0, 3.0], [0.7, 1.6, 3.0]])
def test_time_event_on_the_input_interval_by_interval(cuts):
    # x := x + x0 at t = 1, at an interval's end (executed there, not again by the next call) or inside one:
    # after it x = x0 (e^{-c} + 1) e^{-c (t - 1)}
    boost = Event("boost", Compare(">=", Time(), Num(1.0)), (Assignment("X", -1, BinOp("+", Param("X"),
                                                                                        Param("x0"))),))
    c = compile_network(decay(events=[boost]))
    X, W = _start(c, 20_000)
    advance_poisson(c, X, W, cuts, "direct", 5, lambda t: float(
        decay_mean(t) if t < 1.0 else decay_mean(1.0) + (1 + math.exp(-DECAY_C)) * decay_mean(t - 1.0)))


def test_too_many_firings_stop_a_row():
    c = compile_network(sine_immigration_death())
    X, W = _start(c, 4)
    n, err, t, _ = advance_events(c, c.events, METHODS["direct"].cpu, X, W, 0.0, 50.0, key=1, e_hi=0, max_events=3)
    assert np.all(err == ERR_MAX_EVENTS) and np.all(n == 3) and np.all(t < 50.0)


def test_work_rows_and_the_gpu_refusal():
    c = compile_network(refilled())
    W = new_works(c, 5)
    assert len(W) == 20 and W[11].shape == (5, len(c.events.rr_param) + 1) and not W[16].any()
    X, W = _start(c, 5)
    with pytest.raises(ValueError, match="works must be"):
        advance_events(c, c.events, METHODS["direct"].cpu, X, W[:11], 0.0, 1.0, key=1, e_hi=0)
    # the GPU twin's check (distsim.ssa.gpu_advance_events) takes hybrid networks (test_advance_hybrid_host.py)
    # but refuses triggers on rate-rule variables, naming the CPU backend
    _check(c, c.events, X, W, gpu=True)
    cl = compile_network(located())
    assert len(cl.events.loc_ev)
    Xl, Wl = _start(cl, 5)
    _check(cl, cl.events, Xl, Wl)
    with pytest.raises(ValueError, match=r"runs on the CPU only \(backend='cpu'"):
        _check(cl, cl.events, Xl, Wl, gpu=True)
    assert "not on a GPU" in LOCATED_CPU_ONLY
