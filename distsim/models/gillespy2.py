"""Convert a ``gillespy2.Model`` held in memory into a reaction network (GillesPy2 is optional:
``pip install 'distsim-bio[gillespy2]'``; this module never imports it).

Each GillesPy2 reaction's ``propensity_function`` -- for mass-action reactions the one GillesPy2
generates itself, e.g. ``k1 * E * S / vol`` or ``k * X * (X - 1) / vol`` for ``2X`` -- is parsed with
:func:`distsim.models.arith.parse_arith` (never evaluated as Python), with ``vol`` the model's
volume, and is the propensity, exactly as GillesPy2's SSA solvers use it. It becomes a distsim
mass-action reaction when it is exactly ``theta * prod C(x_i, r_i)`` with theta a parameter
(:mod:`distsim.models.mass_action`; with ``volume = 1`` this holds for GillesPy2's mass action of
order <= 1 and of two different species), else a general law with the same propensity
(GillesPy2's ``2X`` mass action ``k X (X-1)`` is ``2k C(X, 2)``, so it stays a general law).
Parameter expressions are parsed the same way (they may use earlier parameters).

Species keep GillesPy2's order (GillesPy2 sorts them by name); boundary-condition and constant
species are fixed.

**Events and assignment rules** become the network's SBML-style events and rules
(:mod:`distsim.models.events`: same semantics, simulated exactly on CPU and GPU). Their expression
strings are Python syntax, as GillesPy2 evaluates them: they are parsed with :func:`ast.parse` (never
evaluated) into conditions -- comparisons (chained ones too), ``and``/``or``/``not``, ``&``/``|``,
``True``/``False`` -- over arithmetic read by :func:`~distsim.models.arith.parse_arith`; ``t`` is the
time. A trigger's ``value`` and ``persistent``, the event's ``priority`` and
``use_values_from_trigger_time`` are kept; a value assigned to a species is its count.

Not supported (clear error): event delays, rate rules, function definitions, non-integer or negative
initial populations.
"""

from __future__ import annotations

import ast
from typing import Any, Callable

import numpy as np

from .arith import Node, Param, Species, Time, evaluate, params_of, parse_arith
from ..errors import ModelError
from .events import (Assignment, AssignmentRule, Compare, Condition, Event, Logic, RuleCycle, Truth,
                     apply_rules_at_start, condition_nodes, reads, rule_order)
from .mass_action import mass_action_shape
from .reactions import Reaction, ReactionNetwork

__all__ = ["from_gillespy2", "is_gillespy2_model"]

_VOL = "vol"


def is_gillespy2_model(obj: Any) -> bool:
    return any(c.__module__.startswith("gillespy2") and c.__name__ == "Model" for c in type(obj).__mro__)


def from_gillespy2(model: Any) -> ReactionNetwork:
    """The :class:`ReactionNetwork` of a ``gillespy2.Model`` (see the module docstring)."""
    if not is_gillespy2_model(model):
        raise TypeError(f"expected a gillespy2.Model, got {type(model).__name__}")
    src = f"<gillespy2 model {model.name!r}>"

    def err(msg: str) -> ModelError:
        return ModelError(msg, file=src)

    _check_supported(model, err)
    species = list(model.listOfSpecies)
    index = {s: i for i, s in enumerate(species)}
    initial, fixed = _species(model, err)
    volume = float(model.volume)
    if not (np.isfinite(volume) and volume > 0):
        raise err(f"the model volume must be finite and > 0, got {model.volume!r}")
    params = _parameters(model, index, err)
    reactions = _reactions(model, index, params, volume, src, err)
    expr = _Expressions(index, params, src, err)
    rules = expr.rules(model)
    events = [expr.event(name, e) for name, e in (getattr(model, "listOfEvents", None) or {}).items()]
    used = {r.rate for r in reactions if isinstance(r.rate, str) and r.mass_action}
    for r in reactions:
        if r.law is not None:
            used.update(params_of(r.law))
    nodes = [r.expr for r in rules] + [n for e in events for n in _event_nodes(e)]
    used |= reads(nodes)[1] | {a.target for e in events for a in e.assignments if a.species < 0}
    used |= {r.target for r in rules if r.species < 0}
    values = {k: v for k, v in params.items() if k in used}
    if _VOL in used:
        values[_VOL] = volume
    initial = apply_rules_at_start(rules, initial, values, lambda v, what: _count(v, what, err), err)
    return ReactionNetwork.create(species, initial, reactions, values, fixed=fixed, name=model.name, source=src,
                                  events=events, rules=rules)


def _check_supported(model: Any, err) -> None:
    """Refuse the model parts distsim cannot simulate: rate rules and function definitions."""
    for what, attr in (("rate rules", "listOfRateRules"), ("function definitions", "listOfFunctionDefinitions")):
        items = getattr(model, attr, None) or {}
        if items:
            raise err(f"{what} are not supported by from_gillespy2 ({', '.join(map(repr, items))})")


def _resolver(index: dict[str, int], params: dict[str, float], time: bool) -> Callable[[str], Node]:
    """Names in GillesPy2 expressions: species counts, parameters, ``vol`` and (``time``) ``t``."""

    def resolve(name: str) -> Node:
        if name in index:
            return Species(index[name])
        if name in params or name == _VOL:
            return Param(name)
        if time and name == "t":
            return Time()
        raise KeyError(name)

    return resolve


def _event_nodes(e: Event) -> list[Node]:
    return list(condition_nodes(e.trigger)) + [a.expr for a in e.assignments] + ([e.priority] if e.priority else [])


def _count(v: float, what: str, err) -> int:
    if not (np.isfinite(v) and v >= 0 and v == round(v)):
        raise err(f"{what} {v!r} is not a whole number >= 0")
    return int(v)


MAX_EXPRESSION_CHARS = 10_000
_COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_ARITH_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.USub, ast.UAdd)


class _Expressions:
    """GillesPy2's expression strings (Python syntax) as distsim conditions and arith trees."""

    def __init__(self, index: dict[str, int], params: dict[str, float], src: str, err: Callable[[str], ModelError]):
        self.index, self.params, self.src, self.err = index, params, src, err
        self.resolve = _resolver(index, params, time=True)

    def parse(self, text: Any, what: str) -> ast.expr:
        text = str(text).strip()
        if len(text) > MAX_EXPRESSION_CHARS:
            raise self.err(f"{what}: expression longer than {MAX_EXPRESSION_CHARS} characters")
        try:
            return ast.parse(text, mode="eval").body
        except SyntaxError as e:
            raise self.err(f"{what}: {text!r} is not an expression ({e.msg}, column {e.offset})") from None
        except (RecursionError, MemoryError, ValueError):
            raise self.err(f"{what}: expression {text[:60]!r}... is nested too deeply") from None

    def arith(self, node: ast.expr, what: str) -> Node:
        for n in ast.walk(node):
            ok = (isinstance(n, (ast.BinOp, ast.UnaryOp)) and isinstance(n.op, _ARITH_OPS)) or isinstance(
                n, (ast.Name, ast.expr_context, ast.operator, ast.unaryop)) or (
                isinstance(n, ast.Constant) and type(n.value) in (int, float)) or (
                isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not n.keywords)
            if not ok:
                raise self.err(f"{what}: {ast.unparse(n)!r} is not arithmetic distsim reads (numbers, species, "
                               "parameters, t, + - * / **, function calls)")
        text = ast.unparse(node)
        try:
            return parse_arith(text, self.resolve, file=self.src)
        except ModelError as e:
            raise self.err(f"{what}: {text!r}: {e.message}") from None

    def condition(self, node: ast.expr, what: str) -> Condition:
        if isinstance(node, ast.BoolOp):
            return Logic("and" if isinstance(node.op, ast.And) else "or",
                         tuple(self.condition(v, what) for v in node.values))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return Logic("not", (self.condition(node.operand, what),))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
            return Logic("and" if isinstance(node.op, ast.BitAnd) else "or",
                         (self.condition(node.left, what), self.condition(node.right, what)))
        if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
            sides = [self.arith(x, what) for x in [node.left, *node.comparators]]  # a < b < c: a < b and b < c
            parts = tuple(Compare(_COMPARE[type(op)], a, b) for op, a, b in zip(node.ops, sides, sides[1:]))
            return parts[0] if len(parts) == 1 else Logic("and", parts)
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return Truth(node.value)
        raise self.err(f"{what}: {ast.unparse(node)!r} is not a condition (comparisons joined by and/or/not, "
                       "True or False)")

    def target(self, variable: Any, what: str) -> tuple[str, int]:
        name = variable if isinstance(variable, str) else getattr(variable, "name", None)
        if name in self.index:
            return name, self.index[name]
        if name in self.params:
            return name, -1
        raise self.err(f"{what}: {name!r} is not a species or parameter of the model")

    def event(self, name: str, e: Any) -> Event:
        what = f"event {name!r}"
        if getattr(e, "delay", None) is not None:
            raise self.err(f"{what}: event delays are not supported")
        trig = e.trigger
        cond = self.condition(self.parse(trig.expression, f"{what} trigger"), f"{what} trigger")
        assignments = []
        for a in e.assignments:
            target, sp = self.target(a.variable, f"{what} assignment")
            label = f"{what} assignment to {target!r}"
            assignments.append(Assignment(target, sp, self.arith(self.parse(a.expression, label), label)))
        priority = None
        if getattr(e, "priority", None) is not None and str(e.priority).strip():
            priority = self.arith(self.parse(e.priority, f"{what} priority"), f"{what} priority")
        return Event(name, cond, tuple(assignments), initial_value=bool(getattr(trig, "value", False)),
                     persistent=bool(getattr(trig, "persistent", False)),
                     use_values_from_trigger_time=bool(getattr(e, "use_values_from_trigger_time", False)),
                     priority=priority)

    def rules(self, model: Any) -> list[AssignmentRule]:
        """The assignment rules, a rule after the rules whose targets it reads."""
        out = []
        for name, r in (getattr(model, "listOfAssignmentRules", None) or {}).items():
            target, sp = self.target(r.variable, f"assignment rule {name!r}")
            label = f"assignment rule {name!r} (for {target!r})"
            out.append(AssignmentRule(name, target, sp, self.arith(self.parse(r.formula, label), label)))
        try:
            order = rule_order(out, list(self.index))
        except RuleCycle as c:
            raise self.err(f"assignment rules depend on each other in a cycle (rule {out[c.index].id!r})") from None
        return [out[k] for k in order]


def _species(model: Any, err) -> tuple[list[int], list[int]]:
    """Initial populations (whole numbers >= 0) and the indices of the fixed species."""
    initial, fixed = [], []
    for i, (name, s) in enumerate(model.listOfSpecies.items()):
        initial.append(_count(float(s.initial_value), f"species {name!r}: initial population", err))
        if getattr(s, "boundary_condition", False) or getattr(s, "constant", False):
            fixed.append(i)
    return initial, fixed


def _reactions(model: Any, index: dict[str, int], params: dict[str, float], volume: float, src: str,
               err) -> list[Reaction]:
    """Each reaction with its parsed propensity: mass action where it has that shape, else a general law."""
    resolve = _resolver(index, params, time=False)
    reactions = []
    for rname, r in model.listOfReactions.items():
        reac = _side(r.reactants, index, rname, err)
        prod = _side(r.products, index, rname, err)
        text = r.propensity_function
        if not isinstance(text, str) or not text.strip():
            raise err(f"reaction {rname!r} has no propensity function")
        try:
            law = parse_arith(text, resolve, file=src)
        except ModelError as e:
            raise err(f"reaction {rname!r}: propensity {text!r}: {e.message}") from None
        shape = mass_action_shape(law, {_VOL: volume}, set(params))
        if shape is not None and shape.orders == dict(reac) and (shape.param is None or shape.is_unit()):
            rate: str | float = shape.factor if shape.param is None else shape.param
            reactions.append(Reaction(reac, prod, rate=rate, name=rname))
        else:
            reactions.append(Reaction(reac, prod, law=law, name=rname))
    return reactions


def _side(side: dict, index: dict[str, int], rname: str, err) -> tuple[tuple[int, int], ...]:
    out: dict[int, int] = {}
    for sp, n in side.items():
        name = sp if isinstance(sp, str) else sp.name
        if name not in index:
            raise err(f"reaction {rname!r}: unknown species {name!r}")
        if isinstance(n, bool) or float(n) != int(n) or int(n) <= 0:
            raise err(f"reaction {rname!r}: stoichiometry of {name!r} must be a positive integer, got {n!r}")
        out[index[name]] = out.get(index[name], 0) + int(n)
    return tuple(out.items())


def _parameters(model: Any, index: dict[str, int], err) -> dict[str, float]:
    """Parameter values from their expressions (parsed; an expression may use other parameters)."""
    pending = {name: str(p.expression) for name, p in model.listOfParameters.items()}
    values: dict[str, float] = {}
    while pending:
        progress = False
        for name, text in list(pending.items()):
            try:
                node = parse_arith(text, lambda n: Param(n) if n in values or n in pending else _unknown(n))
            except ModelError as e:
                raise err(f"parameter {name!r}: expression {text!r}: {e.message}") from None
            if any(p in pending for p in params_of(node)):
                continue
            v = float(evaluate(node, np.zeros((1, max(len(index), 1))), values)[0])
            if not np.isfinite(v):
                raise err(f"parameter {name!r}: expression {text!r} is not finite")
            values[name] = v
            del pending[name]
            progress = True
        if not progress:
            raise err(f"parameters depend on each other in a cycle: {', '.join(map(repr, pending))}")
    return values


def _unknown(name: str) -> Node:
    raise KeyError(name)
