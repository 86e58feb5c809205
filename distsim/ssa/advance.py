"""Advance given states by exact SSA for a time ``dt``: the particles of a particle filter.

Particle ``p`` of a call uses the Philox key ``(key, p)``; its event ``e`` (0, 1, ... within the call)
the counter ``(e, e_hi, 0, 0)``, the same layout as a realization's (:mod:`distsim.models.compile_reactions`)
with the caller's word ``e_hi`` in place of the event count's high word: a caller gives every call its
own ``e_hi`` (the particle filter: iteration and observation interval), so no two calls share a draw.
The loop is :func:`distsim.ssa.cpu.run_realization`'s without a grid, starting from the given state
at time 0 and stopping at the first event past ``dt``; by the memorylessness of the SSA the state at
``dt`` is exact. Networks with events, assignment rules or time-dependent propensities are refused.
"""

from __future__ import annotations


import numba
import numpy as np
from numba import prange

from ..models.compile_reactions import KIND_MASS_ACTION, CompiledNetwork
from ..models.kinetics import bad_propensity, law, mass_action, reaction_arrays
from .cpu import CPUMethod, _fire, method_event, method_needs_depgraph, method_reset, method_select, method_update
from .errors import ERR_MAX_EVENTS, ERR_NONE, ERR_PROPENSITY, error_word

MAX_EVENTS_PER_CALL = 2**32 - 1  # the event count of a call fills counter word 0 alone


@numba.njit(cache=True, error_model="numpy")
def advance_one(method, rid, key, net, theta, law_arg, x, dt, e_hi, max_events, a, aux, stack):
    """Advance ``x`` in place by ``dt``: (events fired, error word)."""
    M = a.shape[0]
    _, kind, _, rct_start, rct_species, rct_stoich, chg_start, chg_species, chg_delta, law_start, law_op, _, \
        dep_start, dep_list = net
    method_reset(method, aux)
    t = 0.0
    n = np.uint64(0)
    hi = np.uint64(e_hi) << np.uint64(32)
    j = -1
    while True:
        every = j < 0 or not method_needs_depgraph(method)
        lo, up = (0, M) if every else (dep_start[j], dep_start[j + 1])
        for q in range(lo, up):
            d = q if every else dep_list[q]
            if kind[d] == KIND_MASS_ACTION:
                v = mass_action(theta[d], d, x, rct_start, rct_species, rct_stoich)
            else:
                v = law(d, x, law_start, law_op, law_arg, stack)
            if bad_propensity(v):
                return n, error_word(ERR_PROPENSITY, d)
            a[d] = v
            method_update(method, a, aux, d, v)
        tau, u = method_event(method, a, aux, hi | n, key, rid)
        t_new = t + tau
        if not t_new <= dt:
            return n, ERR_NONE
        if n >= np.uint64(max_events):
            return n, ERR_MAX_EVENTS
        j = method_select(method, a, aux, u)
        t = t_new
        word = _fire(j, x, chg_start, chg_species, chg_delta)
        if word != ERR_NONE:
            return n, word
        n += np.uint64(1)


def _advance_rows(method, net, thetas, law_args, keys, per, X, dt, e_hi, max_events, aux_n, max_stack, events,
                  errors):
    """Row r belongs to group g = r // per (its rate and law constants thetas[g], law_args[g], key keys[g])
    and is that group's particle r - g per."""
    R, S = X.shape
    M = thetas.shape[1]
    for r in prange(R):
        g = r // per
        a = np.empty(M, dtype=np.float64)
        aux = np.empty(aux_n, dtype=np.float64)
        stack = np.empty(max(max_stack, 1), dtype=np.float64)
        n, w = advance_one(method, np.uint64(r - g * per), np.uint64(keys[g]), net, thetas[g], law_args[g], X[r], dt,
                           e_hi, max_events, a, aux, stack)
        events[r] = n
        errors[r] = w


# threads pay off only for many particles: a parallel launch costs more than a few hundred short advances
_advance_parallel = numba.njit(parallel=True, cache=True, error_model="numpy")(_advance_rows)
_advance_serial = numba.njit(cache=True, error_model="numpy")(_advance_rows)
PARALLEL_MIN_ROWS = 1024


def check_args(c: CompiledNetwork, states: np.ndarray, theta: np.ndarray, law_arg: np.ndarray, key: object,
               max_events: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The checked groups: (thetas [G, M], law_args [G, L], keys uint32 [G], particles per group)."""
    if c.events is not None:
        raise ValueError("advancing given states supports networks without SBML events, assignment rules or "
                         "time-dependent propensities")
    if not (hasattr(states, "flags") and states.dtype == np.int64 and states.ndim == 2
            and states.flags.c_contiguous and states.shape[1] == c.n_species):
        raise ValueError(f"states must be a C-contiguous int64 array [N, {c.n_species}] (NumPy or CuPy)")
    if not 0 < max_events <= MAX_EVENTS_PER_CALL:
        raise ValueError(f"max_events must be in [1, {MAX_EVENTS_PER_CALL}]")
    thetas = np.ascontiguousarray(np.atleast_2d(np.asarray(theta, np.float64)))
    law_args = np.ascontiguousarray(np.atleast_2d(np.asarray(law_arg, np.float64)))
    keys = np.atleast_1d(np.asarray(key, np.uint32))
    G = keys.size
    if thetas.shape != (G, c.n_reactions) or law_args.shape != (G, c.law_arg.size):
        raise ValueError(f"one row of rate and law constants per key: {G} keys, theta {thetas.shape}, law_arg "
                         f"{law_args.shape}")
    if states.shape[0] % G:
        raise ValueError(f"{states.shape[0]} states do not split into {G} equal groups")
    return thetas, law_args, keys, states.shape[0] // G


def advance(c: CompiledNetwork, method: CPUMethod, states: np.ndarray, theta: np.ndarray, law_arg: np.ndarray,
            dt: float, *, key: int | np.ndarray, e_hi: int, max_events: int = 10_000_000
            ) -> tuple[np.ndarray, np.ndarray]:
    """Advance every row of ``states`` (int64 [G N, S], in place) by ``dt``; returns (events, error
    words) per row (:mod:`distsim.ssa.errors`; a row with an error holds its state at the error).
    ``key``: one key (G = 1), or G keys, one per group of N consecutive rows (a particle filter's
    chains); ``theta`` [M] or [G, M] and ``law_arg`` [L] or [G, L]: the network's rate and law
    constants (of each group). Row g N + p is particle p of group g (Philox key (key[g], p))."""
    thetas, law_args, keys, per = check_args(c, states, theta, law_arg, key, max_events)
    R = states.shape[0]
    events = np.zeros(R, dtype=np.uint64)
    errors = np.zeros(R, dtype=np.int32)
    if dt > 0 and R:
        fn = _advance_parallel if R >= PARALLEL_MIN_ROWS else _advance_serial
        fn(method, reaction_arrays(c), thetas, law_args, keys, per, states, float(dt), np.uint64(e_hi),
           np.uint64(max_events), method.aux_size(c.n_reactions), c.max_stack, events, errors)
    return events, errors


__all__ = ["MAX_EVENTS_PER_CALL", "advance", "advance_one", "check_args"]
