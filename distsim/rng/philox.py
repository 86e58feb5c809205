"""Philox4x32-10 for the CPU, bit-identical to ``kernels/philox.cuh``.

distsim keys every stream by ``(seed, stream)`` (two 32-bit words) and addresses draws with a
four-word counter chosen by the workload. Uniform floats are derived from the words exactly as on
the GPU, so CPU and GPU kernels consume identical random numbers.
"""

from __future__ import annotations

import numba
import numpy as np

from .seeds import MAX_SEED, check_seed  # noqa: F401 -- their home; re-exported

M0 = np.uint64(0xD2511F53)
M1 = np.uint64(0xCD9E8D57)
W0 = np.uint64(0x9E3779B9)
W1 = np.uint64(0xBB67AE85)
MASK32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)



def _rounds(c0, c1, c2, c3, k0, k1):
    """The ten rounds on uint64 words < 2**32: NumPy scalars in the kernels (compiled as ``_rounds_jit``),
    arrays in :func:`philox` (the same operations, so the same words)."""
    for i in range(10):
        if i > 0:
            k0 = (k0 + W0) & MASK32
            k1 = (k1 + W1) & MASK32
        p0 = M0 * c0
        p1 = M1 * c2
        c0, c1, c2, c3 = (p1 >> _S32) ^ c1 ^ k0, p1 & MASK32, (p0 >> _S32) ^ c3 ^ k1, p0 & MASK32
    return c0, c1, c2, c3


_rounds_jit = numba.njit(inline="always", cache=True)(_rounds)


@numba.njit(inline="always", cache=True)
def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """One Philox4x32-10 block. Arguments are integers < 2**32; returns four uint64 words < 2**32."""
    return _rounds_jit(np.uint64(c0), np.uint64(c1), np.uint64(c2), np.uint64(c3), np.uint64(k0) & MASK32,
                       np.uint64(k1) & MASK32)


@numba.njit(inline="always", cache=True)
def u01_f32(u):
    """Uniform float32 in (0, 1) from one word: ((u >> 9) + 0.5) * 2**-23 (exact)."""
    return np.float32((np.float32(np.uint64(u) >> np.uint64(9)) + np.float32(0.5)) * np.float32(1.1920928955078125e-07))


@numba.njit(inline="always", cache=True)
def u01_f64(hi, lo):
    """Uniform float64 in (0, 1) from two words: ((hi << 20 | lo >> 12) + 0.5) * 2**-52 (exact)."""
    k = (np.uint64(hi) << np.uint64(20)) | (np.uint64(lo) >> np.uint64(12))
    return (np.float64(k) + 0.5) * 2.220446049250313e-16


@numba.njit(inline="always", cache=True)
def below(u, n):
    """Integer uniform on [0, n) from one word: floor(u * n / 2**32)."""
    return (np.uint64(u) * np.uint64(n)) >> _S32


NUMPY_BLOCKS = 1 << 16  # philox() of up to this many blocks: NumPy array operations, else the Numba loop


@numba.njit(cache=True)
def _philox_blocks(counters, k0, k1, out):
    for i in range(counters.shape[0]):
        r0, r1, r2, r3 = philox4x32_10(counters[i, 0], counters[i, 1], counters[i, 2], counters[i, 3], k0[i], k1[i])
        out[i, 0] = r0
        out[i, 1] = r1
        out[i, 2] = r2
        out[i, 3] = r3


def philox(counter, key) -> np.ndarray:
    """Vectorised Philox4x32-10: ``counter`` (..., 4) and ``key`` (..., 2) uint32 arrays -> (..., 4) uint32.
    Up to NUMPY_BLOCKS blocks by NumPy array operations (the same words): no Numba compile or cache load
    (0.5-0.7 s) in a process that only derives a sweep's seeds or draws a filter's uniforms (a client, a
    GPU worker); more by the compiled loop (4 times faster at 10**6 blocks)."""
    counter = np.asarray(counter, dtype=np.uint32)
    key = np.asarray(key, dtype=np.uint32)
    shape = np.broadcast_shapes(counter.shape[:-1], key.shape[:-1])
    c = np.broadcast_to(counter, shape + (4,)).reshape(-1, 4)
    k = np.broadcast_to(key, shape + (2,)).reshape(-1, 2)
    if c.shape[0] > NUMPY_BLOCKS:
        out = np.empty((c.shape[0], 4), dtype=np.uint32)
        _philox_blocks(np.ascontiguousarray(c), np.ascontiguousarray(k[:, 0]), np.ascontiguousarray(k[:, 1]), out)
        return out.reshape(shape + (4,))
    words = _rounds(*c.astype(np.uint64).T, *k.astype(np.uint64).T)
    return np.stack(words, axis=-1).astype(np.uint32).reshape(shape + (4,))


def uniform_f32(words) -> np.ndarray:
    """Vectorised :func:`u01_f32` over uint32 words."""
    w = np.asarray(words, dtype=np.uint32)
    return (((w >> np.uint32(9)).astype(np.float32) + np.float32(0.5)) * np.float32(2.0**-23)).astype(np.float32)


def uniform_f64(hi, lo) -> np.ndarray:
    """Vectorised :func:`u01_f64` over pairs of uint32 words."""
    k = (np.asarray(hi, dtype=np.uint64) << np.uint64(20)) | (np.asarray(lo, dtype=np.uint64) >> np.uint64(12))
    return (k.astype(np.float64) + 0.5) * 2.0**-52
