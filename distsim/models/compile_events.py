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
An assignment rule for a parameter that reads ``time`` or a rate-rule variable (or the target of such a
rule) *moves* too: where a kinetic law or a rate rule reads its target, the rule's expression is inlined
(:func:`moving_rules`; rules in their sorted SBML order), so the integrator evaluates it at every stage.
The rule itself still runs at firings and events, so events and other rules see its value at those instants.

**Dependencies.** A firing changes some species; the rules that read them change their targets,
and so on down the (sorted) rules: :func:`rule_dependents` adds the reactions reading any of those
targets to the firing's dependents, so the dependency graph stays exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError
from .arith import (OP_FUNC_BASE, OP_NEG, OP_PUSH_CONST, OP_PUSH_SPECIES, OP_PUSH_TIME, OP_SELECT, TRIG_CODES,
                    BinOp, Call, Neg, Node, Param, Piecewise, Relation, Time, compile_stack, has_logic, walk,
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
    # int32 [L]: the events whose trigger reads a variable that changes between firings (a rate-rule variable or
    # a moving rule's target): the hybrid loop locates where its value changes (hybrid_ops.locate_triggers)
    loc_ev: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    # bool [C]: the result reports the rule's variable (RateRule.reported)
    reported: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    hybrid: bool = False  # the network is ReactionNetwork.hybrid
    cpu_only: bool = False  # hybrid, or sin/cos in a program: the CUDA kernels do not run it yet
    delays: bool = False  # an event has a delay: the realizations keep queues of scheduled executions

    @property
    def n_events(self) -> int:
        return len(self.ev_trigger)


class _Programs:
    """The flat programs of one network's events and rules, numbered in the order they are added."""

    def __init__(self, params: dict, mutable: dict[str, int], moving: dict[str, Node] | None = None) -> None:
        self.params, self.mutable = params, mutable
        self.moving = moving or {}  # moving rules, inlined into every expression (moving_rules)
        self.progs: list[list[tuple[int, float]]] = []

    def _add(self, prog: list[tuple[int, float]]) -> int:
        self.progs.append(prog)
        return len(self.progs) - 1

    def expr(self, node: Node) -> int:
        slots: list[tuple[int, str]] = []
        node = inline(node, self.moving)
        return self._add(_read_mutable(compile_stack(node, self.params, slots)[0], slots, self.mutable))

    def condition(self, cond) -> int:
        slots: list[tuple[int, str]] = []
        cond = _inline_condition(cond, self.moving)
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
    moving = moving_rules(net)
    pg = _Programs(params, mutable, moving)
    events = _event_arrays(net, pg)
    rule_target = [pg.target(r.species, r.target) for r in net.rules]
    rule_prog = [pg.expr(r.expr) for r in net.rules]
    tc_op, tc_prog = [], []
    for op, threshold in time_comparisons(net):
        tc_op.append(CMP_CODES[op])
        tc_prog.append(pg.expr(threshold))
    hz_of = [pg.expr(r.law) if net.hybrid and _moves(r.law, net, moving) else -1 for r in net.reactions]
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
        hz_of=_i32(hz_of), rr_param=_i32(rr_param), rr_prog=_i32(rr_prog),
        reported=np.asarray([r.reported for r in net.rate_rules], dtype=bool),
        loc_ev=_i32(located_events(net, moving)), hybrid=net.hybrid,
        cpu_only=net.hybrid or trig, delays=any(e.delay is not None for e in net.events),
    )


def _moves(law: Node | None, net: ReactionNetwork, moving: dict[str, Node]) -> bool:
    """Whether a kinetic law changes between firings: it reads time, sin/cos, a rate-rule parameter or
    the target of a moving assignment rule."""
    if law is None:
        return False
    return (has_time(law) or has_trig(law) or has_logic(law)
            or bool(set(params_of(law)) & ({r.target for r in net.rate_rules} | set(moving))))


MAX_INLINED_NODES = 100_000  # the size of a kinetic law or rate rule after inlining moving rules


def moving_rules(net: ReactionNetwork) -> dict[str, Node]:
    """Target -> expression (moving rules it reads already inlined) of each assignment rule for a
    parameter that changes between firings: it reads ``time``, a rate-rule variable or the target of an
    earlier moving rule (``net.rules`` is sorted so that a rule follows those it reads)."""
    ruled = {r.target for r in net.rate_rules}
    out: dict[str, Node] = {}
    for r in net.rules:
        if r.species < 0 and (has_time(r.expr) or set(params_of(r.expr)) & (ruled | set(out))):
            out[r.target] = inline(r.expr, out, f"assignment rule {r.id!r}", net.source)
    return out


def inline(node: Node, moving: dict[str, Node], what: str = "an expression", source: str = "") -> Node:
    """``node`` with every parameter of ``moving`` replaced by its expression (an explicit stack: no
    recursion on the depth of the tree)."""
    if not moving or not set(params_of(node)) & set(moving):
        return node
    done: list[Node] = []  # the rebuilt children, in postorder
    stack: list[tuple[Node, bool]] = [(node, False)]
    size = 0
    while stack:
        n, ready = stack.pop()
        kids = _children(n)
        if not ready and kids:
            stack.append((n, True))
            stack.extend((c, False) for c in reversed(kids))
            continue
        size += 1
        if size > MAX_INLINED_NODES:
            raise ModelError(f"{what}: more than {MAX_INLINED_NODES} operations once the assignment rules it reads "
                             "are inlined", file=source or None)
        if isinstance(n, Param) and n.name in moving:
            done.append(moving[n.name])
            continue
        if not kids:
            done.append(n)
            continue
        new = done[len(done) - len(kids):]
        del done[len(done) - len(kids):]
        done.append(_rebuild(n, new))
    return done[0]


def _inline_condition(cond, moving: dict[str, Node]):
    """A trigger with the moving rules inlined into its comparisons (an explicit stack)."""
    if not moving:
        return cond
    done: dict[int, object] = {}
    stack = [(cond, False)]
    while stack:
        c, ready = stack.pop()
        if isinstance(c, Compare):
            done[id(c)] = Compare(c.op, inline(c.left, moving), inline(c.right, moving))
        elif isinstance(c, Logic) and not ready:
            stack.append((c, True))
            stack.extend((a, False) for a in c.args)
        elif isinstance(c, Logic):
            done[id(c)] = Logic(c.op, tuple(done[id(a)] for a in c.args))
        else:
            done[id(c)] = c
    return done[id(cond)]


def located_events(net: ReactionNetwork, moving: dict[str, Node]) -> list[int]:
    """The events whose trigger reads a rate-rule variable or a moving rule's target."""
    varying = {r.target for r in net.rate_rules} | set(moving)
    return [i for i, e in enumerate(net.events)
            if varying.intersection(p for n in condition_nodes(e.trigger) for p in params_of(n))]


def _children(n: Node) -> list[Node]:
    if isinstance(n, BinOp):
        return [n.left, n.right]
    if isinstance(n, Neg):
        return [n.arg]
    if isinstance(n, (Call, Relation)):
        return list(n.args)
    if isinstance(n, Piecewise):
        return [c for v, cond in n.pieces for c in (v, cond)] + [n.otherwise]
    return []


def _rebuild(n: Node, kids: list[Node]) -> Node:
    if isinstance(n, BinOp):
        return BinOp(n.op, kids[0], kids[1])
    if isinstance(n, Neg):
        return Neg(kids[0])
    if isinstance(n, Call):
        return Call(n.func, tuple(kids))
    if isinstance(n, Relation):
        return Relation(n.op, tuple(kids))
    assert isinstance(n, Piecewise)
    pieces = tuple((kids[2 * i], kids[2 * i + 1]) for i in range(len(n.pieces)))
    return Piecewise(pieces, kids[-1])


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
    side of a comparison whose other side does not use it, and a variable that changes between firings (a
    rate-rule variable, or the target of a moving assignment rule: :func:`moving_rules`) read by a
    kinetic law's time comparison or as a mass-action rate (a trigger reading one is located by the
    hybrid loop: :func:`located_events`); an assignment rule for a
    species that reads time or such a variable (the count would change between firings)."""
    src = net.source or None
    ruled = {r.target for r in net.rate_rules}
    for r in net.rules:
        if r.species >= 0 and (has_time(r.expr) or set(params_of(r.expr)) & ruled):
            why = "time" if has_time(r.expr) else repr(sorted(set(params_of(r.expr)) & ruled)[0])
            raise ModelError(f"assignment rule {r.id!r} for {r.target!r} reads {why} ({to_text(r.expr, net.species)}): "
                             f"{r.target!r} is a species, whose count would change between reactions, which distsim "
                             "does not simulate (a parameter may have such a rule)", file=src)
    moving = moving_rules(net)
    for r in net.rules:
        read = set(moving).intersection(params_of(r.expr))
        if r.species >= 0 and read:
            raise ModelError(f"assignment rule {r.id!r} for {r.target!r} reads {sorted(read)[0]!r}, which changes "
                             f"between reactions (its rule reads time or a rate-rule variable): {r.target!r} is a "
                             "species, whose count would change between reactions, which distsim does not simulate",
                             file=src)
    varying = ruled | set(moving)

    def what(name: str) -> str:
        return "which a rate rule changes continuously" if name in ruled else \
            "which changes between reactions (its assignment rule reads time or a rate-rule variable)"

    for j, n in _law_relations(net):
        a, b = n.args
        if not ((isinstance(a, Time) and not has_time(b)) or (isinstance(b, Time) and not has_time(a))):
            raise ModelError(f"reaction {net.reactions[j].name or j + 1!r}: its kinetic law compares "
                             f"{to_text(n, net.species)}; distsim compares time in a kinetic law only alone on one "
                             "side of a comparison whose other side does not use time (as in 'time < 5')", file=src)
        read = set(params_of(a) + params_of(b)) & varying
        if read:
            name = sorted(read)[0]
            raise ModelError(f"reaction {net.reactions[j].name or j + 1!r}: its kinetic law compares time with "
                             f"{name!r}, {what(name)}; distsim does not locate such changes yet", file=src)
    for j, r in enumerate(net.reactions):
        if r.law is None and r.rate in varying:
            has = ("has a rate rule" if r.rate in ruled
                   else "has an assignment rule reading time or a rate-rule variable")
            raise ModelError(f"reaction {r.name or j + 1!r}: its mass-action rate {r.rate!r} {has}; give the "
                             "reaction a kinetic law instead", file=src)
    for e, c in _timed(net):
        alone = (isinstance(c.left, Time) and not has_time(c.right)) or \
                (isinstance(c.right, Time) and not has_time(c.left))
        if not alone:
            raise ModelError(
                f"event {e.id!r}: its trigger compares {condition_text(c, net.species)!r}; distsim simulates time "
                "in a trigger only alone on one side of a comparison whose other side does not use time (as in "
                "'time >= 25'), where the instant it changes is exact", file=src)


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


__all__ = ["CompiledEvents", "compile_events", "parameter_slots", "rule_dependents", "time_comparisons",
           "check_time_use", "moving_rules", "inline", "located_events",
           "stack_depth", "FLAG_INITIAL", "FLAG_PERSISTENT", "FLAG_TRIGGER_VALUES"]
