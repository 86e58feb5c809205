"""One table of model formats, Boolean and reaction networks alike, and one :func:`load`.

:func:`load` picks the format by, in order: the ``format=`` name (or alias); the file's
extension; the first format of the table whose ``sniff`` recognises the file's first bytes. With
``kind=`` (``"boolean"`` or ``"reaction"``) only formats of that kind take part. When nothing
matches, a :class:`~distsim.errors.ModelError` names the file (and the line it looked at).

Sniffing, in table order: SBML (``<?xml`` or ``<sbml`` first), the reaction text format (a line
with ``->``), SBML-qual (an SBML document with the qual namespace), MaBoSS (``node NAME {``), ASSA-PBN (a first line ``type=``, ``n=``, ``perturbation=`` or ``nodeNames``),
BNMPy (``NAME = ...``), bnet/BoolNet (``targets, factors`` or ``NAME, expr``).

**Adding a format** is one new module and one line here: the module defines its reader (and
writer) and a ``FORMAT = Format(name=..., kind=..., extensions=..., sniff=..., read=...)``
record (:class:`~.base.Format`); add ``FORMAT`` to :data:`FORMATS` below, before any format
whose sniffer would also claim its files.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...errors import ModelError
from . import antimony, assa, bnmpy, boolnet, maboss, reaction_text, sbml_qual
from .base import KINDS, Format, first_content_line
from .sbml import read_sbml

HEAD_BYTES = 64 * 1024  # what sniffers see


def _sniff_sbml(path: str | os.PathLike, head: bytes) -> bool:
    head = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    return head.startswith(b"<?xml") or head.startswith(b"<sbml")


SBML = Format("sbml", "reaction", (".xml", ".sbml"), _sniff_sbml, read_sbml, "an SBML document ('<?xml' or '<sbml')",
              aliases=("xml",), options=("reversible", "system_size", "rounding", "mass_action", "fast", "guard"))

FORMATS: tuple[Format, ...] = (
    SBML,
    antimony.FORMAT,
    reaction_text.FORMAT,
    sbml_qual.FORMAT,
    maboss.FORMAT,
    assa.FORMAT,
    bnmpy.FORMAT,
    boolnet.FORMAT,
)


def formats(kind: str | None = None) -> tuple[Format, ...]:
    """The formats of ``kind`` (all formats for None), in table order."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown model kind {kind!r}; expected one of {', '.join(KINDS)}")
    return tuple(f for f in FORMATS if kind is None or f.kind == kind)


def _noun(kind: str | None) -> str:
    return f"{KINDS[kind]} " if kind else "model "


def get(name: str, *, kind: str | None = None, file: str | None = None) -> Format:
    """The format called ``name`` (or an alias, any case) among the formats of ``kind``."""
    table = formats(kind)
    low = name.lower() if isinstance(name, str) else name
    for f in table:
        if low == f.name or low in f.aliases:
            return f
    known = ", ".join(n for f in table for n in (f.name, *f.aliases))
    raise ModelError(f"unknown {_noun(kind)}format {name!r}; expected one of {known}", file=file)


def _head(path: str | os.PathLike) -> bytes:
    file = os.fspath(path)
    try:
        with open(file, "rb") as fh:
            return fh.read(HEAD_BYTES)
    except (FileNotFoundError, IsADirectoryError):
        raise
    except OSError as e:
        raise ModelError(f"cannot read the file ({e.strerror or e})", file=file) from None


def detect(path: str | os.PathLike, *, kind: str | None = None) -> Format:
    """The format of ``path``: by extension, else by sniffing (see the module docstring)."""
    table = formats(kind)
    ext = Path(path).suffix.lower()
    for f in table:
        if ext in f.extensions:
            return f
    head = _head(path)
    for f in table:
        if f.sniff(path, head):
            return f
    first = first_content_line(head)
    if first is None:
        raise ModelError("the file is empty (no line that is not blank or a comment)", file=os.fspath(path), line=1)
    expected = "; ".join(f"{f.name}: {f.looks_like}" for f in table)
    raise ModelError(f"cannot tell the {_noun(kind)}format from this line (expected {expected}); pass format=",
                     file=os.fspath(path), line=first[0])


def load(path: str | os.PathLike, *, kind: str | None = None, format: str | None = None, **options: Any) -> Any:
    """Read a model file: a :class:`~distsim.models.pbn.PBN` (kind ``"boolean"``) or a
    :class:`~distsim.models.reactions.ReactionNetwork` (kind ``"reaction"``).

    ``options`` go to the reader (``inputs=`` for bnet/BoolNet/BNMPy, ``reversible=``, ``system_size=``, ``rounding=`` for SBML);
    an option that another format of the kind takes is ignored by a reader that does not (ASSA
    files have no free inputs). A missing file raises :class:`FileNotFoundError`; everything
    wrong with the file raises :class:`~distsim.errors.ModelError`.
    """
    p = Path(path)
    if not p.is_file():
        if not p.exists():
            raise FileNotFoundError(f"model file not found: {os.fspath(path)}")
        raise IsADirectoryError(f"not a file: {os.fspath(path)}")
    known = {o for f in formats(kind) for o in f.options}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"unknown option {unknown[0]!r} for reading a {_noun(kind)}file; options: "
                        f"{', '.join(sorted(known)) or 'none'}")
    fmt = get(format, kind=kind, file=os.fspath(path)) if format is not None else detect(path, kind=kind)
    return fmt.read(path, **{k: v for k, v in options.items() if k in fmt.options})


def write(model: Any, path: str | os.PathLike, *, format: str | None = None) -> None:
    """Write ``model`` (a PBN or a reaction network) in ``format`` (default: by extension)."""
    from ..pbn import PBN
    from ..reactions import ReactionNetwork

    if not isinstance(model, (PBN, ReactionNetwork)):
        raise TypeError(f"can only write a PBN or a ReactionNetwork, got {type(model).__name__}")
    kind = "boolean" if isinstance(model, PBN) else "reaction"
    writable = [f for f in formats(kind) if f.write is not None]
    if format is not None:
        fmt = get(format, kind=kind)
    else:
        ext = Path(path).suffix.lower()
        fmt = next((f for f in formats(kind) if ext in f.extensions), None)
        if fmt is None:
            raise ValueError(f"{os.fspath(path)}: cannot tell the format to write from the extension {ext!r}; "
                             f"extensions: {', '.join(e for f in writable for e in f.extensions)} (or pass format=)")
    if fmt.write is None:
        raise ValueError(f"distsim reads {fmt.name} files but does not write them; writable {_noun(kind)}formats: "
                         f"{', '.join(f.name for f in writable)}")
    fmt.write(model, path)


__all__ = ["FORMATS", "Format", "HEAD_BYTES", "SBML", "detect", "formats", "get", "load", "write"]
