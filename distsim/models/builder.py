"""Build a reaction network in Python, in the spirit of rebop's ``add_reaction``.

>>> from distsim.models.builder import Builder
>>> net = (Builder("michaelis_menten")
...        .add_species("E", 120).add_species("S", 301).add_species("ES").add_species("P")
...        .add_parameter("k1", 0.001).add_parameter("k2", 0.2).add_parameter("k3", 0.1)
...        .add_reaction("E + S -> ES", "k1")
...        .add_reaction("ES -> E + S", "k2")
...        .add_reaction("ES -> E + P", "k3", name="catalysis")
...        .build())

* ``add_species(name, count=0, fixed=False)``: declares a species (order of declaration = order of
  the network's species, as in the text format) with its initial count; ``fixed`` species keep their
  count (SBML boundary species).
* ``add_parameter(name, value)``: a parameter.
* ``add_reaction(equation, rate, *, law=None, name="")``: ``equation`` as in the text format
  (``"2 A + B -> C"``, ``"0 -> A"``, ``"A <-> B"``). ``rate`` is the *stochastic* mass-action rate
  constant (propensity ``theta * prod C(x_i, r_i)``): a parameter name or a number; a reversible
  ``<->`` reaction takes two, ``(forward, backward)``. ``law="k * A / (K + A)"`` instead gives a
  general kinetic law, the propensity itself.
* ``build()`` returns the :class:`~distsim.models.reactions.ReactionNetwork`.

Each call becomes one line of distsim's reaction text format and ``build`` parses them with
:func:`~distsim.models.formats.reaction_text.parse_reactions`, so a builder gives exactly the
network (same :meth:`~distsim.models.reactions.ReactionNetwork.digest`) of the equivalent ``.rxn``
file and follows the same rules; an error names the call that caused it.
"""

from __future__ import annotations

import math
import re
from typing import Sequence

from ..errors import ModelError
from .formats.reaction_text import parse_reactions
from .reactions import ReactionNetwork

__all__ = ["Builder"]

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_SOURCE = "<builder>"


class Builder:
    """Collects species, parameters and reactions; :meth:`build` makes the network."""

    def __init__(self, name: str = ""):
        self.name = name
        self._lines: list[str] = []
        self._calls: list[str] = []

    def add_species(self, name: str, count: int = 0, *, fixed: bool = False) -> "Builder":
        call = f"add_species({name!r}, {count!r})"
        self._name(name, call)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ModelError(f"{call}: the initial count must be an integer >= 0", file=_SOURCE)
        self._add(f"species: {name}", call)
        if count:
            self._add(f"init: {name} = {count}", call)
        if fixed:
            self._add(f"fixed: {name}", call)
        return self

    def add_parameter(self, name: str, value: float) -> "Builder":
        call = f"add_parameter({name!r}, {value!r})"
        self._name(name, call)
        self._add(f"param {name} = {self._number(value, call)}", call)
        return self

    def add_reaction(self, equation: str, rate: str | float | Sequence[str | float] | None = None, *,
                     law: str | None = None, name: str = "") -> "Builder":
        call = f"add_reaction({equation!r}, {rate!r}{f', law={law!r}' if law is not None else ''})"
        if name:
            self._name(name, call)
        self._text(equation, call, "the equation")
        if ";" in equation:
            raise ModelError(f"{call}: the equation may not contain ';' (give the rate as an argument)", file=_SOURCE)
        if (rate is None) == (law is None):
            raise ModelError(f"{call}: give either a mass-action rate or law=", file=_SOURCE)
        if law is not None:
            self._text(law, call, "the law")
            rates = f"law: {law}"
        elif "<->" in equation:
            if isinstance(rate, (str, int, float)) or len(rate) != 2:  # type: ignore[arg-type]
                raise ModelError(f"{call}: a reversible reaction '<->' needs two rates (forward, backward)",
                                 file=_SOURCE)
            rates = ", ".join(self._rate(r, call) for r in rate)  # type: ignore[union-attr]
        else:
            rates = self._rate(rate, call)  # type: ignore[arg-type]
        self._add(f"{name + ': ' if name else ''}{equation} ; {rates}", call)
        return self

    def build(self) -> ReactionNetwork:
        try:
            return parse_reactions("\n".join(self._lines) + "\n", file=_SOURCE, name=self.name)
        except ModelError as e:
            where = self._calls[e.line - 1] if e.line and 0 < e.line <= len(self._calls) else "build()"
            raise ModelError(f"{where}: {e.message}", file=_SOURCE) from None

    # ---- helpers ---------------------------------------------------------------------------------

    def _add(self, line: str, call: str) -> None:
        self._lines.append(line)
        self._calls.append(call)

    @staticmethod
    def _name(name: str, call: str) -> None:
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise ModelError(f"{call}: {name!r} is not a valid name ([A-Za-z_][A-Za-z0-9_]*)", file=_SOURCE)

    @staticmethod
    def _text(text: str, call: str, what: str) -> None:
        if not isinstance(text, str) or any(c in text for c in "\n\r#"):
            raise ModelError(f"{call}: {what} must be one line of text without '#'", file=_SOURCE)

    @staticmethod
    def _number(value: float, call: str) -> str:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ModelError(f"{call}: expected a finite number, got {value!r}", file=_SOURCE)
        return repr(float(value))

    def _rate(self, rate: str | float, call: str) -> str:
        if isinstance(rate, str):
            self._name(rate, call)
            return rate
        return self._number(rate, call)
