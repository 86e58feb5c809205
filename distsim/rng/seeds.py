"""User seeds: the range every workload accepts (no Numba here: a seed is checked before any kernel loads)."""

from __future__ import annotations

import numpy as np

MAX_SEED = 2**32 - 1


def check_seed(seed: int) -> int:
    """Validate a user seed (an integer in [0, 2**32)) and return it as int."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    seed = int(seed)
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    return seed
