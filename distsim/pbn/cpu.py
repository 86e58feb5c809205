"""CPU kernels for PBN trajectories (Numba).

``advance_sliced`` is the fast path: bit-sliced state (``S[node, group]``, one uint64 word holds a
node's value in 64 trajectories), the compiled bit program interpreted over whole words, and
Philox words drawn per trajectory exactly as documented in :mod:`distsim.pbn.compile`.
``advance_table`` is the seed-000 style reference: one trajectory at a time, bit-packed state and
packed truth tables. Both give the same trajectories bit for bit (and so does the GPU kernel).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ..rng.philox import philox4x32_10
from .compile import OP_AND, OP_ANDN, OP_OR, OP_XOR, CompiledPBN  # else: OP_NOT

U1 = np.uint64(1)
U0 = np.uint64(0)
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
M32 = np.uint64(0xFFFFFFFF)
S32 = np.uint64(32)
LANES = 64
VC_BITS = 8  # vertical counter planes; flushed every 2**VC_BITS - 1 steps

MODE_SYNC, MODE_ASYNC = 0, 1


@numba.njit(inline="always", cache=True)
def popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@numba.njit(inline="always", cache=True)
def step_word(seed, chain, step, k):
    """Word k of step ``step`` of trajectory ``chain``."""
    r = philox4x32_10(np.uint64(k) >> np.uint64(2), np.uint64(step) & M32, np.uint64(step) >> S32, 0, seed, chain)
    return r[k & 3]


@numba.njit(inline="always", cache=True)
def first_above(G, length, u):
    """Smallest i < length with u < G[i] (G non-decreasing; caller guarantees u < G[length-1])."""
    lo = 0
    hi = length - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if u < G[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@numba.njit(inline="always", cache=True)
def choose(u, thresh, start, count):
    """Index f in [0, count) of the first cumulative threshold above u (the last if none)."""
    f = 0
    while f < count - 1 and u >= thresh[start + f]:
        f += 1
    return f


@numba.njit(cache=True)
def flip_nodes(seed, chain, step, G, m, pert_nodes, out_nodes):
    """Nodes flipped in a perturbation step (word 0 already known to be below G[m-1]).

    Writes node indices (-1 for removed nodes) to ``out_nodes``; returns how many."""
    u = step_word(seed, chain, step, 0)
    i = first_above(G, m, u)
    out_nodes[0] = pert_nodes[i]
    count = 1
    base = i + 1
    k = 1
    while base < m:
        u = step_word(seed, chain, step, k)
        k += 1
        r = m - base
        if u >= G[r - 1]:
            break
        j = first_above(G, r, u)
        out_nodes[count] = pert_nodes[base + j]
        count += 1
        base += j + 1
    return count


@numba.njit(inline="always", cache=True)
def run_program(code, regs):
    for k in range(code.shape[0]):
        op = code[k, 0]
        d = code[k, 1]
        a = regs[code[k, 2]]
        b = regs[code[k, 3]]
        if op == OP_AND:
            regs[d] = a & b
        elif op == OP_OR:
            regs[d] = a | b
        elif op == OP_XOR:
            regs[d] = a ^ b
        elif op == OP_ANDN:
            regs[d] = a & ~b
        else:  # OP_NOT
            regs[d] = ~a


@numba.njit(parallel=True, cache=True)
def _init_sliced(S, chain0, n_chains, seed, fix_mask, fix_val, index):
    n = S.shape[0]
    blocks = (int(index.max()) >> 7) + 1 if n else 1  # Philox blocks of 128 bits the nodes read
    for g in prange(S.shape[1]):  # one thread per word group: each writes only its own column
        words = np.zeros(n, dtype=np.uint64)  # the column, built here and stored once
        bits = np.zeros(4 * blocks, dtype=np.uint64)
        for lane in range(LANES):
            c = g * LANES + lane
            if c >= n_chains:
                break
            chain = np.uint64(chain0 + c)
            for k in range(blocks):
                r = philox4x32_10(np.uint64(k), 0, 0, 1, seed, chain)
                for j in range(4):
                    bits[4 * k + j] = r[j]
            sh = np.uint64(lane)
            for i in range(n):  # node i takes bit index[i] of the stream (its full-network index)
                v = (bits[index[i] >> 5] >> np.uint64(index[i] & 31)) & U1
                if fix_mask[i]:
                    v = np.uint64(fix_val[i])
                words[i] |= v << sh
        for i in range(n):
            S[i, g] = words[i]


def init_sliced(n: int, chain0: int, n_chains: int, seed: int, fix_mask: np.ndarray, fix_val: np.ndarray,
                index: np.ndarray | None = None) -> np.ndarray:
    """Initial states: node i is bit ``index[i]`` (default i; a reduced network passes its nodes'
    full-network indices) of the stream at counter word 3 = 1, overridden where ``fix_mask``."""
    G = max(1, -(-n_chains // LANES))
    S = np.zeros((n, G), dtype=np.uint64)
    index = np.arange(n, dtype=np.int32) if index is None else np.asarray(index, np.int32)
    _init_sliced(S, np.uint64(chain0), n_chains, np.uint64(seed), fix_mask.astype(np.bool_), fix_val.astype(np.uint8),
                 index)
    return S


@numba.njit(parallel=True, cache=True)
def _advance_sliced(S, chain0, n_chains, step0, nsteps, seed, mode, dependent,
                    code, outputs, n_regs, func_start, func_thresh, multi_nodes, multi_word, ctx_thresh, ctx_func,
                    draw_node, n_pert, pert_nodes, G, tgt_start, tgt_node, tgt_val,
                    want_chain, chain_ones, want_nodes, node_ones, pooled):
    n = S.shape[0]
    n_groups = S.shape[1]
    F = func_start[n]
    M = multi_nodes.shape[0]
    T = tgt_start.shape[0] - 1
    K = ctx_thresh.shape[0]
    n_draw = draw_node.shape[0]
    for g in prange(n_groups):
        lanes = min(LANES, n_chains - g * LANES)
        valid = ALL if lanes == LANES else (U1 << np.uint64(lanes)) - U1
        regs = np.zeros(n_regs, dtype=np.uint64)
        new = np.empty(n, dtype=np.uint64)
        sel = np.zeros(F, dtype=np.uint64)
        upd = np.zeros(n, dtype=np.uint64)
        ctxm = np.zeros(K, dtype=np.uint64)
        flips = np.empty(max(n_pert, 1), dtype=np.int32)
        prev = np.zeros(T, dtype=np.uint64)
        vc = np.zeros((T, VC_BITS), dtype=np.uint64)
        for i in range(n):
            regs[i] = S[i, g]
        regs[n] = U0
        regs[n + 1] = ALL
        for t in range(T):
            m = valid
            for q in range(tgt_start[t], tgt_start[t + 1]):
                x = regs[tgt_node[q]]
                m &= x if tgt_val[q] else ~x
            prev[t] = m
        since_flush = 0
        for s in range(nsteps):
            step = np.uint64(step0 + s)
            slo = step & M32
            shi = step >> S32
            ev = U0
            for f in range(F):
                sel[f] = U0
            if mode == MODE_ASYNC:
                for i in range(n):
                    upd[i] = U0
            if dependent:
                for k in range(K):
                    ctxm[k] = U0
            # ---- random decisions, one trajectory (lane) at a time
            for lane in range(lanes):
                chain = np.uint64(chain0 + g * LANES + lane)
                bit = U1 << np.uint64(lane)
                b0, b1, b2, b3 = philox4x32_10(0, slo, shi, 0, seed, chain)
                if n_pert > 0 and b0 < G[n_pert - 1]:
                    ev |= bit
                    continue
                if mode == MODE_SYNC:
                    if dependent:
                        ctxm[choose(b1, ctx_thresh, 0, K)] |= bit
                    else:
                        blk = 0
                        c0, c1, c2, c3 = b0, b1, b2, b3
                        for k in range(M):
                            widx = multi_word[k]
                            if (widx >> 2) != blk:
                                blk = widx >> 2
                                c0, c1, c2, c3 = philox4x32_10(np.uint64(blk), slo, shi, 0, seed, chain)
                            r = widx & 3
                            u = c0 if r == 0 else (c1 if r == 1 else (c2 if r == 2 else c3))
                            node = multi_nodes[k]
                            f0 = func_start[node]
                            sel[f0 + choose(u, func_thresh, f0, func_start[node + 1] - f0)] |= bit
                else:
                    node = draw_node[(b1 * np.uint64(n_draw)) >> S32]
                    if node < 0:  # a removed node's turn: the kept nodes stay
                        continue
                    upd[node] |= bit
                    f0 = func_start[node]
                    nf = func_start[node + 1] - f0
                    if nf > 1:
                        if dependent:
                            sel[f0 + ctx_func[choose(b2, ctx_thresh, 0, K), node]] |= bit
                        else:
                            sel[f0 + choose(b2, func_thresh, f0, nf)] |= bit
            if dependent and mode == MODE_SYNC:
                for k in range(K):
                    if ctxm[k]:
                        for i in range(n):
                            f0 = func_start[i]
                            if func_start[i + 1] - f0 > 1:
                                sel[f0 + ctx_func[k, i]] |= ctxm[k]
            # ---- all Boolean functions over 64 trajectories at once
            run_program(code, regs)
            for i in range(n):
                f0 = func_start[i]
                nf = func_start[i + 1] - f0
                if nf == 1:
                    v = regs[outputs[f0]]
                else:
                    v = U0
                    for f in range(nf):
                        v |= regs[outputs[f0 + f]] & sel[f0 + f]
                old = regs[i]
                if mode == MODE_ASYNC:
                    v = old ^ ((v ^ old) & upd[i])
                new[i] = (v & ~ev) | (old & ev)
            # ---- perturbation steps: flip the chosen nodes
            e = ev
            while e:
                low = e & (~e + U1)
                lane = 0
                while (low >> np.uint64(lane)) != U1:
                    lane += 1
                e ^= low
                chain = np.uint64(chain0 + g * LANES + lane)
                cnt = flip_nodes(seed, chain, step, G, n_pert, pert_nodes, flips)
                for q in range(cnt):
                    if flips[q] >= 0:
                        new[flips[q]] ^= low
            for i in range(n):
                regs[i] = new[i]
            # ---- statistics
            for t in range(T):
                m = valid
                for q in range(tgt_start[t], tgt_start[t + 1]):
                    x = regs[tgt_node[q]]
                    m &= x if tgt_val[q] else ~x
                p = prev[t]
                pooled[g, t, 0] += popcount(m)
                pooled[g, t, 1] += popcount(~p & m)
                pooled[g, t, 2] += popcount(p & ~m & valid)
                prev[t] = m
                if want_chain:
                    carry = m
                    for b in range(VC_BITS):
                        if carry == U0:
                            break
                        tmp = vc[t, b] & carry
                        vc[t, b] ^= carry
                        carry = tmp
            if want_nodes:
                for i in range(n):
                    node_ones[g, i] += popcount(regs[i] & valid)
            since_flush += 1
            if want_chain and (since_flush == (1 << VC_BITS) - 1 or s == nsteps - 1):
                for t in range(T):
                    for lane in range(lanes):
                        c = U0
                        for b in range(VC_BITS):
                            c += ((vc[t, b] >> np.uint64(lane)) & U1) << np.uint64(b)
                        chain_ones[t, g * LANES + lane] += np.uint32(c)
                    for b in range(VC_BITS):
                        vc[t, b] = U0
                since_flush = 0
        for t in range(T):
            pooled[g, t, 3] += popcount(prev[t])
        for i in range(n):
            S[i, g] = regs[i]


def advance_sliced(S: np.ndarray, c: CompiledPBN, *, chain0: int, n_chains: int, step0: int, nsteps: int,
                   seed: int, mode: int, targets: tuple[np.ndarray, np.ndarray, np.ndarray],
                   want_chain: bool = False, want_nodes: bool = False) -> dict[str, np.ndarray]:
    """Advance the bit-sliced states ``S`` (in place) by ``nsteps`` steps starting at absolute step ``step0``.

    Returns pooled target statistics ``[T, 4]`` = (steps in target, 0->1, 1->0, chains in target at
    the end), per-chain steps in target ``[T, n_chains]`` (``want_chain``) and per-node ones ``[n]``
    (``want_nodes``), all exact integers.
    """
    tgt_start, tgt_node, tgt_val = targets
    T = len(tgt_start) - 1
    G = S.shape[1]
    pooled = np.zeros((G, T, 4), dtype=np.uint64)
    chain_ones = np.zeros((T, n_chains if want_chain else 0), dtype=np.uint32)
    node_ones = np.zeros((G, c.n) if want_nodes else (0, 0), dtype=np.uint64)
    if nsteps > 0:
        _advance_sliced(S, np.uint64(chain0), n_chains, np.uint64(step0), nsteps, np.uint64(seed), mode, c.dependent,
                        c.program.code, c.program.outputs, c.program.n_regs, c.func_start, c.func_thresh,
                        c.multi_nodes, c.multi_word, c.ctx_thresh, c.ctx_func, c.draw_node, c.n_pert, c.pert_nodes,
                        c.pert_G, tgt_start, tgt_node, tgt_val, want_chain, chain_ones, want_nodes, node_ones, pooled)
    else:
        # no steps: only the end-of-segment occupancy is meaningful
        states = unslice(S, n_chains, c.n)
        for t in range(T):
            m = np.ones(n_chains, dtype=bool)
            for q in range(tgt_start[t], tgt_start[t + 1]):
                m &= states[:, tgt_node[q]] == bool(tgt_val[q])
            pooled[0, t, 3] = m.sum()
    out = {"pooled": pooled.sum(axis=0)}
    if want_chain:
        out["chain_ones"] = chain_ones
    if want_nodes:
        out["node_ones"] = node_ones.sum(axis=0)
    return out


def unslice(S: np.ndarray, n_chains: int, n: int) -> np.ndarray:
    """Bit-sliced uint64 ``S[node, group]`` -> bool ``[n_chains, n]``."""
    bits = np.unpackbits(S.astype("<u8").view(np.uint8).reshape(n, -1, 8), axis=2, bitorder="little")
    return bits.reshape(n, -1)[:, :n_chains].T.astype(bool)


def node_ones_of(S: np.ndarray, n_chains: int) -> np.ndarray:
    """uint64 ``[n]``: chains with each node at 1 in the bit-sliced ``S[node, group]`` (first ``n_chains``
    lanes only: the padding lanes of the last word also evolve)."""
    full, rest = divmod(n_chains, LANES)
    ones = np.bitwise_count(S[:, :full]).sum(axis=1, dtype=np.uint64)
    if rest:
        ones += np.bitwise_count(S[:, full] & np.uint64((1 << rest) - 1)).astype(np.uint64)
    return ones


def slice_states(states: np.ndarray) -> np.ndarray:
    """Inverse of :func:`unslice`: bool ``[n_chains, n]`` -> uint64 ``S[node, group]``."""
    n_chains, n = states.shape
    G = max(1, -(-n_chains // LANES))
    padded = np.zeros((n, G * LANES), dtype=np.uint8)
    padded[:, :n_chains] = states.T
    packed = np.packbits(padded.reshape(n, G, LANES), axis=2, bitorder="little")
    return packed.view("<u8").reshape(n, G).astype(np.uint64)


# ----------------------------------------------------------------------------------------------
# seed-000 style reference kernel: one trajectory at a time, packed state, packed truth tables


@numba.njit(cache=True)
def _table_eval(state_bits, f, par_start, par_index, tt_start, tt):
    """Value of function f on a packed state via its truth table (lowest-index parent = MSB)."""
    idx = 0
    for q in range(par_start[f], par_start[f + 1]):
        p = par_index[q]
        idx = (idx << 1) | ((state_bits[p >> 5] >> np.uint32(p & 31)) & np.uint32(1))
    return (tt[tt_start[f] + (idx >> 5)] >> np.uint32(idx & 31)) & np.uint32(1)


@numba.njit(cache=True)
def _program_eval_scalar(state_bits, n, code, regs):
    """The bit program on one trajectory: bit 0 of each register is the value."""
    for i in range(n):
        regs[i] = np.uint64((state_bits[i >> 5] >> np.uint32(i & 31)) & np.uint32(1))
    regs[n] = U0
    regs[n + 1] = ALL
    run_program(code, regs)


@numba.njit(parallel=True, cache=True)
def _advance_table(X, chain0, step0, nsteps, seed, mode, dependent, n,
                   func_start, func_thresh, multi_nodes, multi_word, ctx_thresh, ctx_func, draw_node, n_pert, pert_nodes,
                   G, par_start, par_index, tt_start, tt, code, outputs, n_regs):
    K = ctx_thresh.shape[0]
    M = multi_nodes.shape[0]
    W = X.shape[1]
    for c in prange(X.shape[0]):
        chain = np.uint64(chain0 + c)
        cur = X[c].copy()
        nxt = np.empty(W, dtype=np.uint32)
        choice = np.zeros(n, dtype=np.int32)
        flips = np.empty(max(n_pert, 1), dtype=np.int32)
        regs = np.zeros(n_regs, dtype=np.uint64)
        for s in range(nsteps):
            step = np.uint64(step0 + s)
            slo = step & M32
            shi = step >> S32
            b0, b1, b2, b3 = philox4x32_10(0, slo, shi, 0, seed, chain)
            if n_pert > 0 and b0 < G[n_pert - 1]:
                cnt = flip_nodes(seed, chain, step, G, n_pert, pert_nodes, flips)
                for q in range(cnt):
                    i = flips[q]
                    if i >= 0:
                        cur[i >> 5] ^= np.uint32(1) << np.uint32(i & 31)
                continue
            # choose functions
            for i in range(n):
                choice[i] = 0
            lo_node = 0
            hi_node = n
            if mode == MODE_SYNC:
                if dependent:
                    k = choose(b1, ctx_thresh, 0, K)
                    for i in range(n):
                        choice[i] = ctx_func[k, i]
                else:
                    for k in range(M):
                        u = step_word(seed, chain, step, multi_word[k])
                        node = multi_nodes[k]
                        f0 = func_start[node]
                        choice[node] = choose(u, func_thresh, f0, func_start[node + 1] - f0)
            else:
                node = draw_node[(b1 * np.uint64(draw_node.shape[0])) >> S32]
                if node < 0:  # a removed node's turn: the kept nodes stay
                    continue
                lo_node = node
                hi_node = node + 1
                f0 = func_start[node]
                nf = func_start[node + 1] - f0
                if nf > 1:
                    if dependent:
                        choice[node] = ctx_func[choose(b2, ctx_thresh, 0, K), node]
                    else:
                        choice[node] = choose(b2, func_thresh, f0, nf)
            need_prog = False
            for i in range(lo_node, hi_node):
                f = func_start[i] + choice[i]
                if tt_start[f + 1] == tt_start[f]:
                    need_prog = True
            if need_prog:
                _program_eval_scalar(cur, n, code, regs)
            for w in range(W):
                nxt[w] = cur[w]
            for i in range(lo_node, hi_node):
                f = func_start[i] + choice[i]
                if tt_start[f + 1] > tt_start[f]:
                    v = _table_eval(cur, f, par_start, par_index, tt_start, tt)
                else:
                    v = np.uint32(regs[outputs[f]] & U1)
                mask = np.uint32(1) << np.uint32(i & 31)
                nxt[i >> 5] = (nxt[i >> 5] & ~mask) | (v << np.uint32(i & 31))
            for w in range(W):
                cur[w] = nxt[w]
        for w in range(W):
            X[c, w] = cur[w]


def advance_table(X: np.ndarray, c: CompiledPBN, *, chain0: int, step0: int, nsteps: int, seed: int, mode: int) -> None:
    """Advance per-trajectory packed states ``X[chain, word]`` (uint32, node i = bit i%32 of word i//32) in place."""
    if nsteps > 0:
        _advance_table(X, np.uint64(chain0), np.uint64(step0), nsteps, np.uint64(seed), mode, c.dependent, c.n,
                       c.func_start, c.func_thresh, c.multi_nodes, c.multi_word, c.ctx_thresh, c.ctx_func, c.draw_node,
                       c.n_pert, c.pert_nodes,
                       c.pert_G, c.par_start, c.par_index, c.tt_start, c.tt, c.program.code, c.program.outputs,
                       c.program.n_regs)


def pack_states(states: np.ndarray) -> np.ndarray:
    """bool ``[chains, n]`` -> uint32 ``[chains, ceil(n/32)]`` (node i = bit i%32 of word i//32)."""
    n_chains, n = states.shape
    W = -(-n // 32)
    padded = np.zeros((n_chains, W * 32), dtype=np.uint8)
    padded[:, :n] = states
    return np.packbits(padded.reshape(n_chains, W, 32), axis=2, bitorder="little").view("<u4").reshape(n_chains, W).astype(np.uint32)


def unpack_states(X: np.ndarray, n: int) -> np.ndarray:
    """Inverse of :func:`pack_states`."""
    bits = np.unpackbits(X.astype("<u4").view(np.uint8).reshape(X.shape[0], -1), axis=1, bitorder="little")
    return bits[:, :n].astype(bool)
