"""CPU kernels (Numba) of the GRN GA: population evaluation, Philox draws, initial links, breeding
(crossover, connectivity revert, mutation), the (mu + lambda) survivors' gather, the best-so-far update.

Mirrors ``kernels/grn_ga.cu`` line by line. Individuals are bit-packed: ``act``/``rep`` [P, W, n]
uint32, word [w, j] holds sources 32w..32w+31 of target j. One synchronous update of gene j is
A = sum_w popc(act[w, j] & x[w]), R = sum_w popc(rep[w, j] & x[w]) followed by a table lookup:
five comparison bits (A>R, A>=2, R>A, R>=1, R>=2) are masked by the rule's ON and OFF selectors
(``ON_TABLE``/``OFF_TABLE``, one byte per rule), so no rule has its own branch.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange, types
from numba.extending import intrinsic

from ..rng.philox import below, philox4x32_10

# condition bits: 1: A>R  2: A>=2  4: R>A  8: R>=1  16: R>=2; one selector byte per rule (0..3)
ON_TABLE = 0x00020001   # most: A>R; joint activators: A>=2
OFF_TABLE = 0x10000804  # most: R>A; absolute repressor: R>=1; joint repressors: R>=2

# Philox purposes (counter word 2); counter = (index, generation, purpose, block), key = (seed, island)
P_INIT_LINK = 1
P_INIT_RULE = 2
P_SELECT = 3
P_CROSS = 4
P_MUTATE = 5


@intrinsic
def popc32(typingctx, x):
    """Population count of a uint32 (LLVM ctpop: one POPCNT instruction)."""
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return types.uint32(types.uint32), codegen


@numba.njit(inline="always", cache=True)
def next_bit(a, r, old, rule):
    """New state bit of a gene with A=a active activators, R=r active repressors, rule code ``rule``."""
    cond = np.uint32((a > r) | ((a >= 2) << 1) | ((r > a) << 2) | ((r >= 1) << 3) | ((r >= 2) << 4))
    sh = np.uint32(8 * rule)
    on = (cond & ((np.uint32(ON_TABLE) >> sh) & np.uint32(0xFF))) != 0
    off = (cond & ((np.uint32(OFF_TABLE) >> sh) & np.uint32(0xFF))) != 0
    return np.uint32((old & np.uint32(1 - off)) | np.uint32(on))


@numba.njit(inline="always", cache=True)
def _evaluate_one(p, act, rep, rules, x0, target, ref_act, ref_rep, steps, wn, wl, out):
    _P, W, G = act.shape
    x = x0.copy()
    nx = np.empty(W, np.uint32)
    A = np.empty(G, np.int32)
    R = np.empty(G, np.int32)
    for _t in range(steps):
        A[:] = 0
        R[:] = 0
        for w in range(W):
            xw = x[w]
            for j in range(G):
                A[j] += popc32(np.uint32(act[p, w, j] & xw))
                R[j] += popc32(np.uint32(rep[p, w, j] & xw))
        nx[:] = 0
        for j in range(G):
            old = (x[j >> 5] >> np.uint32(j & 31)) & np.uint32(1)
            bit = next_bit(A[j], R[j], old, rules[p, j])
            nx[j >> 5] |= bit << np.uint32(j & 31)
        x, nx = nx, x
    nm = 0
    for w in range(W):
        nm += popc32(np.uint32(x[w] ^ target[w]))
    lm = 0
    for w in range(W):
        for j in range(G):
            lm += popc32(np.uint32((act[p, w, j] ^ ref_act[w, j]) | (rep[p, w, j] ^ ref_rep[w, j])))
    out[p] = wn * nm + wl * lm


@numba.njit(parallel=True, cache=True)
def evaluate(act, rep, rules, x0, target, ref_act, ref_rep, steps, wn, wl, out):
    """out[p] = wn * node_mismatches + wl * link_mismatches for every individual p (int64); threads."""
    for p in prange(act.shape[0]):
        _evaluate_one(p, act, rep, rules, x0, target, ref_act, ref_rep, steps, wn, wl, out)


@numba.njit(cache=True)
def evaluate_serial(act, rep, rules, x0, target, ref_act, ref_rep, steps, wn, wl, out):
    """:func:`evaluate` on one thread (small populations: no fork/join cost)."""
    for p in range(act.shape[0]):
        _evaluate_one(p, act, rep, rules, x0, target, ref_act, ref_rep, steps, wn, wl, out)


@numba.njit(cache=True)
def trajectory_words(act, rep, rules, x0, steps, out):
    """States x(0..steps) as packed words out[steps+1, W] of one individual (act/rep [W, n])."""
    W, G = act.shape
    out[0, :] = x0
    for t in range(steps):
        for j in range(G):
            a = 0
            r = 0
            for w in range(W):
                a += popc32(np.uint32(act[w, j] & out[t, w]))
                r += popc32(np.uint32(rep[w, j] & out[t, w]))
            old = (out[t, j >> 5] >> np.uint32(j & 31)) & np.uint32(1)
            out[t + 1, j >> 5] |= next_bit(a, r, old, rules[j]) << np.uint32(j & 31)


@numba.njit(cache=True)
def philox_fill(seed, islands, purpose, gen, n, blocks, out):
    """out[k, i, 4b + m] = word m of Philox((i, gen, purpose, b), (seed, islands[k]))."""
    for k in range(islands.shape[0]):
        for i in range(n):
            for b in range(blocks):
                r0, r1, r2, r3 = philox4x32_10(i, gen, purpose, b, seed, islands[k])
                out[k, i, 4 * b] = r0
                out[k, i, 4 * b + 1] = r1
                out[k, i, 4 * b + 2] = r2
                out[k, i, 4 * b + 3] = r3


@numba.njit(parallel=True, cache=True)
def init_links(seed, islands, t_act, t_rep, act, rep):
    """Initial links of every individual: position k = j*n + i draws word k%4 of
    Philox((ind, 0, P_INIT_LINK, k//4)); u < t_act -> +1, u < t_act + t_rep -> -1, else 0."""
    K, N, W, G = act.shape
    for kn in prange(K * N):
        k = kn // N
        ind = kn % N
        isl = islands[k]
        for w in range(W):
            for j in range(G):
                a = np.uint32(0)
                r = np.uint32(0)
                blk = -1
                r0 = r1 = r2 = r3 = np.uint64(0)
                for b in range(32):
                    i = 32 * w + b
                    if i >= G:
                        break
                    pos = j * G + i
                    if pos >> 2 != blk:
                        blk = pos >> 2
                        r0, r1, r2, r3 = philox4x32_10(ind, 0, P_INIT_LINK, blk, seed, isl)
                    m = pos & 3
                    u = r0 if m == 0 else (r1 if m == 1 else (r2 if m == 2 else r3))
                    if u < t_act:
                        a |= np.uint32(1) << np.uint32(b)
                    elif u < t_act + t_rep:
                        r |= np.uint32(1) << np.uint32(b)
                act[k, ind, w, j] = a
                rep[k, ind, w, j] = r


@numba.njit(inline="always", cache=True)
def _parents(par, paired, N, ch):
    """(head, tail) of child ch (island k = ch // N, index i): paired (panmictic) children 2b, 2b+1 cross
    par[2b] with par[2b+1], each taking its own as head; an unpaired (cellular) child i crosses cell i
    (head) with par[i]."""
    k = ch // N
    i = ch - k * N
    if paired:
        return k * N + par[ch], k * N + par[k * N + (i ^ 1)]
    return ch, k * N + par[ch]


@numba.njit(inline="always", cache=True)
def _cut(seed, isl, gen, i, paired, n2, purpose):
    """Link cut c = floor(u n^2) of child i: word 0 of Philox((i >> paired, gen, purpose, 0), (seed, isl))."""
    r0, _r1, _r2, _r3 = philox4x32_10(i >> paired, gen, purpose, 0, seed, isl)
    return np.int64(below(r0, n2))


@numba.njit(inline="always", cache=True)
def _breed_one(ch, A, R, Ru, par, paired, N, seed, islands, gen, p_cross, p_mutate, extra, nnz_ref, conn_p, conn_q,
               link_thr, rule_thr, allowed, ca, cr, cru):
    _P, W, G = A.shape
    n2 = G * G
    k = ch // N
    i = ch - k * N
    isl = islands[k]
    h, t = _parents(par, paired, N, ch)
    # grn_cross: links at positions j*n + i below cut + extra from the head; rules [0, cut // n + 1)
    cut = _cut(seed, isl, gen, i, paired, n2, p_cross)
    nnz = 0
    for w in range(W):
        for j in range(G):
            nb = min(max(cut + extra - (j * G + 32 * w), 0), 32)
            mask = np.uint32((np.uint64(1) << np.uint64(nb)) - np.uint64(1))
            a = np.uint32((A[h, w, j] & mask) | (A[t, w, j] & ~mask))
            r = np.uint32((R[h, w, j] & mask) | (R[t, w, j] & ~mask))
            ca[ch, w, j] = a
            cr[ch, w, j] = r
            nnz += popc32(np.uint32(a | r))
    for j in range(G):
        cru[ch, j] = Ru[h, j] if j < cut // G + 1 else Ru[t, j]
    # grn_revert_mutate
    if abs(nnz - nnz_ref) * conn_q >= conn_p * n2:
        ca[ch] = A[h]
        cr[ch] = R[h]
        cru[ch] = Ru[h]
    r0, r1, r2, r3 = philox4x32_10(i, gen, p_mutate, 0, seed, isl)
    r4, r5, _r6, _r7 = philox4x32_10(i, gen, p_mutate, 1, seed, isl)
    if r0 < link_thr:
        pos = below(r1, n2)
        j = np.int64(pos // np.uint64(G))
        s = np.int64(pos % np.uint64(G))
        bit = np.uint32(1) << np.uint32(s & 31)
        aw = ca[ch, s >> 5, j]
        rw = cr[ch, s >> 5, j]
        v = np.int64((aw & bit) != 0) - np.int64((rw & bit) != 0)
        hi = r2 >> np.uint64(31)
        if v == -1:  # the other values of v: hi picks
            nv = 1 if hi else 0
        elif v == 0:
            nv = -1 if hi else 1
        else:
            nv = -1 if hi else 0
        ca[ch, s >> 5, j] = np.uint32(aw | bit) if nv == 1 else np.uint32(aw & ~bit)
        cr[ch, s >> 5, j] = np.uint32(rw | bit) if nv == -1 else np.uint32(rw & ~bit)
    if r3 < rule_thr:
        na = allowed.shape[0]
        node = np.int64(below(r4, G))
        inc = 1 + np.int64(below(r5, na - 1))
        old = cru[ch, node]
        p = 0
        for q in range(na):
            if allowed[q] == old:
                p = q
        cru[ch, node] = allowed[(p + inc) % na]


@numba.njit(parallel=True, cache=True)
def breed(A, R, Ru, par, paired, N, seed, islands, gen, p_cross, p_mutate, extra, nnz_ref, conn_p, conn_q, link_thr,
          rule_thr, allowed, ca, cr, cru):
    """Children ca/cr [P, W, n], cru [P, n] of parents A/R/Ru (kernels/grn_ga.cu's grn_cross and
    grn_revert_mutate, one child at a time); par [P] (see _parents); threads."""
    for ch in prange(ca.shape[0]):
        _breed_one(np.int64(ch), A, R, Ru, par, paired, N, seed, islands, gen, p_cross, p_mutate, extra, nnz_ref,
                   conn_p, conn_q, link_thr, rule_thr, allowed, ca, cr, cru)


@numba.njit(cache=True)
def breed_serial(A, R, Ru, par, paired, N, seed, islands, gen, p_cross, p_mutate, extra, nnz_ref, conn_p, conn_q,
                 link_thr, rule_thr, allowed, ca, cr, cru):
    """:func:`breed` on one thread (small populations: no fork/join cost)."""
    for ch in range(ca.shape[0]):
        _breed_one(ch, A, R, Ru, par, paired, N, seed, islands, gen, p_cross, p_mutate, extra, nnz_ref, conn_p,
                   conn_q, link_thr, rule_thr, allowed, ca, cr, cru)


@numba.njit(cache=True)
def select(order, act, rep, rules, score, ca, cr, cru, cs, out_act, out_rep, out_rules, out_score):
    """out[k, i] = individual order[k, i] of island k (< N: parent, else child order - N), i < N."""
    K, N, W, G = act.shape
    for k in range(K):
        for i in range(N):
            s = order[k, i]
            parent = s < N
            src = s if parent else s - N
            sa, sr, sru = (act, rep, rules) if parent else (ca, cr, cru)
            for w in range(W):
                for j in range(G):
                    out_act[k, i, w, j] = sa[k, src, w, j]
                    out_rep[k, i, w, j] = sr[k, src, w, j]
            for j in range(G):
                out_rules[k, i, j] = sru[k, src, j]
            out_score[k, i] = score[k, src] if parent else cs[k, src]


@numba.njit(cache=True)
def update_best(gen, score, act, rep, rules, best_score, best_act, best_rep, best_rules, best_gen, o_score, o_act,
                o_rep, o_rules, o_gen, o_min, o_sum):
    """Per island: the best (lowest score, then index) replaces the kept best when strictly better; the
    island's lowest and summed score."""
    K, N = score.shape
    for k in range(K):
        b = 0
        bs = score[k, 0]
        total = bs
        for i in range(1, N):
            total += score[k, i]
            if score[k, i] < bs:
                bs = score[k, i]
                b = i
        o_min[k] = bs
        o_sum[k] = total
        if bs < best_score[k]:
            o_score[k] = bs
            o_act[k] = act[k, b]
            o_rep[k] = rep[k, b]
            o_rules[k] = rules[k, b]
            o_gen[k] = gen
        else:
            o_score[k] = best_score[k]
            o_act[k] = best_act[k]
            o_rep[k] = best_rep[k]
            o_rules[k] = best_rules[k]
            o_gen[k] = best_gen[k]
