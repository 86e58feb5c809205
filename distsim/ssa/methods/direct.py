"""Method 'direct' (Gillespie 1977): a0 by summation in reaction order and a linear scan for the first
reaction whose cumulative propensity exceeds u2 a0; O(M) per event, the fastest for small models.

GPU: a kernel generated from the network, counts and propensities in registers, for up to
``gpu.CODEGEN_MAX_REACTIONS`` reactions; else ``kernels/ssa_generic.cu`` with
``kernels/ssa_method_direct.cuh``. Both give the CPU's realizations bit for bit. Networks with SBML
events or rules run ``kernels/ssa_events.cu`` with this header (:mod:`distsim.ssa.gpu_events`).
"""

from __future__ import annotations

import math

import numba

from ...models.kinetics import event_uniforms, waiting_time
from .. import gpu
from ..cpu import CPUMethod, direct_scan
from .base import SSAMethod

AUTO_MAX_REACTIONS = 32  # 'auto' takes the direct method up to this many reactions


@numba.njit(inline="always", cache=True)
def reset(aux):
    pass


@numba.njit(inline="always", cache=True)
def update(a, aux, d, v):
    pass


@numba.njit(inline="always", cache=True)
def event(a, aux, e, seed, rid):
    M = a.shape[0]
    a0 = 0.0
    for jj in range(M):
        a0 = a0 + a[jj]
    if not a0 > 0.0:
        return math.inf, 0.0
    u1, u2 = event_uniforms(e, seed, rid)
    return waiting_time(u1, a0), u2 * a0


@numba.njit(inline="always", cache=True)
def select(a, aux, target):
    """The first reaction whose cumulative propensity exceeds target = u2 a0 (:func:`cpu.direct_scan`)."""
    return direct_scan(a, target)


def aux_size(m: int) -> int:
    return 0


METHOD = SSAMethod(
    name="direct", summary="linear search (small models)",
    cpu=CPUMethod("direct", reset, update, event, select, aux_size), gpu=gpu.simulate_direct,
    cuda_header="ssa_method_direct.cuh", bit_identical=True, auto=lambda m, backend: m <= AUTO_MAX_REACTIONS,
)
