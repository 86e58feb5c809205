"""The GPU trajectory kernel (``kernels/ctbn.cu``, CuPy + NVRTC, ``--fmad=false``): one thread per
trajectory, the same Philox words and arithmetic as :mod:`.cpu`, so the same bits. By default the kernel is
generated for each model (:mod:`.codegen`: state and rate indices in registers, the rates' logic as
straight-line code); ``DISTSIM_MABOSS_KERNEL=table`` runs the model-independent table kernel instead."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..backends import cuda, neglog
from .model import CompiledModel
from . import block, codegen
from .block import Block, visible_positions

BLOCK = 128
OPTIONS = ("--fmad=false",)


_SOURCES: dict[str, str] = {}  # the template and generated sources by kernels digest (+ model digest)


def source(m: CompiledModel | None = None) -> str:
    """The kernel's source: generated for ``m`` (unless DISTSIM_MABOSS_KERNEL=table, or the model is too large
    for generated code), else the table kernel. Built once per kernels folder contents and model."""
    kd = cuda.kernels_digest()
    template = _SOURCES.get(kd)
    if template is None:
        if len(_SOURCES) > 16:
            _SOURCES.clear()
        template = _SOURCES[kd] = neglog.neglog_table_cuda() + cuda.kernel_source("ctbn.cu")
    if m is None or not codegen.use_generated():
        return template
    key = m.digest + kd
    if key not in _SOURCES:
        _SOURCES[key] = codegen.fill(template, m) or template
    return _SOURCES[key]


def _module(m: CompiledModel | None = None) -> Any:
    src = source(m)
    return cuda.load_module(src, OPTIONS + codegen.options(src))


def _generated(m: CompiledModel) -> bool:
    """Whether ``m`` runs a generated kernel (it keeps no rate indices in memory)."""
    return codegen.GENERATED_MARK in source(m)


_DEVICE_MODELS: dict[tuple[str, int], tuple] = {}


def _device_model(m: CompiledModel) -> tuple:
    import cupy as cp

    key = (m.digest, cp.cuda.runtime.getDevice() if hasattr(cp, "cuda") else 0)
    if key not in _DEVICE_MODELS:
        if len(_DEVICE_MODELS) > 16:
            _DEVICE_MODELS.clear()
        par_index = m.par_index if m.par_index.size else np.zeros(1, np.int32)
        _DEVICE_MODELS[key] = tuple(cp.asarray(np.ascontiguousarray(a)) for a in (
            m.par_start, par_index, m.tt_start, m.tt, m.val_start, m.vals, m.internal, visible_positions(m),
            m.grp_start, m.grp_cum, m.grp_node_start, m.grp_nodes, m.opt_bits, m.fix_mask, m.fix_val,
            *block.event_tables(m)))
    return _DEVICE_MODELS[key]


COPIES_MAX = 64  # copies of the sum tables (atomic contention) ...
COPIES_BYTES = 16 << 20  # ... within this many bytes
HT_FIRST = 1 << 16  # first hash-table slots of a model's launches (then what it needed, remembered per model)
HT_MAX_SLOTS = 1 << 26  # beyond: the launch's trajectories are run in halves
HT_COPIES = 32  # slots per hot key (a power of two; a warp's lanes use distinct ones), see kernels/ctbn.cu
TAG_MASK = np.uint64(0xFFFFFFFF)  # a key's tag without its copy (bits 32..)
_HT_SLOTS: dict[str, int] = {}


def copies(length: int) -> int:
    """Copies of the sum tables: a power of two, at most COPIES_MAX, within COPIES_BYTES."""
    k = 1
    while k < COPIES_MAX and 2 * k * length * 8 <= COPIES_BYTES:
        k *= 2
    return k


def first_slots(dense: bool, n: int) -> int:
    """Hash-table slots of a model's first launch: HT_FIRST; with dense tables the table holds only fixed
    points, at most one key per trajectory, so 2n slots (a power of two) never overflow."""
    return min(HT_FIRST, 1 << max(1, 2 * n - 1).bit_length()) if dense else HT_FIRST


def slots_after_overflow(slots: int, used: int) -> int:
    """Slots for the launch redone after a table of ``slots`` overflowed (more than half full) with ``used``
    slots filled. A table not full took every key, so ``used`` is their number and 2 * used slots hold them
    all (the trajectories, hence the keys, are the same again: one redo); a full one grows by 4."""
    if used < slots:
        return max(2 * slots, 1 << max(1, 2 * used - 1).bit_length())
    return 4 * slots


def chunk_size(b: Block) -> int:
    """Trajectories per launch: the per-trajectory scratch within about 1 GiB."""
    m = b.model
    per = block.REC_CAP * (8 * m.vis_words + 8) + 2 * m.n + 8 * (1 + m.n_words) + 16
    return int(min(MAX_CHUNK, max(1024, (1 << 30) // per)))


MAX_CHUNK = 1 << 20


def run_gpu_chunk(b: Block, traj0: int, n: int) -> dict:
    """Trajectories ``traj0 .. traj0 + n`` in one launch, reduced on the device to integer sums (dense
    tables or a hash table, see ``kernels/ctbn.cu``); only the distinct keys and their sums come back.
    The launch is redone with larger per-thread lists or hash table when they overflow (integer sums:
    nothing depends on how often)."""
    import cupy as cp

    m = b.model
    prof = block.Profile(cp)
    (par_start, par_index, tt_start, tt, val_start, vals, internal, vpos, grp_start, grp_cum, grp_node_start,
     grp_nodes, opt_bits, fix_mask, fix_val, child_start, child_index, vis_nodes) = _device_model(m)
    mod = _module(m)
    generated = _generated(m)
    fn = mod.get_function("ctbn_simulate")
    vw, nw, kw = m.vis_words, m.n_words, 1 + m.n_words
    S = block.dense_states(m, b.n_win)
    off, length = block.table_offsets(b.n_win, S)
    n_copies = copies(length)
    cap = block.REC_CAP
    slots = _HT_SLOTS.get(m.digest) or first_slots(S > 0, n)
    prof.lap("tables and module")
    while True:  # per-thread scratch (written before it is read) and the zeroed sums
        xs = cp.empty(m.n * n, cp.uint8)
        ridx = cp.empty(1 if generated else m.n * n, cp.uint8)
        rec_state = cp.empty(cap * vw * n, cp.uint64)
        rec_q = cp.empty(cap * n, cp.int64)
        acc = cp.zeros(n_copies * length, cp.uint64)
        kbuf = cp.empty(kw * n, cp.uint64)
        ctl = cp.zeros(slots, cp.uint32)
        keys = cp.zeros(slots * kw, cp.uint64)
        s1 = cp.zeros(slots, cp.uint64)
        s2 = cp.zeros(slots, cp.uint64)
        flags = cp.zeros(3, cp.int32)
        prof.lap("scratch")
        fn(((n + BLOCK - 1) // BLOCK,), (BLOCK,), (
            np.int64(n), par_start, par_index, tt_start, tt, val_start, vals, internal, vpos,
            np.int32(m.n), grp_start, grp_cum, grp_node_start, grp_nodes, opt_bits, np.int32(len(m.grp_start) - 1),
            fix_mask, fix_val, child_start, child_index, vis_nodes, np.int32(vis_nodes.size), np.uint32(b.seed),
            np.int64(traj0), np.int32(b.n_win), np.float64(b.max_time),
            np.float64(b.tick), np.int32(int(b.discrete)), np.int32(cap), xs, ridx, rec_state, rec_q,
            np.int32(vw), np.int32(nw), np.int32(S > 0), np.int64(S), np.int32(n_copies), acc,
            np.int64(length), *(np.int64(off[k]) for k in ("q", "q2", "full", "final", "th", "th2", "dth", "dth2",
                                                           "ev")),
            kbuf, np.int32(kw), ctl, keys, s1, s2, np.uint64(slots - 1), np.int32(HT_COPIES), flags))
        f = cp.asnumpy(flags)
        prof.lap("kernel" if not (f[0] or f[1]) else "kernel redone")
        if f[0]:
            cap *= 4
        elif f[1]:
            need = slots_after_overflow(slots, int(f[2]))
            if need > HT_MAX_SLOTS and n > 1:  # too many distinct keys for one launch: halves
                del xs, ridx, rec_state, rec_q, acc, kbuf, ctl, keys, s1, s2
                h = n // 2
                return block.merge([run_gpu_chunk(b, traj0, h), run_gpu_chunk(b, traj0 + h, n - h)], b.n_win,
                                   m.n_words, vw)
            slots = _HT_SLOTS[m.digest] = need
        else:
            break
    del xs, ridx, rec_state, rec_q, kbuf
    tot = cp.zeros(length, cp.uint64)
    mod.get_function("ctbn_sum_copies")(((length + 255) // 256,), (256,), (np.int64(length), acc,
                                                                          np.int32(n_copies), tot))
    prof.lap("reduce")
    tot = cp.asnumpy(tot)
    prof.lap("copy")
    used = int(f[2])
    rows = np.zeros((0, kw + 2), np.uint64)
    if used:
        out = cp.zeros(used * (kw + 2), cp.uint64)
        mod.get_function("ctbn_ht_compact")(((slots + 255) // 256,), (256,), (
            np.uint64(slots), ctl, keys, s1, s2, np.int32(kw), cp.zeros(1, cp.uint32), out))
        prof.lap("reduce")
        rows = cp.asnumpy(out).reshape(used, kw + 2)
        prof.lap("copy")
    out = block.table_counts(tot, off, S, b.n_win)
    tag = rows[:, 0] & TAG_MASK
    if not S:
        r = rows[tag < b.n_win]
        out["win"], out["state"], out["q"], out["q2"] = block._sum_rows(
            ((r[:, 0] & TAG_MASK).astype(np.int32),), r[:, 1:1 + vw], r[:, -2].view(np.int64), r[:, -1].view(np.int64))
        r = rows[tag == b.n_win]
        out["final"], out["final_n"] = block._sum_rows((), r[:, 1:1 + vw], r[:, -2].view(np.int64))
    r = rows[tag == b.n_win + 1]
    out["fp"], out["fp_n"] = block._sum_rows((), r[:, 1:1 + nw], r[:, -2].view(np.int64))
    out["trajectories"] = int(n)
    prof.lap("host merge")
    prof.report(f"maboss gpu chunk n={n} nodes={m.n} visible={vis_nodes.size} dense={S > 0} slots={slots} "
                f"keys={used} rec_cap={cap} events/trajectory={out['events'] / max(n, 1):.1f}")
    return out
