"""The CPU trajectory kernel (Numba): one trajectory per iteration of a ``prange``.

Random numbers: trajectory c of seed s uses the Philox key ``(s, c)``; event e (the e-th state change
attempt, from 0) uses counter ``(e mod 2**32, e >> 32, 0, 0)``: words 0-1 the waiting time's uniform,
words 2-3 the node's; istate group g uses counter ``(g, 0, 1, 0)``, words 0-1 (not drawn here where its first
option has probability 1: the uniform is < 1). The GPU kernel (``kernels/ctbn.cu``) draws the same words and does
the same arithmetic.

Time in windows is counted in integer *quanta*, ``QUANTA`` per ``time_tick``: an event at time t
falls at quantum ``floor(t * QUANTA / time_tick)`` and window k covers quanta ``[k, k+1) * QUANTA``,
so each trajectory spends exactly ``QUANTA`` quanta in every window and sums over trajectories are
exact integers (no dependence on how trajectories are split). Event times are thereby rounded to
``time_tick / 2**30``. The time integral of the transition entropy over a window is kept per
trajectory as an integer in units of ``2**-24`` tick x bit.

Records: per trajectory, one ``(window, visible state, quanta)`` per distinct visible state in each
window, in order of first visit, or one ``(first window, visible state, -(last window + 1))`` per stretch of
whole windows in one state (at most ``rec_cap``; more, and the chunk is run again with a larger slab), added to
a hash table per part of the trajectories when the trajectory ends (:func:`hash_add`). With few visible
nodes, :func:`simulate_dense` keeps only the current window's records and adds them straight into dense
[window, state] tables, as ``kernels/ctbn.cu`` does; both give the same integer sums.

After a flip only the rates that read the flipped node are recomputed; the sums (and the flip's scan) run over
the nodes whose rate is not 0, kept as a bit mask, in node order: every rate is 0 or > 0 and adding a 0 changes
no bit, so the bits are those of a full recomputation over every node. ``vis_nodes`` (the GPU kernel's list of
visible nodes) is not read here: the entropy's terms are the mask's visible nodes.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange
from numba.cpython.unsafe.numbers import trailing_zeros

from ..backends.dsmath import INV_LN2, _f64_bits, ds_log, neglog_u01
from ..rng.philox import philox4x32_10, u01_f64
from .block import QUANTA, SQ_SHIFT, TH_SCALE, TH_SQ_SHIFT, TH_UNITS  # noqa: F401 -- the counts' units

MEMO_BITS = 4  # 2**4 remembered entropy terms per part (most models' rates take a few values)



@numba.njit(inline="always", cache=True)
def _node_rate(x, i, par_start, par_index, tt_start, tt, val_start, vals):
    """Node i's flip rate in state ``x``: a table lookup over its parents (the first is the most significant bit)."""
    row = 0
    for k in range(par_start[i], par_start[i + 1]):
        row = (row << 1) | x[par_index[k]]
    return vals[val_start[i] + tt[tt_start[i] + row]]


@numba.njit(inline="always", cache=True)
def _set_bit(words, i, on):
    b = np.uint64(1) << np.uint64(i & 63)
    if on:
        words[i >> 6] |= b
    else:
        words[i >> 6] &= ~b


@numba.njit(inline="always", cache=True)
def _update_rates(x, n, last, child_start, child_index, par_start, par_index, tt_start, tt, val_start, vals,
                  internal, rates, nz):
    """The flip rates after node ``last`` flipped (-1: all of them; -2: none, they are current; else only the
    nodes whose rates read it);
    returns (sum of all rates, sum of the internal nodes' non-zero rates), each summed in node order. ``nz``: bit i
    of word i // 64 is set where node i's rate is not 0 (kept here; -2: current too)."""
    if last == -1:
        for i in range(n):
            rates[i] = _node_rate(x, i, par_start, par_index, tt_start, tt, val_start, vals)
            _set_bit(nz, i, rates[i] != 0.0)
    elif last >= 0:
        for k in range(child_start[last], child_start[last + 1]):
            i = child_index[k]
            rates[i] = _node_rate(x, i, par_start, par_index, tt_start, tt, val_start, vals)
            _set_bit(nz, i, rates[i] != 0.0)
    total = 0.0  # adding the zero rates (all rates are 0 or > 0) would change no bit: only nz's are added
    rate_internal = 0.0
    for w in range(nz.shape[0]):
        m = nz[w]
        while m:
            i = (w << 6) + trailing_zeros(m)
            m &= m - np.uint64(1)
            ri = rates[i]
            total += ri
            if internal[i]:
                rate_internal += ri
    return total, rate_internal


@numba.njit(inline="always", cache=True)
def _transition_entropy(rates, nz, internal, n, total, rate_internal, memo_p, memo_t):
    """MaBoSS's TH: the entropy (bits) of which visible node flips next (0 for a one-node model); its terms: the
    visible nodes with a rate (``nz``), in node order. A term ``-p log2 p`` is remembered by p (``memo_p``,
    ``memo_t``: ``2**MEMO_BITS`` slots, p NaN when empty): the same p gives the same bits without the log."""
    if n == 1:
        return 0.0
    tni = total - rate_internal
    th = 0.0
    for w in range(nz.shape[0]):
        m = nz[w]
        while m:
            i = (w << 6) + trailing_zeros(m)
            m &= m - np.uint64(1)
            if internal[i]:
                continue
            p = rates[i] / tni
            h = (np.uint64(_f64_bits(p)) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - MEMO_BITS)
            if memo_p[h] == p:
                term = memo_t[h]
            else:
                term = (ds_log(p) * INV_LN2) * p
                memo_p[h] = p
                memo_t[h] = term
            th -= term
    return th


@numba.njit(inline="always", cache=True)
def _start_template(n, grp_start, grp_cum, grp_node_start, grp_nodes, opt_bits, fix_mask, fix_val):
    """(x0, groups): the initial state's nodes that need no draw (groups whose first option has probability 1,
    and the fixed nodes) in ``x0``, and the groups that need one (istate groups are disjoint)."""
    x0 = np.zeros(n, np.uint8)
    groups = np.zeros(grp_start.shape[0] - 1, np.int32)
    ng = 0
    for g in range(grp_start.shape[0] - 1):
        k = grp_start[g]
        if grp_cum[k] < 1.0:
            groups[ng] = g
            ng += 1
            continue
        bits = opt_bits[k]  # the first option, whatever the uniform (< 1)
        for j in range(grp_node_start[g + 1] - grp_node_start[g]):
            x0[grp_nodes[grp_node_start[g] + j]] = np.uint8((bits >> np.uint64(j)) & np.uint64(1))
    for i in range(n):
        if fix_mask[i]:
            x0[i] = fix_val[i]
    return x0, groups[:ng]


@numba.njit(inline="always", cache=True)
def _state_words(x, vpos, xw, vis):
    """``x`` as bits: every node (node i: bit i of ``xw``) and the visible ones (``vis``, by ``vpos``)."""
    xw[:] = 0
    vis[:] = 0
    for i in range(x.shape[0]):
        if x[i]:
            xw[i >> 6] |= np.uint64(1) << np.uint64(i & 63)
            if vpos[i] >= 0:
                vis[vpos[i] >> 6] |= np.uint64(1) << np.uint64(vpos[i] & 63)


@numba.njit(inline="always", cache=True)
def _initial_state(x, x0, groups, seed, traj, grp_start, grp_cum, grp_node_start, grp_nodes, opt_bits, fix_mask):
    """Trajectory ``traj``'s initial state in ``x``: ``x0`` (:func:`_start_template`), then each group g of
    ``groups`` takes its option from the uniform of counter (g, 0, 1, 0) (fixed nodes keep their value)."""
    x[:] = x0
    for gi in range(groups.shape[0]):
        g = groups[gi]
        w0, w1, w2, w3 = philox4x32_10(g, 0, 1, 0, seed, traj)
        u = u01_f64(w0, w1)
        k = grp_start[g]
        while k < grp_start[g + 1] - 1 and not (u < grp_cum[k]):
            k += 1
        bits = opt_bits[k]
        for j in range(grp_node_start[g + 1] - grp_node_start[g]):
            i = grp_nodes[grp_node_start[g] + j]
            if not fix_mask[i]:
                x[i] = np.uint8((bits >> np.uint64(j)) & np.uint64(1))


@numba.njit(inline="always", cache=True)
def _next_event(x, n, last, child_start, child_index, nz, par_start, par_index, tt_start, tt, val_start, vals,
                internal, rates, seed, traj, ev, t, max_time, tick, discrete, memo_p, memo_t):
    """The flip rates in state ``x`` (node ``last`` flipped last, -1: none yet, -2: ``rates`` are x's) and the
    draws of event ``ev``:
    (total, u2, t_new, th, fixed point)."""
    total, rate_internal = _update_rates(x, n, last, child_start, child_index, par_start, par_index, tt_start, tt,
                                         val_start, vals, internal, rates, nz)
    if total == 0.0:
        return total, 0.0, max_time, 0.0, True
    w0, w1, w2, w3 = philox4x32_10(np.uint64(ev) & np.uint64(0xFFFFFFFF), np.uint64(ev) >> np.uint64(32), 0, 0,
                                   seed, traj)
    u2 = u01_f64(w2, w3)
    if discrete:
        t_new = t + tick
    else:
        t_new = t + neglog_u01(u01_f64(w0, w1)) / total
    return total, u2, t_new, _transition_entropy(rates, nz, internal, n, total, rate_internal, memo_p, memo_t), False


@numba.njit(inline="always", cache=True)
def _flip(rates, nz, u2, total):
    """The node that flips: the first whose cumulative rate exceeds ``u2 * total`` (node order, the nodes with a
    rate: ``nz``)."""
    rr = u2 * total
    node = -1
    for w in range(nz.shape[0]):
        m = nz[w]
        while m:
            node = (w << 6) + trailing_zeros(m)
            m &= m - np.uint64(1)
            rr -= rates[node]
            if rr < 0.0:
                return node
    return node


@numba.njit(inline="always", cache=True)
def _part_start(n, n_words, vw, grp_start, grp_cum, grp_node_start, grp_nodes, opt_bits, fix_mask, fix_val, vpos,
                child_start, child_index, par_start, par_index, tt_start, tt, val_start, vals, internal):
    """A part's work arrays (x, rates, nz: the nodes with a rate as bits, see _update_rates; the entropy
    memo; xw: x as bits, kept with x) and its trajectories' start: x0 and the option groups drawn per
    trajectory; when none is (same_start), the start's bits xw0, visible words vis0, rates0 and nz0."""
    x = np.zeros(n, np.uint8)
    rates = np.zeros(n, np.float64)
    x0, groups = _start_template(n, grp_start, grp_cum, grp_node_start, grp_nodes, opt_bits, fix_mask, fix_val)
    same_start = groups.shape[0] == 0
    rates0 = np.zeros(n, np.float64)
    nz = np.zeros((n + 63) >> 6, np.uint64)
    nz0 = np.zeros((n + 63) >> 6, np.uint64)
    memo_p = np.full(1 << MEMO_BITS, np.nan)
    memo_t = np.zeros(1 << MEMO_BITS, np.float64)
    xw = np.zeros(n_words, np.uint64)
    xw0 = np.zeros(n_words, np.uint64)
    vis0 = np.zeros(vw, np.uint64)
    _state_words(x0, vpos, xw0, vis0)
    if same_start:
        _update_rates(x0, n, -1, child_start, child_index, par_start, par_index, tt_start, tt, val_start, vals,
                      internal, rates0, nz0)
    return x, rates, x0, groups, same_start, rates0, nz, nz0, memo_p, memo_t, xw, xw0, vis0


@numba.njit(parallel=True, cache=True)
def simulate_chunk(par_start, par_index, tt_start, tt, val_start, vals, internal, vpos, grp_start, grp_cum,
                   grp_node_start,
                   grp_nodes, opt_bits, fix_mask, fix_val, child_start, child_index, vis_nodes, seed, traj0, n_traj,
                   n_win, max_time, tick, discrete, rec_cap, kw, ks, sq, sq2, full, th_acc, final_vis,
                   final_full, fixed, events, over):
    """Per-trajectory records (see the module's docstring), summed per part into hash tables as each trajectory
    ends: ``parts = th_acc.shape[0]`` ranges of trajectories in parallel, part p into row p of the tables of
    :func:`hash_add`. A stretch of whole windows ``win .. k-1`` in one visible state is one *run* record
    ``(win, state, -k)`` (its windows hold ``QUANTA`` each). Part p sums the windows' entropy integrals into
    ``th_acc[p]``: rows 0-1 the integers and their squares of windows with records, rows 2-3 the same as
    differences (+ at a run's first window, - at the window after it). ``over[p]``: 1 a trajectory had more
    than ``rec_cap`` records, 2 the table was too small (the part stopped; the call is redone)."""
    n = par_start.shape[0] - 1
    scale = QUANTA / tick
    m_end = np.int64(n_win) * QUANTA
    vw = ks.shape[2]
    parts = th_acc.shape[0]
    for p in prange(parts):
        rec_win = np.zeros(rec_cap, np.int32)
        rec_state = np.zeros((rec_cap, vw), np.uint64)
        rec_q = np.zeros(rec_cap, np.int64)
        used = 0
        vis = np.zeros(vw, np.uint64)  # the visible state: bit j of word j // 64 = visible node j
        x, rates, x0, groups, same_start, rates0, nz, nz0, memo_p, memo_t, xw, xw0, vis0 = _part_start(
            n, final_full.shape[1], vw, grp_start, grp_cum, grp_node_start, grp_nodes, opt_bits, fix_mask, fix_val,
            vpos, child_start, child_index, par_start, par_index, tt_start, tt, val_start, vals, internal)
        for c in range(n_traj * p // parts, n_traj * (p + 1) // parts):
            traj = traj0 + c
            _initial_state(x, x0, groups, seed, traj, grp_start, grp_cum, grp_node_start, grp_nodes, opt_bits,
                           fix_mask)
            if same_start:
                xw[:] = xw0
                vis[:] = vis0
            else:
                _state_words(x, vpos, xw, vis)
            t = 0.0
            pos = np.int64(0)
            win = 0
            wstart = 0
            nrec = 0
            thacc = 0.0
            ev = np.int64(0)
            fp = 0
            ovr = False
            node = -1
            if same_start:  # every trajectory starts in x0: its rates, computed once
                rates[:] = rates0
                nz[:] = nz0
                node = -2
            while True:
                total, u2, t_new, th, is_fp = _next_event(x, n, node, child_start, child_index, nz, par_start,
                                                          par_index, tt_start, tt, val_start, vals, internal, rates,
                                                          seed, traj, ev, t, max_time, tick, discrete, memo_p,
                                                          memo_t)
                if is_fp:
                    fp = 1
                if t_new >= max_time:
                    pos_new = m_end
                else:
                    pos_new = min(np.int64(math.floor(t_new * scale)), m_end)
                while pos < pos_new:  # the time in [pos, pos_new) goes to the visible state's records
                    wend = np.int64(win + 1) * QUANTA
                    run = nrec == wstart and pos == wend - QUANTA and pos_new >= wend  # whole windows win .. k-1
                    r = nrec
                    if not run:
                        r = wstart
                        while r < nrec:
                            same = True
                            for w in range(vw):
                                if rec_state[r, w] != vis[w]:
                                    same = False
                                    break
                            if same:
                                break
                            r += 1
                    if r == nrec:
                        if nrec == rec_cap:
                            ovr = True
                            break
                        rec_win[r] = win
                        for w in range(vw):
                            rec_state[r, w] = vis[w]
                        rec_q[r] = 0
                        nrec += 1
                    if run:
                        k = pos_new // QUANTA
                        acc_th = 0.0
                        acc_th += np.float64(QUANTA) * th
                        ti = np.int64(math.floor(acc_th * TH_SCALE + 0.5))
                        ts = ti >> TH_SQ_SHIFT
                        th_acc[p, 2, win] += ti
                        th_acc[p, 2, k] -= ti
                        th_acc[p, 3, win] += ts * ts
                        th_acc[p, 3, k] -= ts * ts
                        rec_q[r] = -k
                        pos = k * QUANTA
                        win = k
                        wstart = nrec
                        continue
                    seg = min(pos_new, wend)
                    q = seg - pos
                    rec_q[r] += q
                    thacc += np.float64(q) * th
                    pos = seg
                    if pos == wend:
                        ti = np.int64(math.floor(thacc * TH_SCALE + 0.5))
                        ts = ti >> TH_SQ_SHIFT
                        th_acc[p, 0, win] += ti
                        th_acc[p, 1, win] += ts * ts
                        thacc = 0.0
                        win += 1
                        wstart = nrec
                if ovr or t_new >= max_time:
                    break
                node = _flip(rates, nz, u2, total)
                x[node] ^= np.uint8(1)
                xw[node >> 6] ^= np.uint64(1) << np.uint64(node & 63)
                if vpos[node] >= 0:
                    vis[vpos[node] >> 6] ^= np.uint64(1) << np.uint64(vpos[node] & 63)
                t = t_new
                ev += 1
            if ovr:
                over[p] = 1
                break
            for r in range(nrec):
                used = hash_add(kw, ks, sq, sq2, full, p, used, rec_win[r], rec_state[r], rec_q[r])
            if used < 0:
                over[p] = 2
                break
            for w in range(vw):
                final_vis[c, w] = vis[w]
            final_full[c, :] = xw
            fixed[c] = fp
            events[c] = ev


@numba.njit(parallel=True, cache=True)
def simulate_dense(par_start, par_index, tt_start, tt, val_start, vals, internal, vpos, grp_start, grp_cum,
                   grp_node_start, grp_nodes, opt_bits, fix_mask, fix_val, child_start, child_index, vis_nodes, seed,
                   traj0, n_traj, n_win, max_time, tick, discrete, rec_cap, n_states, acc, o_q, o_q2, o_full, o_final,
                   o_th, o_th2, o_dth, o_dth2, o_ev,
                   final_full, fixed, over):
    """:func:`simulate_chunk` summed straight into dense tables (at most 64 visible nodes, a state being one
    word): ``parts = acc.shape[0]`` ranges of trajectories in parallel, each into its own row of ``acc``
    (the tables of ``kernels/ctbn.cu``: quanta and squares per [window, state], +1 / -1 at the first window
    of a stretch of whole windows in one state and at the window after it, entropy integrals likewise, state
    counts at max_time, events). A trajectory keeps only its current window's records (``rec_cap`` of them;
    ``over[p] = 1``: more were needed). ``final_full`` and ``fixed`` as in :func:`simulate_chunk`."""
    n = par_start.shape[0] - 1
    scale = QUANTA / tick
    m_end = np.int64(n_win) * QUANTA
    parts = acc.shape[0]
    S = np.int64(n_states)
    vw = 1
    for p in prange(parts):
        a = acc[p]
        visw = np.zeros(vw, np.uint64)
        rec_state = np.zeros(rec_cap, np.int64)
        rec_q = np.zeros(rec_cap, np.int64)
        x, rates, x0, groups, same_start, rates0, nz, nz0, memo_p, memo_t, xw, xw0, vis0 = _part_start(
            n, final_full.shape[1], vw, grp_start, grp_cum, grp_node_start, grp_nodes, opt_bits, fix_mask, fix_val,
            vpos, child_start, child_index, par_start, par_index, tt_start, tt, val_start, vals, internal)
        for c in range(n_traj * p // parts, n_traj * (p + 1) // parts):
            traj = traj0 + c
            _initial_state(x, x0, groups, seed, traj, grp_start, grp_cum, grp_node_start, grp_nodes, opt_bits,
                           fix_mask)
            if same_start:
                xw[:] = xw0
                vis = np.int64(vis0[0])
            else:
                _state_words(x, vpos, xw, visw)
                vis = np.int64(visw[0])
            t = 0.0
            pos = np.int64(0)
            win = 0
            nrec = 0
            thacc = 0.0
            ev = np.int64(0)
            fp = 0
            node = -1
            if same_start:  # every trajectory starts in x0: its rates, computed once
                rates[:] = rates0
                nz[:] = nz0
                node = -2
            while True:
                total, u2, t_new, th, is_fp = _next_event(x, n, node, child_start, child_index, nz, par_start,
                                                          par_index, tt_start, tt, val_start, vals, internal, rates,
                                                          seed, traj, ev, t, max_time, tick, discrete, memo_p,
                                                          memo_t)
                if is_fp:
                    fp = 1
                if t_new >= max_time:
                    pos_new = m_end
                else:
                    pos_new = min(np.int64(math.floor(t_new * scale)), m_end)
                while pos < pos_new:
                    wend = np.int64(win + 1) * QUANTA
                    if nrec == 0 and pos == wend - QUANTA and pos_new >= wend:  # whole windows win .. k-1
                        k = pos_new // QUANTA
                        acc_th = 0.0
                        acc_th += np.float64(QUANTA) * th
                        ti = np.int64(math.floor(acc_th * TH_SCALE + 0.5))
                        ts = ti >> TH_SQ_SHIFT
                        a[o_full + win * S + vis] += 1
                        a[o_full + k * S + vis] -= 1
                        a[o_dth + win] += ti
                        a[o_dth + k] -= ti
                        a[o_dth2 + win] += ts * ts
                        a[o_dth2 + k] -= ts * ts
                        pos = k * QUANTA
                        win = k
                        continue
                    seg = min(pos_new, wend)
                    q = seg - pos
                    r = 0
                    while r < nrec and rec_state[r] != vis:
                        r += 1
                    if r == nrec:
                        if nrec == rec_cap:
                            over[p] = 1
                            break
                        rec_state[r] = vis
                        rec_q[r] = 0
                        nrec += 1
                    rec_q[r] += q
                    thacc += np.float64(q) * th
                    pos = seg
                    if pos == wend:
                        ti = np.int64(math.floor(thacc * TH_SCALE + 0.5))
                        ts = ti >> TH_SQ_SHIFT
                        a[o_th + win] += ti
                        a[o_th2 + win] += ts * ts
                        for e in range(nrec):
                            qq = rec_q[e] >> SQ_SHIFT
                            a[o_q + win * S + rec_state[e]] += rec_q[e]
                            a[o_q2 + win * S + rec_state[e]] += qq * qq
                        thacc = 0.0
                        win += 1
                        nrec = 0
                if over[p] or t_new >= max_time:
                    break
                node = _flip(rates, nz, u2, total)
                x[node] ^= np.uint8(1)
                xw[node >> 6] ^= np.uint64(1) << np.uint64(node & 63)
                if vpos[node] >= 0:
                    vis ^= np.int64(1) << np.int64(vpos[node])
                t = t_new
                ev += 1
            if over[p]:
                break
            a[o_ev] += ev
            a[o_final + vis] += 1
            final_full[c, :] = xw
            fixed[c] = fp


@numba.njit(inline="always", cache=True)
def hash_add(kw, ks, sq, sq2, full, p, used, w, state, q):
    """Add record (window ``w``, ``state``, quanta ``q``) to part p's open-addressing table (row p of ``kw``
    (window, -1: empty), ``ks`` (state words) and the sums ``sq`` (quanta), ``sq2`` (squares of
    ``q >> SQ_SHIFT``) and ``full``): a run record (``q = -k``: whole windows ``w .. k-1``) adds 1 to ``full``
    at (w, state) and -1 at (k, state). ``used``: the part's keys so far; returns the new count, or -1 when the
    table would be more than half full. Integer sums: the totals do not depend on the parts."""
    if used < 0:
        return used
    size = kw.shape[1]
    mask = np.uint64(size - 1)
    vw = ks.shape[2]
    for end in range(2 if q < 0 else 1):
        kwin = np.int32(-q) if end else np.int32(w)
        h = np.uint64(kwin) * np.uint64(0xC2B2AE3D27D4EB4F)
        for j in range(vw):
            h = (h ^ state[j]) * np.uint64(0x9E3779B97F4A7C15)
            h ^= h >> np.uint64(32)  # a word's high bits reach the slot's bits too
        h = (h >> np.uint64(20)) & mask
        while kw[p, h] != -1:
            if kw[p, h] == kwin:
                same = True
                for j in range(vw):
                    if ks[p, h, j] != state[j]:
                        same = False
                        break
                if same:
                    break
            h = (h + np.uint64(1)) & mask
        if kw[p, h] == -1:
            if 2 * (used + 1) > size:
                return -1
            kw[p, h] = kwin
            for j in range(vw):
                ks[p, h, j] = state[j]
            used += 1
        if q < 0:
            full[p, h] += -1 if end else 1
        else:
            sq[p, h] += q
            qq = q >> SQ_SHIFT
            sq2[p, h] += qq * qq
    return used
