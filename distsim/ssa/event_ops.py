"""SBML events and assignment rules in the SSA's CPU loop (Numba): the twins of
``kernels/ssa_events.cuh``, with the same operations in the same order, so both backends give the
same bits. The tables come from :mod:`distsim.models.compile_events`; the semantics are those of
:mod:`distsim.models.events`.

One realization's event state is the work tuple ``w`` = (theta, law_arg, p, prev, pend, vals, st,
q_time, q_len, q_event, q_vals): its own copies of the reaction tables that parameters are folded
into, the mutable parameters, each trigger's previous value, each event's pending count, the values
of an executing event's assignments (all evaluated before any is applied), the program stack, and the
scheduled executions of delayed events (times, their number in q_len[0], events, values from the
trigger time), in the order they were scheduled.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from ..backends.dsmath import ds_cos, ds_sin
from ..models import arith
from ..models.compile_events import FLAG_INITIAL, FLAG_PERSISTENT, FLAG_TRIGGER_VALUES, CompiledEvents
from ..models.events import CMP_CODES, LOGIC_CODES, MAX_CASCADE, MAX_DELAYED, OP_CMP_BASE, OP_PUSH_BOOL, OP_PUSH_PARAM
from ..models.kinetics import binary, unary
from ..models.reactions import MAX_COUNT
from .errors import (ERR_EVENT_DELAY, ERR_EVENT_LOOP, ERR_EVENT_QUEUE, ERR_EVENT_VALUE, ERR_NONE, ERR_RULE_VALUE,
                     error_word)

CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_EQ, CMP_NE = (CMP_CODES[op] for op in ("<", "<=", ">", ">=", "==", "!="))
L_AND, L_OR, L_XOR, L_NOT = (LOGIC_CODES[op] for op in ("and", "or", "xor", "not"))
MAX_COUNT_F = float(MAX_COUNT)
COUNT_TOL = 1e-9  # a count assigned by a rule or event: whole to within this, relative (the SBML reader's tolerance)
OP_SIN, OP_COS = arith.TRIG_CODES


class EventArrays(NamedTuple):
    """The arrays of a :class:`~distsim.models.compile_events.CompiledEvents`, one Numba argument."""

    p0: np.ndarray
    prog_start: np.ndarray
    prog_op: np.ndarray
    prog_arg: np.ndarray
    ev_trigger: np.ndarray
    ev_priority: np.ndarray
    ev_flags: np.ndarray
    ev_delay: np.ndarray
    asg_start: np.ndarray
    asg_target: np.ndarray
    asg_prog: np.ndarray
    rule_target: np.ndarray
    rule_prog: np.ndarray
    tc_op: np.ndarray
    tc_prog: np.ndarray
    par_theta_start: np.ndarray
    par_theta: np.ndarray
    par_law_start: np.ndarray
    par_law: np.ndarray
    hz_of: np.ndarray
    rr_param: np.ndarray
    rr_prog: np.ndarray
    loc_ev: np.ndarray


def event_arrays(ce: CompiledEvents) -> EventArrays:
    return EventArrays(*(getattr(ce, name) for name in EventArrays._fields))


def work_shape(ce: CompiledEvents, n_reactions: int, n_law: int) -> tuple[int, ...]:
    """The sizes of one realization's event work arrays (arguments of :func:`new_work`)."""
    return (n_reactions, n_law, len(ce.p0), ce.n_events, ce.max_assignments, ce.max_stack,
            MAX_DELAYED if ce.delays else 1)


@numba.njit(cache=True)
def new_work(n_reactions, n_law, n_params, n_events, n_vals, n_stack, n_queue):
    """One realization's event work arrays (see the module docstring)."""
    return (np.empty(n_reactions), np.empty(max(n_law, 1)), np.empty(max(n_params, 1)),
            np.zeros(max(n_events, 1), np.int8), np.zeros(max(n_events, 1), np.int64), np.empty(max(n_vals, 1)),
            np.empty(max(n_stack, 1)), np.empty(max(n_queue, 1)), np.zeros(1, np.int64),
            np.zeros(max(n_queue, 1), np.int64), np.empty((max(n_queue, 1), max(n_vals, 1))))


@numba.njit(inline="always", cache=True)
def compare_or_logic(op, a, b):
    """A comparison (1.0 true, 0.0 false) or a two-argument logical operator on truth values."""
    if op == CMP_LT:
        r = a < b
    elif op == CMP_LE:
        r = a <= b
    elif op == CMP_GT:
        r = a > b
    elif op == CMP_GE:
        r = a >= b
    elif op == CMP_EQ:
        r = a == b
    elif op == CMP_NE:
        r = a != b
    elif op == L_AND:
        r = a != 0.0 and b != 0.0
    elif op == L_OR:
        r = a != 0.0 or b != 0.0
    else:  # xor
        r = (a != 0.0) != (b != 0.0)
    return 1.0 if r else 0.0


@numba.njit(cache=True, error_model="numpy")
def run_program(pid, x, p, t, prog_start, prog_op, prog_arg, st):
    """Program pid (an expression or a condition) on counts x, mutable parameters p, at time t."""
    sp = 0
    for pc in range(prog_start[pid], prog_start[pid + 1]):
        op = prog_op[pc]
        if op == arith.OP_PUSH_SPECIES:
            st[sp] = float(x[int(prog_arg[pc])])
            sp += 1
        elif op == OP_PUSH_PARAM:
            st[sp] = p[int(prog_arg[pc])]
            sp += 1
        elif op == arith.OP_PUSH_TIME:
            st[sp] = t
            sp += 1
        elif op == arith.OP_PUSH_CONST or op == OP_PUSH_BOOL:
            st[sp] = prog_arg[pc]
            sp += 1
        elif op == arith.OP_NEG:
            st[sp - 1] = -st[sp - 1]
        elif op == L_NOT:
            st[sp - 1] = 1.0 if st[sp - 1] == 0.0 else 0.0
        elif op == arith.OP_SELECT:  # value, condition, otherwise
            st[sp - 3] = st[sp - 3] if st[sp - 2] != 0.0 else st[sp - 1]
            sp -= 2
        elif op == OP_SIN:
            st[sp - 1] = ds_sin(st[sp - 1])
        elif op == OP_COS:
            st[sp - 1] = ds_cos(st[sp - 1])
        elif op >= arith.OP_FUNC_BASE and op - arith.OP_FUNC_BASE <= 6:
            st[sp - 1] = unary(op - arith.OP_FUNC_BASE, st[sp - 1])
        elif op >= OP_CMP_BASE:
            st[sp - 2] = compare_or_logic(op, st[sp - 2], st[sp - 1])
            sp -= 1
        else:
            st[sp - 2] = binary(op, st[sp - 2], st[sp - 1])
            sp -= 1
    return st[0]


# The functions below run after every firing (the rules, the triggers) or every step (next_change);
# they read each table once, outside their loops (a tuple's array read inside a loop costs a
# reference count each: 2-4x slower on DSMTS 00028/00033, measured), and the loop skips them when
# the network has no rules, events or time comparisons. Numba-level inlining (inline="always") made
# them 1.5-2x faster again but the loop 4x slower to compile (~100 s per method), so only the small
# ``assign`` is inlined.

@numba.njit(inline="always", cache=True)
def assign(target, v, x, ev, w):
    """target := v (a species count, which must be a whole number in [0, 2**53] to within COUNT_TOL,
    relative: rules computed in floating point give 806.9999999999999; or mutable parameter
    -1 - target, written into the realization's reaction tables too); False if refused."""
    if target >= 0:
        r = math.floor(v + 0.5)
        if not (v > -0.5 and v <= MAX_COUNT_F and abs(v - r) <= COUNT_TOL * max(1.0, v)):
            return False
        x[target] = np.int64(r)
        return True
    theta_r, larg_r, p = w[0], w[1], w[2]
    pts, pt, pls, pl = ev.par_theta_start, ev.par_theta, ev.par_law_start, ev.par_law
    q = -1 - target
    p[q] = v
    for i in range(pts[q], pts[q + 1]):
        theta_r[pt[i]] = v
    for i in range(pls[q], pls[q + 1]):
        larg_r[pl[i]] = v
    return True


@numba.njit(cache=True, error_model="numpy")
def apply_rules(x, t, ev, w):
    """Every assignment rule in order; returns (error word, the refused value or NaN)."""
    ps, po, pa, p, st = ev.prog_start, ev.prog_op, ev.prog_arg, w[2], w[6]
    rule_prog, rule_target = ev.rule_prog, ev.rule_target
    for i in range(rule_prog.shape[0]):
        v = run_program(rule_prog[i], x, p, t, ps, po, pa, st)
        if not assign(rule_target[i], v, x, ev, w):
            return error_word(ERR_RULE_VALUE, i), v
    return ERR_NONE, math.nan


@numba.njit(cache=True, error_model="numpy")
def reset(x, t, ev, w):
    """Start of a realization (counts x already initial): the realization's parameters, the rules, the
    triggers' previous values (initialValue), nothing pending, then the events of t = 0; returns
    (error word, refused value or NaN)."""
    p, prev, pend = w[2], w[3], w[4]
    for i in range(ev.p0.shape[0]):
        p[i] = ev.p0[i]
    for i in range(ev.ev_trigger.shape[0]):
        prev[i] = 1 if ev.ev_flags[i] & FLAG_INITIAL else 0
        pend[i] = 0
    w[8][0] = 0
    word, v = apply_rules(x, t, ev, w)
    if word == ERR_NONE:
        word, v, _ = fire_events(x, t, ev, w)
    return word, v


@numba.njit(cache=True, error_model="numpy")
def check_triggers(x, t, ev, w):
    """Evaluate every trigger: a rise from false to true makes its event pending (once more), or
    schedules it at t + delay; a fall cancels a non-persistent event's scheduled executions. Returns
    (whether any event became pending or was scheduled, error word, refused delay or NaN)."""
    ps, po, pa, p, st = ev.prog_start, ev.prog_op, ev.prog_arg, w[2], w[6]
    trig, prev, pend = ev.ev_trigger, w[3], w[4]
    rose = False
    for i in range(trig.shape[0]):
        on = run_program(trig[i], x, p, t, ps, po, pa, st) != 0.0
        if on and prev[i] == 0:
            rose = True
            if ev.ev_delay[i] < 0:
                pend[i] += 1
            else:
                word, v = schedule(i, x, t, ev, w)
                if word != ERR_NONE:
                    return rose, word, v
        elif not on and prev[i] != 0 and (ev.ev_flags[i] & FLAG_PERSISTENT) == 0 and ev.ev_delay[i] >= 0:
            cancel(i, w)
        prev[i] = 1 if on else 0
    return rose, ERR_NONE, math.nan


@numba.njit(cache=True, error_model="numpy")
def schedule(i, x, t, ev, w):
    """Event i (with a delay) triggered at t: its execution at t + delay, with the assignment values
    of time t if it uses them; returns (error word, refused delay or NaN)."""
    d = run_program(ev.ev_delay[i], x, w[2], t, ev.prog_start, ev.prog_op, ev.prog_arg, w[6])
    if not (d >= 0.0) or math.isinf(d):
        return error_word(ERR_EVENT_DELAY, i), d
    q_time, q_len, q_event, q_vals = w[7], w[8], w[9], w[10]
    n = q_len[0]
    if n >= q_time.shape[0]:
        return error_word(ERR_EVENT_QUEUE, i), math.nan
    q_time[n] = t + d
    q_event[n] = i
    if ev.ev_flags[i] & FLAG_TRIGGER_VALUES:
        lo, hi = ev.asg_start[i], ev.asg_start[i + 1]
        for q in range(lo, hi):
            q_vals[n, q - lo] = run_program(ev.asg_prog[q], x, w[2], t, ev.prog_start, ev.prog_op, ev.prog_arg, w[6])
    q_len[0] = n + 1
    return ERR_NONE, math.nan


@numba.njit(cache=True)
def unschedule(s, w):
    """Remove scheduled execution s, keeping the others in their order."""
    q_time, q_len, q_event, q_vals = w[7], w[8], w[9], w[10]
    n = q_len[0]
    for r in range(s, n - 1):
        q_time[r] = q_time[r + 1]
        q_event[r] = q_event[r + 1]
        for c in range(q_vals.shape[1]):
            q_vals[r, c] = q_vals[r + 1, c]
    q_len[0] = n - 1


@numba.njit(cache=True)
def cancel(i, w):
    """Cancel every scheduled execution of event i."""
    s = 0
    while s < w[8][0]:
        if w[9][s] == i:
            unschedule(s, w)
        else:
            s += 1


@numba.njit(cache=True, error_model="numpy")
def next_pending(x, t, ev, w):
    """The pending event to execute now (highest priority, ties in document order; a pending
    non-persistent event whose trigger is false is dropped), or -1; a scheduled execution due at t
    (q_time <= t) counts as pending: then E + its slot (for equal priorities and events, the first
    scheduled; an event pending without delay first)."""
    prev, pend = w[3], w[4]
    E = ev.ev_trigger.shape[0]
    best = -1
    best_i = -1
    best_p = -math.inf
    for i in range(E):
        if pend[i] == 0:
            continue
        if (ev.ev_flags[i] & FLAG_PERSISTENT) == 0 and prev[i] == 0:
            pend[i] = 0
            continue
        pr = -math.inf
        if ev.ev_priority[i] >= 0:
            pr = run_program(ev.ev_priority[i], x, w[2], t, ev.prog_start, ev.prog_op, ev.prog_arg, w[6])
        if best < 0 or pr > best_p:
            best = i
            best_i = i
            best_p = pr
    for s in range(w[8][0]):
        if w[7][s] > t:
            continue
        i = w[9][s]
        pr = -math.inf
        if ev.ev_priority[i] >= 0:
            pr = run_program(ev.ev_priority[i], x, w[2], t, ev.prog_start, ev.prog_op, ev.prog_arg, w[6])
        if best < 0 or pr > best_p or (pr == best_p and i < best_i):
            best = E + s
            best_i = i
            best_p = pr
    return best


@numba.njit(cache=True, error_model="numpy")
def execute_pending(x, t, ev, w):
    """Execute the pending events one at a time (and those they trigger); returns (error word,
    refused value or NaN, events executed)."""
    vals = w[5]
    n = 0
    while True:
        i = next_pending(x, t, ev, w)
        if i < 0:
            return ERR_NONE, math.nan, n
        n += 1
        E = ev.ev_trigger.shape[0]
        if n > MAX_CASCADE:
            return error_word(ERR_EVENT_LOOP, i if i < E else w[9][i - E]), math.nan, n
        stored = False
        if i >= E:  # a scheduled execution of a delayed event
            s = i - E
            i = w[9][s]
            stored = (ev.ev_flags[i] & FLAG_TRIGGER_VALUES) != 0
            if stored:
                for q in range(ev.asg_start[i + 1] - ev.asg_start[i]):
                    vals[q] = w[10][s, q]
            unschedule(s, w)
        else:
            w[4][i] -= 1
        lo, hi = ev.asg_start[i], ev.asg_start[i + 1]
        for q in range(lo, hi):  # every value first, then every assignment
            if not stored:
                vals[q - lo] = run_program(ev.asg_prog[q], x, w[2], t, ev.prog_start, ev.prog_op, ev.prog_arg, w[6])
        for q in range(lo, hi):
            if not assign(ev.asg_target[q], vals[q - lo], x, ev, w):
                return error_word(ERR_EVENT_VALUE, q), vals[q - lo], n
        word, v = apply_rules(x, t, ev, w)
        if word != ERR_NONE:
            return word, v, n
        _, word, v = check_triggers(x, t, ev, w)
        if word != ERR_NONE:
            return word, v, n


@numba.njit(cache=True, error_model="numpy")
def fire_events(x, t, ev, w):
    """The triggers at time t, then the events that are pending; returns (error word, refused value
    or NaN, events executed)."""
    rose, word, v = check_triggers(x, t, ev, w)
    if word != ERR_NONE:
        return word, v, 0
    if not rose and not due(t, w):
        return ERR_NONE, math.nan, 0
    return execute_pending(x, t, ev, w)


@numba.njit(cache=True)
def due(t, w):
    """Whether a scheduled execution is due at t."""
    for s in range(w[8][0]):
        if w[7][s] <= t:
            return True
    return False


@numba.njit(cache=True, error_model="numpy")
def next_change(x, t, ev, w):
    """The earliest instant after t at which a comparison 'time OP c' changes with the state frozen
    (inf if none): c for >= and <, the next double after c for > and <=, both for == and !=."""
    ps, po, pa, p, st = ev.prog_start, ev.prog_op, ev.prog_arg, w[2], w[6]
    tc_op, tc_prog = ev.tc_op, ev.tc_prog
    best = math.inf
    for i in range(tc_op.shape[0]):
        c = run_program(tc_prog[i], x, p, t, ps, po, pa, st)
        op = tc_op[i]
        after = np.nextafter(c, math.inf)
        if op == CMP_GE or op == CMP_LT:
            at = c if t < c else math.inf
        elif op == CMP_GT or op == CMP_LE:
            at = after if t < after else math.inf
        else:
            at = c if t < c else (after if t < after else math.inf)
        if at < best:
            best = at
    for s in range(w[8][0]):  # scheduled executions of delayed events
        if t < w[7][s] < best:
            best = w[7][s]
    return best
