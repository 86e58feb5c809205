"""Seeds derived from a user seed and an index (sweep points, ...), through Philox4x32-10.

``derive_seeds(seed, indices)`` is a keyed *permutation* of [0, 2**32): a six-round Feistel network
on the two 16-bit halves of the index, whose round function is one Philox block keyed by
``(seed, domain)``. Distinct indices therefore always get distinct derived seeds (no two sweep points
share a random stream), and the derived seed depends only on (seed, domain, index) -- never on
workers, chunks or order.
"""

from __future__ import annotations

import numpy as np

from .philox import check_seed, philox

SWEEP_DOMAIN = 0x53574550  # "SWEP"
ROUNDS = 6


def derive_seeds(seed: int, indices, domain: int = SWEEP_DOMAIN) -> np.ndarray:
    """Derived seeds (uint32 array) for integer ``indices`` in [0, 2**32)."""
    seed = check_seed(seed)
    idx = np.asarray(indices, dtype=np.int64)
    if idx.size and (idx.min() < 0 or idx.max() > 2**32 - 1):
        raise ValueError("indices must be in [0, 2**32)")
    u = idx.astype(np.uint32).reshape(-1)
    left, right = (u >> np.uint32(16)).astype(np.uint32), (u & np.uint32(0xFFFF)).astype(np.uint32)
    key = np.array([seed, domain & 0xFFFFFFFF], dtype=np.uint32)
    for r in range(ROUNDS):
        ctr = np.zeros((u.size, 4), dtype=np.uint32)
        ctr[:, 0] = right
        ctr[:, 1] = r
        f = philox(ctr, key)[:, 0] & np.uint32(0xFFFF)
        left, right = right, (left ^ f).astype(np.uint32)
    return ((left << np.uint32(16)) | right).astype(np.uint32).reshape(idx.shape)
