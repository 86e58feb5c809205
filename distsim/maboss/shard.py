"""A shard task: trajectories ``traj0 .. traj0 + n_traj`` of one model, in kernel calls of a chunk each,
reduced to integer counts (:mod:`.block`)."""

from __future__ import annotations

import numpy as np

from ..engine import ShardContext
from . import block
from .block import Block, merge, reduce_chunk, visible_positions

CHUNK = 1 << 16  # trajectories per CPU kernel call (records are kept per part, summed as each trajectory ends)
DENSE_CHUNK = 1 << 16  # trajectories per CPU call into dense tables
DENSE_BYTES = 1 << 28  # the dense tables of all parts of a CPU call, at most
HT_FIRST = 1 << 12  # first hash-table slots per part of a CPU records call
_CAPS: dict[tuple, tuple[int, int]] = {}  # the record slab and table that sufficed, by (model, windows, first
# ones): later calls start there

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
    """:func:`run_cpu_chunk` through per-trajectory records summed in hash tables (:func:`cpu.simulate_chunk`)."""
    import numba

    from . import cpu

    m = b.model
    vpos = visible_positions(m)
    key = (m.digest, b.n_win, block.first_cap(b.n_win), HT_FIRST)
    cap, size = _CAPS.get(key, key[2:])
    parts = int(min(n, 4 * numba.get_num_threads()))
    while True:
        kw = np.full((parts, size), -1, np.int32)
        ks = np.zeros((parts, size, m.vis_words), np.uint64)
        sq, sq2, full = (np.zeros((parts, size), np.int64) for _ in range(3))
        th_acc = np.zeros((parts, 4, b.n_win + 1), np.int64)
        final_vis = np.zeros((n, m.vis_words), np.uint64)
        final_full = np.zeros((n, m.n_words), np.uint64)
        fixed = np.zeros(n, np.uint8)
        events = np.zeros(n, np.int64)
        over = np.zeros(parts, np.uint8)
        cpu.simulate_chunk(m.par_start, m.par_index, m.tt_start, m.tt, m.val_start, m.vals, m.internal, vpos,
                           m.grp_start,
                           m.grp_cum, m.grp_node_start, m.grp_nodes, m.opt_bits, m.fix_mask, m.fix_val,
                           *block.event_tables(m), np.int64(b.seed), np.int64(traj0), n, b.n_win, b.max_time, b.tick,
                           b.discrete, cap, kw, ks, sq, sq2, full, th_acc, final_vis, final_full, fixed, events, over)
        if not over.any():
            if len(_CAPS) > 64:
                _CAPS.clear()
            _CAPS[key] = (cap, size)
            return reduce_chunk(kw, ks, sq, sq2, full, th_acc, final_vis, final_full, fixed, events)
        cap *= 4 if (over == 1).any() else 1
        size *= 4 if (over == 2).any() else 1


def simulate_block(ctx: ShardContext, b: Block) -> dict:
    """The shard task: the block's trajectories in chunks, on the worker's backend."""
    n = b.model.n
    run_chunk, size = run_cpu_chunk, CHUNK
    if block.dense_states(b.model, b.n_win):
        size = DENSE_CHUNK
    if ctx.backend == "gpu":
        from . import gpu
        run_chunk, size = gpu.run_gpu_chunk, gpu.chunk_size(b)
    parts = [run_chunk(b, b.traj0 + s, min(size, b.n_traj - s)) for s in range(0, b.n_traj, size)]
    return merge(parts, b.n_win, b.model.n_words, b.model.vis_words)
