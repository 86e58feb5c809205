"""Reaction networks for SSA from a file: the reaction-network view of :mod:`.registry`.

By extension (``.xml``/``.sbml``: SBML; ``.rxn``: the reaction text format) or else by content
(``<?xml``/``<sbml`` first: SBML; a line with ``->``: text); ``format=`` overrides the choice:
``"sbml"`` (or ``"xml"``) or ``"text"`` (or ``"rxn"``, ``"txt"``). A missing file raises
:class:`FileNotFoundError`; a bad model raises :class:`~distsim.errors.ModelError` with file and line.
"""

from __future__ import annotations

import os
from typing import Any

from ..reactions import ReactionNetwork
from . import registry
from .reaction_text import parse_reactions, read_reactions, to_reaction_text, write_reactions
from .sbml import read_sbml

__all__ = ["load_reactions", "detect_reaction_format", "read_reactions", "parse_reactions", "to_reaction_text",
           "write_reactions", "read_sbml"]


def detect_reaction_format(path: str | os.PathLike) -> str:
    """``"sbml"`` or ``"text"`` for ``path`` (see the module docstring)."""
    return registry.detect(path, kind="reaction").name


def load_reactions(path: str | os.PathLike, *, format: str | None = None, **options: Any) -> ReactionNetwork:
    """Read a reaction network (SBML or the reaction text format) from ``path``; ``options``:
    ``reversible=`` for SBML (see :func:`~.sbml.read_sbml`)."""
    return registry.load(path, kind="reaction", format=format, **options)
