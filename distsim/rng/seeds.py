"""User seeds: the range every workload accepts (no Numba here: a seed is checked before any kernel loads)."""

from __future__ import annotations

from typing import Sequence

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


def check_seeds(seeds: Sequence[int] | np.ndarray) -> np.ndarray:
    """:func:`check_seed` of every seed, as uint32; Python ints and integer arrays are checked at once."""
    if isinstance(seeds, np.ndarray) and seeds.dtype.kind in "iu":
        ok = seeds.size == 0 or (int(seeds.min()) >= 0 and int(seeds.max()) <= MAX_SEED)
    else:
        ok = set(map(type, seeds)) <= {int} and (not len(seeds) or (min(seeds) >= 0 and max(seeds) <= MAX_SEED))
    if not ok:  # the first bad seed's error
        return np.asarray([check_seed(s) for s in seeds], dtype=np.uint32)
    return np.asarray(seeds, dtype=np.uint32)
