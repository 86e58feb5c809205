"""The GPU trajectory kernel (``kernels/ctbn.cu``, CuPy + NVRTC, ``--fmad=false``): one thread per
trajectory, the same Philox words and arithmetic as :mod:`.cpu`, so the same bits."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backends import cuda, dsmath
from .model import CompiledModel
from . import block
from .block import Block, reduce_chunk, visible_positions

BLOCK = 128
OPTIONS = ("--fmad=false",)


def source() -> str:
    return dsmath.neglog_table_cuda() + cuda.kernel_source("ctbn.cu")


def _module() -> Any:
    return cuda.load_module(source(), OPTIONS)


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
            m.grp_start, m.grp_cum, m.grp_node_start, m.grp_nodes, m.opt_bits, m.fix_mask, m.fix_val))
    return _DEVICE_MODELS[key]


def run_gpu_chunk(b: Block, traj0: int, n: int) -> dict:
    """Trajectories ``traj0 .. traj0 + n`` in one launch; the slabs grow (and the launch is redone) on overflow."""
    import cupy as cp

    m = b.model
    (par_start, par_index, tt_start, tt, val_start, vals, internal, vpos, grp_start, grp_cum, grp_node_start,
     grp_nodes, opt_bits, fix_mask, fix_val) = _device_model(m)
    fn = _module().get_function("ctbn_simulate")
    cap = block.first_cap(b.n_win)
    vw = m.vis_words
    while True:
        xs = cp.zeros(m.n * n, cp.uint8)
        rates = cp.zeros(m.n * n, cp.float64)
        rec_win = cp.zeros(cap * n, cp.int32)
        rec_state = cp.zeros(cap * vw * n, cp.uint64)
        rec_q = cp.zeros(cap * n, cp.int64)
        rec_n = cp.zeros(n, cp.int32)
        th_sum = cp.zeros(b.n_win, cp.uint64)
        th_sq = cp.zeros(b.n_win, cp.uint64)
        final_vis = cp.zeros(vw * n, cp.uint64)
        final_full = cp.zeros(m.n_words * n, cp.uint64)
        fixed = cp.zeros(n, cp.uint8)
        events = cp.zeros(n, cp.int64)
        fn(((n + BLOCK - 1) // BLOCK,), (BLOCK,), (
            np.int64(n), par_start, par_index, tt_start, tt, val_start, vals, internal, vpos,
            np.int32(m.n), grp_start, grp_cum, grp_node_start, grp_nodes, opt_bits, np.int32(len(m.grp_start) - 1),
            fix_mask, fix_val, np.uint32(b.seed), np.int64(traj0), np.int32(b.n_win), np.float64(b.max_time),
            np.float64(b.tick), np.int32(int(b.discrete)), np.int32(cap), xs, rates, rec_win, rec_state, rec_q,
            rec_n, th_sum, th_sq, final_vis, np.int32(vw), final_full, np.int32(m.n_words), fixed, events))
        rn = cp.asnumpy(rec_n)
        if int(rn.max(initial=0)) <= cap:
            return reduce_chunk(cp.asnumpy(rec_win).reshape(cap, n).T,
                                cp.asnumpy(rec_state).reshape(cap, vw, n).transpose(2, 0, 1),
                                cp.asnumpy(rec_q).reshape(cap, n).T, rn, cp.asnumpy(th_sum).view(np.int64),
                                cp.asnumpy(th_sq).view(np.int64), cp.asnumpy(final_vis).reshape(vw, n).T,
                                cp.asnumpy(final_full).reshape(m.n_words, n).T, cp.asnumpy(fixed),
                                cp.asnumpy(events))
        cap *= 4
