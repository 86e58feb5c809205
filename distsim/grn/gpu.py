"""GPU kernels of the GRN GA (CuPy RawModule from ``kernels/grn_ga.cu``) behind :class:`GPUOps`.

The GA itself (:mod:`.ga`) runs unchanged on CuPy arrays; evaluation, Philox draws, the initial links,
breeding, the survivors' gather and the best-so-far update are custom kernels, each a line-by-line port
of :mod:`.cpu`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backends import cuda
from . import cpu
from .ga import Breeding, Consts

BLOCK = 256


def _module() -> Any:
    return cuda.load_module(cuda.kernel_source("grn_ga.cu"))


class GPUOps:
    """Kernels of the GPU backend; arrays are CuPy arrays on the current device."""

    def __init__(self, c: Consts):
        import cupy

        self.xp = cupy
        self.c = c
        mod = _module()
        self._eval = mod.get_function("grn_evaluate")
        self._fill = mod.get_function("grn_philox_fill")
        self._init = mod.get_function("grn_init_links")
        self._cross = mod.get_function("grn_cross")
        self._revert_mutate = mod.get_function("grn_revert_mutate")
        self._select = mod.get_function("grn_select")
        self._update_best = mod.get_function("grn_update_best")
        self.allowed = cupy.asarray(c.allowed)
        self.x0 = cupy.asarray(c.x0)
        self.target = cupy.asarray(c.target)
        self.ref_act = cupy.asarray(c.ref_act)
        self.ref_rep = cupy.asarray(c.ref_rep)
        wt = min(c.W, 32)
        self.T = 32 * wt
        self.ipb = max(1, BLOCK // self.T)
        self._islands: dict[bytes, Any] = {}

    def _dev_islands(self, islands: np.ndarray) -> Any:
        key = np.asarray(islands, np.int64).tobytes()
        if key not in self._islands:
            self._islands[key] = self.xp.asarray(np.asarray(islands, np.int64))
        return self._islands[key]

    def asnumpy(self, a: Any) -> np.ndarray:
        return self.xp.asnumpy(a)

    def evaluate(self, act: Any, rep: Any, rules: Any) -> Any:
        cp, c = self.xp, self.c
        P = act.shape[0]
        out = cp.empty(P, cp.int64)
        if P:
            act = cp.ascontiguousarray(act)
            rep = cp.ascontiguousarray(rep)
            rules = cp.ascontiguousarray(rules)
            grid = (P + self.ipb - 1) // self.ipb
            shared = self.ipb * 8 + self.ipb * 2 * c.W * 4
            self._eval((grid,), (self.T * self.ipb,),
                       (act, rep, rules, self.x0, self.target, self.ref_act, self.ref_rep, np.int64(P), np.int32(c.W),
                        np.int32(c.n), np.int32(c.steps), np.int64(c.wn), np.int64(c.wl), np.int32(self.T),
                        np.int32(self.ipb), out), shared_mem=shared)
        return out

    def rng(self, seed: int, islands: np.ndarray, purpose: int, gen: int, n: int, blocks: int) -> Any:
        cp = self.xp
        K = len(islands)
        out = cp.empty((K, n, 4 * blocks), cp.uint32)
        total = K * n * blocks
        if total:
            self._fill(((total + BLOCK - 1) // BLOCK,), (BLOCK,),
                       (np.uint32(seed), self._dev_islands(islands), np.int32(K), np.uint32(purpose),
                        np.uint32(gen), np.int32(n), np.int32(blocks), out))
        return out

    def init_links(self, seed: int, islands: np.ndarray, N: int) -> tuple[Any, Any]:
        cp, c = self.xp, self.c
        K = len(islands)
        act = cp.empty((K, N, c.W, c.n), cp.uint32)
        rep = cp.empty_like(act)
        total = act.size
        self._init(((total + BLOCK - 1) // BLOCK,), (BLOCK,),
                   (np.uint32(seed), self._dev_islands(islands), np.int32(K), np.int32(N), np.int32(c.W),
                    np.int32(c.n), np.uint32(cpu.P_INIT_LINK), np.uint64(c.t_act), np.uint64(c.t_rep), act, rep))
        return act, rep

    def scatter_max(self, target: Any, index: Any, values: Any) -> None:
        self.xp.maximum.at(target, index, values)  # not cupyx.scatter_max: importing cupyx costs 0.26 s (cupyx.scipy)

    def breed(self, act: Any, rep: Any, rules: Any, parents: Any, islands: np.ndarray, gen: int,
              b: Breeding) -> tuple[Any, Any, Any]:
        """:meth:`CPUOps.breed <distsim.grn.ga.CPUOps.breed>` on the device (grn_cross, grn_revert_mutate)."""
        cp, c = self.xp, self.c
        act, rep, rules = cp.ascontiguousarray(act), cp.ascontiguousarray(rep), cp.ascontiguousarray(rules)
        par = cp.ascontiguousarray(parents.astype(cp.int64, copy=False))
        P = act.shape[0]
        ca, cr, cru = cp.empty_like(act), cp.empty_like(rep), cp.empty_like(rules)
        if not P:
            return ca, cr, cru
        nnz = cp.zeros(P, cp.uint64)
        isl = self._dev_islands(islands)
        total = P * (c.W * c.n + c.n)
        self._cross(((total + BLOCK - 1) // BLOCK,), (BLOCK,),
                    (np.int64(total), act, rep, rules, par, np.int32(b.paired), np.int32(b.N), np.int32(c.W),
                     np.int32(c.n), np.uint32(b.seed), isl, np.uint32(gen), np.uint32(cpu.P_CROSS), np.int64(b.extra),
                     ca, cr, cru, nnz))
        self._revert_mutate(((P + BLOCK - 1) // BLOCK,), (BLOCK,),
                            (np.int64(P), act, rep, rules, par, np.int32(b.paired), np.int32(b.N), np.int32(c.W),
                             np.int32(c.n), np.uint32(b.seed), isl, np.uint32(gen), np.uint32(cpu.P_MUTATE), nnz,
                             np.int64(c.nnz_ref), np.int64(c.conn_p), np.int64(c.conn_q), np.uint64(b.link_threshold),
                             np.uint64(b.rule_threshold), self.allowed, np.int32(len(c.allowed)), ca, cr, cru))
        return ca, cr, cru

    def select(self, order: Any, parents: tuple, children: tuple) -> tuple[Any, ...]:
        """:meth:`CPUOps.select <distsim.grn.ga.CPUOps.select>` on the device (grn_select)."""
        cp, c = self.xp, self.c
        K, N = parents[3].shape
        out = tuple(cp.empty((K, N) + a.shape[2:], a.dtype) for a in parents)
        total = K * N * c.W * c.n
        if total:
            self._select(((total + BLOCK - 1) // BLOCK,), (BLOCK,),
                         (np.int64(total), cp.ascontiguousarray(order), np.int32(N), np.int32(c.W), np.int32(c.n),
                          *(cp.ascontiguousarray(a) for a in parents + children), *out))
        return out

    def update_best(self, gen: int, current: tuple, best: tuple) -> tuple[Any, ...]:
        """:meth:`CPUOps.update_best <distsim.grn.ga.CPUOps.update_best>` on the device (grn_update_best)."""
        cp, c = self.xp, self.c
        K, N = current[0].shape
        out = tuple(cp.empty_like(a) for a in best) + (cp.empty(K, cp.int64), cp.empty(K, cp.int64))
        if K:
            self._update_best(((K + BLOCK - 1) // BLOCK,), (BLOCK,),
                              (np.int64(K), np.int32(N), np.int32(c.W), np.int32(c.n), np.int64(gen),
                               *(cp.ascontiguousarray(a) for a in current + best), *out))
        return out
