"""Exact MaBoSS time courses of small models (the test reference): the CTMC solved by matrix exponentials.

The generator Q is built from the reader's rate tables (:class:`~distsim.models.formats.maboss.MabossRates`),
not from the kernels' compiled program. With ``p_k = p_0 exp(Q k tick)``, the window average is
``p_k (1/tick) int_0^tick exp(Q s) ds``, the upper-right block of ``exp([[Q, I], [0, 0]] tick)``
(Van Loan): exact up to the accuracy of ``scipy.linalg.expm``. ``discrete_time``: the jump chain,
one step per ``time_tick``.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from ..models.boolean import evaluate
from .model import Model

MAX_NODES = 12


def _states(n: int) -> np.ndarray:
    """All 2**n states, row s = the bits of s (node i = bit i)."""
    s = np.arange(1 << n)
    return ((s[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)


def flip_rates(model: Model, mutants: dict[str, int] | None = None) -> np.ndarray:
    """``R[s, i]``: node i's flip rate in state s."""
    r = model.rates
    n = len(r.nodes)
    if n > MAX_NODES:
        raise ValueError(f"exact solution needs at most {MAX_NODES} nodes, the model has {n}")
    X = _states(n)
    R = np.zeros((1 << n, n))
    fixed = {r.nodes.index(k) for k in (mutants or {})}
    for i, tables in enumerate(r.rates):
        if tables is None or i in fixed:
            continue
        for value, table in enumerate(tables):  # 0: rate_up, 1: rate_down
            at = X[:, i] == bool(value)
            for v, cond in table.items():
                R[at & evaluate(cond, X), i] = v
    return R


def initial(model: Model, mutants: dict[str, int] | None = None) -> np.ndarray:
    """The .cfg's initial distribution over the 2**n states (nodes without istate: 0 or 1, 1/2 each)."""
    r = model.rates
    n = len(r.nodes)
    X = _states(n)
    p = np.ones(1 << n)
    seen: set[int] = set()
    for names, dist in r.config.istates.items():
        idx = [r.nodes.index(nm) for nm in names]
        seen.update(idx)
        q = np.zeros(1 << n)
        for prob, vals in dist:
            q[np.all(X[:, idx] == np.array(vals, bool), axis=1)] += prob
        p *= q
    for i in range(n):
        if i not in seen:
            p *= 0.5
    for nm, v in (mutants or {}).items():
        i = r.nodes.index(nm)
        p = np.where(X[:, i] == bool(v), p + p[np.arange(1 << n) ^ (1 << i)], 0.0)
    return p


def time_course(model: Model, mutants: dict[str, int] | None = None) -> dict[str, np.ndarray]:
    """Exact ``window`` [K, 2**n] (window averages), ``final`` [2**n] (at max_time), ``th`` [K]
    (TH's window averages), ``rates`` [2**n, n] and ``states`` [2**n, n] of the full state space."""
    s = model.settings
    R = flip_rates(model, mutants)
    n = R.shape[1]
    N = 1 << n
    flip = np.arange(N)[:, None] ^ (1 << np.arange(n))[None, :]
    Q = np.zeros((N, N))
    for i in range(n):
        Q[np.arange(N), flip[:, i]] += R[:, i]
    Q[np.arange(N), np.arange(N)] -= R.sum(axis=1)
    p0 = initial(model, mutants)
    K = s.n_windows
    if s.discrete_time:
        tot = R.sum(axis=1)
        P = np.where(tot[:, None] > 0, (Q + np.diag(tot)) / np.where(tot > 0, tot, 1.0)[:, None], np.eye(N))
        p = [p0]
        for _ in range(max(K, int(np.ceil(s.max_time / s.time_tick)))):
            p.append(p[-1] @ P)
        window = np.array(p[:K])
        final = p[max(0, int(np.ceil(s.max_time / s.time_tick - 1e-9)) - 1)]  # the state before the jump at max_time
    else:
        h = s.time_tick
        A = np.zeros((2 * N, 2 * N))
        A[:N, :N] = Q * h
        A[:N, N:] = np.eye(N) * h
        E = scipy.linalg.expm(A)
        step, integral = E[:N, :N], E[:N, N:] / h
        window = []
        p = p0
        for _ in range(K):
            window.append(p @ integral)
            p = p @ step
        window = np.array(window)
        final = p0 @ scipy.linalg.expm(Q * s.max_time)
    internal = set(model.rates.config.internal)
    vis = np.array([nm not in internal for nm in model.rates.nodes])
    th = np.zeros(N)
    if n > 1:
        tot = R.sum(axis=1)
        tni = tot - R[:, ~vis].sum(axis=1)
        for x in range(N):
            for i in np.flatnonzero(vis & (R[x] > 0)):
                pr = R[x, i] / tni[x]
                th[x] -= np.log2(pr) * pr
    return {"window": window, "final": final, "th": window @ th, "rates": R, "states": _states(n)}


def visible_label(model: Model, states: np.ndarray) -> list[str]:
    """MaBoSS's label of each full state's visible part."""
    internal = set(model.rates.config.internal)
    order = [i for i in model.rates.maboss_order if model.rates.nodes[i] not in internal]
    return [" -- ".join(model.rates.nodes[i] for i in order if row[i]) or "<nil>" for row in states]


def full_label(model: Model, states: np.ndarray) -> list[str]:
    """MaBoSS's label of each full state (internal nodes too), as in its fixed-point table."""
    return [" -- ".join(model.rates.nodes[i] for i in model.rates.maboss_order if row[i]) or "<nil>"
            for row in states]


def by_label(model: Model, states: np.ndarray, p: np.ndarray) -> dict[str, np.ndarray]:
    """``p[..., s]`` summed over the full states with the same visible label."""
    out: dict[str, np.ndarray] = {}
    for lab, col in zip(visible_label(model, states), np.moveaxis(p, -1, 0)):
        out[lab] = out[lab] + col if lab in out else col.copy()
    return out


__all__ = ["time_course", "flip_rates", "initial", "by_label", "visible_label", "full_label"]
