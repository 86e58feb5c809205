"""A shard task: trajectories ``traj0 .. traj0 + n_traj`` of one model, in kernel calls of a chunk each,
reduced to integer counts (:mod:`.block`)."""

from __future__ import annotations

import numpy as np

from ..engine import ShardContext
from . import block
from .block import TH_SQ_SHIFT, Block, merge, visible_positions

CHUNK = 8192  # trajectories per CPU kernel call (bounds the record slabs)
DENSE_CHUNK = 1 << 16  # trajectories per CPU call into dense tables
DENSE_BYTES = 1 << 28  # the dense tables of all parts of a CPU call, at most

__all__ = ["Block", "merge", "reduce_chunk", "run_cpu_chunk", "simulate_block", "CHUNK"]


def run_cpu_chunk(b: Block, traj0: int, n: int) -> dict:
    """Trajectories ``traj0 .. traj0 + n`` on the CPU: summed into dense tables where the visible states are
    few (:func:`cpu.simulate_dense`), else per-trajectory records reduced by a hash (:func:`run_cpu_records`)."""
    import numba  # the CPU kernels' imports, here: a GPU process never imports Numba

    from . import cpu

    m = b.model
    S = block.dense_states(m, b.n_win)
    off, length = block.table_offsets(b.n_win, S)
    parts = int(min(n, 4 * numba.get_num_threads()))
    if not S or parts * length * 8 > DENSE_BYTES:
        return run_cpu_records(b, traj0, n)
    vpos = visible_positions(m)
    cap = block.REC_CAP
    while True:
        acc = np.zeros((parts, length), np.int64)
        final_full = np.zeros((n, m.n_words), np.uint64)
        fixed = np.zeros(n, np.uint8)
        over = np.zeros(parts, np.uint8)
        cpu.simulate_dense(m.par_start, m.par_index, m.tt_start, m.tt, m.val_start, m.vals, m.internal, vpos,
                           m.grp_start, m.grp_cum, m.grp_node_start, m.grp_nodes, m.opt_bits, m.fix_mask, m.fix_val,
                           *block.event_tables(m), np.int64(b.seed), np.int64(traj0), n, b.n_win, b.max_time, b.tick,
                           b.discrete, cap, S,
                           acc, *(off[k] for k in ("q", "q2", "full", "final", "th", "th2", "dth", "dth2", "ev")),
                           final_full, fixed, over)
        if not over.any():
            break
        cap *= 4
    out = block.table_counts(acc.sum(axis=0), off, S, b.n_win)
    fpmask = fixed.astype(bool)
    out["fp"], out["fp_n"] = block._sum_rows((), final_full[fpmask], np.ones(int(fpmask.sum()), np.int64))
    out["trajectories"] = int(n)
    return out


def run_cpu_records(b: Block, traj0: int, n: int) -> dict:
    """:func:`run_cpu_chunk` through per-trajectory records of every window (:func:`cpu.simulate_chunk`)."""
    from . import cpu

    m = b.model
    vpos = visible_positions(m)
    cap = block.first_cap(b.n_win)
    while True:
        rec_win = np.zeros((n, cap), np.int32)
        rec_state = np.zeros((n, cap, m.vis_words), np.uint64)
        rec_q = np.zeros((n, cap), np.int64)
        rec_n = np.zeros(n, np.int32)
        th_int = np.zeros((n, b.n_win), np.int64)
        final_vis = np.zeros((n, m.vis_words), np.uint64)
        final_full = np.zeros((n, m.n_words), np.uint64)
        fixed = np.zeros(n, np.uint8)
        events = np.zeros(n, np.int64)
        cpu.simulate_chunk(m.par_start, m.par_index, m.tt_start, m.tt, m.val_start, m.vals, m.internal, vpos,
                           m.grp_start,
                           m.grp_cum, m.grp_node_start, m.grp_nodes, m.opt_bits, m.fix_mask, m.fix_val,
                           *block.event_tables(m), np.int64(b.seed), np.int64(traj0), n, b.n_win, b.max_time, b.tick,
                           b.discrete, cap,
                           rec_win, rec_state, rec_q, rec_n, th_int, final_vis, final_full, fixed, events)
        if int(rec_n.max(initial=0)) <= cap:
            return reduce_chunk(rec_win, rec_state, rec_q, rec_n, th_int.sum(axis=0),
                                ((th_int >> TH_SQ_SHIFT) ** 2).sum(axis=0), final_vis, final_full, fixed, events)
        cap *= 4


def reduce_chunk(rec_win, rec_state, rec_q, rec_n, th_sum, th_sq, final_vis, final_full, fixed, events) -> dict:
    """The counts of one kernel call's per-trajectory outputs (``rec_win[trajectory, record]``,
    ``rec_state[trajectory, record, word]``, ``final_vis[trajectory, word]``, ``final_full[trajectory, word]``)
    and its windows' entropy sums (the CPU's records; the GPU reduces on the device)."""
    import numba

    from . import cpu

    size, parts = 1 << 12, int(max(1, min(numba.get_num_threads(), rec_n.size // 2048)))
    while True:
        kw, ks, sq, sq2, ok = cpu.hash_reduce(rec_win, rec_state, rec_q, rec_n.astype(np.int32), size,
                                              block.SQ_SHIFT, parts)
        if ok:
            break
        size *= 4
    vw = rec_state.shape[2]
    kw, ks, sq, sq2 = kw.reshape(-1), ks.reshape(-1, vw), sq.reshape(-1), sq2.reshape(-1)
    used = kw >= 0
    win, state, qs, q2 = block._sum_rows((kw[used],), ks[used], sq[used], sq2[used])
    final, final_n = block._sum_rows((), np.asarray(final_vis), np.ones(final_vis.shape[0], np.int64))
    fpmask = fixed.astype(bool)
    fp, fp_n = block._sum_rows((), np.asarray(final_full)[fpmask], np.ones(int(fpmask.sum()), np.int64))
    return {"win": win, "state": state, "q": qs, "q2": q2, "th": np.asarray(th_sum, np.int64),
            "th2": np.asarray(th_sq, np.int64), "final": final, "final_n": final_n, "fp": fp, "fp_n": fp_n,
            "events": int(events.sum()), "trajectories": int(final_vis.shape[0])}


def simulate_block(ctx: ShardContext, b: Block) -> dict:
    """The shard task: the block's trajectories in chunks, on the worker's backend."""
    n = b.model.n
    run_chunk, size = run_cpu_chunk, block.chunk_size(b.n_win, n, 1 << 28, 64, CHUNK)
    if block.dense_states(b.model, b.n_win):
        size = DENSE_CHUNK
    if ctx.backend == "gpu":
        from . import gpu
        run_chunk, size = gpu.run_gpu_chunk, gpu.chunk_size(b)
    parts = [run_chunk(b, b.traj0 + s, min(size, b.n_traj - s)) for s in range(0, b.n_traj, size)]
    return merge(parts, b.n_win, b.model.n_words, b.model.vis_words)
