"""GPU kernels of the GRN GA (CuPy RawModule from ``kernels/grn_ga.cu``) behind :class:`GPUOps`.

The GA itself (:mod:`.ga`) runs unchanged on CuPy arrays; only evaluation, Philox draws and the
initial links are custom kernels, each a line-by-line port of :mod:`.cpu`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backends import cuda
from . import cpu
from .ga import Consts

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
        self._popc = cupy.ElementwiseKernel("uint32 x", "int32 y", "y = __popc(x)", "grn_popc")
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

    def popcount(self, a: Any) -> Any:
        return self._popc(a)

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
