"""CPU kernels (Numba) of the data-augmentation Gibbs sampler; ``kernels/mcmc_bridge.cu`` mirrors them.

Random-number addresses (identical on every backend, Philox4x32-10 with key ``(seed, chain)``):

* attempt ``a`` of interval ``i`` at iteration ``it``, event ``e``: counter ``(e, a, it, i)``;
  words 0-1 give u1 (tau = -log(u1)/a0), words 2-3 give u2 (the first reaction whose cumulative
  propensity exceeds u2 a0), as in :mod:`distsim.ssa.cpu`;
* the Gamma draw of parameter ``p`` at iteration ``it``, trial ``k``: counters ``(2k, p, it, TAG)``
  (polar normal) and ``(2k+1, p, it, TAG)`` (acceptance uniform), ``(BOOST, p, it, TAG)`` for
  shape < 1 (Marsaglia and Tsang 2000).

An interval accepts its **lowest-index** successful attempt. Workers claim attempt indices in order
(a shared counter per interval) and stop once past the lowest success found so far, so every index
below the accepted one is run and the number of workers (or the GPU's scheduling) never changes a
draw: only the Philox addresses do. The rule does not look at the path, so the accepted path is an
exact draw from the bridge (seed 003, 3.3.1). On a core the attempts are sequential: none is wasted.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..backends.dsmath import ds_exp, ds_log
from ..models.kinetics import mass_action
from ..rng.philox import philox4x32_10, u01_f64

TAG_GAMMA = 0xFFFFFFFF
BOOST = 0xFFFFFFFF
NONE = 1 << 62  # no event (yet)
ERR_NONE, ERR_MAX_ATTEMPTS, ERR_MAX_EVENTS, ERR_SHAPE, ERR_RATE = 0, 1, 2, 3, 4


@numba.njit(inline="always", cache=True)
def _h(d, x, rct_start, rct_species, rct_stoich):
    """Mass-action h_d(x) = prod_i C(x_i, r_i) (kernels/kinetics.cuh: ds_mass_action(1.0, ...))."""
    return mass_action(1.0, d, x, rct_start, rct_species, rct_stoich)


@numba.njit(cache=True)
def run_attempt(seed, chain, it, interval, idx, start, target, dt, theta_rx, rct_start, rct_species, rct_stoich,
                chg_start, chg_species, chg_delta, dep_start, dep_list, can_inc, can_dec, max_events,
                x, h, a, want, r_out, b_out, grid, rec):
    """One forward SSA attempt from ``start`` over [0, dt]. Returns (hit, err).

    With ``want`` the firings ``r_out[j]`` and integrals ``b_out[j]`` of h_j are accumulated; a
    non-empty ``grid`` (times in [0, dt]) records the state there into ``rec``. A path stops early
    once a species that can only grow (or only shrink) has passed its endpoint.
    """
    S = start.shape[0]
    M = theta_rx.shape[0]
    K = grid.shape[0]
    for s in range(S):
        x[s] = start[s]
    for j in range(M):
        h[j] = _h(j, x, rct_start, rct_species, rct_stoich)
        a[j] = theta_rx[j] * h[j]
    t = 0.0
    k = 0
    e = np.uint64(0)
    key0 = np.uint64(seed)
    key1 = np.uint64(chain)
    while True:
        a0 = 0.0
        for jj in range(M):
            a0 = a0 + a[jj]
        u2 = 0.0
        if a0 > 0.0:
            w0, w1, w2, w3 = philox4x32_10(e, idx, it, interval, key0, key1)
            u1 = u01_f64(w0, w1)
            u2 = u01_f64(w2, w3)
            t_new = t - ds_log(u1) / a0
        else:
            t_new = math.inf
        while k < K and grid[k] < t_new:
            for s in range(S):
                rec[k, s] = x[s]
            k += 1
        if t_new > dt:
            if want:
                for jj in range(M):
                    b_out[jj] = b_out[jj] + h[jj] * (dt - t)
            for s in range(S):
                if x[s] != target[s]:
                    return False, ERR_NONE
            return True, ERR_NONE
        if e >= np.uint64(max_events):
            return False, ERR_MAX_EVENTS
        if want:
            for jj in range(M):
                b_out[jj] = b_out[jj] + h[jj] * (t_new - t)
        target_a = u2 * a0
        c = 0.0
        j = -1
        last = 0
        for jj in range(M):
            if a[jj] > 0.0:
                last = jj
            c = c + a[jj]
            if c > target_a:
                j = jj
                break
        if j < 0:
            j = last
        dead = False
        for q in range(chg_start[j], chg_start[j + 1]):
            s = chg_species[q]
            x[s] += chg_delta[q]
            if (x[s] < target[s] and not can_inc[s]) or (x[s] > target[s] and not can_dec[s]):
                dead = True
        if want:
            r_out[j] += 1
        if dead:
            return False, ERR_NONE
        for q in range(dep_start[j], dep_start[j + 1]):
            d = dep_list[q]
            h[d] = _h(d, x, rct_start, rct_species, rct_stoich)
            a[d] = theta_rx[d] * h[d]
        t = t_new
        e += np.uint64(1)


@numba.njit(cache=True)
def gamma_draw(shape, seed, chain, it, p):
    """Standard Gamma(shape) (shape > 0) by Marsaglia-Tsang on Philox, polar normals; CPU == GPU bits."""
    key0 = np.uint64(seed)
    key1 = np.uint64(chain)
    boost = shape < 1.0
    al = shape + 1.0 if boost else shape
    d = al - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    k = np.uint64(0)
    g = 0.0
    while True:
        w0, w1, w2, w3 = philox4x32_10(np.uint64(2) * k, p, it, TAG_GAMMA, key0, key1)
        u = 2.0 * u01_f64(w0, w1) - 1.0
        v = 2.0 * u01_f64(w2, w3) - 1.0
        s = u * u + v * v
        if s < 1.0:
            z = u * math.sqrt(-2.0 * ds_log(s) / s)
            tt = 1.0 + c * z
            if tt > 0.0:
                v3 = tt * tt * tt
                y0, y1, y2, y3 = philox4x32_10(np.uint64(2) * k + np.uint64(1), p, it, TAG_GAMMA, key0, key1)
                uu = u01_f64(y0, y1)
                if ds_log(uu) < 0.5 * z * z + d - d * v3 + d * ds_log(v3):
                    g = d * v3
                    break
        k += np.uint64(1)
    if boost:
        w0, w1, w2, w3 = philox4x32_10(BOOST, p, it, TAG_GAMMA, key0, key1)
        g = g * ds_exp(ds_log(u01_f64(w0, w1)) / shape)
    return g


@numba.njit(cache=True)
def gibbs_theta(seed, chain, it, r_sum, b_sum, param_of, prior_shape, prior_rate, theta_out):
    """theta_p ~ Gamma(shape_p + R_p, rate_p + B_p), sums over reactions j of p in order (then intervals).

    ``r_sum``/``b_sum`` are [n_intervals, M]. Returns (err, p)."""
    P = prior_shape.shape[0]
    n = r_sum.shape[0]
    M = param_of.shape[0]
    for p in range(P):
        R = 0
        B = 0.0
        for j in range(M):
            if param_of[j] == p:
                for i in range(n):
                    R += r_sum[i, j]
                    B = B + b_sum[i, j]
        shape = prior_shape[p] + R
        rate = prior_rate[p] + B
        if not shape > 0.0:
            return ERR_SHAPE, p
        if not rate > 0.0:
            return ERR_RATE, p
        theta_out[p] = gamma_draw(shape, seed, chain, it, p) / rate
    return ERR_NONE, -1


@intrinsic
def _atomic_rmw(typingctx, op, arr, i, v):
    """``op`` ("add" or "min") on int64 ``arr[i]`` with ``v`` as one atomic step; returns the old value."""
    if not (isinstance(op, types.StringLiteral) and isinstance(arr, types.Array) and arr.dtype == types.int64):
        return None

    def codegen(context, builder, signature, args):
        ptr = cgutils.get_item_pointer(context, builder, arr, context.make_array(arr)(context, builder, args[1]),
                                       [context.cast(builder, args[2], i, types.intp)], wraparound=False)
        return builder.atomic_rmw(op.literal_value, ptr, context.cast(builder, args[3], v, types.int64), "monotonic")

    return types.int64(op, arr, i, v), codegen


@intrinsic
def _atomic_load(typingctx, arr, i):
    """int64 ``arr[i]`` read as one atomic load (never hoisted out of a loop or torn)."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.int64):
        return None

    def codegen(context, builder, signature, args):
        ptr = cgutils.get_item_pointer(context, builder, arr, context.make_array(arr)(context, builder, args[0]),
                                       [context.cast(builder, args[1], i, types.intp)], wraparound=False)
        return builder.load_atomic(ptr, "monotonic", 8)

    return types.int64(arr, i), codegen


@numba.njit(parallel=True, cache=True)
def attempt_claims(seed, chains, it, theta_rx, starts, targets, dts, rct_start, rct_species, rct_stoich, chg_start,
                   chg_species, chg_delta, dep_start, dep_list, can_inc, can_dec, max_events, max_attempts, live,
                   first, simulated, nxt, seen, quota, stopped):
    """The attempts of one iteration. Every worker goes through the tasks (chain, interval) in turn and
    claims their attempt indices one at a time (a shared counter per task ``nxt``, so claims form a
    prefix), until a claimed index passes the task's lowest event found so far (``seen``, an atomic min).

    ``first`` [W, T, 2] gets each worker's first success and first error index per task (NONE if none).
    Every index below a task's lowest event is run by some worker, so the minimum over workers is the
    lowest-index event whatever the number of workers or their timing. ``live`` [C]: chains to run.
    A worker runs at most ``quota`` attempts (``simulated[w]``: how many it ran); one that stops on its
    quota before the last task sets ``stopped[w]``: a later call with the same ``nxt``, ``seen`` and
    ``first`` (reset by the caller at the start of an iteration) continues the iteration, with the
    same result, since every claimed index is run before the quota is looked at again.
    """
    W = first.shape[0]
    n = starts.shape[0]
    S = starts.shape[1]
    M = theta_rx.shape[1]
    T = chains.shape[0] * n
    for w in prange(W):
        x = np.empty(S, dtype=np.int64)
        h = np.empty(M)
        av = np.empty(M)
        no_r = np.empty(0, dtype=np.int64)
        no_b = np.empty(0)
        no_grid = np.empty(0)
        no_rec = np.empty((0, S), dtype=np.int64)
        done = 0
        stop = False
        for t in range(T):
            c = t // n
            i = t % n
            while live[c] and not stop:
                if done >= quota:
                    stop = True
                    break
                a = _atomic_rmw("add", nxt, t, 1)
                if a >= max_attempts or a > _atomic_load(seen, t):
                    break
                ok, er = run_attempt(seed, chains[c], it, i, a, starts[i], targets[i], dts[i], theta_rx[c], rct_start,
                                     rct_species, rct_stoich, chg_start, chg_species, chg_delta, dep_start, dep_list,
                                     can_inc, can_dec, max_events, x, h, av, False, no_r, no_b, no_grid, no_rec)
                done += 1
                if ok or er != ERR_NONE:
                    k = 0 if ok else 1
                    first[w, t, k] = min(first[w, t, k], a)
                    _atomic_rmw("min", seen, t, a)
                    break
            if stop:
                break
        simulated[w] = done
        stopped[w] = stop


@numba.njit(cache=True)
def lowest_events(first, n, max_attempts, it, best, err_out):
    """Per task, the lowest success index over workers into ``best`` [T]. A chain whose lowest event in
    some interval is an error (max_events) gets the first such interval's error in ``err_out``; else
    one with an interval that ran out of attempts gets ERR_MAX_ATTEMPTS."""
    W, T = first.shape[0], first.shape[1]
    for t in range(T):
        hit = NONE
        bad = NONE
        for w in range(W):
            hit = min(hit, first[w, t, 0])
            bad = min(bad, first[w, t, 1])
        best[t] = hit if hit < bad else (NONE if bad == NONE else 0)  # NONE: ran out of attempts
        c = t // n
        if bad < hit and err_out[c, 0] == ERR_NONE:
            err_out[c, 0] = ERR_MAX_EVENTS
            err_out[c, 1] = it
            err_out[c, 2] = t % n
            err_out[c, 3] = bad
    for t in range(T):
        c = t // n
        if best[t] != NONE:
            continue
        best[t] = 0
        if err_out[c, 0] == ERR_NONE:
            err_out[c, 0] = ERR_MAX_ATTEMPTS
            err_out[c, 1] = it
            err_out[c, 2] = t % n
            err_out[c, 3] = max_attempts


@numba.njit(parallel=True, cache=True)
def path_statistics(seed, chains, it, best, live, theta_rx, starts, targets, dts, rct_start, rct_species, rct_stoich,
                    chg_start, chg_species, chg_delta, dep_start, dep_list, can_inc, can_dec, max_events, r_sum, b_sum):
    """Firings ``r_sum`` and integrals of h ``b_sum`` [C, n, M] of the accepted paths, replayed from their
    Philox addresses (chains not ``live`` get zeros)."""
    n = starts.shape[0]
    S = starts.shape[1]
    M = theta_rx.shape[1]
    empty_grid = np.empty(0)
    empty_rec = np.empty((0, S), dtype=np.int64)
    for t in prange(chains.shape[0] * n):
        c = t // n
        i = t % n
        for j in range(M):
            r_sum[c, i, j] = 0
            b_sum[c, i, j] = 0.0
        if live[c]:
            x = np.empty(S, dtype=np.int64)
            h = np.empty(M)
            av = np.empty(M)
            run_attempt(seed, chains[c], it, i, best[t], starts[i], targets[i], dts[i], theta_rx[c], rct_start,
                        rct_species, rct_stoich, chg_start, chg_species, chg_delta, dep_start, dep_list, can_inc,
                        can_dec, max_events, x, h, av, True, r_sum[c, i], b_sum[c, i], empty_grid, empty_rec)


@numba.njit(cache=True, nogil=True)
def run_chains(seed, chains, theta, it0, n_iter, step0, starts, targets, dts, param_of, fixed_theta, prior_shape,
               prior_rate, rct_start, rct_species, rct_stoich, chg_start, chg_species, chg_delta, dep_start, dep_list,
               can_inc, can_dec, max_events, max_attempts, budget, draws, best_out, err_out, simulated, claims, first):
    """Iterations ``it0 + step0 .. it0 + n_iter - 1`` of every chain in ``chains`` (lock-step, attempts on
    W = ``first.shape[0]`` threads), until about ``budget`` attempts have run: returns the next step
    (``n_iter`` when done), so that a caller can look at the clock and at Ctrl-C between slices.

    theta [C, P] is the state (updated in place); draws [C, n_iter, P] gets theta after each iteration,
    best_out [C, n_iter, n] the accepted attempt index per interval, err_out [C, 4] (code, iteration,
    where, detail) the first error of a chain (which then stops); simulated[0] += attempts run.
    claims [3, C*n] (next index, lowest event, 1 in [2, 0] while an iteration's attempts are cut by
    the budget) and first [W, C*n, 2] carry an unfinished iteration over to the next call; a call with
    ``step0`` = 0 and claims[2, 0] = 0 starts afresh. The draws do not depend on the budget.
    """
    C = chains.shape[0]
    P = prior_shape.shape[0]
    n = starts.shape[0]
    M = param_of.shape[0]
    W = first.shape[0]
    theta_rx = np.empty((C, M))
    best = np.empty(C * n, dtype=np.int64)
    done = np.zeros(W, dtype=np.int64)
    stopped = np.zeros(W, dtype=np.bool_)
    live = np.empty(C, dtype=np.bool_)
    r_sum = np.zeros((C, n, M), dtype=np.int64)
    b_sum = np.zeros((C, n, M))
    nxt = claims[0]
    seen = claims[1]
    used = 0
    step = step0
    while step < n_iter:
        it = it0 + step
        for c in range(C):
            live[c] = err_out[c, 0] == ERR_NONE
            for j in range(M):
                theta_rx[c, j] = theta[c, param_of[j]] if param_of[j] >= 0 else fixed_theta[j]
        if claims[2, 0] == 0:  # a new iteration
            nxt[:] = 0
            seen[:] = NONE
            first[:] = NONE
        quota = max(1, (budget - used + W - 1) // W)
        attempt_claims(seed, chains, it, theta_rx, starts, targets, dts, rct_start, rct_species, rct_stoich,
                       chg_start, chg_species, chg_delta, dep_start, dep_list, can_inc, can_dec, max_events,
                       max_attempts, live, first, done, nxt, seen, quota, stopped)
        used += done.sum()
        simulated[0] += done.sum()
        if stopped.any():
            claims[2, 0] = 1
            return step
        claims[2, 0] = 0
        lowest_events(first, n, max_attempts, it, best, err_out)
        for c in range(C):
            live[c] = err_out[c, 0] == ERR_NONE
        path_statistics(seed, chains, it, best, live, theta_rx, starts, targets, dts, rct_start, rct_species,
                        rct_stoich, chg_start, chg_species, chg_delta, dep_start, dep_list, can_inc, can_dec,
                        max_events, r_sum, b_sum)
        for c in range(C):
            for i in range(n):
                best_out[c, step, i] = best[c * n + i]
            if live[c]:
                er, p = gibbs_theta(seed, chains[c], it, r_sum[c], b_sum[c], param_of, prior_shape, prior_rate,
                                    theta[c])
                if er != ERR_NONE:
                    err_out[c, 0] = er
                    err_out[c, 1] = it
                    err_out[c, 2] = p
            for p in range(P):
                draws[c, step, p] = theta[c, p]
        step += 1
        if used >= budget:
            break
    return step


def monotone(stoich: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(can_inc, can_dec) per species: whether some reaction increases / decreases it."""
    return (np.any(stoich > 0, axis=0).astype(np.int8), np.any(stoich < 0, axis=0).astype(np.int8))


@numba.njit(parallel=True, cache=True)
def hit_counts(seed, chain, it, attempts, starts, targets, dts, theta_rx, rct_start, rct_species, rct_stoich,
               chg_start, chg_species, chg_delta, dep_start, dep_list, can_inc, can_dec, max_events, hits):
    """Attempts 0..attempts-1 of every interval at fixed rates: ``hits[i]`` successes (validation)."""
    n = starts.shape[0]
    S = starts.shape[1]
    M = theta_rx.shape[0]
    flags = np.zeros(n * attempts, dtype=np.int8)
    empty_grid = np.empty(0)
    empty_rec = np.empty((0, S), dtype=np.int64)
    for q in prange(n * attempts):
        i = q // attempts
        x = np.empty(S, dtype=np.int64)
        h = np.empty(M)
        av = np.empty(M)
        r = np.zeros(M, dtype=np.int64)
        b = np.zeros(M)
        ok, er = run_attempt(seed, chain, it, i, q % attempts, starts[i], targets[i], dts[i], theta_rx, rct_start,
                             rct_species, rct_stoich, chg_start, chg_species, chg_delta, dep_start, dep_list, can_inc,
                             can_dec, max_events, x, h, av, False, r, b, empty_grid, empty_rec)
        flags[q] = 1 if ok else 0
    for q in range(n * attempts):
        hits[q // attempts] += flags[q]
