"""Philox4x32-10: Random123 known-answer vectors and the uniform conversions."""

import numpy as np
import pytest

from distsim.rng import check_seed, philox, uniform_f32, uniform_f64

# Random123 kat_vectors, "philox4x32 10": counter (4 words), key (2 words) -> output (4 words)
KAT = [
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
]


@pytest.mark.parametrize("ctr,key,expected", KAT)
def test_known_answers(ctr, key, expected):
    assert [int(x) for x in philox(ctr, key)] == expected


def test_vectorised_matches_scalar():
    rng = np.random.default_rng(0)
    ctr = rng.integers(0, 2**32, size=(100, 4), dtype=np.uint64).astype(np.uint32)
    key = rng.integers(0, 2**32, size=(100, 2), dtype=np.uint64).astype(np.uint32)
    batch = philox(ctr, key)
    for i in range(100):
        assert np.array_equal(batch[i], philox(ctr[i], key[i]))


def test_uniforms_open_interval_and_exact():
    w = np.array([0, 1, 511, 512, 2**31, 2**32 - 1], dtype=np.uint32)
    f = uniform_f32(w)
    assert f.dtype == np.float32 and np.all(f > 0) and np.all(f < 1)
    assert f[0] == np.float32(2**-24) and f[-1] == np.float32(1 - 2**-24)
    d = uniform_f64(w, w)
    assert np.all(d > 0) and np.all(d < 1)
    assert d[0] == 2**-53 and d[-1] == 1 - 2**-53


def test_uniform_mean_and_independence_of_streams():
    n = 200_000
    ctr = np.zeros((n, 4), np.uint32)
    ctr[:, 0] = np.arange(n)
    a = uniform_f64(*philox(ctr, [7, 0])[:, :2].T)
    b = uniform_f64(*philox(ctr, [7, 1])[:, :2].T)
    # mean 1/2 and variance 1/12; 5-sigma bounds for n draws
    assert abs(a.mean() - 0.5) < 5 * np.sqrt(1 / 12 / n)
    assert abs(a.var() - 1 / 12) < 5 * np.sqrt(1 / 180 / n)
    assert abs(np.corrcoef(a, b)[0, 1]) < 5 / np.sqrt(n)


@pytest.mark.parametrize("bad", [-1, 2**32, 1.5, "3", True])
def test_seed_validation(bad):
    with pytest.raises((TypeError, ValueError)):
        check_seed(bad)


def test_neglog_u01_accuracy_and_sign():
    """-log(u) from the table: within 6 ulp of libm's log (4 measured), positive, accurate near u = 1."""
    import math

    from distsim.backends.dsmath import neglog_u01

    rng = np.random.default_rng(11)
    extremes = [2.0**-53, 2.0**-1022, 1e-300, 0.5, 0.75, 0.75 - 2.0**-54, 1.0 - 2.0**-53, 1.0 - 1e-10, 0.999]
    for u in list(rng.random(50_000)) + extremes:
        e = neglog_u01(float(u))
        ref = -math.log(u)
        assert e > 0.0
        assert abs(e - ref) <= 6 * 2.0**-53 * ref, (u, e, ref)


def test_neglog_table_is_portable_and_matches_cuda_text():
    """The table's logs are correctly rounded (decimal), and the CUDA initializer holds the same bits."""
    import math
    import re

    from distsim.backends.dsmath import NEGLOG_TABLE, neglog_table_cuda

    assert NEGLOG_TABLE.shape == (2 * 193,)
    inv, logc = NEGLOG_TABLE[0::2], NEGLOG_TABLE[1::2]
    c = np.arange(192, 385) / 256.0
    assert np.array_equal(inv, 1.0 / c)
    assert inv[64] == 1.0 and logc[64] == 0.0  # c = 1
    assert all(abs(lc - math.log(ci)) <= math.ulp(math.log(ci)) for lc, ci in zip(logc, c) if ci != 1.0)
    text = re.search(r"\{(.*)\}", neglog_table_cuda()).group(1)
    assert np.array_equal(np.array([float.fromhex(v) for v in text.split(", ")]), NEGLOG_TABLE)


def test_fma_is_fused():
    import numba

    from distsim.backends.dsmath import fma

    f = numba.njit(lambda a, b, c: fma(a, b, c))
    # (1 + 2^-30)(1 - 2^-30) - 1 = -2^-60 exactly with one rounding; 0 with two
    assert f(1.0 + 2.0**-30, 1.0 - 2.0**-30, -1.0) == -(2.0**-60)


PHILOX_TEST = r"""
#include "philox.cuh"
extern "C" __global__ void blocks(const uint32_t* ctr, const uint32_t* key, uint32_t* out, float* f32, double* f64, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    ds_u32x4 c{ctr[4*i], ctr[4*i+1], ctr[4*i+2], ctr[4*i+3]};
    ds_u32x4 r = ds_philox4x32_10(c, key[2*i], key[2*i+1]);
    out[4*i] = r.x; out[4*i+1] = r.y; out[4*i+2] = r.z; out[4*i+3] = r.w;
    f32[i] = ds_u01_f32(r.x);
    f64[i] = ds_u01_f64(r.y, r.z);
}
"""


@pytest.mark.gpu
def test_philox_cpu_equals_gpu():
    import cupy as cp

    from distsim.backends import cuda

    rng = np.random.default_rng(1)
    n = 100_000
    ctr = rng.integers(0, 2**32, size=(n, 4), dtype=np.uint64).astype(np.uint32)
    ctr[:3] = [[0, 0, 0, 0], [0xFFFFFFFF] * 4, [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344]]
    key = rng.integers(0, 2**32, size=(n, 2), dtype=np.uint64).astype(np.uint32)
    key[:3] = [[0, 0], [0xFFFFFFFF] * 2, [0xA4093822, 0x299F31D0]]
    fn = cuda.load_module(PHILOX_TEST).get_function("blocks")
    out = cp.zeros((n, 4), cp.uint32)
    f32 = cp.zeros(n, cp.float32)
    f64 = cp.zeros(n, cp.float64)
    fn(((n + 255) // 256,), (256,), (cp.asarray(ctr), cp.asarray(key), out, f32, f64, np.int32(n)))
    ref = philox(ctr, key)
    assert np.array_equal(cp.asnumpy(out), ref)
    assert int(ref[0, 0]) == 0x6627E8D5 and int(ref[2, 3]) == 0x24126EA1
    assert np.array_equal(cp.asnumpy(f32), uniform_f32(ref[:, 0]))
    assert np.array_equal(cp.asnumpy(f64), uniform_f64(ref[:, 1], ref[:, 2]))


def test_vectorised_philox_equals_the_kernels_block():
    """philox() (NumPy array operations) gives the words of philox4x32_10, the block the Numba kernels use."""
    from distsim.rng.philox import NUMPY_BLOCKS
    from distsim.rng.philox import philox4x32_10

    rng = np.random.default_rng(5)
    ctr = rng.integers(0, 2**32, (500, 4), dtype=np.uint64).astype(np.uint32)
    key = rng.integers(0, 2**32, (500, 2), dtype=np.uint64).astype(np.uint32)
    ctr[:3] = [[0, 0, 0, 0], [2**32 - 1] * 4, [1, 2**31, 0, 2**32 - 1]]
    got = philox(ctr, key)
    big = np.tile(ctr, (NUMPY_BLOCKS // len(ctr) + 1, 1))  # over NUMPY_BLOCKS: the Numba loop
    assert np.array_equal(philox(big, np.tile(key, (len(big) // len(key), 1)))[:len(ctr)], got)
    for i in range(len(ctr)):
        assert [int(x) for x in got[i]] == [int(x) for x in philox4x32_10(*map(int, ctr[i]), *map(int, key[i]))]
