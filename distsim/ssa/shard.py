"""The SSA shard task: simulate a block of realizations and return exact integer reductions.

Realizations are independent, so a shard is a single round; it is a pure function of its payload
(network, seed, first realization, count, grid, method, outputs), so Dask may rerun it anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine import ShardContext
from . import cpu
from .compile import CompiledNetwork

# 'warp' is the GPU's layout of the O(log M) search (kernels/ssa_warp.cu); CPU workers run the tree
METHODS = {"direct": cpu.METHOD_DIRECT, "tree": cpu.METHOD_TREE, "warp": cpu.METHOD_TREE, "ar": cpu.METHOD_AR}


@dataclass(frozen=True)
class SSABlock:
    compiled: CompiledNetwork
    seed: int
    real0: int
    realizations: int
    grid: np.ndarray
    method: str
    keep_trajectories: bool = False
    keep_final: bool = False
    hist_lo: np.ndarray | None = None
    hist_width: np.ndarray | None = None
    bins: int = 0
    max_events: int = 0
    keep_events: bool = True  # per-realization event counts and error codes (else only their summary)


def event_summary(events, errors, xp=np) -> dict:
    """What the driver needs from per-realization events/errors when they are not kept: the total of
    events and the count of each error code (``xp``: NumPy, or CuPy to reduce on the device)."""
    codes = xp.bincount(errors.astype(xp.int64), minlength=8)
    return {"events_sum": int(events.sum(dtype=xp.uint64)),
            "error_counts": {i: int(n) for i, n in enumerate(codes.tolist()) if n}}


def simulate_block(ctx: ShardContext, b: SSABlock) -> dict:
    """Shard task (runs on a worker): CPU kernels, or the GPU ones on a GPU worker."""
    if ctx.backend == "gpu":
        from .gpu import simulate_block_gpu

        return simulate_block_gpu(b)
    out = cpu.simulate_block(b.compiled, real0=b.real0, realizations=b.realizations, seed=b.seed, grid=b.grid,
                              method=METHODS[b.method], keep_trajectories=b.keep_trajectories,
                              keep_final=b.keep_final, hist_lo=b.hist_lo, hist_width=b.hist_width, bins=b.bins,
                              max_events=b.max_events)
    if not b.keep_events:
        out.update(event_summary(out.pop("events"), out.pop("errors")))
    return out
