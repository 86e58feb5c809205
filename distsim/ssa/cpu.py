"""CPU kernels for exact SSA ensembles (Numba, parallel over chunks of realizations).

One realization loop serves every selection method (Gillespie 1977's direct method with a reaction
dependency graph, so only affected propensities are recomputed after a firing). A method supplies
three Numba functions through a :class:`CPUMethod` (see :mod:`distsim.ssa.methods`):

* ``reset(aux)``: clear its per-realization work array before the first propensities;
* ``update(a, aux, d, v)``: propensity d is now v (``a[d]`` already holds it);
* ``event(a, aux, e, seed, rid) -> (tau, u)``: event e's waiting time (inf when no reaction can
  fire) and what its selection needs (u2 a0 for a search; the winner of a race);
* ``select(a, aux, u) -> j``: the reaction that fires (only for an event before the end: measured,
  selecting after the grid and event checks is 2% faster on the tree than inside ``event``).

The loop is compiled once per method: a :class:`CPUMethod` is a Numba type of its own, so its
functions are resolved at compile time (no runtime branch) and the specialisations are cached on
disk like any other. Each realization records its state on a time grid; the grid states are
reduced on the fly into exact integer sums (sum x, sum x^2, histograms), so results never depend
on how realizations are split into chunks, shards or workers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numba
import numpy as np
from numba import prange
from numba.core import types
from numba.extending import NativeValue, models, overload, register_model, typeof_impl, unbox

from ..models.compile_reactions import KIND_MASS_ACTION, CompiledNetwork
from ..backends.dsmath import neglog_u01
from ..engine.slices import Slices
from ..models.kinetics import bad_propensity, event_uniforms, law, mass_action, reaction_arrays
from . import event_ops, hybrid_ops
from .errors import ERR_INTEGRATOR, ERR_MAX_EVENTS, ERR_NEGATIVE, ERR_NONE, ERR_PROPENSITY, error_word


@dataclass(frozen=True, eq=False)
class CPUMethod:
    """A selection method's CPU part: Numba functions (``inline="always"``) and its work-array size."""

    name: str
    reset: Callable
    update: Callable
    event: Callable
    select: Callable
    aux_size: Callable[[int], int]  # per-realization work entries (float64) for M reactions
    needs_depgraph: bool = True  # False: every propensity is recomputed after each firing

    def __post_init__(self) -> None:
        known = _CPU_METHODS.setdefault(self.name, self)
        if known is not self and known._parts() != self._parts():
            raise ValueError(f"another CPU method is named {self.name!r}")

    def _parts(self) -> tuple:
        return self.reset, self.update, self.event, self.select, self.aux_size, self.needs_depgraph


_CPU_METHODS: dict[str, CPUMethod] = {}


class CPUMethodType(types.Dummy):
    """The Numba type of one :class:`CPUMethod` (a value without data; its functions are constants)."""

    def __init__(self, name: str):
        self.method_name = name
        super().__init__(f"CPUMethod[{name}]")


@typeof_impl.register(CPUMethod)
def _typeof_method(val, c):
    return CPUMethodType(val.name)


register_model(CPUMethodType)(models.OpaqueModel)


@unbox(CPUMethodType)
def _unbox_method(typ, obj, c):
    return NativeValue(c.context.get_dummy_value())


def _impl(method: CPUMethodType) -> CPUMethod:
    return _CPU_METHODS[method.method_name]


def method_reset(method, aux):
    raise NotImplementedError  # Numba only


def method_update(method, a, aux, d, v):
    raise NotImplementedError  # Numba only


def method_event(method, a, aux, e, seed, rid):
    raise NotImplementedError  # Numba only


def method_select(method, a, aux, u):
    raise NotImplementedError  # Numba only


def method_needs_depgraph(method):
    raise NotImplementedError  # Numba only


@overload(method_reset, inline="always")
def _ov_reset(method, aux):
    fn = _impl(method).reset
    return lambda method, aux: fn(aux)


@overload(method_update, inline="always")
def _ov_update(method, a, aux, d, v):
    fn = _impl(method).update
    return lambda method, a, aux, d, v: fn(a, aux, d, v)


@overload(method_event, inline="always")
def _ov_event(method, a, aux, e, seed, rid):
    fn = _impl(method).event
    return lambda method, a, aux, e, seed, rid: fn(a, aux, e, seed, rid)


@overload(method_select, inline="always")
def _ov_select(method, a, aux, u):
    fn = _impl(method).select
    return lambda method, a, aux, u: fn(a, aux, u)


@overload(method_needs_depgraph, inline="always")
def _ov_needs_depgraph(method):
    flag = _impl(method).needs_depgraph
    return lambda method: flag


@numba.njit(inline="always", cache=True)
def _record(rec, x, grid, k, t):
    """The grid points from k passed before time t get the state x; returns the next grid point."""
    while k < grid.shape[0] and grid[k] < t:
        for s in range(x.shape[0]):
            rec[k, s] = x[s]
        k += 1
    return k


@numba.njit(inline="always", cache=True)
def direct_scan(a, target):
    """The direct method's selection: the first reaction whose cumulative propensity exceeds target
    (u2 a0); the last that can fire when target is a0 rounded up."""
    c = 0.0
    last = 0
    for jj in range(a.shape[0]):
        if a[jj] > 0.0:
            last = jj
        c = c + a[jj]
        if c > target:
            return jj
    return last


@numba.njit(inline="always", cache=True)
def _fire(j, x, chg_start, chg_species, chg_delta):
    """Reaction j's net changes applied to x: ERR_NONE, or the error word of a count gone negative."""
    for q in range(chg_start[j], chg_start[j + 1]):
        x[chg_species[q]] += chg_delta[q]
        if x[chg_species[q]] < 0:
            return error_word(ERR_NEGATIVE, j)
    return ERR_NONE


@numba.njit(cache=True, error_model="numpy")
def run_realization(method, rid, seed, net, grid, max_events, x, a, aux, stack, rec, firings):
    """One realization: fills ``rec[k, s]`` with the state at grid time k; returns (events, error word,
    t, v). On an error, ``x`` holds the state and t the time at which it occurred; v is the bad
    propensity of a propensity error (else NaN). The compiled network comes as one tuple, unpacked
    here once: reading a tuple's arrays inside the loop costs a reference count each (2.4x slower)."""
    S = x.shape[0]
    M = a.shape[0]
    K = grid.shape[0]
    x0, kind, theta, rct_start, rct_species, rct_stoich, chg_start, chg_species, chg_delta, law_start, law_op, \
        law_arg, dep_start, dep_list = net
    for s in range(S):
        x[s] = x0[s]
    method_reset(method, aux)
    t = 0.0
    k = 0
    e = np.uint64(0)
    j = -1  # the reaction that fired (-1: initialisation, every propensity is computed)
    while True:
        # ---- (re)compute the propensities that changed: all of them at first, then j's dependents
        every = j < 0 or not method_needs_depgraph(method)
        lo, hi = (0, M) if every else (dep_start[j], dep_start[j + 1])
        for q in range(lo, hi):
            d = q if every else dep_list[q]
            # its propensity (chosen here: a helper taking the tables is 1.8x slower, measured)
            if kind[d] == KIND_MASS_ACTION:
                v = mass_action(theta[d], d, x, rct_start, rct_species, rct_stoich)
            else:
                v = law(d, x, law_start, law_op, law_arg, stack)
            if bad_propensity(v):
                return e, error_word(ERR_PROPENSITY, d), t, v
            a[d] = v
            method_update(method, a, aux, d, v)
        tau, u = method_event(method, a, aux, e, seed, rid)
        t_new = t + tau
        # ---- record the grid points passed before the event
        k = _record(rec, x, grid, k, t_new)
        if k >= K:
            return e, ERR_NONE, t, math.nan
        if max_events > 0 and e >= np.uint64(max_events):
            _record(rec, x, grid, k, math.inf)
            return e, ERR_MAX_EVENTS, t, math.nan
        # ---- fire the selected reaction
        j = method_select(method, a, aux, u)
        t = t_new
        word = _fire(j, x, chg_start, chg_species, chg_delta)
        if word != ERR_NONE:
            return e, word, t, math.nan
        firings[j] += 1
        e += np.uint64(1)


@numba.njit(inline="always", cache=True)
def _accumulate(rec, x, r, ch, sum_x, sum_x2, hist_lo, hist_width, hist, keep_traj, traj, keep_final, final):
    """Realization r's grid states ``rec`` (and final state ``x``) into accumulator block ``ch``:
    exact sums, histogram counts (when ``hist`` has bins), and kept trajectories / final states."""
    K, S = rec.shape
    B = hist.shape[3]
    for k in range(K):
        for s in range(S):
            v = rec[k, s]
            sum_x[ch, k, s] += v
            sum_x2[ch, k, s] += v * v
            if B > 0:
                b = (v - hist_lo[s]) // hist_width[s]
                if b < 0:
                    b = 0
                elif b >= B:
                    b = B - 1
                hist[ch, k, s, b] += 1
            if keep_traj:
                traj[r, k, s] = v
    if keep_final:
        for s in range(S):
            final[r, s] = x[s]


@numba.njit(parallel=True, cache=True, error_model="numpy")
def _simulate(method, net, real0, R, seed, aux_n, max_stack, grid, max_events, sum_x, sum_x2, firings, events,
              errors, keep_traj, traj, keep_final, final, hist_lo, hist_width, hist):
    S = net.x0.shape[0]
    M = net.theta.shape[0]
    K = grid.shape[0]
    n_chunks = sum_x.shape[0]  # accumulator blocks (any split gives the same integer sums)
    for ch in prange(n_chunks):
        x = np.empty(S, dtype=np.int64)
        a = np.empty(M, dtype=np.float64)
        aux = np.empty(aux_n, dtype=np.float64)
        stack = np.empty(max(max_stack, 1), dtype=np.float64)
        rec = np.empty((K, S), dtype=np.int64)
        for r in range(ch * R // n_chunks, (ch + 1) * R // n_chunks):
            ev, err, _, _ = run_realization(method, np.uint64(real0 + r), seed, net, grid, max_events, x, a, aux, stack,
                                         rec, firings[ch])
            events[r] = ev
            errors[r] = err
            _accumulate(rec, x, r, ch, sum_x, sum_x2, hist_lo, hist_width, hist, keep_traj, traj, keep_final, final)


def simulate_block(c: CompiledNetwork, *, method: CPUMethod, real0: int, realizations: int, seed: int,
                   grid: np.ndarray, keep_trajectories: bool = False, keep_final: bool = False,
                   hist_lo: np.ndarray | None = None, hist_width: np.ndarray | None = None, bins: int = 0,
                   max_events: int = 0) -> dict:
    """Simulate realizations ``real0 .. real0+realizations-1``; returns exact integer reductions and,
    per realization, the events and error words (:mod:`distsim.ssa.errors`)."""
    S, M, K, R = c.n_species, c.n_reactions, len(grid), realizations
    n_chunks = max(1, min(R, 4 * numba.get_num_threads()))
    sum_x = np.zeros((n_chunks, K, S), dtype=np.int64)
    sum_x2 = np.zeros((n_chunks, K, S), dtype=np.int64)
    firings = np.zeros((n_chunks, M), dtype=np.int64)
    events = np.zeros(R, dtype=np.uint64)
    errors = np.zeros(R, dtype=np.int32)
    traj = np.zeros((R, K, S) if keep_trajectories else (1, 1, 1), dtype=np.int64)
    final = np.zeros((R, S) if keep_final else (1, 1), dtype=np.int64)
    hist = np.zeros((n_chunks, K, S, bins) if bins else (1, 1, 1, 0), dtype=np.int64)
    lo = np.zeros(S, np.int64) if hist_lo is None else np.asarray(hist_lo, np.int64)
    wd = np.ones(S, np.int64) if hist_width is None else np.asarray(hist_width, np.int64)
    reported = c.events is not None and c.events.hybrid and c.events.reported.any()
    cont = None
    if c.events is None:
        kernel, head = _simulate, (method, reaction_arrays(c))
    else:
        kernel = _simulate_hybrid if c.events.hybrid else _simulate_events
        head = (method, reaction_arrays(c), event_arrays(c), event_work_shape(c))
        if c.events.hybrid:  # the rate-rule values on the grid, a row per realization when the result reports them
            cont = np.full((R if reported else 1, K, len(c.events.rr_param)), math.nan)
    # bounded slices of realizations (Ctrl-C and cancellation seen between them); the sums accumulate
    # in place and each realization keeps its stream (real0 + r): the same bits as one call
    slices = Slices(R, first=n_chunks)
    for r0, r1 in slices:
        part = head if cont is None else head + (cont[r0:r1] if reported else cont,)
        kernel(*part, np.uint64(real0 + r0), r1 - r0, np.uint64(seed), method.aux_size(M), c.max_stack,
               np.asarray(grid, np.float64), int(max_events), sum_x, sum_x2, firings, events[r0:r1], errors[r0:r1],
               keep_trajectories, traj[r0:r1] if keep_trajectories else traj, keep_final,
               final[r0:r1] if keep_final else final, lo, wd, hist)
    slices.raise_if_cancelled()
    out = {
        "sum_x": _exact_sum(sum_x), "sum_x2": _exact_sum(sum_x2), "firings": firings.sum(axis=0),
        "events": events, "errors": errors,
    }
    if keep_trajectories:
        out["trajectories"] = traj
    if keep_final:
        out["final"] = final
    if bins:
        out["histogram"] = hist.sum(axis=0)
    if reported:  # the continuous variables that the result reports (distsim.models.events)
        out["continuous"] = cont[:, :, c.events.reported]
    return out


@numba.njit(parallel=True, cache=True, error_model="numpy")
def _simulate_points(method, net, x0s, thetas, law_args, seeds, R, item_point, item_lo, item_hi, aux_n, max_stack,
                     grid, max_events, sum_x, sum_x2, firings, events, errors, keep_traj, traj):
    """Realizations item_lo[i] .. item_hi[i] - 1 of point item_point[i], for every work item i in
    parallel: the point's own initial counts, rate and law constants (row p of x0s, thetas, law_args)
    and seed, so realization r of point p is the one a run of that point alone gives. Sums and
    firings per item; events, errors (and trajectories) at index p * R + r."""
    _, kind, _, rct_start, rct_species, rct_stoich, chg_start, chg_species, chg_delta, law_start, law_op, _, \
        dep_start, dep_list = net
    S = x0s.shape[1]
    M = thetas.shape[1]
    K = grid.shape[0]
    no_lo = np.zeros(1, dtype=np.int64)  # no histogram, no final states
    no_hist = np.zeros((1, 1, 1, 0), dtype=np.int64)
    no_final = np.zeros((1, 1), dtype=np.int64)
    for it in prange(item_point.shape[0]):
        p = item_point[it]
        pnet = (x0s[p], kind, thetas[p], rct_start, rct_species, rct_stoich, chg_start, chg_species, chg_delta,
                law_start, law_op, law_args[p], dep_start, dep_list)
        x = np.empty(S, dtype=np.int64)
        a = np.empty(M, dtype=np.float64)
        aux = np.empty(aux_n, dtype=np.float64)
        stack = np.empty(max(max_stack, 1), dtype=np.float64)
        rec = np.empty((K, S), dtype=np.int64)
        for r in range(item_lo[it], item_hi[it]):
            ev, err, _, _ = run_realization(method, np.uint64(r), seeds[p], pnet, grid, max_events, x, a, aux, stack,
                                            rec, firings[it])
            i = p * R + r
            events[i] = ev
            errors[i] = err
            _accumulate(rec, x, i, it, sum_x, sum_x2, no_lo, no_lo, no_hist, keep_traj, traj, False, no_final)


def simulate_points(c: CompiledNetwork, x0: np.ndarray, theta: np.ndarray, law_arg: np.ndarray, seeds: np.ndarray, *,
                    method: CPUMethod, realizations: int, grid: np.ndarray, max_events: int = 0,
                    keep_trajectories: bool = False) -> dict:
    """Realizations 0 .. R-1 of every point p (rows of ``x0``, ``theta``, ``law_arg``: its values of
    ``c``'s arrays; ``seeds[p]``: its seed), in one parallel loop: per point exact sums, firings, and
    per (point, realization) events, error words (and grid states, ``keep_trajectories``)."""
    P, R, S, M, K = len(seeds), realizations, c.n_species, c.n_reactions, len(grid)
    pieces = max(1, -(-4 * numba.get_num_threads() // max(P, 1)))  # work items per point: >= 4 per thread
    pieces = min(pieces, R)
    item_point = np.repeat(np.arange(P, dtype=np.int64), pieces)
    cut = np.arange(pieces + 1, dtype=np.int64) * R // pieces
    item_lo, item_hi = np.tile(cut[:-1], P), np.tile(cut[1:], P)
    n_items = len(item_point)
    sum_x = np.zeros((n_items, K, S), dtype=np.int64)
    sum_x2 = np.zeros((n_items, K, S), dtype=np.int64)
    firings = np.zeros((n_items, M), dtype=np.int64)
    events = np.zeros(P * R, dtype=np.uint64)
    errors = np.zeros(P * R, dtype=np.int32)
    traj = np.zeros((P * R, K, S) if keep_trajectories else (1, 1, 1), dtype=np.int64)
    _simulate_points(method, reaction_arrays(c), np.ascontiguousarray(x0, np.int64),
                     np.ascontiguousarray(theta, np.float64), np.ascontiguousarray(law_arg, np.float64),
                     np.asarray(seeds, np.uint64), R, item_point, item_lo, item_hi, method.aux_size(M), c.max_stack,
                     np.asarray(grid, np.float64), int(max_events), sum_x, sum_x2, firings, events, errors,
                     keep_trajectories, traj)
    out = {"sum_x": sum_x.reshape(P, pieces, K, S).sum(axis=1), "sum_x2": sum_x2.reshape(P, pieces, K, S).sum(axis=1),
           "firings": firings.reshape(P, pieces, M).sum(axis=1), "events": events.reshape(P, R),
           "errors": errors.reshape(P, R)}
    if keep_trajectories:
        out["trajectories"] = traj.reshape(P, R, K, S)
    return out


def replay(c: CompiledNetwork, method: CPUMethod, realization: int, *, seed: int, grid: np.ndarray,
           max_events: int = 0) -> tuple[int, float, np.ndarray, float]:
    """Realization ``realization`` again, alone: (error word, time, state, bad propensity or NaN) where
    it stopped."""
    M = c.n_reactions
    x = np.empty(c.n_species, dtype=np.int64)
    grid = np.asarray(grid, np.float64)
    args = (grid, int(max_events), x, np.empty(M), np.empty(method.aux_size(M)), np.empty(max(c.max_stack, 1)),
            np.empty((len(grid), c.n_species), np.int64), np.zeros(M, np.int64))
    if c.events is None:
        _, word, t, v = run_realization(method, np.uint64(realization), np.uint64(seed), reaction_arrays(c), *args)
    elif c.events.hybrid:
        _, word, t, v = run_realization_hybrid(np.uint64(realization), np.uint64(seed), reaction_arrays(c),
                                               event_arrays(c), *args[:4], *args[5:],
                                               event_ops.new_work(*event_work_shape(c)),
                                               hybrid_ops.new_work(len(c.events.rr_param), len(c.events.loc_ev)),
                                               np.empty((len(grid), len(c.events.rr_param))), False)
    else:
        _, word, t, v = run_realization_events(method, np.uint64(realization), np.uint64(seed), reaction_arrays(c),
                                               event_arrays(c), *args, event_ops.new_work(*event_work_shape(c)))
    return int(word), float(t), x, float(v)


def _exact_sum(a: np.ndarray) -> np.ndarray:
    """Sum over the first axis as Python integers (object array): no int64 overflow across chunks."""
    return np.sum(a.astype(object), axis=0)


# ---- networks with SBML events or assignment rules ---------------------------------------------------
# The loop above, with the hook points of distsim/ssa/event_ops.py (twin of kernels/ssa_events.cuh):
# the realization's own copies of the tables that parameters are folded into, the rules and the
# triggers after every firing, and stops at the instants where a time comparison changes. Random
# numbers: draw d (0, 1, 2, ...) of a realization uses the counter the plain loop gives event d; a
# draw is followed by a firing or by a stop, so draws never share an address (without time
# comparisons there are no stops and draw d is event d, as in the plain loop).

def event_arrays(c: CompiledNetwork) -> event_ops.EventArrays:
    return event_ops.event_arrays(c.events)


def event_work_shape(c: CompiledNetwork) -> tuple[int, ...]:
    return event_ops.work_shape(c.events, c.n_reactions, len(c.law_arg))


RECOMPUTE_NONE, RECOMPUTE_DEPENDENTS, RECOMPUTE_ALL = 0, 1, 2
NO_DRAW_LIMIT = np.uint64(2**64 - 1)  # events_loop's max_draws: none (the SSA's)


@numba.njit(cache=True, error_model="numpy")
def run_realization_events(method, rid, seed, net, ev, grid, max_events, x, a, aux, stack, rec, firings, w):
    """:func:`run_realization` for a network with events or rules (``ev``: its EventArrays, ``w``: the
    realization's event work arrays, :func:`distsim.ssa.event_ops.new_work`)."""
    x[:] = net.x0
    w[0][:] = net.theta
    w[1][:net.law_arg.shape[0]] = net.law_arg
    word, v = event_ops.reset(x, 0.0, ev, w)
    if word != ERR_NONE:
        return np.uint64(0), word, 0.0, v
    return events_loop(method, rid, seed, np.uint64(0), NO_DRAW_LIMIT, net, ev, grid, max_events, x, a, aux, stack,
                       rec, firings, w, 0.0)


@numba.njit(inline="always", cache=True, error_model="numpy")
def events_loop(method, rid, seed, ctr_hi, max_draws, net, ev, grid, max_events, x, a, aux, stack, rec, firings, w,
                t):
    """The event loop of :func:`run_realization_events` from the state (x, w) at time ``t`` (before
    ``grid[0]``), recording ``rec[k]`` until the last grid point; also the advance of a particle
    (:mod:`distsim.ssa.advance_events`: ``grid`` = [t1]). Draw d uses the Philox counter
    ``(ctr_hi << 32) | d``; past ``max_draws`` draws (at most 2**32 - 1 with ``ctr_hi`` > 0) the loop
    stops with ERR_MAX_EVENTS. Returns (firings, error word, time, refused value or NaN)."""
    M = a.shape[0]
    K = grid.shape[0]
    _, kind, _, rct_start, rct_species, rct_stoich, chg_start, chg_species, chg_delta, law_start, law_op, \
        _, dep_start, dep_list = net
    theta_r, larg_r = w[0], w[1]
    n_rules, n_ev, n_tc = ev.rule_prog.shape[0], ev.ev_trigger.shape[0], ev.tc_op.shape[0]  # (hooks skipped when 0)
    for i in range(n_ev):  # delayed events stop the loop at their scheduled times too
        if ev.ev_delay[i] >= 0:
            n_tc += 1
    method_reset(method, aux)
    k = 0
    e = np.uint64(0)
    ctr = ctr_hi << np.uint64(32)  # the next draw's counter: firings plus stops so far in the low word
    ctr_end = ctr + max_draws if max_draws < NO_DRAW_LIMIT else NO_DRAW_LIMIT
    j = -1
    todo = RECOMPUTE_ALL
    while True:
        every = todo == RECOMPUTE_ALL or not method_needs_depgraph(method)
        lo, hi = (0, M) if every else (dep_start[j], dep_start[j + 1])
        if todo == RECOMPUTE_NONE:
            hi = lo
        for q in range(lo, hi):
            d = q if every else dep_list[q]
            if kind[d] == KIND_MASS_ACTION:
                v = mass_action(theta_r[d], d, x, rct_start, rct_species, rct_stoich)
            else:
                v = law(d, x, law_start, law_op, larg_r, stack)
            if bad_propensity(v):
                return e, error_word(ERR_PROPENSITY, d), t, v
            a[d] = v
            method_update(method, a, aux, d, v)
        if ctr >= ctr_end:
            _record(rec, x, grid, k, math.inf)
            return e, ERR_MAX_EVENTS, t, math.nan
        tau, u = method_event(method, a, aux, ctr, seed, rid)
        t_new = t + tau
        t_stop = event_ops.next_change(x, t, ev, w) if n_tc > 0 else math.inf
        stop = t_stop <= t_new and t_stop <= grid[K - 1]
        t_rec = t_stop if stop else t_new
        k = _record(rec, x, grid, k, t_rec)
        if k >= K:
            return e, ERR_NONE, t, math.nan
        ctr += np.uint64(1)
        if stop:  # a time comparison changes before the next firing: events, then a fresh waiting time
            t = t_stop
            word, v, n = event_ops.fire_events(x, t, ev, w) if n_ev > 0 else (ERR_NONE, math.nan, 0)
            if word != ERR_NONE:
                return e, word, t, v
            todo = RECOMPUTE_ALL if n > 0 else RECOMPUTE_NONE
            continue
        if max_events > 0 and e >= np.uint64(max_events):
            _record(rec, x, grid, k, math.inf)
            return e, ERR_MAX_EVENTS, t, math.nan
        j = method_select(method, a, aux, u)
        t = t_new
        word = _fire(j, x, chg_start, chg_species, chg_delta)
        if word != ERR_NONE:
            return e, word, t, math.nan
        firings[j] += 1
        e += np.uint64(1)
        word, v = event_ops.apply_rules(x, t, ev, w) if n_rules > 0 else (ERR_NONE, math.nan)
        n = 0
        if word == ERR_NONE and n_ev > 0:
            word, v, n = event_ops.fire_events(x, t, ev, w)
        if word != ERR_NONE:
            return e, word, t, v
        todo = RECOMPUTE_ALL if n > 0 else RECOMPUTE_DEPENDENTS


@numba.njit(parallel=True, cache=True, error_model="numpy")
def _simulate_events(method, net, ev, dims, real0, R, seed, aux_n, max_stack, grid, max_events, sum_x, sum_x2,
                     firings, events, errors, keep_traj, traj, keep_final, final, hist_lo, hist_width, hist):
    """:func:`_simulate` with :func:`run_realization_events` (the same reductions; ``dims``: the sizes
    of the event work arrays)."""
    S = net.x0.shape[0]
    M = net.theta.shape[0]
    K = grid.shape[0]
    n_chunks = sum_x.shape[0]
    for ch in prange(n_chunks):
        x = np.empty(S, dtype=np.int64)
        a = np.empty(M, dtype=np.float64)
        aux = np.empty(aux_n, dtype=np.float64)
        stack = np.empty(max(max_stack, 1), dtype=np.float64)
        rec = np.empty((K, S), dtype=np.int64)
        w = event_ops.new_work(dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6])
        for r in range(ch * R // n_chunks, (ch + 1) * R // n_chunks):
            evn, err, _, _ = run_realization_events(method, np.uint64(real0 + r), seed, net, ev, grid, max_events, x,
                                                    a, aux, stack, rec, firings[ch], w)
            events[r] = evn
            errors[r] = err
            _accumulate(rec, x, r, ch, sum_x, sum_x2, hist_lo, hist_width, hist, keep_traj, traj, keep_final, final)


# ---- hybrid networks: time-dependent propensities and rate rules (a PDMP) --------------------------
# The event loop with the integrator of distsim/ssa/hybrid_ops.py: the next firing is where the
# integrated hazard reaches E = -log u1 (u1, u2: the uniforms the plain loop draws for event e, e
# counting firings); the reaction is chosen with u2 a0(t*) by a linear search in reaction order (the
# direct method, whatever the method asked for). A stop at a time comparison executes its events and
# keeps E and the hazard integrated so far (the firing time of an inhomogeneous process, exactly).

@numba.njit(cache=True, error_model="numpy")
def run_realization_hybrid(rid, seed, net, ev, grid, max_events, x, a, stack, rec, firings, w, hw, crec, recording):
    """:func:`run_realization_events` for a hybrid network (``hw``: :func:`hybrid_ops.new_work`);
    returns (firings, error word, t, v) as that does. With ``recording``, crec[K, C] gets the rate-rule
    values on the grid (:func:`hybrid_ops.record_grid`; recording changes no step of the loop)."""
    x[:] = net.x0
    w[0][:] = net.theta
    w[1][:net.law_arg.shape[0]] = net.law_arg
    hw[5][0] = 0.0  # no step size yet
    hw[7][0] = 0  # no grid point recorded yet
    word, v = event_ops.reset(x, 0.0, ev, w)
    if word != ERR_NONE:
        return np.uint64(0), word, 0.0, v
    return hybrid_loop(rid, seed, np.uint64(0), NO_DRAW_LIMIT, net, ev, grid, max_events, x, a, stack, rec, firings,
                       w, hw, crec, recording, 0.0)


@numba.njit(inline="always", cache=True, error_model="numpy")
def hybrid_loop(rid, seed, ctr_hi, max_draws, net, ev, grid, max_events, x, a, stack, rec, firings, w, hw, crec,
                recording, t):
    """The loop of :func:`run_realization_hybrid` from the state (x, w, hw) at time ``t`` (before
    ``grid[0]``; ``hw[5]`` the integrator's next step size, 0: none yet), recording ``rec[k]`` until the
    last grid point; also the advance of a hybrid particle (:mod:`distsim.ssa.advance_events`: ``grid`` =
    [t1], a fresh waiting time at ``t``). Draw d (one at the start, one after each firing) uses the Philox
    counter ``(ctr_hi << 32) | d``; a firing whose next draw would pass ``max_draws`` draws is not made: the
    loop stops before it with ERR_MAX_EVENTS (as at ``max_events`` firings). Returns
    (firings, error word, time, refused value or NaN); p (w[2]) holds the rate-rule values at that time."""
    M = a.shape[0]
    K = grid.shape[0]
    _, kind, _, rct_start, rct_species, rct_stoich, chg_start, chg_species, chg_delta, law_start, law_op, \
        _, dep_start, dep_list = net
    theta_r, larg_r = w[0], w[1]
    hz_of = ev.hz_of
    n_rules, n_ev, n_tc = ev.rule_prog.shape[0], ev.ev_trigger.shape[0], ev.tc_op.shape[0]
    for i in range(n_ev):
        if ev.ev_delay[i] >= 0:
            n_tc += 1
    k = 0
    e = np.uint64(0)
    ctr = ctr_hi << np.uint64(32)  # the current draw's counter: firings so far in the low word
    ctr_end = ctr + max_draws if max_draws < NO_DRAW_LIMIT else NO_DRAW_LIMIT
    t_end = grid[K - 1]
    u1, u2 = event_uniforms(ctr, seed, rid)
    target = neglog_u01(u1)
    lam = 0.0
    fresh = True
    a_static = 0.0
    while True:
        if fresh:  # the propensities that do not move between firings, and their sum
            a_static = 0.0
            for d in range(M):
                if hz_of[d] >= 0:
                    continue
                if kind[d] == KIND_MASS_ACTION:
                    v = mass_action(theta_r[d], d, x, rct_start, rct_species, rct_stoich)
                else:
                    v = law(d, x, law_start, law_op, larg_r, stack)
                if bad_propensity(v):
                    return e, error_word(ERR_PROPENSITY, d), t, v
                a[d] = v
                a_static += v
            fresh = False
        t_stop = event_ops.next_change(x, t, ev, w) if n_tc > 0 else math.inf
        status, t, lam, d, v = hybrid_ops.advance(t, min(t_stop, t_end), lam, target, a_static, x, ev, w, hw, grid,
                                                  crec, recording)
        if status == hybrid_ops.ADV_BAD_PROPENSITY:
            return e, error_word(ERR_PROPENSITY, d), t, v
        if status == hybrid_ops.ADV_STEP:
            return e, ERR_INTEGRATOR, t, math.nan
        k = _record(rec, x, grid, k, t)
        if status == hybrid_ops.ADV_TRIGGER:  # a located trigger changed value: its events, as at a time stop
            word, v, n = event_ops.fire_events(x, t, ev, w)
            if word != ERR_NONE:
                return e, word, t, v
            fresh = fresh or n > 0
            continue
        if status == hybrid_ops.ADV_HORIZON:
            if t_stop > t_end:  # the end of the grid
                _record(rec, x, grid, k, math.inf)
                if recording:
                    hybrid_ops.record_rest(ev, w, hw, crec)
                return e, ERR_NONE, t, math.nan
            word, v, n = event_ops.fire_events(x, t, ev, w) if n_ev > 0 else (ERR_NONE, math.nan, 0)
            if word != ERR_NONE:
                return e, word, t, v
            fresh = fresh or n > 0
            continue
        if (max_events > 0 and e >= np.uint64(max_events)) or ctr + np.uint64(1) >= ctr_end:
            _record(rec, x, grid, k, math.inf)
            if recording:
                hybrid_ops.record_rest(ev, w, hw, crec)
            return e, ERR_MAX_EVENTS, t, math.nan
        d, v = hybrid_ops.moving_propensities(x, t, a, ev, w)
        if d >= 0:
            return e, error_word(ERR_PROPENSITY, d), t, v
        a0 = 0.0
        for q in range(M):
            a0 += a[q]
        if not a0 > 0.0:  # (no reaction can fire: the hazard reached the target by rounding)
            return e, ERR_INTEGRATOR, t, math.nan
        j = direct_scan(a, u2 * a0)
        word = _fire(j, x, chg_start, chg_species, chg_delta)
        if word != ERR_NONE:
            return e, word, t, math.nan
        firings[j] += 1
        e += np.uint64(1)
        ctr += np.uint64(1)
        word, v = event_ops.apply_rules(x, t, ev, w) if n_rules > 0 else (ERR_NONE, math.nan)
        if word == ERR_NONE and n_ev > 0:
            word, v, _ = event_ops.fire_events(x, t, ev, w)
        if word != ERR_NONE:
            return e, word, t, v
        u1, u2 = event_uniforms(ctr, seed, rid)
        target = neglog_u01(u1)
        lam = 0.0
        fresh = True


@numba.njit(parallel=True, cache=True, error_model="numpy")
def _simulate_hybrid(method, net, ev, dims, cont, real0, R, seed, aux_n, max_stack, grid, max_events, sum_x, sum_x2,
                     firings, events, errors, keep_traj, traj, keep_final, final, hist_lo, hist_width, hist):
    """:func:`_simulate_events` with :func:`run_realization_hybrid` (``method`` and ``aux_n`` unused);
    cont[R, K, C]: the rate-rule values on the grid, recorded when it has a row per realization."""
    S = net.x0.shape[0]
    M = net.theta.shape[0]
    K = grid.shape[0]
    n_chunks = sum_x.shape[0]
    for ch in prange(n_chunks):
        x = np.empty(S, dtype=np.int64)
        a = np.empty(M, dtype=np.float64)
        stack = np.empty(max(max_stack, 1), dtype=np.float64)
        rec = np.empty((K, S), dtype=np.int64)
        w = event_ops.new_work(dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6])
        hw = hybrid_ops.new_work(ev.rr_param.shape[0], ev.loc_ev.shape[0])
        recording = cont.shape[0] == R
        for r in range(ch * R // n_chunks, (ch + 1) * R // n_chunks):
            evn, err, _, _ = run_realization_hybrid(np.uint64(real0 + r), seed, net, ev, grid, max_events, x, a, stack,
                                                    rec, firings[ch], w, hw, cont[r if recording else 0], recording)
            events[r] = evn
            errors[r] = err
            _accumulate(rec, x, r, ch, sum_x, sum_x2, hist_lo, hist_width, hist, keep_traj, traj, keep_final, final)
