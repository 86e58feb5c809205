"""Load a reaction network for SSA from a file, choosing the reader by extension or content.

* ``.xml`` / ``.sbml`` -> SBML (:func:`~distsim.models.formats.sbml.read_sbml`);
* anything else (``.rxn``, ``.txt``, no extension, ...) -> SBML if the file starts (after a BOM
  and white space) with ``<?xml`` or ``<sbml``, else the reaction text format
  (:func:`~distsim.models.formats.reaction_text.read_reactions`).

``format=`` overrides the choice: ``"sbml"`` (or ``"xml"``) or ``"text"`` (or ``"rxn"``, ``"txt"``).
A missing file raises :class:`FileNotFoundError`; a bad model raises
:class:`~distsim.models.errors.ModelError` with file and line.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..reactions import ReactionNetwork
from .reaction_text import parse_reactions, read_reactions, to_reaction_text, write_reactions
from .sbml import read_sbml

__all__ = ["load_reactions", "detect_reaction_format", "REACTION_FORMATS", "read_reactions", "parse_reactions",
           "to_reaction_text", "write_reactions", "read_sbml"]

REACTION_FORMATS = {"sbml": "sbml", "xml": "sbml", "text": "text", "rxn": "text", "txt": "text"}
_SBML_EXTENSIONS = {".xml", ".sbml"}
_SNIFF_BYTES = 512


def detect_reaction_format(path: str | os.PathLike) -> str:
    """``"sbml"`` or ``"text"`` for ``path`` (see the module docstring)."""
    if Path(path).suffix.lower() in _SBML_EXTENSIONS:
        return "sbml"
    with open(path, "rb") as fh:
        head = fh.read(_SNIFF_BYTES)
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    head = head.lstrip()
    if head.startswith(b"<?xml") or head.startswith(b"<sbml"):
        return "sbml"
    return "text"


def load_reactions(path: str | os.PathLike, *, format: str | None = None) -> ReactionNetwork:
    """Read a reaction network (SBML or the reaction text format) from ``path``."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"model file not found: {os.fspath(path)}")
    if not p.is_file():
        raise IsADirectoryError(f"not a file: {os.fspath(path)}")
    if format is None:
        kind = detect_reaction_format(p)
    else:
        try:
            kind = REACTION_FORMATS[format.lower()]
        except KeyError:
            raise ValueError(f"unknown reaction-network format {format!r}; expected one of "
                             f"{', '.join(REACTION_FORMATS)}") from None
    if kind == "sbml":
        return read_sbml(path)
    return read_reactions(path)
