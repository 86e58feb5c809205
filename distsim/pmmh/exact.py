"""The exact likelihood of small models by the CME forward algorithm on a truncated state space (the
reference of the particle filter's tests): p(y_1..y_n | theta) = prod_k sum_x p(x_k = x | y_<k) p(y_k | x)
with p(x_k | y_<k) = p(x_{k-1} | y_<k) exp(Q dt_k), Q the CME generator restricted to the box
0 <= x_s <= max_count (transitions leaving the box are dropped: a lower bound, exact as the box grows).
Rate constants that vary in time (:func:`log_likelihood_varying`): p' = p Q(t) integrated instead of exp(Q dt).
"""

from __future__ import annotations

import itertools
import math
from typing import Callable, Mapping, Sequence

import numpy as np
from scipy.integrate import solve_ivp
from scipy.linalg import expm

from ..models.reactions import ReactionNetwork
from .filter import Problem
from .observation import CompiledExperiment, log_weights, noise_values


def generator(net: ReactionNetwork, max_count: int) -> tuple[np.ndarray, np.ndarray]:
    """(states [n, S], Q [n, n]) of the CME on the box 0..max_count per species."""
    S = net.n_species
    states = np.array(list(itertools.product(range(max_count + 1), repeat=S)), dtype=np.int64).reshape(-1, S)
    index = {tuple(x): i for i, x in enumerate(states.tolist())}
    a = net.propensities(states)
    V = net.stoichiometry()
    Q = np.zeros((len(states), len(states)))
    for i, x in enumerate(states):
        for j in range(net.n_reactions):
            if a[i, j] > 0:
                Q[i, i] -= a[i, j]
                k = index.get(tuple((x + V[j]).tolist()))
                if k is not None:
                    Q[i, k] += a[i, j]
    return states, Q


def log_likelihood(pr: Problem, theta: np.ndarray | Mapping[str, float], max_count: int,
                   changes: Sequence[tuple[float, Mapping[str, float]]] = ()) -> float:
    """Exact log p(data | theta) of the problem's experiments (the forward algorithm). ``changes``:
    (time, {parameter: value}) in time order, parameters set at those times of every experiment (the
    CME of time events assigning constants; the network's own events and rules are not read)."""
    if isinstance(theta, Mapping):
        theta = np.array([float(theta[n]) for n in pr.names])
    total = 0.0
    for ex in pr.experiments:
        total += _experiment(pr, np.asarray(theta, np.float64), ex, max_count, changes)
    return total


def _experiment(pr: Problem, theta: np.ndarray, ex: CompiledExperiment, max_count: int,
                changes: Sequence[tuple[float, Mapping[str, float]]]) -> float:
    values = pr.values(theta, ex)
    pieces = [(0.0, {k: v for k, v in values.items() if k in pr.net.params})]  # (from time, parameter values)
    for at, new in changes:
        pieces.append((float(at), {**pieces[-1][1], **{k: float(v) for k, v in new.items()}}))
    gens = [generator(pr.net.with_parameters(**v), max_count) for _, v in pieces]
    steps: dict[tuple[int, float], np.ndarray] = {}  # exp(Q dt) per piece and distinct interval length

    def advance(p: np.ndarray, t_prev: float, t: float) -> np.ndarray:
        for i, (start, _) in enumerate(pieces):  # the pieces' parts of (t_prev, t]
            end = pieces[i + 1][0] if i + 1 < len(pieces) else math.inf
            lo, hi = max(t_prev, start), min(t, end)
            if hi > lo:
                dt = hi - lo
                if (i, dt) not in steps:
                    steps[i, dt] = expm(gens[i][1] * dt)
                p = np.maximum(p @ steps[i, dt], 0.0)
        return p

    return _forward(pr, ex, values, gens[0][0], advance)


def _forward(pr: Problem, ex: CompiledExperiment, values: Mapping[str, float], states: np.ndarray,
             advance: Callable[[np.ndarray, float, float], np.ndarray]) -> float:
    """The forward algorithm over one experiment: the state distribution ``p`` over ``states`` from the
    initial state, moved to each measurement time by ``advance(p, t_prev, t)`` and weighed there."""
    x0 = ex.x0_of(values)
    if x0 is None:
        return -math.inf
    p = np.all(states == x0, axis=1).astype(np.float64)
    if p.sum() != 1.0:
        raise ValueError("the initial state lies outside the box: raise max_count")
    noise = noise_values(pr.observables, values)
    total, t_prev = 0.0, 0.0
    for k, t in enumerate(ex.times):
        p = advance(p, t_prev, float(t))
        lik = np.exp(log_weights(pr.observables, ex.at(k), states, values, noise)) * p
        z = float(lik.sum())
        if z <= 0:
            return -math.inf
        total += math.log(z)
        p = lik / z
        t_prev = float(t)
    return total


VARYING_RTOL, VARYING_ATOL = 1e-10, 1e-14  # solve_ivp (DOP853) tolerances of log_likelihood_varying


def log_likelihood_varying(pr: Problem, theta: np.ndarray, max_count: int, net: ReactionNetwork,
                           rates: Mapping[str, Callable[[float, Mapping[str, float]], float]]) -> float:
    """Exact log p(data | theta) when rate constants of ``net`` (the problem's species, no time in its
    laws) vary in time: ``rates`` {parameter: f(t, values)}, values = the problem's parameter values
    (:meth:`Problem.values`); the rest of ``net``'s parameters take those values where named there. Each
    varying parameter must enter the propensities linearly (mass-action rates: checked), so
    Q(t) = Q_0 + sum_p f_p(t) Q_p; the forward algorithm with p' = p Q(t) integrated between
    measurements (DOP853 at VARYING_RTOL, VARYING_ATOL)."""
    total = 0.0
    for ex in pr.experiments:
        values = pr.values(np.asarray(theta, np.float64), ex)
        fixed = {k: v for k, v in values.items() if k in net.params and k not in rates}
        zero = {k: 0.0 for k in rates}
        states, q0 = generator(net.with_parameters(**fixed, **zero), max_count)
        parts = []
        for name in rates:
            qp = generator(net.with_parameters(**fixed, **{**zero, name: 1.0}), max_count)[1] - q0
            q2 = generator(net.with_parameters(**fixed, **{**zero, name: 2.0}), max_count)[1]
            if not np.allclose(q2, q0 + 2.0 * qp, rtol=1e-12, atol=0.0):
                raise ValueError(f"the propensities are not linear in {name!r}")
            parts.append((rates[name], qp))

        def rhs(t: float, y: np.ndarray) -> np.ndarray:
            return y @ q0 + sum(f(t, values) * (y @ qp) for f, qp in parts)

        def advance(p: np.ndarray, t_prev: float, t: float) -> np.ndarray:
            if t <= t_prev:
                return p
            sol = solve_ivp(rhs, (t_prev, t), p, method="DOP853", rtol=VARYING_RTOL, atol=VARYING_ATOL)
            if not sol.success:
                raise RuntimeError(f"the CME integration failed: {sol.message}")
            return np.maximum(sol.y[:, -1], 0.0)

        ll = _forward(pr, ex, values, states, advance)
        if ll == -math.inf:
            return -math.inf
        total += ll
    return total
