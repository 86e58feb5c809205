"""CPU kernels for exact SSA ensembles (Numba, parallel over chunks of realizations).

Two selection methods, both exact (Gillespie 1977, direct method) with a reaction dependency graph
so that only affected propensities are recomputed after a firing:
* ``direct``: a0 by summation in reaction order and a linear scan (small models);
* ``tree``: a binary sum tree over the propensities, O(log M) selection and update (large models);
* ``ar``: seed 001's parallel acceptance-rejection election with the exact exponential rating
  (see :mod:`distsim.ssa.ar`): every reaction draws -log(u_j)/a_j, the lowest wins and is tau.
Each realization records its state on a time grid; the grid states are reduced on the fly into
exact integer sums (sum x, sum x^2, histograms), so results never depend on how realizations are
split into chunks, shards or workers.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from ..models import arith
from ..backends.dsmath import ds_exp, ds_log, ds_pow, neglog_u01
from ..rng.philox import philox4x32_10, u01_f64
from ..models.compile_reactions import KIND_MASS_ACTION, CompiledNetwork

METHOD_DIRECT, METHOD_TREE, METHOD_AR = 0, 1, 2
M32 = np.uint64(0xFFFFFFFF)
INV_LN10 = 0.43429448190325176

ERR_NONE, ERR_PROPENSITY, ERR_MAX_EVENTS, ERR_NEGATIVE = 0, 1, 2, 3


@numba.njit(inline="always", cache=True)
def _unary(f, v):
    """Kinetic-law function f (order of arith.FUNC_CODES) of one argument."""
    if f == 0:
        return ds_exp(v)
    if f == 1:
        return ds_log(v) if v > 0.0 else (-math.inf if v == 0.0 else math.nan)
    if f == 2:
        return ds_log(v) * INV_LN10 if v > 0.0 else (-math.inf if v == 0.0 else math.nan)
    if f == 3:
        return math.sqrt(v) if v >= 0.0 else math.nan
    if f == 4:
        return abs(v)
    if f == 5:
        return math.floor(v)
    return math.ceil(v)


@numba.njit(inline="always", cache=True)
def _binary(op, a, b):
    """Binary arithmetic op or two-argument function (pow/min/max) of a kinetic law."""
    if op == arith.OP_ADD:
        return a + b
    if op == arith.OP_SUB:
        return a - b
    if op == arith.OP_MUL:
        return a * b
    if op == arith.OP_DIV:
        return a / b
    if op == arith.OP_POW or op == arith.OP_FUNC_BASE + 7:
        return ds_pow(a, b)
    if op == arith.OP_FUNC_BASE + 8:
        return a if a < b else b
    return a if a > b else b


@numba.njit(cache=True)
def run_realization(rid, seed, method, x0, kind, theta, rct_start, rct_species, rct_stoich, chg_start, chg_species,
                    chg_delta, law_start, law_op, law_arg, dep_start, dep_list, grid, max_events,
                    x, a, tree, stack, rec, firings):
    """One realization: fills ``rec[k, s]`` with the state at grid time k; returns (events, error).

    Everything is inline on purpose: Numba reference-counts arrays passed to helper functions, which
    costs more than the arithmetic here; only scalar helpers (Philox, log, exp) are called.
    """
    S = x0.shape[0]
    M = theta.shape[0]
    K = grid.shape[0]
    P = tree.shape[0] // 2
    for s in range(S):
        x[s] = x0[s]
    if method == METHOD_TREE:
        for i in range(2 * P):
            tree[i] = 0.0
    t = 0.0
    k = 0
    e = np.uint64(0)
    j = -1  # the reaction that fired (-1: initialisation, every propensity is computed)
    while True:
        # ---- (re)compute the propensities that changed: all of them at first, then j's dependents
        if j < 0:
            lo, hi = 0, M
        else:
            lo, hi = dep_start[j], dep_start[j + 1]
        for q in range(lo, hi):
            d = q if j < 0 else dep_list[q]
            if kind[d] == KIND_MASS_ACTION:
                v = theta[d]
                for r in range(rct_start[d], rct_start[d + 1]):
                    xs = float(x[rct_species[r]])
                    h = xs
                    for m in range(1, rct_stoich[r]):
                        h = h * (xs - m) / (m + 1)
                    v = v * h
            else:  # general kinetic law: postfix program
                sp = 0
                for pc in range(law_start[d], law_start[d + 1]):
                    op = law_op[pc]
                    if op == arith.OP_PUSH_CONST:
                        stack[sp] = law_arg[pc]
                        sp += 1
                    elif op == arith.OP_PUSH_SPECIES:
                        stack[sp] = float(x[int(law_arg[pc])])
                        sp += 1
                    elif op == arith.OP_NEG:
                        stack[sp - 1] = -stack[sp - 1]
                    elif op >= arith.OP_FUNC_BASE and op - arith.OP_FUNC_BASE <= 6:
                        stack[sp - 1] = _unary(op - arith.OP_FUNC_BASE, stack[sp - 1])
                    else:
                        stack[sp - 2] = _binary(op, stack[sp - 2], stack[sp - 1])
                        sp -= 1
                v = stack[0]
            if not (v >= 0.0) or math.isinf(v):
                return e, ERR_PROPENSITY
            a[d] = v
            if method == METHOD_TREE:
                i = (P + d) >> 1
                tree[P + d] = v
                while i >= 1:
                    tree[i] = tree[2 * i] + tree[2 * i + 1]
                    i >>= 1
        # ---- waiting time
        if method == METHOD_TREE:
            a0 = tree[1]
        else:
            a0 = 0.0
            for jj in range(M):
                a0 = a0 + a[jj]
        u2 = 0.0
        j_ar = -1
        if method == METHOD_AR:  # exponential race: reaction j's clock is -log(u_j)/a_j
            best = math.inf
            for jj in range(M):
                if a[jj] > 0.0:
                    w0, w1, w2, w3 = philox4x32_10(e & M32, e >> np.uint64(32), np.uint64(jj >> 1), 1, seed, rid)
                    u = u01_f64(w0, w1) if (jj & 1) == 0 else u01_f64(w2, w3)
                    rating = neglog_u01(u) / a[jj]
                    if rating < best:
                        best = rating
                        j_ar = jj
            t_new = t + best
        elif a0 > 0.0:
            w0, w1, w2, w3 = philox4x32_10(e & M32, e >> np.uint64(32), 0, 0, seed, rid)
            u1 = u01_f64(w0, w1)
            u2 = u01_f64(w2, w3)
            t_new = t + neglog_u01(u1) / a0
        else:
            t_new = math.inf
        # ---- record the grid points passed before the event
        while k < K and grid[k] < t_new:
            for s in range(S):
                rec[k, s] = x[s]
            k += 1
        if k >= K:
            return e, ERR_NONE
        if max_events > 0 and e >= np.uint64(max_events):
            for kk in range(k, K):
                for s in range(S):
                    rec[kk, s] = x[s]
            return e, ERR_MAX_EVENTS
        # ---- which reaction: the first whose cumulative propensity exceeds u2 * a0
        target = u2 * a0
        if method == METHOD_AR:
            j = j_ar
        elif method == METHOD_TREE:
            i = 1
            while i < P:
                left = tree[2 * i]
                if target < left:
                    i = 2 * i
                else:
                    target = target - left
                    i = 2 * i + 1
            j = i - P
            if j >= M or a[j] <= 0.0:  # rounding at a boundary: the nearest reaction that can fire
                jj = min(j, M - 1)
                while jj > 0 and a[jj] <= 0.0:
                    jj -= 1
                while jj < M - 1 and a[jj] <= 0.0:
                    jj += 1
                j = jj
        else:
            c = 0.0
            j = -1
            last = 0
            for jj in range(M):
                if a[jj] > 0.0:
                    last = jj
                c = c + a[jj]
                if c > target:
                    j = jj
                    break
            if j < 0:
                j = last
        # ---- fire
        for q in range(chg_start[j], chg_start[j + 1]):
            x[chg_species[q]] += chg_delta[q]
            if x[chg_species[q]] < 0:
                return e, ERR_NEGATIVE
        firings[j] += 1
        t = t_new
        e += np.uint64(1)


@numba.njit(parallel=True, cache=True)
def _simulate(real0, R, seed, method, x0, kind, theta, rct_start, rct_species, rct_stoich, chg_start, chg_species,
              chg_delta, law_start, law_op, law_arg, max_stack, dep_start, dep_list, grid, max_events,
              sum_x, sum_x2, firings, events, errors, keep_traj, traj, keep_final, final, hist_lo, hist_width, hist):
    S = x0.shape[0]
    M = theta.shape[0]
    K = grid.shape[0]
    P = 1
    while P < M:
        P *= 2
    n_chunks = sum_x.shape[0]  # accumulator blocks (any split gives the same integer sums)
    B = hist.shape[3]
    for ch in prange(n_chunks):
        x = np.empty(S, dtype=np.int64)
        a = np.empty(M, dtype=np.float64)
        tree = np.empty(2 * P if method == METHOD_TREE else 2, dtype=np.float64)
        stack = np.empty(max(max_stack, 1), dtype=np.float64)
        rec = np.empty((K, S), dtype=np.int64)
        for r in range(ch * R // n_chunks, (ch + 1) * R // n_chunks):
            ev, err = run_realization(np.uint64(real0 + r), seed, method, x0, kind, theta, rct_start, rct_species,
                                      rct_stoich, chg_start, chg_species, chg_delta, law_start, law_op, law_arg,
                                      dep_start, dep_list, grid, max_events, x, a, tree, stack, rec,
                                      firings[ch])
            events[r] = ev
            errors[r] = err
            for k in range(K):
                for s in range(S):
                    v = rec[k, s]
                    sum_x[ch, k, s] += v
                    sum_x2[ch, k, s] += v * v
                    if B > 0:
                        b = (v - hist_lo[s]) // hist_width[s]
                        if b < 0:
                            b = 0
                        elif b >= B:
                            b = B - 1
                        hist[ch, k, s, b] += 1
                    if keep_traj:
                        traj[r, k, s] = v
            if keep_final:
                for s in range(S):
                    final[r, s] = x[s]


def simulate_block(c: CompiledNetwork, *, real0: int, realizations: int, seed: int, grid: np.ndarray,
                   method: int = METHOD_DIRECT, keep_trajectories: bool = False, keep_final: bool = False,
                   hist_lo: np.ndarray | None = None, hist_width: np.ndarray | None = None, bins: int = 0,
                   max_events: int = 0) -> dict:
    """Simulate realizations ``real0 .. real0+realizations-1``; returns exact integer reductions."""
    S, M, K, R = c.n_species, c.n_reactions, len(grid), realizations
    n_chunks = max(1, min(R, 4 * numba.get_num_threads()))
    sum_x = np.zeros((n_chunks, K, S), dtype=np.int64)
    sum_x2 = np.zeros((n_chunks, K, S), dtype=np.int64)
    firings = np.zeros((n_chunks, M), dtype=np.int64)
    events = np.zeros(R, dtype=np.uint64)
    errors = np.zeros(R, dtype=np.int8)
    traj = np.zeros((R, K, S) if keep_trajectories else (1, 1, 1), dtype=np.int64)
    final = np.zeros((R, S) if keep_final else (1, 1), dtype=np.int64)
    hist = np.zeros((n_chunks, K, S, bins) if bins else (1, 1, 1, 0), dtype=np.int64)
    lo = np.zeros(S, np.int64) if hist_lo is None else np.asarray(hist_lo, np.int64)
    wd = np.ones(S, np.int64) if hist_width is None else np.asarray(hist_width, np.int64)
    _simulate(np.uint64(real0), R, np.uint64(seed), method, c.x0, c.kind, c.theta, c.rct_start, c.rct_species,
              c.rct_stoich, c.chg_start, c.chg_species, c.chg_delta, c.law_start, c.law_op, c.law_arg, c.max_stack,
              c.dep_start, c.dep_list, np.asarray(grid, np.float64), int(max_events), sum_x, sum_x2, firings, events,
              errors, keep_trajectories, traj, keep_final, final, lo, wd, hist)
    out = {
        "sum_x": _exact_sum(sum_x), "sum_x2": _exact_sum(sum_x2), "firings": firings.sum(axis=0),
        "events": events, "errors": errors,
    }
    if keep_trajectories:
        out["trajectories"] = traj
    if keep_final:
        out["final"] = final
    if bins:
        out["histogram"] = hist.sum(axis=0)
    return out


def _exact_sum(a: np.ndarray) -> np.ndarray:
    """Sum over the first axis as Python integers (object array): no int64 overflow across chunks."""
    return np.sum(a.astype(object), axis=0)
