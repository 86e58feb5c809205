"""Model file formats: ASSA-PBN ``.pbn`` (read/write), bnet and BoolNet, BNMPy/KGBN (read) for
Boolean networks; SBML and distsim's reaction text format (read/write) for reaction networks.

All formats are listed in one table, :data:`.registry.FORMATS`; :func:`.registry.load` reads any
of them (by ``format=``, extension or content). :func:`load` and :func:`detect_format` here are
its Boolean-network views (reaction networks: :mod:`.reaction_formats`). No reader evaluates its
input; all report errors as :class:`~distsim.errors.ModelError` with file and line. See
:mod:`.boolnet` for the free-input policies (``inputs=``).
"""

from __future__ import annotations

import os

from ..pbn import PBN
from . import registry
from .assa import parse_assa, read_assa, to_assa_text, write_assa
from .bnmpy import parse_bnmpy, read_bnmpy
from .boolnet import INPUT_POLICIES, parse_boolnet, read_boolnet
from .registry import FORMATS, Format

__all__ = ["load", "detect_format", "FORMATS", "Format", "INPUT_POLICIES", "read_assa", "parse_assa", "to_assa_text",
           "write_assa", "read_boolnet", "parse_boolnet", "read_bnmpy", "parse_bnmpy", "registry"]


def detect_format(path: str | os.PathLike) -> str:
    """``"assa"``, ``"boolnet"`` or ``"bnmpy"`` for ``path``, by extension or else by content."""
    return registry.detect(path, kind="boolean").name


def load(path: str | os.PathLike, *, format: str | None = None, inputs: str = "keep") -> PBN:
    """Read a PBN file. ``format``: ``"assa"``, ``"boolnet"``, ``"bnet"`` or ``"bnmpy"`` (default:
    detected). ``inputs``: free-input policy for bnet/BoolNet/BNMPy, one of ``"keep"`` (identity),
    ``"zero"``, ``"one"``, ``"random"``. A missing file raises :class:`FileNotFoundError`.
    """
    if inputs not in INPUT_POLICIES:
        raise ValueError(f"unknown free-input policy {inputs!r}; expected one of {', '.join(INPUT_POLICIES)}")
    return registry.load(path, kind="boolean", format=format, inputs=inputs)
