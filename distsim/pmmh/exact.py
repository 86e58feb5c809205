"""The exact likelihood of small models by the CME forward algorithm on a truncated state space (the
reference of the particle filter's tests): p(y_1..y_n | theta) = prod_k sum_x p(x_k = x | y_<k) p(y_k | x)
with p(x_k | y_<k) = p(x_{k-1} | y_<k) exp(Q dt_k), Q the CME generator restricted to the box
0 <= x_s <= max_count (transitions leaving the box are dropped: a lower bound, exact as the box grows).
"""

from __future__ import annotations

import itertools
import math
from typing import Mapping

import numpy as np
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


def log_likelihood(pr: Problem, theta: np.ndarray | Mapping[str, float], max_count: int) -> float:
    """Exact log p(data | theta) of the problem's experiments (the forward algorithm)."""
    if isinstance(theta, Mapping):
        theta = np.array([float(theta[n]) for n in pr.names])
    total = 0.0
    for ex in pr.experiments:
        total += _experiment(pr, np.asarray(theta, np.float64), ex, max_count)
    return total


def _experiment(pr: Problem, theta: np.ndarray, ex: CompiledExperiment, max_count: int) -> float:
    values = pr.values(theta, ex)
    net = pr.net.with_parameters(**{k: v for k, v in values.items() if k in pr.net.params})
    states, Q = generator(net, max_count)
    noise = noise_values(pr.observables, values)
    x0 = ex.x0_of(values)
    if x0 is None:
        return -math.inf
    p = np.all(states == x0, axis=1).astype(np.float64)
    if p.sum() != 1.0:
        raise ValueError("the initial state lies outside the box: raise max_count")
    total, t_prev = 0.0, 0.0
    steps: dict[float, np.ndarray] = {}  # exp(Q dt) per distinct interval length
    for k, t in enumerate(ex.times):
        if t > t_prev:
            dt = float(t) - t_prev
            if dt not in steps:
                steps[dt] = expm(Q * dt)
            p = np.maximum(p @ steps[dt], 0.0)
        lik = np.exp(log_weights(pr.observables, ex.at(k), states, values, noise)) * p
        z = float(lik.sum())
        if z <= 0:
            return -math.inf
        total += math.log(z)
        p = lik / z
        t_prev = float(t)
    return total
