"""CPU kernels (Numba) of the GRN GA: population evaluation, Philox draws, initial links.

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

from ..rng.philox import philox4x32_10

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
