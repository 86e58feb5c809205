"""One entry point for every way a user brings a reaction network (:func:`load_network`).

* a :class:`ReactionNetwork` -- returned as it is;
* a ``gillespy2.Model`` -- :func:`distsim.models.gillespy2.from_gillespy2`;
* model **text** (a ``str`` that starts with ``<`` or contains a line break): SBML when it starts
  with ``<``, else ``format=`` says which: ``"rxn"`` (distsim's text format) or ``"antimony"``;
* a **path**: ``.ant``/``.antimony`` (or ``format="antimony"``) -> antimony; otherwise SBML or the
  text format, by extension or content as in
  :func:`~distsim.models.formats.reaction_formats.detect_reaction_format`.

``reversible`` is the SBML reversible-reaction policy (``"split"``, ``"forward"``, ``"error"``; see
:mod:`distsim.models.formats.sbml`); it also applies to antimony, which goes through SBML.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .formats.antimony import parse_antimony, read_antimony
from .formats.reaction_formats import REACTION_FORMATS, detect_reaction_format
from .formats.reaction_text import parse_reactions, read_reactions
from .formats.sbml import read_sbml, read_sbml_string
from .gillespy2 import from_gillespy2, is_gillespy2_model
from .reactions import ReactionNetwork

__all__ = ["load_network", "SOURCE_FORMATS"]

SOURCE_FORMATS = {**REACTION_FORMATS, "antimony": "antimony", "ant": "antimony"}
_ANTIMONY_EXTENSIONS = {".ant", ".antimony"}


def load_network(source: Any, *, format: str | None = None, reversible: str = "split") -> ReactionNetwork:
    """A :class:`ReactionNetwork` from a network, a GillesPy2 model, model text or a path (module docstring)."""
    if isinstance(source, ReactionNetwork):
        return source
    if is_gillespy2_model(source):
        return from_gillespy2(source)
    kind = None
    if format is not None:
        try:
            kind = SOURCE_FORMATS[format.lower()]
        except KeyError:
            raise ValueError(f"unknown reaction-network format {format!r}; expected one of "
                             f"{', '.join(SOURCE_FORMATS)}") from None
    if isinstance(source, str) and (source.lstrip("\ufeff \t\r\n").startswith("<") or "\n" in source):
        if source.lstrip("\ufeff \t\r\n").startswith("<") and kind in (None, "sbml"):
            return read_sbml_string(source, reversible=reversible)
        if kind == "text":
            return parse_reactions(source)
        if kind == "antimony":
            return parse_antimony(source, reversible=reversible)
        raise ValueError("model text that is not SBML needs format='rxn' or format='antimony'")
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"expected a path, model text, a ReactionNetwork or a gillespy2.Model, got "
                        f"{type(source).__name__}")
    p = Path(source)
    if not p.exists():
        raise FileNotFoundError(f"model file not found: {os.fspath(source)}")
    if not p.is_file():
        raise IsADirectoryError(f"not a file: {os.fspath(source)}")
    if kind is None:
        kind = "antimony" if p.suffix.lower() in _ANTIMONY_EXTENSIONS else detect_reaction_format(p)
    if kind == "antimony":
        return read_antimony(p, reversible=reversible)
    if kind == "sbml":
        return read_sbml(p, reversible=reversible)
    return read_reactions(p)
