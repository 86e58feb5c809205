"""The SSA shard payload and the event summary shared by the CPU and GPU paths."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models.compile_reactions import CompiledNetwork
from . import cpu

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
