"""Exact reference for small PBNs: the 2**n x 2**n transition matrix built from the definition
(seed 000, eqs. 1-4) and its stationary distribution by linear algebra.

This code shares nothing with the kernels but the expression evaluator: it is what the simulation
is tested against. State ``x`` is the integer whose bit ``i`` is node ``i``.
"""

from __future__ import annotations

import numpy as np

from ..models.boolean import evaluate
from ..models.pbn import PBN

MAX_NODES = 14


def all_states(n: int) -> np.ndarray:
    """bool [2**n, n]: row x holds the bits of x (node i = bit i)."""
    x = np.arange(1 << n, dtype=np.int64)
    return ((x[:, None] >> np.arange(n)) & 1).astype(bool)


def transition_matrix(net: PBN, mode: str = "sync") -> np.ndarray:
    """Dense row-stochastic matrix P[x, y] = P(state y at t+1 | state x at t)."""
    n = net.n
    if n > MAX_NODES:
        raise ValueError(f"exact reference limited to {MAX_NODES} nodes, network has {n}")
    N = 1 << n
    X = all_states(n)
    idx = np.arange(N)
    # values[i][f] = bool[N]: function f of node i on every state
    values = [[evaluate(p.expr, X) for p in plist] for plist in net.predictors]
    P = np.zeros((N, N))

    # no perturbation: the functional update
    if mode == "sync":
        if net.dependent:
            for choice, c in net.contexts:
                nxt = np.zeros(N, dtype=np.int64)
                for i in range(n):
                    nxt |= values[i][choice[i]].astype(np.int64) << i
                np.add.at(P, (idx, nxt), c)
        else:
            # independent nodes: P(y | x) = prod_i (q_i(x) if y_i else 1 - q_i(x))
            q = np.stack([sum(p.probability * v for p, v in zip(plist, vals)) for plist, vals in zip(net.predictors, values)],
                         axis=1)  # [N, n]: probability that node i becomes 1
            Y = all_states(n)
            for x in range(N):
                P[x] = np.prod(np.where(Y, q[x], 1.0 - q[x]), axis=1)
    elif mode == "async":
        for i in range(n):
            if net.dependent:
                opts = [(values[i][choice[i]], c) for choice, c in net.contexts]
            else:
                opts = [(v, p.probability) for p, v in zip(net.predictors[i], values[i])]
            for v, c in opts:
                nxt = (idx & ~(1 << i)) | (v.astype(np.int64) << i)
                np.add.at(P, (idx, nxt), c / n)
    else:
        raise ValueError(f"mode must be 'sync' or 'async', got {mode!r}")

    p = net.perturbation
    pert = [i for i in range(n) if i not in net.fixed]
    m = len(pert)
    if p > 0 and m:
        # a perturbation step happens with probability 1 - (1-p)^m; flips gamma != 0 over perturbable nodes
        P *= (1.0 - p) ** m
        for g in range(1, 1 << m):
            flips = [pert[k] for k in range(m) if (g >> k) & 1]
            mask = sum(1 << i for i in flips)
            prob = p ** len(flips) * (1.0 - p) ** (m - len(flips))
            np.add.at(P, (idx, idx ^ mask), prob)
    return P


def stationary_distribution(net: PBN, mode: str = "sync") -> np.ndarray:
    """The stationary distribution (unique when p > 0 and all nodes are perturbable)."""
    P = transition_matrix(net, mode)
    N = P.shape[0]
    A = P.T - np.eye(N)
    A[-1, :] = 1.0
    b = np.zeros(N)
    b[-1] = 1.0
    pi = np.linalg.solve(A, b)
    pi[pi < 0] = 0.0
    return pi / pi.sum()


def target_mask(net: PBN, target) -> np.ndarray:
    """bool [2**n]: states in the target set (``target`` = ((node, value), ...))."""
    X = all_states(net.n)
    m = np.ones(1 << net.n, dtype=bool)
    for i, v in target:
        m &= X[:, i] == bool(v)
    return m


def second_eigenvalue(net: PBN, mode: str = "sync") -> float:
    """|lambda_2| of the transition matrix: distance to stationarity shrinks like |lambda_2|**t."""
    ev = np.sort(np.abs(np.linalg.eigvals(transition_matrix(net, mode))))[::-1]
    return float(ev[1]) if len(ev) > 1 else 0.0
