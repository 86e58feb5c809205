"""Compile a network's SBML events and assignment rules (:mod:`distsim.models.events`) into flat
programs for the SSA kernels (``distsim/ssa/event_ops.py``, ``kernels/ssa_events.cuh``).

Every expression (trigger, priority, event assignment, rule, and the threshold of each time
comparison) is one postfix program of :func:`~distsim.models.arith.compile_stack` /
:func:`~distsim.models.events.compile_condition`, concatenated in ``prog_*``. Parameters that an
event or a rule assigns are *mutable*: each realization keeps their values in its own array ``p``
and programs read them with ``OP_PUSH_PARAM``. Reactions read parameters as constants folded into
their tables (``theta`` of mass action, ``law_arg`` of kinetic laws), so each realization also keeps
its own copy of those two tables, and a new value of parameter q is written into the entries that
``par_theta`` / ``par_law`` list for q: the propensities are then those of the network compiled
with the new value, bit for bit, and the kinetics functions stay as they are.

**Time comparisons.** With the state frozen between two firings, ``time OP c`` (c a program of the
state) changes value only at known instants: ``>=`` and ``<`` at c, ``>`` and ``<=`` at the next double
after c, ``==`` and ``!=`` at c and just after it. ``tc_op``/``tc_prog`` list them (``c OP time`` is
mirrored to ``time OP' c``); the kernels stop at the earliest such instant before the next firing.

**Hybrid networks** (:attr:`ReactionNetwork.hybrid`): the kinetic law of a reaction that reads
``time``, sin/cos or a rate-rule parameter is one more program (``hz_of``; it reads the mutable
parameters at run time), and each rate rule's derivative too (``rr_prog``, its parameter ``rr_param``);
the hybrid loop (``distsim/ssa/hybrid_ops.py``, ``kernels/ssa_hybrid.cuh``) integrates them.

**Dependencies.** A firing changes some species; the rules that read them change their targets,
and so on down the (sorted) rules: :func:`rule_dependents` adds the reactions reading any of those
targets to the firing's dependents, so the dependency graph stays exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from .arith import (OP_FUNC_BASE, OP_NEG, OP_PUSH_CONST, OP_PUSH_SPECIES, OP_PUSH_TIME, OP_SELECT, TRIG_CODES,
                    Node, Relation, Time, compile_stack, has_logic, walk,
                    params_of, species_of, to_text)
from .events import (CMP_CODES, LOGIC_CODES, OP_PUSH_BOOL, OP_PUSH_PARAM, Compare, Logic, compile_condition,
                     condition_nodes, condition_text, has_time, has_trig)
from .reactions import ReactionNetwork

FLAG_INITIAL, FLAG_PERSISTENT, FLAG_TRIGGER_VALUES = 1, 2, 4  # ev_flags bits
_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_PUSH = (OP_PUSH_CONST, OP_PUSH_SPECIES, OP_PUSH_TIME, OP_PUSH_PARAM, OP_PUSH_BOOL)


@dataclass(frozen=True)
class CompiledEvents:
    """Flat tables of a network's events and rules (one realization's state: counts x, mutable
    parameters p, the previous value of each trigger, the pending count of each event)."""

    p0: np.ndarray  # float64 [P]: initial values of the mutable parameters
    prog_start: np.ndarray  # int32 [n programs + 1]
    prog_op: np.ndarray  # int32
    prog_arg: np.ndarray  # float64
    max_stack: int
    ev_trigger: np.ndarray  # int32 [E]: program of each trigger
    ev_priority: np.ndarray  # int32 [E]: program of each priority, -1 without one
    ev_flags: np.ndarray  # int32 [E]: FLAG_INITIAL | FLAG_PERSISTENT | FLAG_TRIGGER_VALUES
    ev_delay: np.ndarray  # int32 [E]: program of each delay, -1 without one
    asg_start: np.ndarray  # int32 [E+1]: assignments of event i
    asg_target: np.ndarray  # int32 [A]: species index, or -1 - q for mutable parameter q
    asg_prog: np.ndarray  # int32 [A]
    rule_target: np.ndarray  # int32 [R] (as asg_target)
    rule_prog: np.ndarray  # int32 [R]
    tc_op: np.ndarray  # int32 [T]: CMP_CODES of 'time OP c'
    tc_prog: np.ndarray  # int32 [T]: program of c
    par_theta_start: np.ndarray  # int32 [P+1]: reactions whose theta is parameter q
    par_theta: np.ndarray  # int32
    par_law_start: np.ndarray  # int32 [P+1]: law_arg entries holding parameter q
    par_law: np.ndarray  # int32
    max_assignments: int  # most assignments of one event
    # the hybrid loop (networks with ReactionNetwork.hybrid; all empty otherwise)
    hz_of: np.ndarray  # int32 [M]: the hazard program of reaction j (time, sin/cos, rate-rule parameters), or -1
    rr_param: np.ndarray  # int32 [C]: the mutable parameter of each rate rule
    rr_prog: np.ndarray  # int32 [C]: program of its derivative
    hybrid: bool = False  # the network is ReactionNetwork.hybrid
    cpu_only: bool = False  # hybrid, or sin/cos in a program: the CUDA kernels do not run it yet
    delays: bool = False  # an event has a delay: CPU only (the CUDA kernels refuse it)

    @property
    def n_events(self) -> int:
        return len(self.ev_trigger)


class _Programs:
    """The flat programs of one network's events and rules, numbered in the order they are added."""

    def __init__(self, params: dict, mutable: dict[str, int]) -> None:
        self.params, self.mutable = params, mutable
        self.progs: list[list[tuple[int, float]]] = []

    def _add(self, prog: list[tuple[int, float]]) -> int:
        self.progs.append(prog)
        return len(self.progs) - 1

    def expr(self, node: Node) -> int:
        slots: list[tuple[int, str]] = []
        return self._add(_read_mutable(compile_stack(node, self.params, slots)[0], slots, self.mutable))

    def condition(self, cond) -> int:
        slots: list[tuple[int, str]] = []
        return self._add(_read_mutable(compile_condition(cond, self.params, slots), slots, self.mutable))

    def target(self, species: int, name: str) -> int:
        """A species index, or -1 - q for mutable parameter q."""
        return species if species >= 0 else -1 - self.mutable[name]

    def flat(self) -> dict[str, np.ndarray | int]:
        starts = np.cumsum([0] + [len(p) for p in self.progs])
        flat = [step for p in self.progs for step in p] or [(OP_PUSH_CONST, 0.0)]
        return dict(prog_start=_i32(starts), prog_op=_i32([op for op, _ in flat]),
                    prog_arg=np.asarray([arg for _, arg in flat], dtype=np.float64),
                    max_stack=max([stack_depth(p) for p in self.progs] + [1]))


def _i32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.int32)


def _mutable_parameters(net: ReactionNetwork) -> dict[str, int]:
    """Parameters that events or rules assign, numbered in order of first appearance."""
    names = [a.target for e in net.events for a in e.assignments if a.species < 0]
    names += [r.target for r in net.rules if r.species < 0]
    names += [r.target for r in net.rate_rules]
    return {n: q for q, n in enumerate(dict.fromkeys(names))}


def _event_arrays(net: ReactionNetwork, pg: _Programs) -> dict[str, np.ndarray | int]:
    """Triggers, priorities, flags and assignments of the events (programs added in that order)."""
    trigger = [pg.condition(e.trigger) for e in net.events]
    priority = [-1 if e.priority is None else pg.expr(e.priority) for e in net.events]
    flags = [FLAG_INITIAL * e.initial_value + FLAG_PERSISTENT * e.persistent
             + FLAG_TRIGGER_VALUES * e.use_values_from_trigger_time for e in net.events]
    delay = [-1 if e.delay is None else pg.expr(e.delay) for e in net.events]
    asg_start, asg_target, asg_prog = [0], [], []
    for e in net.events:
        for a in e.assignments:
            asg_target.append(pg.target(a.species, a.target))
            asg_prog.append(pg.expr(a.expr))
        asg_start.append(len(asg_target))
    return dict(ev_trigger=_i32(trigger), ev_priority=_i32(priority), ev_flags=_i32(flags), ev_delay=_i32(delay),
                asg_start=_i32(asg_start), asg_target=_i32(asg_target), asg_prog=_i32(asg_prog),
                max_assignments=max([len(e.assignments) for e in net.events] + [1]))


def compile_events(net: ReactionNetwork, law_start: np.ndarray) -> CompiledEvents:
    """Flat programs of ``net``'s events and rules; ``law_start`` locates each reaction's kinetic
    law in the compiled network's ``law_op``/``law_arg``. Raises :class:`ModelError` for what cannot
    be simulated exactly (``time`` inside a trigger expression, ``time`` in a rule)."""
    check_time_use(net)
    params = net.params
    mutable = _mutable_parameters(net)
    pg = _Programs(params, mutable)
    events = _event_arrays(net, pg)
    rule_target = [pg.target(r.species, r.target) for r in net.rules]
    rule_prog = [pg.expr(r.expr) for r in net.rules]
    tc_op, tc_prog = [], []
    for op, threshold in time_comparisons(net):
        tc_op.append(CMP_CODES[op])
        tc_prog.append(pg.expr(threshold))
    hz_of = [pg.expr(r.law) if net.hybrid and _moves(r.law, net) else -1 for r in net.reactions]
    rr_param = [mutable[r.target] for r in net.rate_rules]
    rr_prog = [pg.expr(r.expr) for r in net.rate_rules]
    theta_at, law_at = parameter_slots(net, law_start)
    par_theta, par_law = [theta_at.get(n, []) for n in mutable], [law_at.get(n, []) for n in mutable]
    flat = pg.flat()
    trig = bool(np.isin(flat["prog_op"], TRIG_CODES).any())
    return CompiledEvents(
        p0=np.asarray([params[n] for n in mutable], dtype=np.float64), **flat, **events,
        rule_target=_i32(rule_target), rule_prog=_i32(rule_prog), tc_op=_i32(tc_op), tc_prog=_i32(tc_prog),
        par_theta_start=_i32(np.cumsum([0] + [len(s) for s in par_theta])),
        par_theta=_i32([j for s in par_theta for j in s]),
        par_law_start=_i32(np.cumsum([0] + [len(s) for s in par_law])), par_law=_i32([pc for s in par_law for pc in s]),
        hz_of=_i32(hz_of), rr_param=_i32(rr_param), rr_prog=_i32(rr_prog), hybrid=net.hybrid,
        cpu_only=net.hybrid or trig, delays=any(e.delay is not None for e in net.events),
    )


def _moves(law: Node | None, net: ReactionNetwork) -> bool:
    """Whether a kinetic law changes between firings: it reads time, sin/cos or a rate-rule parameter."""
    if law is None:
        return False
    return (has_time(law) or has_trig(law) or has_logic(law)
            or bool(set(params_of(law)) & {r.target for r in net.rate_rules}))


def _read_mutable(prog: list[tuple[int, float]], slots: list[tuple[int, str]], mutable: dict[str, int]
                  ) -> list[tuple[int, float]]:
    """``prog`` with each folded mutable parameter (``slots`` from compile_stack) read at run time."""
    for pos, name in slots:
        if name in mutable:
            prog[pos] = (OP_PUSH_PARAM, float(mutable[name]))
    return prog


def parameter_slots(net: ReactionNetwork, law_start: np.ndarray) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """Where compile_network puts each parameter's value: the mass-action reactions whose rate it is
    (theta entries), and the law_arg entries where compile_stack folded it (``law_start``: each
    reaction's first law_arg entry)."""
    theta_at: dict[str, list[int]] = {}
    law_at: dict[str, list[int]] = {}
    for j, r in enumerate(net.reactions):
        if r.law is None:
            if isinstance(r.rate, str):
                theta_at.setdefault(r.rate, []).append(j)
            continue
        slots: list[tuple[int, str]] = []
        compile_stack(r.law, net.params, slots)
        for pos, name in slots:
            law_at.setdefault(name, []).append(int(law_start[j]) + pos)
    return theta_at, law_at


def stack_depth(prog: list[tuple[int, float]]) -> int:
    """Deepest stack a program reaches (pushes +1; unary ops and 'not' 0; the others -1)."""
    depth = best = 0
    for op, _ in prog:
        if op in _PUSH:
            depth += 1
        elif op == OP_SELECT:
            depth -= 2
        elif not (op == OP_NEG or OP_FUNC_BASE <= op <= OP_FUNC_BASE + 6 or op in TRIG_CODES
                  or op == LOGIC_CODES["not"]):
            depth -= 1
        best = max(best, depth)
    return best


def _timed(net: ReactionNetwork):
    """(event, comparison) for every comparison of a trigger that reads time."""
    for e in net.events:
        stack = [e.trigger]
        while stack:
            c = stack.pop()
            if isinstance(c, Logic):
                stack.extend(reversed(c.args))
            elif isinstance(c, Compare) and (has_time(c.left) or has_time(c.right)):
                yield e, c


def _law_relations(net: ReactionNetwork):
    """(reaction index, relation) for every comparison reading time in a kinetic law (piecewise conditions)."""
    for j, r in enumerate(net.reactions):
        if r.law is not None:
            for n in walk(r.law):
                if isinstance(n, Relation) and len(n.args) == 2 and n.op not in ("and", "or", "xor") and \
                        (has_time(n.args[0]) or has_time(n.args[1])):
                    yield j, n


def time_comparisons(net: ReactionNetwork) -> list[tuple[str, Node]]:
    """(op, c) of every comparison 'time op c' in the triggers and the kinetic laws' piecewise conditions
    (mirrored when time is on the right): the loops stop where one changes, so a jump of a propensity
    in time is exact."""
    out = [(c.op, c.right) if isinstance(c.left, Time) else (_MIRROR[c.op], c.left) for _, c in _timed(net)]
    out += [(n.op, n.args[1]) if isinstance(n.args[0], Time) else (_MIRROR[n.op], n.args[0])
            for _, n in _law_relations(net)]
    return out


def check_time_use(net: ReactionNetwork) -> None:
    """Refuse what the kernels cannot simulate exactly: ``time`` in a trigger other than alone on one
    side of a comparison whose other side does not read it, ``time`` in an assignment rule, and a
    rate-rule parameter read by a trigger, an assignment rule or as a mass-action rate (each would
    change between firings)."""
    src = net.source or None
    for j, n in _law_relations(net):
        a, b = n.args
        if not ((isinstance(a, Time) and not has_time(b)) or (isinstance(b, Time) and not has_time(a))):
            raise ModelError(f"reaction {net.reactions[j].name or j + 1!r}: its kinetic law compares "
                             f"{to_text(n, net.species)}; distsim compares time in a kinetic law only alone on one "
                             "side of a comparison whose other side does not use time (as in 'time < 5')", file=src)
        if set(params_of(a) + params_of(b)) & {r.target for r in net.rate_rules}:
            raise ModelError(f"reaction {net.reactions[j].name or j + 1!r}: its kinetic law compares time with a "
                             "rate-rule parameter, which distsim does not locate yet", file=src)
    ruled = {r.target for r in net.rate_rules}
    for e in net.events:
        read = ruled.intersection(p for n in condition_nodes(e.trigger) for p in params_of(n))
        if read:
            raise ModelError(f"event {e.id!r}: its trigger reads {sorted(read)[0]!r}, which a rate rule changes "
                             "continuously; distsim does not locate such triggers yet", file=src)
    for r in net.rules:
        read = ruled.intersection(params_of(r.expr))
        if read:
            raise ModelError(f"assignment rule {r.id!r} for {r.target!r} reads {sorted(read)[0]!r}, which a rate "
                             "rule changes continuously; distsim does not simulate that yet", file=src)
    for j, r in enumerate(net.reactions):
        if r.law is None and r.rate in ruled:
            raise ModelError(f"reaction {r.name or j + 1!r}: its mass-action rate {r.rate!r} has a rate rule; "
                             "give the reaction a kinetic law instead", file=src)
    for e, c in _timed(net):
        alone = (isinstance(c.left, Time) and not has_time(c.right)) or \
                (isinstance(c.right, Time) and not has_time(c.left))
        if not alone:
            raise ModelError(
                f"event {e.id!r}: its trigger compares {condition_text(c, net.species)!r}; distsim simulates time "
                "in a trigger only alone on one side of a comparison whose other side does not use time (as in "
                "'time >= 25'), where the instant it changes is exact", file=src)
    for r in net.rules:
        if has_time(r.expr):
            raise ModelError(f"assignment rule {r.id!r} for {r.target!r} reads time "
                             f"({to_text(r.expr, net.species)}): its value would change between reactions, which "
                             "distsim does not simulate", file=src)


def rule_dependents(net: ReactionNetwork, changes: list[tuple[tuple[int, int], ...]]) -> list[set[int]]:
    """Per reaction j: the reactions whose propensity reads a rule target that changes when j fires
    (the rules read j's changed species, or the targets of earlier rules that do)."""
    readers_sp: dict[int, set[int]] = {}
    readers_par: dict[str, set[int]] = {}
    for k, r in enumerate(net.reactions):
        for i in r.reads():
            readers_sp.setdefault(i, set()).add(k)
        for name in (params_of(r.law) if r.law is not None else ((r.rate,) if isinstance(r.rate, str) else ())):
            readers_par.setdefault(name, set()).add(k)
    out = []
    for j in range(net.n_reactions):
        sp = {i for i, _ in changes[j]}
        par: set[str] = set()
        extra: set[int] = set()
        for r in net.rules:
            if sp.intersection(species_of(r.expr)) or par.intersection(params_of(r.expr)):
                if r.species >= 0:
                    sp.add(r.species)
                    extra |= readers_sp.get(r.species, set())
                else:
                    par.add(r.target)
                    extra |= readers_par.get(r.target, set())
        out.append(extra)
    return out


__all__ = ["CompiledEvents", "compile_events", "parameter_slots", "rule_dependents", "time_comparisons", "check_time_use",
           "stack_depth", "FLAG_INITIAL", "FLAG_PERSISTENT", "FLAG_TRIGGER_VALUES"]
