"""Method 'cr': composition-rejection (Slepoy, Thompson & Plimpton 2008; JumpProcesses.jl's DirectCR),
O(1) selection for large models, with group sums that carry no drift.

Reactions with a positive propensity are grouped by its binary exponent (group E holds a in
[2^(E-1023), 2^(E-1022)), E the biased exponent field; subnormals in group 0). A group's sum is kept
exactly, as two integer sums of the members' 53-bit mantissas (their high 26 and low 27 bits,
integers below 2^53 in float64, so adding and removing members is exact and order-free); its value
is that exact sum rounded once. a0 is the sum of the group values in increasing E. Event e: tau =
-log(u1) / a0 and the group is the first whose running sum exceeds u2 a0 (the uniforms of every
method); within group E a member is drawn uniformly and accepted with probability a / 2^(E-1022)
(at least 1/2), trial t from the Philox block at counter (e lo, e hi, t, 2): words 0-1 pick the
member, words 2-3 the acceptance. After 64 rejections (only possible among subnormal propensities)
the member is found by a linear search with a further uniform, which is equally exact.

Members are kept in one array ordered by group (segments; zero propensities in none), so moving a
reaction between groups costs the number of groups it crosses. The work array (float64, integers
stored exactly) holds: the propensity each reaction is registered with, its position, the member
array, the segment starts, the two mantissa sums and the value of every group, and the window of
non-empty groups. GPU: ``kernels/ssa_generic.cu`` with ``kernels/ssa_method_cr.cuh``, bit-identical.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...models.kinetics import M32, event_uniforms, waiting_time
from ...rng.philox import philox4x32_10, u01_f64
from .. import gpu
from ..cpu import CPUMethod
from .base import SSAMethod

G = 2047  # groups: biased exponents 0..2046
MAX_TRIALS = 64
TWO27 = 134217728.0


@numba.njit(inline="always", cache=True)
def _layout(m):
    """Offsets in the work array: registered value, position, members, starts (G + 1), high and low
    mantissa sums, group values; then lo, hi (the window of possibly non-empty groups) and the count."""
    start = 3 * m
    sh = start + G + 1
    sl = sh + G
    gv = sl + G
    return m, 2 * m, start, sh, sl, gv, gv + G


@numba.njit(inline="always", cache=True)
def _split(v):
    """Group of v > 0 and the high / low parts of its 53-bit mantissa (exact)."""
    f, ex = math.frexp(v)
    if ex > -1022:  # normal: v = f 2^ex, f in [0.5, 1)
        e, m = ex + 1022, math.ldexp(f, 53)
    else:
        e, m = 0, math.ldexp(v, 1074)
    hi = math.floor(m * (1.0 / TWO27))  # m is an integer below 2^53: both parts are exact
    return e, hi, m - hi * TWO27


@numba.njit(inline="always", cache=True)
def _value(aux, sh, sl, e):
    """The group's exact mantissa sum, rounded once, times its unit."""
    return (aux[sh + e] * TWO27 + aux[sl + e]) * math.ldexp(1.0, (e if e > 0 else 1) - 1075)


@numba.njit(inline="always", cache=True)
def _put(aux, pos, perm, p, d):
    aux[perm + p] = d
    aux[pos + d] = p


@numba.njit(cache=True)
def _move(aux, m, d, g, h):
    """Move reaction d from group g to group h (-1: no group), segment by segment."""
    pos, perm, start, sh, sl, gv, meta = _layout(m)
    lo, hi, n = int(aux[meta]), int(aux[meta + 1]), int(aux[meta + 2])
    if g < 0:  # enter as the last member of the top group (the window grows to hold h)
        if n == 0:
            lo = hi = h
            aux[start + h] = 0.0
            aux[start + h + 1] = 0.0
        while hi < h:
            hi += 1
            aux[start + hi + 1] = n
        while lo > h:
            lo -= 1
            aux[start + lo] = 0.0
        _put(aux, pos, perm, n, d)
        n += 1
        aux[start + hi + 1] = n
        g = hi
    elif h > hi:
        while hi < h:
            hi += 1
            aux[start + hi + 1] = n
    elif 0 <= h < lo:
        while lo > h:
            lo -= 1
            aux[start + lo] = 0.0
    p = int(aux[pos + d])
    top = hi + 1 if h < 0 else h  # leaving: past the end of the top group
    while g < top:  # up: swap with the last member of g, which then ends one earlier
        last = int(aux[start + g + 1]) - 1
        _put(aux, pos, perm, p, int(aux[perm + last]))
        _put(aux, pos, perm, last, d)
        aux[start + g + 1] = last
        p = last
        g += 1
    while g > h >= 0:  # down: swap with the first member of g, which then starts one later
        first = int(aux[start + g])
        _put(aux, pos, perm, p, int(aux[perm + first]))
        _put(aux, pos, perm, first, d)
        aux[start + g] = first + 1
        p = first
        g -= 1
    if h < 0:  # d is now the last member of the top group: drop it
        n -= 1
        aux[start + hi + 1] = n
    while hi >= lo and aux[start + hi] == aux[start + hi + 1]:
        hi -= 1
    while lo <= hi and aux[start + lo] == aux[start + lo + 1]:
        lo += 1
        aux[start + lo] = 0.0
    aux[meta], aux[meta + 1], aux[meta + 2] = lo, hi, n


@numba.njit(inline="always", cache=True)
def reset(aux):
    for i in range(aux.shape[0]):
        aux[i] = 0.0
    m = (aux.shape[0] - aux_size(0)) // 3
    meta = _layout(m)[6]
    aux[meta] = G  # an empty window: lo > hi
    aux[meta + 1] = -1.0


@numba.njit(inline="always", cache=True)
def update(a, aux, d, v):
    m = a.shape[0]
    pos, perm, start, sh, sl, gv, meta = _layout(m)
    old = aux[d]
    if old == v:
        return
    g = h = -1
    if old > 0.0:
        g, ohi, olo = _split(old)
        aux[sh + g] -= ohi
        aux[sl + g] -= olo
        aux[gv + g] = _value(aux, sh, sl, g)
    if v > 0.0:
        h, nhi, nlo = _split(v)
        aux[sh + h] += nhi
        aux[sl + h] += nlo
        aux[gv + h] = _value(aux, sh, sl, h)
    aux[d] = v
    if g != h:
        _move(aux, m, d, g, h)


@numba.njit(cache=True)
def _member(a, aux, e, seed, rid, grp):
    """A member of group grp with probability proportional to its propensity."""
    m = a.shape[0]
    pos, perm, start, sh, sl, gv, meta = _layout(m)
    first = int(aux[start + grp])
    n = int(aux[start + grp + 1]) - first
    bound = math.ldexp(1.0, grp - 1022)  # above every member of the group
    for t in range(MAX_TRIALS):
        w0, w1, w2, w3 = philox4x32_10(e & M32, e >> np.uint64(32), t, 2, seed, rid)
        i = int(u01_f64(w0, w1) * n)
        j = int(aux[perm + first + (i if i < n else n - 1)])
        if u01_f64(w2, w3) * bound < a[j]:
            return j
    w0, w1, w2, w3 = philox4x32_10(e & M32, e >> np.uint64(32), MAX_TRIALS, 2, seed, rid)
    target = u01_f64(w0, w1) * aux[gv + grp]
    c = 0.0
    j = int(aux[perm + first])
    for q in range(first, first + n):
        j = int(aux[perm + q])
        c = c + a[j]
        if c > target:
            break
    return j


@numba.njit(inline="always", cache=True)
def event(a, aux, e, seed, rid):
    m = a.shape[0]
    pos, perm, start, sh, sl, gv, meta = _layout(m)
    lo, hi = int(aux[meta]), int(aux[meta + 1])
    a0 = 0.0
    for g in range(lo, hi + 1):
        a0 = a0 + aux[gv + g]
    if not a0 > 0.0:
        return math.inf, 0.0
    u1, u2 = event_uniforms(e, seed, rid)
    target = u2 * a0
    c = 0.0
    grp = -1
    for g in range(lo, hi + 1):
        if aux[gv + g] > 0.0:
            grp = g
            c = c + aux[gv + g]
            if c > target:
                break
    return waiting_time(u1, a0), float(_member(a, aux, e, seed, rid, grp))


@numba.njit(inline="always", cache=True)
def select(a, aux, winner):
    return int(winner)


@numba.njit(inline="always", cache=True)
def aux_size(m):
    return 3 * m + (G + 1) + 3 * G + 3


METHOD = SSAMethod(
    name="cr", summary="O(1) composition-rejection over exponent groups with exact group sums (large models)",
    cpu=CPUMethod("cr", reset, update, event, select, aux_size), gpu=gpu.simulate_generic,
    cuda_header="ssa_method_cr.cuh", bit_identical=True,
)
