"""BNMPy / KGBN text files: lines ``X = expression, probability``.

The probability is optional (default 1.0); lines starting with ``#`` are comments. A target on
several lines has several predictor functions (a PBN); the probabilities of a target are
normalised to sum 1 (silently, as BNMPy does). Free inputs (names used in an expression without a
line of their own) follow the ``inputs`` policy of :mod:`.boolnet` (default ``"keep"``: the input
keeps its value). Node order: targets in file order, then free inputs in order of first
appearance. The format has no perturbation syntax: perturbation is 0 and no node is fixed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ...errors import ModelError
from ..pbn import PBN
from .assa import check_line, check_name, parse_probability, read_lines
from .base import Format, first_content_line
from .boolnet import Entry, build_network, split_fields

__all__ = ["read_bnmpy", "parse_bnmpy", "FORMAT"]

_LINE = re.compile(r"[^\s&|!^(),=:#]+\s*=")


def read_bnmpy(path: str | os.PathLike, *, inputs: str = "keep") -> PBN:
    """Read a BNMPy/KGBN file. ``name`` is the file stem and ``source`` the path."""
    file, lines = read_lines(path)
    return _parse(lines, file=file, name=Path(path).stem, inputs=inputs)


def parse_bnmpy(text: str, *, file: str = "<string>", name: str = "", inputs: str = "keep") -> PBN:
    """Parse BNMPy text (``file`` is used in error messages and as ``source``)."""
    return _parse([ln.rstrip("\r") for ln in text.split("\n")], file=file, name=name, inputs=inputs)


def _parse(lines: list[str], *, file: str, name: str, inputs: str) -> PBN:
    entries: list[Entry] = []
    for lineno, raw in enumerate(lines, start=1):
        check_line(raw, file=file, line=lineno)
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        if "=" not in raw:
            raise ModelError(f"expected 'NAME = expression[, probability]', got {s!r}", file=file, line=lineno)
        eq = raw.index("=")
        target = raw[:eq].strip()
        check_name(target, file=file, line=lineno, column=raw.index(s) + 1)
        fields = split_fields(raw[eq + 1:], offset=eq + 1)
        if len(fields) > 2:
            raise ModelError("too many comma-separated fields; expected 'NAME = expression[, probability]'",
                             file=file, line=lineno, column=fields[2][1])
        prob = 1.0
        if len(fields) == 2:
            prob = parse_probability(fields[1][0], what=f"the probability of a function of {target!r}",
                                     file=file, line=lineno, column=fields[1][1])
        entries.append(Entry(target, fields[0][0], fields[0][1], prob, lineno))
    return build_network(entries, file=file, name=name, inputs=inputs)


def sniff(path: str | os.PathLike, head: bytes) -> bool:
    """A BNMPy file starts with ``NAME = ...``."""
    first = first_content_line(head)
    return first is not None and bool(_LINE.match(first[1])) and not first[1].lower().startswith("targets")


FORMAT = Format("bnmpy", "boolean", (), sniff, read_bnmpy, "'NAME = expression[, probability]' lines",
                aliases=("kgbn",), options=("inputs",))
