"""Advancing particles of a network with SBML events and rules (distsim.ssa.advance_events, CPU).

Bit for bit: one call from 0 to t with e_hi = 0 gives realization p's SSA state at grid time t (the
same draws). In law: a realization advanced interval by interval (fresh draws per call) has the
SSA's distribution: immigration-death from 0 with k1 doubled by an event at t = 1.5 is Poisson with
the mean of the rate equation; mean and variance within Z standard errors (fixed seeds)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from distsim.models.compile_reactions import compile_network
from distsim.ssa import cpu, load
from distsim.ssa.advance_events import advance_events, new_works, start_events
from distsim.ssa.errors import ERR_MAX_EVENTS
from distsim.ssa.methods import METHODS

from test_ssa import DSMTS, EVENT_CASES, reference
from test_ssa_events import event, ex, rule, with_events

DATA = Path(__file__).resolve().parents[1] / "data" / "pmmh"
Z = 4.0
K1, K2, T_EVENT = 1.0, 0.2, 1.5


def switched(net):
    """Immigration-death with k1 doubled at t = 1.5."""
    return with_events(net, [event(net, "double", "time >= 1.5", {"k1": "2 * k1"})])


def busy(net):
    """The time event, a delayed state event (X >= 6: X := X - 4 after 0.3, values of the trigger
    time), an event resetting its own trigger (X >= 9: X := 2) and a rule k2 = 0.1 + 0.02 X."""
    return with_events(net, [event(net, "double", "time >= 1.5", {"k1": "2 * k1"}),
                             event(net, "cut", "X >= 6", {"X": "X - 4"}, delay=ex(net, "0.3")),
                             event(net, "reset", "X >= 9", {"X": "2"})], [rule(net, "k2", "0.1 + 0.02 * X")])


def poisson_mean(t: float) -> float:
    m = lambda t, k: k / K2 * (1 - math.exp(-K2 * t))  # noqa: E731 - from 0
    if t <= T_EVENT:
        return m(t, K1)
    return m(T_EVENT, K1) * math.exp(-K2 * (t - T_EVENT)) + m(t - T_EVENT, 2 * K1)


@pytest.fixture(scope="module")
def net():
    return load(DATA / "immigration_death.rxn")


def _start(c, n):
    X = np.repeat(c.x0[None, :].astype(np.int64), n, axis=0)
    W, err, _ = start_events(c, c.events, X, c.theta, c.law_arg)
    assert not err.any()
    return X, W


@pytest.mark.parametrize("method", ["direct", "tree", "ar"])
def test_one_call_from_zero_is_the_ssa_realization(net, method):
    nb = busy(net)
    c = compile_network(nb)
    grid = np.array([0.4, 1.5, 2.2, 4.0, 7.5])
    R, seed = 64, 12345
    m = METHODS[method].cpu
    ref = cpu.simulate_block(c, method=m, real0=0, realizations=R, seed=seed, grid=grid, keep_trajectories=True)
    assert not ref["errors"].any()
    for k, t in enumerate(grid):
        X, W = _start(c, R)
        _, err, _, _ = advance_events(c, c.events, m, X, W, 0.0, float(t), key=seed, e_hi=0)
        assert not err.any()
        assert np.array_equal(X, ref["trajectories"][:, k, :]), t
    # another word: other draws
    X2, W2 = _start(c, R)
    advance_events(c, c.events, m, X2, W2, 0.0, float(grid[-1]), key=seed, e_hi=1)
    assert not np.array_equal(X2, ref["trajectories"][:, -1, :])


def advance_poisson(c, X, W, cuts, method, key, mean, check=None):
    """Advance the particles (X, W) from 0 through the times ``cuts`` (call i with e_hi = i); at each,
    X[:, 0] has the mean and variance of Poisson(mean(t)) within Z standard errors (var = m, fourth
    central moment m + 3 m^2); ``check(t)`` checks more."""
    N, t0 = len(X), 0.0
    for i, t in enumerate(cuts):
        _, err, _, _ = advance_events(c, c.events, METHODS[method].cpu, X, W, t0, t, key=key, e_hi=i)
        assert not err.any()
        x = X[:, 0].astype(float)
        mu = mean(t)
        assert abs(x.mean() - mu) < Z * math.sqrt(mu / N), (t, x.mean(), mu)
        assert abs(x.var(ddof=1) - mu) < Z * math.sqrt((mu + 2 * mu**2) / N), (t, x.var(), mu)
        if check is not None:
            check(t)
        t0 = t


@pytest.mark.parametrize("cuts", [[1.0, 1.5, 3.0], [0.7, 2.0, 3.0]])
def test_interval_by_interval_has_the_ssa_law(net, cuts):
    # the event at an interval's end (1.5) and inside one (0.7 .. 2.0); Poisson(mean): var = mean,
    # fourth central moment mean + 3 mean^2
    c = compile_network(switched(net))
    X, W = _start(c, 20_000)
    advance_poisson(c, X, W, cuts, "direct", 7, poisson_mean)
    # the particles carry the assigned parameter: k1 doubled in every row's tables
    assert np.all(W[2][:, 0] == 2 * K1) and np.all(W[0][:, 0] == 2 * K1)


def test_bad_input_is_refused(net):
    c = compile_network(switched(net))
    X, W = _start(c, 4)
    m = METHODS["direct"].cpu
    with pytest.raises(ValueError, match="0 <= t0 <= t1"):
        advance_events(c, c.events, m, X, W, 2.0, 1.0, key=1, e_hi=0)
    with pytest.raises(ValueError, match="works must be"):
        advance_events(c, c.events, m, X, W[:5], 0.0, 1.0, key=1, e_hi=0)
    with pytest.raises(ValueError, match="no SBML events"):
        new_works(compile_network(net), 4)


def test_too_many_firings_stop_a_row(net):
    c = compile_network(switched(net))
    X, W = _start(c, 4)
    n, err, t, _ = advance_events(c, c.events, METHODS["direct"].cpu, X, W, 0.0, 50.0, key=1, e_hi=0, max_events=3)
    assert np.all(err == ERR_MAX_EVENTS) and np.all(n == 3) and np.all(t < 50.0)


@pytest.mark.parametrize("case", EVENT_CASES)
def test_dsmts_event_and_rule_cases_interval_by_interval(case):
    # the SBML models of DSMTS with an assignment rule or events: one call from 0 is the SSA realization,
    # and particles advanced through the 50 output intervals pass the DSMTS checks (Z within 3, Y within
    # 5, at most 2 misses; Y with the sample's fourth moment about the known mean)
    net = load(DSMTS / case / f"{case}-sbml-l3v1.xml")
    c = compile_network(net)
    t, ref = reference(case)
    m = METHODS["direct"].cpu
    R = 32
    ssa = cpu.simulate_block(c, method=m, real0=0, realizations=R, seed=77, grid=t, keep_trajectories=True)
    X, W = _start(c, R)
    advance_events(c, c.events, m, X, W, 0.0, float(t[-1]), key=77, e_hi=0)
    assert np.array_equal(X, ssa["trajectories"][:, -1, :])
    n = 10_000
    X, W = _start(c, n)
    z_miss = {sp: 0 for sp in ref}
    y_miss = {sp: 0 for sp in ref}
    for i in range(1, len(t)):
        _, err, _, _ = advance_events(c, c.events, m, X, W, float(t[i - 1]), float(t[i]), key=5, e_hi=i)
        assert not err.any()
        for sp, (mu, sd) in ref.items():
            if sd[i] == 0:
                assert np.all(X[:, net.index(sp)] == mu[i])
                continue
            x = X[:, net.index(sp)].astype(float)
            z = math.sqrt(n) * (x.mean() - mu[i]) / sd[i]
            m4 = np.mean((x - mu[i]) ** 4)
            y = (np.mean((x - mu[i]) ** 2) - sd[i] ** 2) / math.sqrt(max(m4 - sd[i] ** 4, 2e-6 * sd[i] ** 4) / n)
            z_miss[sp] += abs(z) >= 3
            y_miss[sp] += abs(y) >= 5
    assert max(z_miss.values()) <= 2 and max(y_miss.values()) <= 2, (z_miss, y_miss)
