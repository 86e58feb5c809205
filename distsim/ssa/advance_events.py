"""Advance given states of a network with SBML events or assignment rules from absolute time ``t0``
to ``t1``: the particles of a particle filter (the GPU twin: :mod:`distsim.ssa.gpu_advance_events`).

A particle is its counts ``x`` and its event work row ``w`` (:func:`distsim.ssa.event_ops.new_work`:
its reaction tables with the values events assigned, the mutable parameters, each trigger's previous
value, the pending counts, the queue of delayed executions). The caller keeps them across calls as
``states`` [R, S] and :class:`Works` (each array of the work tuple with a leading row axis), so a
particle filter's resampling gathers rows of both with the same ancestor indices.

The loop is :func:`distsim.ssa.cpu.events_loop`, the SSA's (:func:`run_realization_events`), from the
given (x, w) at ``t0`` with the grid [t1]: it stops at the first draw past ``t1`` (a firing at ``t1`` or
a time comparison changing at ``t1`` itself is executed: the state at ``t1`` is the one the SSA records
there). Random numbers: row p of a call uses the Philox key ``(key, p)`` and
its draw d (0, 1, ... within the call: firings and stops) the counter ``(d, e_hi, 0, 0)``, the layout of
:mod:`distsim.ssa.advance`. So a call from 0 to t1 with ``e_hi = 0`` draws what realization p of seed
``key`` draws in the SSA, and gives that realization's state at grid time t1 bit for bit; splitting
[0, t1] at ta gives other draws (the second call's ``e_hi``, a fresh waiting time at ta) with the same
law, by the memorylessness of the SSA (both tested).

Hybrid networks (time-dependent propensities, rate rules): a particle is also its integrator
work row (:func:`distsim.ssa.hybrid_ops.new_work`: the next step size; p in ``w`` holds the rate-rule
values), the last 9 arrays of its :data:`Works`. The loop is :func:`distsim.ssa.cpu.hybrid_loop`, the
SSA's (:func:`~distsim.ssa.cpu.run_realization_hybrid`), from (x, w, hw) at ``t0`` with the grid [t1]:
draw d (one per firing, one at the start) uses the counter ``(d, e_hi, 0, 0)``. A call draws a fresh
waiting time at ``t0`` (the integrated hazard restarts at 0): the same law, since given no firing in
(t_last, t0] the rest of the exponential target is again exponential. A call from 0 to t1 with ``e_hi``
= 0 gives realization p's state at t1 of an SSA run whose grid ends at t1 bit for bit (the integrator's
steps end at the grid's end). The GPU twin runs kernels/ssa_hybrid.cu's ``ssa_advance_hybrid``, but not
triggers that read rate-rule variables (located here: :data:`LOCATED_CPU_ONLY`).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from numba import prange

from ..models.compile_events import CompiledEvents
from ..models.compile_reactions import CompiledNetwork
from ..models.kinetics import reaction_arrays
from . import event_ops
from .advance import MAX_EVENTS_PER_CALL
from .cpu import CPUMethod, events_loop, hybrid_loop

Works = tuple  # the 11 arrays of event_ops.new_work (then hybrid networks' 9 of hybrid_ops.new_work), rows first
N_EVENT_WORK = 11  # the event work arrays of a Works (the rest: a hybrid network's integrator work)


def new_works(c: CompiledNetwork, rows: int) -> Works:
    """Event work rows for ``rows`` particles (filled by :func:`start_events`); a hybrid network's also
    get integrator work rows (no step size yet)."""
    ce = _events(c)
    M, L, P, E, V, K, Q = event_ops.work_shape(ce, c.n_reactions, len(c.law_arg))
    L, P, E, V, K, Q = (max(n, 1) for n in (L, P, E, V, K, Q))
    f = np.float64
    W = (np.empty((rows, M), f), np.empty((rows, L), f), np.empty((rows, P), f), np.zeros((rows, E), np.int8),
         np.zeros((rows, E), np.int64), np.empty((rows, V), f), np.empty((rows, K), f), np.empty((rows, Q), f),
         np.zeros((rows, 1), np.int64), np.zeros((rows, Q), np.int64), np.empty((rows, Q, V), f))
    if not ce.hybrid:
        return W
    n, n_loc = len(ce.rr_param) + 1, max(len(ce.loc_ev), 1)  # as hybrid_ops.new_work
    return W + (np.empty((rows, n), f), np.empty((rows, n), f), np.empty((rows, n), f), np.empty((rows, n), f),
                np.empty((rows, 7, n), f), np.zeros((rows, 1), f), np.empty((rows, n), f),
                np.zeros((rows, 1), np.int64), np.zeros((rows, n_loc), f))


@numba.njit(inline="always", cache=True)
def _row(W, r):  # pragma: no cover - compiled
    """Row r's work tuple (views)."""
    return (W[0][r], W[1][r], W[2][r], W[3][r], W[4][r], W[5][r], W[6][r], W[7][r], W[8][r], W[9][r], W[10][r])


@numba.njit(inline="always", cache=True)
def _hybrid_row(W, r):  # pragma: no cover - compiled
    """Row r's integrator work tuple (views; hybrid_ops.new_work's layout)."""
    return (W[11][r], W[12][r], W[13][r], W[14][r], W[15][r], W[16][r], W[17][r], W[18][r], W[19][r])


@numba.njit(cache=True, error_model="numpy")
def _start_rows(ev, theta, law_arg, X, W, errors, values):  # pragma: no cover - compiled
    """Each row at time 0: its reaction tables, then event_ops.reset (rules, initial triggers, events of t = 0)."""
    for r in range(X.shape[0]):
        w = _row(W, r)
        w[0][:] = theta
        w[1][:law_arg.shape[0]] = law_arg
        word, v = event_ops.reset(X[r], 0.0, ev, w)
        errors[r] = word
        values[r] = v


def _events(c: CompiledNetwork) -> CompiledEvents:
    if c.events is None:
        raise ValueError("the network has no SBML events or assignment rules: advance it with distsim.ssa.advance")
    return c.events


LOCATED_CPU_ONLY = ("advancing particles of a network whose event triggers read rate-rule variables (located "
                    "triggers) runs on the CPU only (backend='cpu'; distsim.ssa.advance_events), not on a GPU yet")


def _check(c: CompiledNetwork, ce: CompiledEvents, states: Any, W: Works, xp: Any = np, ref: Works | None = None,
           gpu: bool = False) -> None:
    """``states``, ``W``: ``xp`` arrays (NumPy; CuPy for the GPU twin) shaped and typed as ``ref``'s rows
    (default :func:`new_works`). ``gpu`` (the GPU twin): located triggers are refused."""
    if gpu and len(_events(c).loc_ev):
        raise ValueError(LOCATED_CPU_ONLY)
    if ce.hybrid != c.events.hybrid or len(ce.p0) != len(c.events.p0) or ce.n_events != c.events.n_events:
        raise ValueError("the events' tables are not those of this network (compile_events of it, parameters aside)")
    if not (isinstance(states, xp.ndarray) and states.dtype == np.int64 and states.ndim == 2
            and states.flags.c_contiguous and states.shape[1] == c.n_species):
        raise ValueError(f"states must be a C-contiguous int64 {xp.__name__} array [N, {c.n_species}]")
    ref = new_works(c, 0) if ref is None else ref
    if len(W) != len(ref) or any(not (isinstance(a, xp.ndarray) and a.dtype == b.dtype and a.flags.c_contiguous
                                      and a.shape == (states.shape[0],) + b.shape[1:]) for a, b in zip(W, ref)):
        raise ValueError("works must be new_works(c, len(states)) (rows as the states')")


def check_call(t0: float, t1: float, keys: Any, e_hi: int, max_events: int) -> None:
    """The arguments of an advance besides the rows (also the GPU twin's)."""
    if not 0 <= int(e_hi) < 2**32:
        raise ValueError(f"e_hi must be in [0, 2**32): {e_hi}")
    if not 0 < max_events <= MAX_EVENTS_PER_CALL:
        raise ValueError(f"max_events must be in [1, {MAX_EVENTS_PER_CALL}]")
    if not (math.isfinite(t0) and math.isfinite(t1) and 0 <= t0 <= t1):
        raise ValueError(f"need 0 <= t0 <= t1 (finite): t0 {t0}, t1 {t1}")
    for key in keys:
        if not 0 <= int(key) < 2**32:
            raise ValueError(f"key must be in [0, 2**32): {key}")


def start_events(c: CompiledNetwork, ce: CompiledEvents, states: np.ndarray, theta: np.ndarray, law_arg: np.ndarray
                 ) -> tuple[Works, np.ndarray, np.ndarray]:
    """The particles' event work rows at time 0 from their initial ``states`` (int64 [N, S], changed in
    place by rules and events of t = 0) and the network's rate and law constants ``theta`` [M],
    ``law_arg`` [L]; ``ce``: ``c.events`` or the events compiled with other parameter values
    (:func:`distsim.models.compile_events.compile_events`: the initial values of the parameters events
    assign, the constants their programs read). Returns (works, error words, refused values) per row."""
    W = new_works(c, states.shape[0])
    _check(c, ce, states, W)
    theta = np.ascontiguousarray(theta, np.float64)
    law_arg = np.ascontiguousarray(law_arg, np.float64)
    if theta.shape != (c.n_reactions,) or law_arg.shape != c.law_arg.shape:
        raise ValueError(f"theta must be [{c.n_reactions}] and law_arg [{c.law_arg.size}]")
    errors = np.zeros(states.shape[0], np.int32)
    values = np.full(states.shape[0], math.nan)
    _start_rows(event_ops.event_arrays(ce), theta, law_arg, states, W, errors, values)
    return W, errors, values


@numba.njit(cache=True, error_model="numpy")
def advance_events_one(method, rid, key, net, ev, x, w, t0, end, e_hi, max_events, a, aux, stack, rec, firings):
    """Advance (x, w) in place from ``t0`` to ``end[0]`` = t1 (> t0): (firings, error word, time, refused
    value or NaN). :func:`distsim.ssa.cpu.events_loop` with the grid [t1] (``rec``: [1, S] scratch,
    ``firings``: [M] scratch; the state at t1 is x after the loop)."""
    return events_loop(method, rid, key, e_hi, np.uint64(MAX_EVENTS_PER_CALL), net, ev, end, max_events, x, a, aux,
                       stack, rec, firings, w, t0)


def _advance_rows(method, net, ev, key, X, W, t0, t1, e_hi, max_events, aux_n, max_stack, events, errors, times,
                  values):  # pragma: no cover - compiled
    R, S = X.shape
    M = net.theta.shape[0]
    end = np.full(1, t1)
    for r in prange(R):
        a = np.empty(M, dtype=np.float64)
        aux = np.empty(aux_n, dtype=np.float64)
        stack = np.empty(max(max_stack, 1), dtype=np.float64)
        rec = np.empty((1, S), dtype=np.int64)
        firings = np.zeros(M, dtype=np.int64)
        n, word, t, v = advance_events_one(method, np.uint64(r), key, net, ev, X[r], _row(W, r), t0, end, e_hi,
                                           max_events, a, aux, stack, rec, firings)
        events[r] = n
        errors[r] = word
        times[r] = t
        values[r] = v


@numba.njit(cache=True, error_model="numpy")
def advance_hybrid_one(rid, key, net, ev, x, w, hw, t0, end, e_hi, max_events, a, stack, rec, firings, crec):
    """:func:`advance_events_one` of a hybrid network (``hw``: the particle's integrator work row, ``crec``:
    [1, C] scratch): :func:`distsim.ssa.cpu.hybrid_loop` with the grid [t1], at most
    MAX_EVENTS_PER_CALL draws; p (``w[2]``) holds the rate-rule values at t1 after it."""
    return hybrid_loop(rid, key, e_hi, np.uint64(MAX_EVENTS_PER_CALL), net, ev, end, max_events, x, a, stack, rec,
                       firings, w, hw, crec, False, t0)


def _advance_hybrid_rows(net, ev, key, X, W, t0, t1, e_hi, max_events, max_stack, events, errors, times,
                         values):  # pragma: no cover - compiled
    R, S = X.shape
    M = net.theta.shape[0]
    C = ev.rr_param.shape[0]
    end = np.full(1, t1)
    for r in prange(R):
        a = np.empty(M, dtype=np.float64)
        stack = np.empty(max(max_stack, 1), dtype=np.float64)
        rec = np.empty((1, S), dtype=np.int64)
        firings = np.zeros(M, dtype=np.int64)
        crec = np.empty((1, max(C, 1)), dtype=np.float64)
        n, word, t, v = advance_hybrid_one(np.uint64(r), key, net, ev, X[r], _row(W, r), _hybrid_row(W, r), t0, end,
                                           e_hi, max_events, a, stack, rec, firings, crec)
        events[r] = n
        errors[r] = word
        times[r] = t
        values[r] = v


_advance_parallel = numba.njit(parallel=True, cache=True, error_model="numpy")(_advance_rows)
_advance_serial = numba.njit(cache=True, error_model="numpy")(_advance_rows)
_advance_hybrid_parallel = numba.njit(parallel=True, cache=True, error_model="numpy")(_advance_hybrid_rows)
_advance_hybrid_serial = numba.njit(cache=True, error_model="numpy")(_advance_hybrid_rows)
PARALLEL_MIN_ROWS = 1024  # as distsim.ssa.advance's


def advance_events(c: CompiledNetwork, ce: CompiledEvents, method: CPUMethod, states: np.ndarray, works: Works,
                   t0: float, t1: float, *, key: int, e_hi: int, max_events: int = 10_000_000
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Advance every row of (``states``, ``works``) in place from absolute time ``t0`` to ``t1``
    (``works`` from :func:`start_events` with the same ``ce``, or left by an earlier call); row p uses
    the Philox key (key, p). Returns per row (firings, error words, the time of an error, its refused
    value or NaN); a row with an error holds its state at the error. A hybrid network's rows advance
    with :func:`distsim.ssa.cpu.hybrid_loop` (the direct method's selection, whatever ``method``)."""
    _check(c, ce, states, works)
    check_call(t0, t1, [key], e_hi, max_events)
    R = states.shape[0]
    events = np.zeros(R, np.uint64)
    errors = np.zeros(R, np.int32)
    times = np.full(R, float(t0))
    values = np.full(R, math.nan)
    if R and t1 > t0:
        net, ev = reaction_arrays(c), event_ops.event_arrays(ce)
        if ce.hybrid:  # (the direct method's selection: no method argument, one compilation)
            fn = _advance_hybrid_parallel if R >= PARALLEL_MIN_ROWS else _advance_hybrid_serial
            fn(net, ev, np.uint64(int(key)), states, works, float(t0), float(t1), np.uint64(e_hi),
               np.uint64(max_events), c.max_stack, events, errors, times, values)
        else:
            fn = _advance_parallel if R >= PARALLEL_MIN_ROWS else _advance_serial
            fn(method, net, ev, np.uint64(int(key)), states, works, float(t0), float(t1), np.uint64(e_hi),
               np.uint64(max_events), method.aux_size(c.n_reactions), c.max_stack, events, errors, times, values)
    return events, errors, times, values


__all__ = ["LOCATED_CPU_ONLY", "N_EVENT_WORK", "Works", "advance_events", "advance_events_one", "advance_hybrid_one",
           "check_call", "new_works", "start_events"]
