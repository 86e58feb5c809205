"""Parallel acceptance-rejection selection of the next reaction (seed 001, "GPU-AR").

Seed 001 elects every reaction j in parallel with a uniform u_j in [0, T), T = max_j D_j: j is
eligible when u_j < D_j and is rated R_j = u_j / D_j; the selected reaction is the eligible one with
the lowest rating (a deterministic number of steps, one reduction). That selection is **not**
proportional to D_j: P(j) = int_0^1 (D_j/T) prod_{i != j} (1 - x D_i / T) dx, so small propensities
are under-selected (for D = (1, 0.01) the second is chosen with probability ~0.005, not ~0.0099).
Rating with an exponential instead, R_j = -log(u_j) / D_j, keeps the same parallel election and
selection but makes it exact (an exponential race: P(j) = D_j / sum D, and min_j R_j is the
waiting time tau ~ Exp(sum D)). Both are implemented here (CPU) and in ``kernels/ssa_ar.cu`` (GPU)
with the same random numbers, for the seed's validation: MSE between propensities and selection
frequencies, and the rejection rate.

Random layout: selection round i of parallel instance k uses the Philox key (seed, k); reaction j
draws the double built from words 2(j%2), 2(j%2)+1 of the block at counter (i, j // 2, 0, 2).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from ..backends.dsmath import ds_log
from ..rng.philox import philox4x32_10, u01_f64

MODE_UNIFORM, MODE_EXPONENTIAL = 0, 1  # seed 001's rating, exact rating


@numba.njit(cache=True)
def _select_one(D, T, mode, seed, k, i):
    """One election and selection; returns the index of the selected reaction, or M (rejection)."""
    M = D.shape[0]
    best = math.inf
    best_j = M
    for j in range(M):
        w0, w1, w2, w3 = philox4x32_10(np.uint64(i), np.uint64(j >> 1), 0, 2, seed, k)
        u = u01_f64(w0, w1) if (j & 1) == 0 else u01_f64(w2, w3)
        d = D[j]
        if d <= 0.0:
            continue
        if mode == MODE_UNIFORM:
            uT = u * T
            if uT >= d:
                continue  # not eligible
            rating = uT / d
        else:
            rating = -ds_log(u) / d
        if rating < best:
            best = rating
            best_j = j
    return best_j


@numba.njit(parallel=True, cache=True)
def _select_many(D, T, mode, seed, instances, rounds, counts):
    M = D.shape[0]
    part = np.zeros((instances, M + 1), dtype=np.int64)
    for k in prange(instances):
        for i in range(rounds):
            part[k, _select_one(D, T, mode, seed, np.uint64(k), i)] += 1
    for k in range(instances):
        for j in range(M + 1):
            counts[j] += part[k, j]


def select_counts(D: np.ndarray, *, instances: int, rounds: int, seed: int = 0, mode: int = MODE_EXPONENTIAL) -> np.ndarray:
    """Counts of selected reactions over ``instances`` x ``rounds`` selections; the last entry counts rejections."""
    D = np.asarray(D, dtype=np.float64)
    counts = np.zeros(len(D) + 1, dtype=np.int64)
    _select_many(D, float(D.max()), mode, np.uint64(seed), instances, rounds, counts)
    return counts


def uniform_rating_probabilities(D: np.ndarray, grid: int = 200_001) -> np.ndarray:
    """Exact selection probabilities of seed 001's uniform rating (numerical integration in x)."""
    D = np.asarray(D, dtype=np.float64)
    T = D.max()
    x = np.linspace(0.0, 1.0, grid)
    q = 1.0 - np.outer(x, D / T)  # [x, j]: P(R_j > x) for x <= 1
    log_all = np.sum(np.log(np.maximum(q, 1e-300)), axis=1)
    out = np.empty(len(D))
    for j, d in enumerate(D):
        others = np.exp(log_all - np.log(np.maximum(q[:, j], 1e-300)))
        out[j] = np.trapezoid(d / T * others, x)
    return out


def gaussian_propensities(M: int) -> np.ndarray:
    """Seed 001's test vectors: D_j = 1e5 N(x_j; 0, 1), x_j = -5 + 10 j / (M - 1)."""
    x = -5.0 + 10.0 * np.arange(M) / (M - 1)
    return 1e5 * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
