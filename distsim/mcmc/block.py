"""The MCMC problem arrays and the shard payload (shared by the CPU and GPU paths)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Problem:
    """Flat arrays of the inference problem (shared by every chain)."""

    starts: np.ndarray  # int64 [n, S]: state at t_{i-1}
    targets: np.ndarray  # int64 [n, S]: state at t_i
    dts: np.ndarray  # float64 [n]
    param_of: np.ndarray  # int32 [M]
    fixed_theta: np.ndarray  # float64 [M]
    prior_shape: np.ndarray  # float64 [P]
    prior_rate: np.ndarray  # float64 [P]
    rct_start: np.ndarray
    rct_species: np.ndarray
    rct_stoich: np.ndarray
    chg_start: np.ndarray
    chg_species: np.ndarray
    chg_delta: np.ndarray
    dep_start: np.ndarray
    dep_list: np.ndarray
    can_inc: np.ndarray  # int8 [S]
    can_dec: np.ndarray  # int8 [S]
    max_events: int
    max_attempts: int
    digest: str


@dataclass(frozen=True)
class MCMCBlock:
    problem: Problem
    seed: int
    chains: np.ndarray  # int64 [C]: chain ids (Philox stream)
    theta0: np.ndarray  # float64 [C, P]
    it0: int
    n_iter: int
    effort: np.ndarray  # float64 [C, n]: mean attempts per interval lately (GPU warps start in proportion;
    #                     never changes a draw)
    time_left: float | None = None  # seconds the run may still take: the task stops between slices past it
