"""The GPU twin of :func:`distsim.ssa.advance.advance` (kernels/ssa_advance.cu): one particle per
thread, the same Philox addresses and operation order, so both give the same states bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backends import cuda, dsmath
from ..models.compile_reactions import CompiledNetwork
from . import gpu
from .advance import check_args
from .methods.base import SSAMethod

BLOCK = 128


def advance_source(method: SSAMethod) -> str:
    """kernels/ssa_advance.cu with ``method``'s selection code compiled in."""
    return (dsmath.neglog_table_cuda() + f'#define DS_METHOD_HEADER "{method.cuda_header}"\n'
            f"#define DS_NEEDS_DEPGRAPH {int(method.cpu.needs_depgraph)}\n" + cuda.kernel_source("ssa_advance.cu"))


def advance_gpu(c: CompiledNetwork, method: SSAMethod, states: np.ndarray, theta: np.ndarray, law_arg: np.ndarray,
                dt: float, *, key: int | np.ndarray, e_hi: int, max_events: int = 10_000_000
                ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`distsim.ssa.advance.advance` on the current GPU: ``states`` (int64 [G N, S]) updated in place."""
    import cupy as cp

    xs = cp.asarray(np.ascontiguousarray(states, np.int64))
    ev, er = advance_device(c, method, xs, theta, law_arg, dt, key=key, e_hi=e_hi, max_events=max_events)
    states[...] = cp.asnumpy(xs)
    return cp.asnumpy(ev), cp.asnumpy(er)


def advance_device(c: CompiledNetwork, method: SSAMethod, xs: Any, theta: np.ndarray, law_arg: np.ndarray,
                   dt: float, *, key: int | np.ndarray, e_hi: int, max_events: int = 10_000_000) -> tuple[Any, Any]:
    """:func:`advance_gpu` of states that stay on the device (``xs``: a CuPy int64 [G N, S], updated in
    place); (events, error words) as CuPy arrays."""
    import cupy as cp

    thetas, law_args, keys, per = check_args(c, xs, theta, law_arg, key, max_events)
    if method.cuda_header is None:
        raise ValueError(f"method {method.name!r} has no generic CUDA header; use 'direct' or 'tree'")
    N, S, M = xs.shape[0], c.n_species, c.n_reactions
    ev = cp.zeros(N, dtype=cp.uint64)
    er = cp.zeros(N, dtype=cp.int32)
    if not (dt > 0 and N):
        return ev, er
    n_aux = method.cpu.aux_size(M)
    a = cp.empty(M * N, dtype=cp.float64)
    aux = cp.empty(max(n_aux, 1) * N, dtype=cp.float64)
    stack = cp.empty(max(1, c.max_stack) * N, dtype=cp.float64)
    tb = _tables(c)
    rows: dict[str, Any] = {"theta": cp.asarray(thetas), "law_arg": cp.asarray(law_args)}
    fn = gpu._module(("advance", method.cuda_header, method.cpu.needs_depgraph),
                     lambda: advance_source(method)).get_function("ssa_advance")
    fn(((N + BLOCK - 1) // BLOCK,), (BLOCK,),
       (np.int32(N), np.int32(per), cp.asarray(keys), np.int32(law_args.shape[1]), np.uint32(e_hi), np.float64(dt),
        np.int32(S), np.int32(M), np.int32(n_aux), *gpu.table_args(tb, **rows), np.uint64(max_events), xs, a, aux,
        stack, ev, er))
    return ev, er


_TABLES: dict[tuple, dict[str, Any]] = {}


def _tables(c: CompiledNetwork) -> dict[str, Any]:
    """The network's device tables, kept per network and device (the last few)."""
    import cupy as cp

    k = (c.digest, cp.cuda.Device().id)
    tb = _TABLES.get(k)
    if tb is None:
        if len(_TABLES) > 8:
            _TABLES.clear()
        tb = _TABLES[k] = gpu._tables(c)
    return tb
