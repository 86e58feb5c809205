"""The SSA shard payload and the event summary shared by the CPU and GPU paths."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models.compile_reactions import CompiledNetwork
from . import errors


@dataclass(frozen=True)
class SSABlock:
    compiled: CompiledNetwork
    seed: int
    real0: int
    realizations: int
    grid: np.ndarray
    method: str  # a name in distsim.ssa.methods.METHODS
    keep_trajectories: bool = False
    keep_final: bool = False
    hist_lo: np.ndarray | None = None
    hist_width: np.ndarray | None = None
    bins: int = 0
    max_events: int = 0
    keep_events: bool = True  # per-realization event counts and error words (else only their summary)
    ensemble: int = 0  # realizations of the whole run, not this shard's (method 'warp' sizes its groups by it)


def join(parts: list[np.ndarray]) -> np.ndarray:
    """Arrays end to end (a single one as it is: large final states are not copied again)."""
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def event_summary(events, error_words, real0: int, xp=np) -> dict:
    """What the driver needs from per-realization events/error words when they are not kept: the total
    of events, the count of each error code and the first fatal error (``xp``: NumPy, or CuPy to
    reduce on the device)."""
    return {"events_sum": int(events.sum(dtype=xp.uint64)), **errors.summary(error_words, real0, xp)}
