"""The GPU twin of :mod:`distsim.ssa.advance_events` (``ssa_advance_events`` of kernels/ssa_events.cu):
one particle per thread, the SSA event kernel's loop (``ds_events_loop``) from the particle's counts and
event work row at ``t0`` to ``t1``, the same Philox addresses and operation order as the CPU, so both
give the same particles bit for bit. Hybrid networks (time-dependent propensities, rate rules) run
``ssa_advance_hybrid`` of kernels/ssa_hybrid.cu, the SSA hybrid kernel's loop (``ds_hybrid_loop``, the
twin of :func:`distsim.ssa.cpu.hybrid_loop`), their particles carrying the integrator's work rows too
(triggers that read rate-rule variables, located on CPUs, are refused here as by the GPU SSA).

The work rows stay on the device as :func:`to_device` makes them: the CPU's arrays (rows first, the
layout the kernel reads with a stride of 1), the triggers' previous values as int32 (the kernel's
type). A particle filter gathers rows of the states and of every work array with the same ancestor
indices. Chains: rows ``g per .. (g + 1) per - 1`` are chain g's (key ``keys[g]``, particle ``r - g
per``), with the events compiled at its parameters; their tables are shared and only their program
constants are per chain (``prog_arg`` [G, PA]: one launch for all chains, so a filter's G N particles
fill the device), unless compiling at other values changed a table's shape or structure: then one
launch per chain. Start the rows on the host (:func:`distsim.ssa.advance_events.start_events`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..models.compile_events import CompiledEvents
from ..models.compile_reactions import CompiledNetwork
from . import gpu, gpu_events
from .advance_events import N_EVENT_WORK, Works, _check, check_call, new_works
from .gpu_advance import _tables
from .methods.base import SSAMethod

BLOCK = 128
PREV = 3  # the index of the triggers' previous values in a work tuple (int8 on the CPU, int32 on the device)
_SHARED = tuple(n for n in gpu_events._EVENT_TABLES + gpu_events._HYBRID_TABLES if n not in ("p0", "prog_arg"))


def to_device(works: Works) -> tuple:
    """CPU work rows (:func:`~distsim.ssa.advance_events.start_events`) as the kernel's CuPy arrays."""
    import cupy as cp

    return tuple(cp.asarray(a.astype(np.int32) if i == PREV else a) for i, a in enumerate(works))


def to_host(works: tuple) -> Works:
    """Device work rows back as the CPU's (:func:`to_device` undone)."""
    import cupy as cp

    return tuple(np.ascontiguousarray(cp.asnumpy(a).astype(np.int8) if i == PREV else cp.asnumpy(a))
                 for i, a in enumerate(works))


def advance_events_gpu(c: CompiledNetwork, ce: CompiledEvents, method: SSAMethod, states: np.ndarray, works: Works,
                       t0: float, t1: float, *, key: int, e_hi: int, max_events: int = 10_000_000
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`distsim.ssa.advance_events.advance_events` on the current GPU (``states``, ``works``
    updated in place): per row (firings, error words, the time of an error or of the last firing)."""
    import cupy as cp

    xs, W = cp.asarray(states), to_device(works)
    ev, er, tm = advance_events_device(c, [ce], method, xs, W, t0, t1, keys=np.array([key]), e_hi=e_hi,
                                       max_events=max_events)
    states[...] = cp.asnumpy(xs)
    for a, b in zip(works, to_host(W)):
        a[...] = b
    return cp.asnumpy(ev), cp.asnumpy(er), cp.asnumpy(tm)


def advance_events_device(c: CompiledNetwork, ces: Sequence[CompiledEvents], method: SSAMethod, xs: Any, works: tuple,
                          t0: float, t1: float, *, keys: np.ndarray, e_hi: int, max_events: int = 10_000_000
                          ) -> tuple[Any, Any, Any]:
    """Advance rows of G chains that stay on the device (``xs``: CuPy int64 [G per, S], ``works``:
    :func:`to_device`'s, both updated in place; chain g: ``ces[g]``, ``keys[g]``) from ``t0`` to
    ``t1``: (firings, error words, times) per row as CuPy arrays."""
    import cupy as cp

    keys = np.asarray(keys).reshape(-1)
    G = len(ces)
    if G == 0 or len(keys) != G or xs.shape[0] % G:
        raise ValueError(f"{len(ces)} chains' events, {len(keys)} keys and {xs.shape[0]} rows: need G >= 1 of each "
                         "and G per rows")
    ref = tuple(np.empty((0,) + a.shape[1:], np.int32 if i == PREV else a.dtype)
                for i, a in enumerate(new_works(c, 0)))
    for ce in ces:
        _check(c, ce, xs, works, cp, ref, gpu=True)
    check_call(t0, t1, keys, e_hi, max_events)
    R = xs.shape[0]
    ev, er, tm = cp.zeros(R, dtype=cp.uint64), cp.zeros(R, dtype=cp.int32), cp.full(R, float(t0))
    if not (R and t1 > t0):
        return ev, er, tm
    same = all(len(ce.prog_arg) == len(ces[0].prog_arg) and all(np.array_equal(getattr(ce, n), getattr(ces[0], n))
                                                               for n in _SHARED) for ce in ces)
    groups = [range(G)] if same else [range(g, g + 1) for g in range(G)]
    per = R // G
    for grp in groups:
        lo, hi = grp[0] * per, (grp[-1] + 1) * per
        _launch(c, [ces[g] for g in grp], method, xs[lo:hi], tuple(a[lo:hi] for a in works), per,
                keys[grp[0]:grp[-1] + 1], t0, t1, e_hi, max_events, ev[lo:hi], er[lo:hi], tm[lo:hi])
    return ev, er, tm


def _launch(c: CompiledNetwork, ces: list[CompiledEvents], method: SSAMethod, xs: Any, W: tuple, per: int,
            keys: np.ndarray, t0: float, t1: float, e_hi: int, max_events: int, ev: Any, er: Any, tm: Any) -> None:
    """One launch of ssa_advance_events (a hybrid network: ssa_advance_hybrid, whatever ``method``) over the
    rows of chains ``ces`` (tables shared but prog_arg)."""
    import cupy as cp

    ce = ces[0]
    R, S, M = xs.shape[0], c.n_species, c.n_reactions
    a = cp.empty(M * R, dtype=cp.float64)
    stack = cp.empty(max(1, c.max_stack) * R, dtype=cp.float64)
    names = gpu_events._EVENT_TABLES + (gpu_events._HYBRID_TABLES if ce.hybrid else ())
    tables = {n: cp.asarray(getattr(ce, n)) if len(getattr(ce, n)) else cp.zeros(1, getattr(ce, n).dtype)
              for n in names}
    tables["prog_arg"] = cp.asarray(np.stack([e.prog_arg for e in ces]))
    QN, QV = W[7].shape[1], W[10].shape[2]
    head = (np.int32(R), np.int32(per), cp.asarray(keys.astype(np.uint32)), np.uint32(e_hi), np.float64(t0),
            cp.asarray(np.array([t1], np.float64)), np.int32(S), np.int32(M))
    sizes = (np.int32(ce.n_events), np.int32(len(ce.rule_prog)), np.int32(len(ce.tc_op)), np.int32(len(ce.p0)),
             np.int32(len(ce.prog_arg)))
    rows = (*W[:7], np.int32(W[3].shape[1]), np.int32(W[5].shape[1]), np.int32(W[6].shape[1]), np.int32(QN),
            np.int32(QV), *W[7:N_EVENT_WORK])
    tabs = (*gpu.table_args(_tables(c)), *(tables[n] for n in names))
    if ce.hybrid:  # the integrator's rows y0, y1, yt, ys, k, hs, gy (its grid point and located triggers unused)
        fn = gpu._module(("hybrid",), gpu_events.hybrid_source).get_function("ssa_advance_hybrid")
        args = (*head, np.int32(W[1].shape[1]), *tabs, *sizes, np.int32(len(ce.rr_param)), np.int64(max_events),
                xs, a, stack, *rows, *W[N_EVENT_WORK:N_EVENT_WORK + 7], ev, er, tm)
    else:
        n_aux = method.cpu.aux_size(M)
        aux = cp.empty(max(n_aux, 1) * R, dtype=cp.float64)
        fn = gpu._module(("events", gpu_events.header(method), method.needs_depgraph),
                         lambda: gpu_events.events_source(method)).get_function("ssa_advance_events")
        args = (*head, np.int32(n_aux), np.int32(W[1].shape[1]), *tabs, *sizes, np.int64(max_events), xs, a, aux,
                stack, *rows, ev, er, tm)
    fn(((R + BLOCK - 1) // BLOCK,), (BLOCK,), args)


__all__ = ["advance_events_device", "advance_events_gpu", "to_device", "to_host"]
