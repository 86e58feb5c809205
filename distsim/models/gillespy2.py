"""Convert a ``gillespy2.Model`` held in memory into a reaction network (GillesPy2 is optional:
``pip install 'distsim[gillespy2]'``; this module never imports it).

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
species are fixed. Not supported (clear error): events, assignment and rate rules, function
definitions, non-integer or negative initial populations.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .arith import Node, Param, Species, evaluate, params_of, parse_arith
from ..errors import ModelError
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
    used = {r.rate for r in reactions if isinstance(r.rate, str) and r.mass_action}
    for r in reactions:
        if r.law is not None:
            used.update(params_of(r.law))
    values = {k: v for k, v in params.items() if k in used}
    if _VOL in used:
        values[_VOL] = volume
    return ReactionNetwork.create(species, initial, reactions, values, fixed=fixed, name=model.name, source=src)


def _check_supported(model: Any, err) -> None:
    """Refuse the model parts distsim cannot simulate: events, rules and function definitions."""
    for what, attr in (("events", "listOfEvents"), ("assignment rules", "listOfAssignmentRules"),
                       ("rate rules", "listOfRateRules"), ("function definitions", "listOfFunctionDefinitions")):
        items = getattr(model, attr, None) or {}
        if items:
            raise err(f"{what} are not supported by from_gillespy2 ({', '.join(map(repr, items))})")


def _species(model: Any, err) -> tuple[list[int], list[int]]:
    """Initial populations (whole numbers >= 0) and the indices of the fixed species."""
    initial, fixed = [], []
    for i, (name, s) in enumerate(model.listOfSpecies.items()):
        v = float(s.initial_value)
        if not (np.isfinite(v) and v >= 0 and v == round(v)):
            raise err(f"species {name!r}: initial population {s.initial_value!r} is not a whole number >= 0")
        initial.append(int(round(v)))
        if getattr(s, "boundary_condition", False) or getattr(s, "constant", False):
            fixed.append(i)
    return initial, fixed


def _reactions(model: Any, index: dict[str, int], params: dict[str, float], volume: float, src: str,
               err) -> list[Reaction]:
    """Each reaction with its parsed propensity: mass action where it has that shape, else a general law."""

    def resolve(name: str) -> Node:
        if name in index:
            return Species(index[name])
        if name in params or name == _VOL:
            return Param(name)
        raise KeyError(name)

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
