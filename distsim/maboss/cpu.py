"""The CPU trajectory kernel (Numba): one trajectory per iteration of a ``prange``.

Random numbers: trajectory c of seed s uses the Philox key ``(s, c)``; event e (the e-th state change
attempt, from 0) uses counter ``(e mod 2**32, e >> 32, 0, 0)``: words 0-1 the waiting time's uniform,
words 2-3 the node's; istate group g uses counter ``(g, 0, 1, 0)``, words 0-1. The GPU kernel
(``kernels/ctbn.cu``) draws the same words and does the same arithmetic.

Time in windows is counted in integer *quanta*, ``QUANTA`` per ``time_tick``: an event at time t
falls at quantum ``floor(t * QUANTA / time_tick)`` and window k covers quanta ``[k, k+1) * QUANTA``,
so each trajectory spends exactly ``QUANTA`` quanta in every window and sums over trajectories are
exact integers (no dependence on how trajectories are split). Event times are thereby rounded to
``time_tick / 2**30``. The time integral of the transition entropy over a window is kept per
trajectory as an integer in units of ``2**-24`` tick x bit.

Records: per trajectory, one ``(window, visible state, quanta)`` per distinct visible state in each
window, in order of first visit (the slab ``rec_*[c, :rec_cap]``, a state being ``rec_state[c, r, :]``,
its 64-bit words; ``rec_n[c] > rec_cap`` means the slab
overflowed and the chunk is run again with a larger one).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from ..backends.dsmath import INV_LN2, ds_log, neglog_u01
from ..rng.philox import philox4x32_10, u01_f64

QUANTA = 1 << 30
TH_UNITS = 1 << 24  # transition-entropy integral: units of 2**-24 tick x bit
TH_SCALE = TH_UNITS / QUANTA  # a power of two: the conversion is exact



@numba.njit(inline="always", cache=True)
def _eval_rates(x, n, par_start, par_index, tt_start, tt, val_start, vals, rates):
    """Every node's flip rate in state ``x`` (a table lookup over its parents); returns their sum in node order."""
    total = 0.0
    for i in range(n):
        row = 0
        for k in range(par_start[i], par_start[i + 1]):
            row = (row << 1) | x[par_index[k]]
        ri = vals[val_start[i] + tt[tt_start[i] + row]]
        rates[i] = ri
        total += ri
    return total


@numba.njit(inline="always", cache=True)
def _transition_entropy(rates, internal, n, total):
    """MaBoSS's TH: the entropy (bits) of which visible node flips next (0 for a one-node model)."""
    if n == 1:
        return 0.0
    rate_internal = 0.0
    for i in range(n):
        if rates[i] != 0.0 and internal[i]:
            rate_internal += rates[i]
    tni = total - rate_internal
    th = 0.0
    for i in range(n):
        if rates[i] != 0.0 and not internal[i]:
            p = rates[i] / tni
            th -= (ds_log(p) * INV_LN2) * p
    return th


@numba.njit(parallel=True, cache=True)
def simulate_chunk(par_start, par_index, tt_start, tt, val_start, vals, internal, vpos, grp_start, grp_cum,
                   grp_node_start,
                   grp_nodes, opt_bits, fix_mask, fix_val, seed, traj0, n_traj, n_win, max_time, tick, discrete,
                   rec_cap, rec_win, rec_state, rec_q, rec_n, th_int, final_vis, final_full, fixed, events):
    n = par_start.shape[0] - 1
    n_groups = grp_start.shape[0] - 1
    scale = QUANTA / tick
    m_end = np.int64(n_win) * QUANTA
    vw = rec_state.shape[2]
    for c in prange(n_traj):
        traj = traj0 + c
        x = np.zeros(n, np.uint8)
        rates = np.zeros(n, np.float64)
        for g in range(n_groups):
            w0, w1, w2, w3 = philox4x32_10(g, 0, 1, 0, seed, traj)
            u = u01_f64(w0, w1)
            k = grp_start[g]
            while k < grp_start[g + 1] - 1 and not (u < grp_cum[k]):
                k += 1
            bits = opt_bits[k]
            for j in range(grp_node_start[g + 1] - grp_node_start[g]):
                x[grp_nodes[grp_node_start[g] + j]] = np.uint8((bits >> np.uint64(j)) & np.uint64(1))
        for i in range(n):
            if fix_mask[i]:
                x[i] = fix_val[i]
        vis = np.zeros(vw, np.uint64)  # the visible state: bit j of word j // 64 = visible node j
        for i in range(n):
            if vpos[i] >= 0 and x[i]:
                vis[vpos[i] >> 6] |= np.uint64(1) << np.uint64(vpos[i] & 63)
        t = 0.0
        pos = np.int64(0)
        win = 0
        wstart = 0
        nrec = 0
        thacc = 0.0
        ev = np.int64(0)
        fp = 0
        over = False
        while True:
            total = _eval_rates(x, n, par_start, par_index, tt_start, tt, val_start, vals, rates)
            u2 = 0.0
            if total == 0.0:
                t_new = max_time
                th = 0.0
                fp = 1
            else:
                w0, w1, w2, w3 = philox4x32_10(np.uint64(ev) & np.uint64(0xFFFFFFFF), np.uint64(ev) >> np.uint64(32),
                                               0, 0, seed, traj)
                u2 = u01_f64(w2, w3)
                if discrete:
                    t_new = t + tick
                else:
                    t_new = t + neglog_u01(u01_f64(w0, w1)) / total
                th = _transition_entropy(rates, internal, n, total)
            if t_new >= max_time:
                pos_new = m_end
            else:
                pos_new = min(np.int64(math.floor(t_new * scale)), m_end)
            while pos < pos_new:  # the time in [pos, pos_new) goes to the visible state's records
                wend = np.int64(win + 1) * QUANTA
                seg = min(pos_new, wend)
                q = seg - pos
                r = wstart
                while r < nrec:
                    same = True
                    for w in range(vw):
                        if rec_state[c, r, w] != vis[w]:
                            same = False
                            break
                    if same:
                        break
                    r += 1
                if r == nrec:
                    if nrec == rec_cap:
                        over = True
                        break
                    rec_win[c, r] = win
                    for w in range(vw):
                        rec_state[c, r, w] = vis[w]
                    rec_q[c, r] = 0
                    nrec += 1
                rec_q[c, r] += q
                thacc += np.float64(q) * th
                pos = seg
                if pos == wend:
                    th_int[c, win] = np.int64(math.floor(thacc * TH_SCALE + 0.5))
                    thacc = 0.0
                    win += 1
                    wstart = nrec
            if over or t_new >= max_time:
                break
            rr = u2 * total
            node = -1
            for i in range(n):
                if rates[i] > 0.0:
                    node = i
                    rr -= rates[i]
                    if rr < 0.0:
                        break
            x[node] ^= np.uint8(1)
            if vpos[node] >= 0:
                vis[vpos[node] >> 6] ^= np.uint64(1) << np.uint64(vpos[node] & 63)
            t = t_new
            ev += 1
        rec_n[c] = rec_cap + 1 if over else nrec
        for w in range(vw):
            final_vis[c, w] = vis[w]
        for w in range(final_full.shape[1]):
            final_full[c, w] = np.uint64(0)
        for i in range(n):
            if x[i]:
                final_full[c, i >> 6] |= np.uint64(1) << np.uint64(i & 63)
        fixed[c] = fp
        events[c] = ev


@numba.njit(parallel=True, cache=True)
def hash_reduce(rec_win, rec_state, rec_q, rec_n, size, sq_shift, parts):
    """Sum the records' quanta (and squares of ``q >> sq_shift``) per (window, state): ``parts`` ranges of
    trajectories in parallel, each into its own open-addressing table of ``size`` (a power of two) slots
    (row p of the outputs; a key may appear in several rows). ``ok`` is False when a table would be more
    than half full. Integer sums: the result does not depend on ``parts``."""
    n = rec_n.shape[0]
    mask = np.uint64(size - 1)
    kw = np.full((parts, size), -1, np.int32)
    vw = rec_state.shape[2]
    ks = np.zeros((parts, size, vw), np.uint64)
    sq = np.zeros((parts, size), np.int64)
    sq2 = np.zeros((parts, size), np.int64)
    ok = np.ones(parts, np.uint8)
    for p in prange(parts):
        used = 0
        for c in range(n * p // parts, n * (p + 1) // parts):
            if ok[p] == 0:
                break
            for r in range(rec_n[c]):
                w = rec_win[c, r]
                h = np.uint64(w) * np.uint64(0xC2B2AE3D27D4EB4F)
                for j in range(vw):
                    h = (h ^ rec_state[c, r, j]) * np.uint64(0x9E3779B97F4A7C15)
                h = (h >> np.uint64(20)) & mask
                while kw[p, h] != -1:
                    if kw[p, h] == w:
                        same = True
                        for j in range(vw):
                            if ks[p, h, j] != rec_state[c, r, j]:
                                same = False
                                break
                        if same:
                            break
                    h = (h + np.uint64(1)) & mask
                if kw[p, h] == -1:
                    if 2 * (used + 1) > size:
                        ok[p] = 0
                        break
                    kw[p, h] = w
                    for j in range(vw):
                        ks[p, h, j] = rec_state[c, r, j]
                    used += 1
                q = rec_q[c, r]
                sq[p, h] += q
                qq = q >> sq_shift
                sq2[p, h] += qq * qq
    return kw, ks, sq, sq2, ok.min() == 1
