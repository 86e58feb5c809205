"""SBML events without delay and assignment rules, as immutable data on a reaction network.

Readers (:mod:`distsim.models.formats.sbml`) fill them in; :mod:`distsim.models.compile_events`
turns them into flat programs that the SSA kernels run exactly, on CPU and GPU
(``distsim/ssa/event_ops.py`` and its CUDA twin ``kernels/ssa_events.cuh``). Rate inference
(:mod:`distsim.mcmc`) refuses them (:meth:`ReactionNetwork.require_plain`).

**Expressions** are :mod:`distsim.models.arith` trees (species counts, parameters, numbers and
:class:`~distsim.models.arith.Time`, the simulation time). A value *assigned to a species is its
count*: readers already multiply a concentration by its compartment size, so the kernels never
need to know about compartments. An assigned count must be a whole number in [0, 2**53] (else the
realization stops with an error naming the event or rule).

**Triggers** are :data:`Condition` trees: :class:`Compare` (two arith expressions), :class:`Logic`
(``and``/``or``/``xor``/``not`` over conditions) and :class:`Truth` constants. ``time`` may appear
in a trigger only alone on one side of a comparison (``time >= 25``, ``T_on < time``): between two
firings the state is frozen, so such a comparison changes value exactly at a known time, where the
kernels stop (see :mod:`distsim.models.compile_events`). Anything else with ``time`` in a trigger,
or ``time`` in an assignment rule for a species, is refused when the network is compiled (in a rule for a
parameter it is evaluated continuously by the hybrid loop: see the end of this docstring).

**Event semantics** (SBML Level 3, no delays): an event *fires* when its trigger goes from false
to true; at t = 0 the trigger's previous value is ``initial_value`` (so ``initial_value=False``
with a trigger already true at t = 0 fires at t = 0). Triggers are evaluated after the initial
state, after every reaction firing, at every time a time comparison changes, and after every event
executed. Events that fired wait in a pending set; the pending event of highest ``priority``
(evaluated when the choice is made; ``None`` ranks below every number; equal priorities go in
document order, the deterministic choice for SBML's "any order") executes next: all its
assignments are evaluated first, then applied together, then the assignment rules, then every
trigger is evaluated again (new rising edges join the pending set at the same instant). A
``persistent=False`` pending event whose trigger is false when it would be chosen is dropped. An
event whose trigger rises twice before it executes executes twice. ``use_values_from_trigger_time``
is kept for completeness: without delays, evaluation happens at the trigger time either way. More
than :data:`MAX_CASCADE` executions at one instant stop the realization with an error (events that
trigger each other forever). Assignment rules hold at every instant: after the initial state,
after every reaction firing and after every event they are applied in the order of
:attr:`ReactionNetwork.rules` (already sorted so that a rule comes after the rules it reads).

**Delays** (CPU and GPU, the same bits): an event with a ``delay`` does not become pending when its
trigger rises at t; its execution is scheduled at t + delay (the delay evaluated at t; it must be
finite and >= 0), with its assignment values evaluated at t when ``use_values_from_trigger_time``,
else at execution. At that instant it joins the events that are pending then (the same priority
order; for equal priorities, document order, then the order of scheduling). A ``persistent=False``
event's scheduled executions are cancelled when its trigger falls. A realization holds at most
:data:`MAX_DELAYED` scheduled executions (more: it stops with an error naming the event).

**Time-dependent propensities and rate rules** (:class:`RateRule`, :attr:`ReactionNetwork.rate_rules`):
kinetic laws may read ``time`` and sin/cos, and parameters may follow rate rules (ODEs between
firings; their derivatives may read species, parameters, other rate-rule parameters and ``time``).
The SSA simulates such a network (:attr:`ReactionNetwork.hybrid`) as a piecewise-deterministic Markov
process: the next firing is where the integrated hazard reaches an exponential target, integrated
with the rate rules to stated tolerances (:mod:`distsim.ssa.hybrid_ops`). Rate rules hold parameters
only: species stay whole counts in every result. An SBML species with a rate rule is such a
parameter (the reader keeps its SBML value, an amount or a concentration), reported in the result as
a real (:attr:`RateRule.reported`); reactions never change it. An assignment rule for a parameter may
read ``time`` and rate-rule parameters: it is inlined where laws and rate rules read it
(:func:`distsim.models.compile_events.moving_rules`). A trigger may not read a rate-rule parameter or
such a rule's target, a mass-action rate may not be one, and an assignment rule for a species may not
read them or ``time`` (refused when compiled: they would change between firings); event assignments
may set rate-rule parameters. A network of rate rules alone (no species, no reactions) is a
deterministic ODE: every realization is the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, MutableMapping, Sequence, Union

import numpy as np

from .arith import (OP_FUNC_BASE, OP_PUSH_TIME, OP_REL_BASE, REL_CODES, TRIG_FUNCS, Call, Node, Time, compile_stack,
                    evaluate, params_of, species_of, to_text, walk)

__all__ = ["Compare", "Logic", "Truth", "Condition", "Assignment", "Event", "AssignmentRule",
           "RateRule", "has_trig", "condition_value", "condition_text", "compile_condition", "condition_nodes",
           "COMPARE_OPS", "LOGIC_OPS", "MAX_CASCADE", "MAX_DELAYED", "has_time", "OP_PUSH_PARAM", "RuleCycle",
           "rule_order", "apply_rules_at_start"]

COMPARE_OPS = ("<", "<=", ">", ">=", "==", "!=")
MAX_CASCADE = 10_000  # event executions at one instant before a realization stops (events that retrigger)
MAX_DELAYED = 64  # scheduled executions of delayed events per realization before it stops with an error
LOGIC_OPS = ("and", "or", "xor", "not")


@dataclass(frozen=True, slots=True)
class Compare:
    op: str  # one of COMPARE_OPS
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Logic:
    op: str  # one of LOGIC_OPS ('not' has one argument, the others two or more)
    args: tuple["Condition", ...]


@dataclass(frozen=True, slots=True)
class Truth:
    value: bool


Condition = Union[Compare, Logic, Truth]


@dataclass(frozen=True)
class Assignment:
    """``target := expr`` at the event: ``species`` is the species index, or -1 for a parameter."""

    target: str
    species: int
    expr: Node


@dataclass(frozen=True)
class Event:
    id: str
    trigger: Condition
    assignments: tuple[Assignment, ...]
    initial_value: bool = True
    persistent: bool = True
    use_values_from_trigger_time: bool = True
    priority: Node | None = None
    delay: Node | None = None  # evaluated at the trigger time; None: no delay (see the module)


@dataclass(frozen=True)
class RateRule:
    """``d target / dt = expr`` between reaction firings (SBML rate rule; ``target`` a parameter, the
    continuous variables, ``species`` -1): integrated by the SSA's hybrid loop
    (:func:`distsim.ssa.cpu.run_realization_hybrid`); ``id`` as for :class:`AssignmentRule`.
    ``reported``: the SSA result holds its value on the time grid (``continuous_mean`` ...): SBML species
    with a rate rule (which readers make such parameters) and the variables of a model without species."""

    id: str
    target: str
    species: int
    expr: Node
    reported: bool = False


@dataclass(frozen=True)
class AssignmentRule:
    """``target = expr`` at every instant (``species``: species index, or -1 for a parameter);
    ``id`` is the rule's own id, or its target when the rule has none."""

    id: str
    target: str
    species: int
    expr: Node


class RuleCycle(ValueError):
    """Assignment rules that read each other's targets in a cycle; ``index``: the first rule on it."""

    def __init__(self, index: int):
        super().__init__(index)
        self.index = index


def rule_order(rules: Sequence[AssignmentRule], species: Sequence[str]) -> list[int]:
    """Indices of ``rules`` in their given order, except that a rule comes after the rules whose
    targets it reads (raises :class:`RuleCycle`)."""
    target = {r.target: k for k, r in enumerate(rules)}
    needs = []
    for r in rules:
        names = {species[i] for i in species_of(r.expr)} | set(params_of(r.expr))
        needs.append({target[n] for n in names if n in target})
    done: list[int] = []
    while len(done) < len(rules):
        ready = [k for k in range(len(rules)) if k not in done and needs[k] <= set(done)]
        if not ready:
            raise RuleCycle(min(k for k in range(len(rules)) if k not in done))
        done.append(ready[0])
    return done


def apply_rules_at_start(rules: Sequence[AssignmentRule], initial: Sequence[int], params: MutableMapping[str, float],
                         count: Callable[[float, str], int], fail: Callable[[str], Exception],
                         nonfinite: list[tuple[str, float]] | None = None) -> list[int]:
    """Initial counts with the (ordered) rules applied at t = 0; a rule for a parameter updates
    ``params``. ``count(value, what)`` makes a species' value a count or raises; ``fail(message)``
    is the error for a parameter value that is not finite -- unless ``nonfinite`` is given: then the
    parameter keeps its (finite) placeholder in ``params``, later rules read the non-finite value, and
    (name, value) is appended to ``nonfinite`` (a run computes the rules again at t = 0 and stops where
    a propensity reads it, as it does when a rule's value becomes NaN later)."""
    x = np.array([initial], dtype=np.float64)
    env = dict(params)
    for r in rules:
        v = float(evaluate(r.expr, x, env, 0.0)[0])
        if r.species >= 0:
            x[0, r.species] = count(v, f"assignment rule for {r.target!r}: initial value")
        elif not np.isfinite(v) and nonfinite is None:
            raise fail(f"assignment rule for {r.target!r}: initial value is not finite ({v!r})")
        else:
            env[r.target] = v
            if np.isfinite(v):
                params[r.target] = v
            else:
                nonfinite.append((r.target, v))  # type: ignore[union-attr]
    return [int(v) for v in x[0]]


def condition_nodes(cond: Condition):
    """Every arithmetic operand of a condition (for species/parameter checks)."""
    stack = [cond]
    while stack:
        c = stack.pop()
        if isinstance(c, Compare):
            yield c.left
            yield c.right
        elif isinstance(c, Logic):
            stack.extend(c.args)


def has_time(node: Node) -> bool:
    """Whether an arith expression reads the simulation time."""
    return any(isinstance(n, Time) for n in walk(node))


def has_trig(node: Node) -> bool:
    """Whether an arith expression calls sin or cos, or tan, sec, csc, cot (of them: only the hybrid loop evaluates
    them)."""
    return any(isinstance(n, Call) and n.func in TRIG_FUNCS for n in walk(node))


def reads(items) -> tuple[set[int], set[str]]:
    """Species indices and parameter names read by arith nodes ``items``."""
    sp: set[int] = set()
    pa: set[str] = set()
    for n in items:
        sp.update(species_of(n))
        pa.update(params_of(n))
    return sp, pa


def condition_value(cond: Condition, x: np.ndarray, params: Mapping[str, float], t: float = 0.0) -> np.ndarray:
    """Value of a trigger on counts ``x[..., n_species]`` at time ``t`` (boolean array; reference)."""
    x = np.asarray(x, dtype=np.float64)
    cmp = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
           "!=": np.not_equal}

    def go(c: Condition) -> np.ndarray:
        if isinstance(c, Truth):
            return np.full(x.shape[:-1], c.value)
        if isinstance(c, Compare):
            return cmp[c.op](evaluate(c.left, x, params, t), evaluate(c.right, x, params, t))
        vals = [go(a) for a in c.args]
        if c.op == "not":
            return ~vals[0]
        out = vals[0]
        for v in vals[1:]:
            out = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[c.op](out, v)
        return out

    return go(cond)


def condition_text(cond: Condition, species: tuple[str, ...] | list[str]) -> str:
    if isinstance(cond, Truth):
        return "true" if cond.value else "false"
    if isinstance(cond, Compare):
        return f"{to_text(cond.left, species)} {cond.op} {to_text(cond.right, species)}"
    if cond.op == "not":
        return f"not ({condition_text(cond.args[0], species)})"
    return f" {cond.op} ".join(f"({condition_text(a, species)})" for a in cond.args)


# the value of a parameter that events or rules change, read at run time (distsim.models.compile_events):
# operand q, the index of the parameter in the realization's array
OP_PUSH_PARAM = OP_PUSH_TIME + 1
# postfix opcodes of conditions: after arith's function codes, so one interpreter can run both
OP_CMP_BASE = OP_REL_BASE  # the codes of arith's relations (piecewise conditions)
CMP_CODES = {op: REL_CODES[op] for op in COMPARE_OPS}
LOGIC_CODES = {op: REL_CODES[op] for op in LOGIC_OPS}
OP_PUSH_BOOL = OP_CMP_BASE + len(COMPARE_OPS) + len(LOGIC_OPS)


def compile_condition(cond: Condition, params: Mapping[str, float], slots: list[tuple[int, str]] | None = None
                      ) -> list[tuple[int, float]]:
    """Postfix program of a trigger on arith's stack machine (values 1.0 = true, 0.0 = false):
    operands via :func:`~distsim.models.arith.compile_stack` (``slots`` receives the position and
    name of every folded parameter, as there), then ``CMP_CODES[op]`` (pops 2,
    pushes 1), ``LOGIC_CODES[op]`` (``not`` pops 1, the others 2; n-ary ones are chained) and
    ``OP_PUSH_BOOL`` (operand 0.0 or 1.0)."""
    prog: list[tuple[int, float]] = []

    def go(c: Condition) -> None:
        if isinstance(c, Truth):
            prog.append((OP_PUSH_BOOL, 1.0 if c.value else 0.0))
        elif isinstance(c, Compare):
            for side in (c.left, c.right):
                sub: list[tuple[int, str]] = []
                at = len(prog)
                prog.extend(compile_stack(side, params, sub)[0])
                if slots is not None:
                    slots.extend((at + pos, name) for pos, name in sub)
            prog.append((CMP_CODES[c.op], 0.0))
        else:
            go(c.args[0])
            if c.op == "not":
                prog.append((LOGIC_CODES["not"], 0.0))
            for a in c.args[1:]:
                go(a)
                prog.append((LOGIC_CODES[c.op], 0.0))

    go(cond)
    return prog

