"""Method 'tree': a binary sum tree over the propensities, O(log M) update and selection (large models).

The work array holds 2P entries, P the power of two >= M: node i sums nodes 2i and 2i + 1, leaf
P + d holds a_d. GPU: ``kernels/ssa_generic.cu`` with ``kernels/ssa_method_tree.cuh``, bit-identical.
"""

from __future__ import annotations

import math

import numba

from ...models.kinetics import event_uniforms, waiting_time
from .. import gpu
from ..cpu import CPUMethod
from .base import SSAMethod


@numba.njit(inline="always", cache=True)
def reset(aux):
    for i in range(aux.shape[0]):
        aux[i] = 0.0


@numba.njit(inline="always", cache=True)
def update(a, aux, d, v):
    P = aux.shape[0] >> 1
    i = (P + d) >> 1
    aux[P + d] = v
    while i >= 1:
        aux[i] = aux[2 * i] + aux[2 * i + 1]
        i >>= 1


@numba.njit(inline="always", cache=True)
def event(a, aux, e, seed, rid):
    a0 = aux[1]
    if not a0 > 0.0:
        return math.inf, 0.0
    u1, u2 = event_uniforms(e, seed, rid)
    return waiting_time(u1, a0), u2 * a0


@numba.njit(inline="always", cache=True)
def select(a, aux, target):
    """Descend from the root to the leaf whose cumulative range holds target = u2 a0."""
    M = a.shape[0]
    P = aux.shape[0] >> 1
    i = 1
    while i < P:
        left = aux[2 * i]
        if target < left:
            i = 2 * i
        else:
            target = target - left
            i = 2 * i + 1
    j = i - P
    if j >= M or a[j] <= 0.0:  # rounding at a boundary: the nearest reaction that can fire
        j = min(j, M - 1)
        while j > 0 and a[j] <= 0.0:
            j -= 1
        while j < M - 1 and a[j] <= 0.0:
            j += 1
    return j


def aux_size(m: int) -> int:
    P = 1
    while P < m:
        P *= 2
    return 2 * P


METHOD = SSAMethod(
    name="tree", summary="O(log M) binary sum tree (large models)",
    cpu=CPUMethod("tree", reset, update, event, select, aux_size), gpu=gpu.simulate_generic,
    cuda_header="ssa_method_tree.cuh", bit_identical=True, auto=lambda m, backend: backend == "cpu",
)
