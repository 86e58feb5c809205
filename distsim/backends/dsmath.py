"""Elementary functions computed identically on CPU (Numba) and GPU (``kernels/dsmath.cuh``).

Library ``log``/``exp`` differ between CUDA and the CPU in the last bit, which would let CPU and GPU
trajectories drift apart. These versions use only exactly rounded IEEE operations (+ - * /, frexp,
ldexp, comparisons) in a fixed order, so both backends produce the same bits; the CUDA build must
not contract multiply-adds (``--fmad=false``). Accuracy is within a few ulp, ample for sampling.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .neglog import NEGLOG_TABLE, neglog_table_cuda  # noqa: F401 -- its home; re-exported

LN2 = 0.6931471805599453
SQRT_HALF = 0.7071067811865476
INV_LN2 = 1.4426950408889634
LN2_HI = 6.93147180369123816490e-01  # Cody-Waite split of ln 2 (fdlibm): k * LN2_HI is exact
LN2_LO = 1.90821492927058770002e-10


@intrinsic
def _f64_bits(typingctx, x):
    """The IEEE-754 bits of a float64 as int64 (an LLVM bitcast; no call)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _bits_f64(typingctx, b):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c with one rounding (LLVM's llvm.fma: exact on every target), like CUDA's fma()."""
    def codegen(context, builder, signature, args):
        d = ir.DoubleType()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(d, [d, d, d]), "llvm.fma.f64")
        return builder.call(fn, args)

    return types.float64(types.float64, types.float64, types.float64), codegen


@numba.njit(inline="always", cache=True)
def _frexp(x):
    """math.frexp for positive normal x by bit manipulation (same result); library call otherwise."""
    b = _f64_bits(x)
    ex = (b >> 52) & 0x7FF
    if ex == 0 or ex == 0x7FF or b < 0:
        return math.frexp(x)
    return _bits_f64((b & 0x800FFFFFFFFFFFFF) | 0x3FE0000000000000), ex - 1022


@numba.njit(inline="always", cache=True)
def ds_log(x):
    """Natural logarithm for x > 0: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s)."""
    m, e = _frexp(x)  # x = m * 2**e, m in [0.5, 1)
    if m < SQRT_HALF:
        m = m * 2.0
        e = e - 1
    s = (m - 1.0) / (m + 1.0)  # |s| <= 0.1716
    z = s * s
    # 2 (s + s^3/3 + ... + s^23/23): Horner, truncation error < 1e-19
    p = 1.0 / 23.0
    p = p * z + 1.0 / 21.0
    p = p * z + 1.0 / 19.0
    p = p * z + 1.0 / 17.0
    p = p * z + 1.0 / 15.0
    p = p * z + 1.0 / 13.0
    p = p * z + 1.0 / 11.0
    p = p * z + 1.0 / 9.0
    p = p * z + 1.0 / 7.0
    p = p * z + 1.0 / 5.0
    p = p * z + 1.0 / 3.0
    p = p * z + 1.0
    return 2.0 * s * p + e * LN2


@numba.njit(inline="always", cache=True)
def ds_exp(x):
    """Exponential: x = k ln2 + r with |r| <= ln2/2 (Cody-Waite), exp r by its Taylor series, times 2^k."""
    if x > 709.0:
        return math.inf
    if x < -745.0:
        return 0.0
    k = math.floor(x * INV_LN2 + 0.5)
    r = (x - k * LN2_HI) - k * LN2_LO
    p = 1.0 / 6227020800.0  # 1/13!
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    return math.ldexp(p, int(k))


@numba.njit(inline="always", cache=True)
def ds_pow(x, y):
    """x^y: exact repeated squaring for integer y with |y| <= 64, else exp(y log x) (x > 0)."""
    if y == math.floor(y) and abs(y) <= 64.0:
        n = int(abs(y))
        result = 1.0
        base = x
        while n > 0:
            if n & 1:
                result = result * base
            base = base * base
            n >>= 1
        return 1.0 / result if y < 0 else result
    if x <= 0.0:
        return 0.0 if x == 0.0 and y > 0 else math.nan
    return ds_exp(y * ds_log(x))


# sin/cos: x = k pi/2 + r, |r| <= pi/4 (a three-part split of pi/2 with explicit FMAs), then fdlibm's
# kernel polynomials (__kernel_sin/__kernel_cos coefficients) and the quadrant k mod 4. CPU only for now:
# networks that use them are refused on GPUs (distsim.ssa.gpu_events).
TWO_OVER_PI = 0.6366197723675814
PIO2_HI = 1.5707963267948966
PIO2_MID = 6.123233995736766e-17
PIO2_LO = -1.4973849048591698e-33
TRIG_MAX = 1.0e9  # larger |x| lose the reduction's accuracy: NaN


@numba.njit(inline="always", cache=True)
def _sin_kernel(r):
    z = r * r
    p = fma(z, 1.58969099521155010221e-10, -2.50507602534068634195e-08)
    p = fma(z, p, 2.75573137070700676789e-06)
    p = fma(z, p, -1.98412698298579493134e-04)
    p = fma(z, p, 8.33333333332248946124e-03)
    p = fma(z, p, -1.66666666666666324348e-01)
    return fma(r * z, p, r)


@numba.njit(inline="always", cache=True)
def _cos_kernel(r):
    z = r * r
    p = fma(z, -1.13596475577881948265e-11, 2.08757232129817482790e-09)
    p = fma(z, p, -2.75573143513906633035e-07)
    p = fma(z, p, 2.48015872894767294178e-05)
    p = fma(z, p, -1.38888888888741095749e-03)
    p = fma(z, p, 4.16666666666666019037e-02)
    return fma(z * z, p, fma(-0.5, z, 1.0))


@numba.njit(inline="always", cache=True)
def _trig(x, shift):
    """sin x (shift 0) or cos x (shift 1) = sin(x + shift pi/2), a few ulp; NaN if |x| > TRIG_MAX or not finite."""
    if not (abs(x) <= TRIG_MAX):
        return math.nan
    k = math.floor(x * TWO_OVER_PI + 0.5)
    r = fma(-k, PIO2_HI, x)
    r = fma(-k, PIO2_MID, r)
    r = fma(-k, PIO2_LO, r)
    q = (int(k) + shift) & 3
    if q == 0:
        return _sin_kernel(r)
    if q == 1:
        return _cos_kernel(r)
    if q == 2:
        return -_sin_kernel(r)
    return -_cos_kernel(r)


@numba.njit(inline="always", cache=True)
def ds_sin(x):
    return _trig(x, 0)


@numba.njit(inline="always", cache=True)
def ds_cos(x):
    return _trig(x, 1)


@numba.njit(inline="always", cache=True)
def neglog_u01(u):
    """-log(u) for a normal double u in (0, 1): the SSA's exponential waiting time, cheaper than ds_log.

    u = m 2^k with m in [0.75, 1.5); c = j/256 is the table point nearest m, so |r| = |m/c - 1| <= 1/384
    and log m = log c + log1p(r), the series to r^6 (truncation below 2^-53 relative). Near u = 1 the
    point is c = 1 (log c = 0), so the result is accurate relative to its size and always positive.
    Fused multiply-adds (explicit, so CUDA's ``--fmad=false`` keeps them) give the GPU the same bits.
    """
    b = _f64_bits(u)
    hi = b >> 32
    top = (hi >> 19) & 1  # mantissa >= 1.5: use m = f / 2
    k = ((hi >> 20) & 0x7FF) - 1023 + top
    m = _bits_f64((b & 0x000FFFFFFFFFFFFF) | ((1023 - top) << 52))
    j = int(m * 256.0 + 0.5)
    r = (m - j * 0.00390625) * NEGLOG_TABLE[2 * (j - 192)]
    q = fma(-0.16666666666666666, r, 0.2)
    q = fma(q, r, -0.25)
    q = fma(q, r, 0.3333333333333333)
    q = fma(q, r, -0.5)
    lg = fma(r * r, q, r)
    return -(fma(float(k), LN2, NEGLOG_TABLE[2 * (j - 192) + 1]) + lg)
