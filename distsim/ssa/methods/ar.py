"""Method 'ar': seed 001's parallel acceptance-rejection election with the exact exponential rating
(see :mod:`distsim.ssa.ar`): every reaction j draws its clock -log(u_j)/a_j, the lowest wins and
is tau (an exponential race). u_j comes from words 2(j%2), 2(j%2)+1 of the Philox block at counter
(e lo, e hi, j // 2, 1). GPU: ``kernels/ssa_generic.cu`` with ``kernels/ssa_method_ar.cuh``, bit-identical.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...models.kinetics import M32, waiting_time
from ...rng.philox import philox4x32_10, u01_f64
from .. import gpu
from ..cpu import CPUMethod
from .base import SSAMethod


@numba.njit(inline="always", cache=True)
def reset(aux):
    pass


@numba.njit(inline="always", cache=True)
def update(a, aux, d, v):
    pass


@numba.njit(inline="always", cache=True)
def event(a, aux, e, seed, rid):
    best = math.inf
    j = -1
    for jj in range(a.shape[0]):
        if a[jj] > 0.0:
            w0, w1, w2, w3 = philox4x32_10(e & M32, e >> np.uint64(32), np.uint64(jj >> 1), 1, seed, rid)
            u = u01_f64(w0, w1) if (jj & 1) == 0 else u01_f64(w2, w3)
            rating = waiting_time(u, a[jj])
            if rating < best:
                best = rating
                j = jj
    return best, float(j)  # the race decides the reaction too: select reads it back


@numba.njit(inline="always", cache=True)
def select(a, aux, winner):
    return int(winner)


def aux_size(m: int) -> int:
    return 0


METHOD = SSAMethod(
    name="ar", summary="seed 001's parallel acceptance-rejection election, exact exponential ratings",
    cpu=CPUMethod("ar", reset, update, event, select, aux_size), gpu=gpu.simulate_generic,
    cuda_header="ssa_method_ar.cuh", bit_identical=True,
)
