"""ASSA-PBN ``.pbn`` files: reader and writer.

Syntax (ASSA-PBN's own example file, as read by BANG)::

    // comments start with // (whole line or after the content); blank lines are ignored
    type=synchronous          // or rog | rmg | rmgrm | rmgro | rmgrorm | aro (accepted, not stored)
    n=3                       // number of nodes; must match the names listed
    perturbation=0.0          // per-node flip probability, in [0, 1); optional, default 0
    nodeNames                 // one name per line; the order is the node index
    x0
    ...
    endNodeNames
    node x0                   // one block per node
    1.0 : x0&x1               // <selection probability> : <Boolean expression>
    endNode
    npNode                    // optional: nodes that are never perturbed
    x2
    endNpNode

A name may not start with a digit nor contain white space, ``& ! | ^ = : ( ) , [ ]``, and may not
be ``true``/``false``. Probabilities must be positive; those of a node are normalised to sum 1.
The reader never evaluates its input: expressions go through :func:`parse_expression`.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from ...errors import ModelError, read_text
from ..boolean import Expr, parse_expression, to_text
from ..pbn import PBN, Predictor
from .base import Format, first_content_line

__all__ = ["read_assa", "parse_assa", "to_assa_text", "write_assa", "check_name", "read_lines",
           "parse_probability", "TYPES", "FORMAT"]

TYPES = frozenset({"synchronous", "rog", "rmg", "rmgrm", "rmgro", "rmgrorm", "aro"})
_BAD_NAME_CHARS = re.compile(r"[\s&!|^=:(),\[\]]")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")  # linear time: no nested repeats
_START = re.compile(r"(type|n|perturbation)\s*=|nodeNames\s*$")


# --------------------------------------------------------------------------------------------
# helpers shared by the readers


def read_lines(path: str | os.PathLike) -> tuple[str, list[str]]:
    """Read ``path`` as UTF-8 text; return ``(path string, lines)`` (line ``k`` is ``lines[k-1]``).

    A missing file raises :class:`FileNotFoundError`; bytes that are not UTF-8 raise
    :class:`ModelError` naming the line.
    """
    file = str(path)
    return file, [ln.rstrip("\r") for ln in read_text(file).split("\n")]


def check_name(name: str, *, file: str | None, line: int | None, column: int | None = None) -> None:
    """Raise :class:`ModelError` unless ``name`` is a valid node name."""
    if not name:
        raise ModelError("empty node name", file=file, line=line, column=column)
    if name[0].isdigit():
        raise ModelError(f"node names cannot start with a digit: {name!r}", file=file, line=line, column=column)
    m = _BAD_NAME_CHARS.search(name)
    if m:
        raise ModelError(f"node name {name!r} contains the character {m.group()!r}, which is not allowed "
                         "(not allowed: white space and & ! | ^ = : ( ) , [ ])", file=file, line=line, column=column)
    if name.lower() in ("true", "false"):
        raise ModelError(f"{name!r} is a constant and cannot be a node name", file=file, line=line, column=column)


def parse_probability(text: str, *, what: str, file: str | None, line: int, column: int | None = None) -> float:
    """Parse a positive, finite probability (``what`` names it in errors)."""
    t = text.strip()
    if not _NUMBER.fullmatch(t):
        raise ModelError(f"{what} must be a positive number, got {t!r}", file=file, line=line, column=column)
    p = float(t)
    if math.isinf(p):
        raise ModelError(f"{what} must be a finite positive number, got {t!r}", file=file, line=line, column=column)
    if not p > 0:
        raise ModelError(f"{what} must be a positive number (0 is not allowed), got {t!r}",
                         file=file, line=line, column=column)
    return p


# --------------------------------------------------------------------------------------------
# reader


def read_assa(path: str | os.PathLike) -> PBN:
    """Read an ASSA-PBN ``.pbn`` file. ``name`` is the file stem and ``source`` the path."""
    file, lines = read_lines(path)
    return _parse(lines, file=file, name=Path(path).stem)


def parse_assa(text: str, *, file: str = "<string>", name: str = "") -> PBN:
    """Parse ASSA-PBN text (``file`` is used in error messages and as ``source``)."""
    return _parse([ln.rstrip("\r") for ln in text.split("\n")], file=file, name=name)


def _parse(lines: list[str], *, file: str, name: str) -> PBN:
    def err(msg: str, line: int, column: int | None = None) -> ModelError:
        return ModelError(msg, file=file, line=line, column=column)

    header: dict[str, tuple[str, int]] = {}  # key -> (value, line)
    names: list[str] = []
    name_line: dict[str, int] = {}
    names_done = False
    blocks: dict[str, list[tuple[Expr, float]]] = {}
    block_line: dict[str, int] = {}
    fixed: set[str] = set()
    state = "top"  # top | names | node | np
    current = ""
    opened = 0

    name_line_index: dict[str, int] = {}  # filled at endNodeNames

    def resolve(n: str) -> int:
        return name_line_index[n]

    last = 0
    for lineno, raw in enumerate(lines, start=1):
        cut = raw.find("//")
        content = raw if cut < 0 else raw[:cut]
        s = content.strip()
        if not s:
            continue
        last = lineno
        if state == "names":
            if s == "endNodeNames":
                state, names_done = "top", True
                name_line_index = {n: i for i, n in enumerate(names)}
                continue
            check_name(s, file=file, line=lineno, column=content.index(s) + 1)
            if s in name_line:
                raise err(f"duplicate node name {s!r} (first listed at line {name_line[s]})", lineno)
            names.append(s)
            name_line[s] = lineno
            continue
        if state == "node":
            if s == "endNode":
                if not blocks[current]:
                    raise err(f"node {current!r} has no function (a node block needs at least one "
                              "'<probability> : <expression>' line)", lineno)
                state = "top"
                continue
            if ":" not in s:
                if s.split()[0] in ("node", "npNode", "nodeNames", "endNodeNames", "endNpNode"):
                    raise err(f"missing endNode: the block of node {current!r} opened at line {opened} "
                              "is not closed", lineno)
                raise err(f"expected '<probability> : <expression>' or endNode in the block of node "
                          f"{current!r}, got {s!r}", lineno)
            colon = content.index(":")
            start = content.index(s)
            prob = parse_probability(content[:colon], what=f"the selection probability of a function of "
                                     f"node {current!r}", file=file, line=lineno, column=start + 1)
            expr_text = content[colon + 1:]
            col = colon + 2 + (len(expr_text) - len(expr_text.lstrip()))
            expr = parse_expression(expr_text.strip(), resolve, file=file, line=lineno, column=col)
            blocks[current].append((expr, prob))
            continue
        if state == "np":
            if s == "endNpNode":
                state = "top"
                continue
            if s not in name_line_index:
                raise err(f"npNode lists {s!r}, which is not a node (not in nodeNames)", lineno,
                          content.index(s) + 1)
            fixed.add(s)
            continue
        # top level
        if "=" in s:
            key, _, value = (t.strip() for t in s.partition("="))
            if key not in ("type", "n", "perturbation"):
                raise err(f"unknown keyword {key!r} (expected type=, n= or perturbation=)", lineno)
            if key in header:
                raise err(f"{key}= is given twice (first at line {header[key][1]})", lineno)
            header[key] = (value, lineno)
            if key == "type" and value not in TYPES:
                raise err(f"unknown type {value!r}; expected one of {', '.join(sorted(TYPES))}", lineno)
            if key == "n" and not re.fullmatch(r"\d+", value):
                raise err(f"n must be a non-negative integer, got {value!r}", lineno)
            if key == "perturbation":
                ok = bool(_NUMBER.fullmatch(value)) and 0.0 <= float(value) < 1.0
                if not ok:
                    raise err(f"perturbation must be a number in [0, 1), got {value!r}", lineno)
            continue
        words = s.split()
        if s == "nodeNames":
            if names_done:
                raise err("nodeNames is given twice", lineno)
            state = "names"
        elif words[0] == "node" and len(words) == 2:
            node = words[1]
            if not names_done:
                raise err("a node block comes before the nodeNames ... endNodeNames list", lineno)
            if node not in name_line_index:
                raise err(f"node block for {node!r}, which is not in nodeNames", lineno)
            if node in blocks:
                raise err(f"duplicate node block for {node!r} (first at line {block_line[node]})", lineno)
            blocks[node], block_line[node] = [], lineno
            state, current, opened = "node", node, lineno
        elif s == "npNode":
            if not names_done:
                raise err("npNode comes before the nodeNames ... endNodeNames list", lineno)
            state = "np"
        elif s == "endNode":
            raise err("endNode without a matching 'node NAME' line", lineno)
        else:
            raise err(f"unknown keyword or unexpected line {s!r}", lineno)

    end = max(last, 1)
    if state == "node":
        raise err(f"missing endNode: the block of node {current!r} opened at line {opened} is not closed", end)
    if state == "names":
        raise err("missing endNodeNames at the end of the file", end)
    if state == "np":
        raise err("missing endNpNode at the end of the file", end)
    if not names_done:
        raise err("no nodeNames ... endNodeNames list", end)
    if "n" not in header:
        raise err("missing n= (the number of nodes)", end)
    n_decl, n_line = int(header["n"][0]), header["n"][1]
    if n_decl != len(names):
        raise err(f"n={n_decl} but nodeNames lists {len(names)} names", n_line)
    for node in names:
        if node not in blocks:
            raise err(f"node {node!r} has no 'node {node}' block with its functions", name_line[node])
    perturbation = float(header["perturbation"][0]) if "perturbation" in header else 0.0
    preds = [[Predictor(e, p) for e, p in blocks[node]] for node in names]
    return PBN.create(names, preds, perturbation=perturbation, fixed=sorted(name_line_index[f] for f in fixed),
                      name=name, source=file)


# --------------------------------------------------------------------------------------------
# writer


def to_assa_text(pbn: PBN) -> str:
    """Render an independent PBN as ASSA-PBN text (probabilities and p written with ``repr``).

    Raises :class:`ValueError` for a dependent PBN (ASSA-PBN has no syntax for contexts) or a node
    name that ASSA-PBN does not allow.
    """
    if pbn.contexts is not None:
        raise ValueError("a dependent PBN (one with contexts) cannot be written in ASSA-PBN format, "
                         "which only describes independent PBNs")
    for nm in pbn.nodes:
        try:
            check_name(nm, file=None, line=None)
        except ModelError as e:
            raise ValueError(f"cannot write node name {nm!r} in ASSA-PBN format: {e.message}") from None
    out = [f"// {pbn.name or 'network'}: written by distsim", "type=synchronous", f"n={pbn.n}",
           f"perturbation={float(pbn.perturbation)!r}", "nodeNames", *pbn.nodes, "endNodeNames"]
    for nm, plist in zip(pbn.nodes, pbn.predictors):
        out.append(f"node {nm}")
        out.extend(f"{float(p.probability)!r} : {to_text(p.expr, pbn.nodes)}" for p in plist)
        out.append("endNode")
    if pbn.fixed:
        out += ["npNode", *(pbn.nodes[i] for i in sorted(pbn.fixed)), "endNpNode"]
    return "\n".join(out) + "\n"


def write_assa(pbn: PBN, path: str | os.PathLike) -> None:
    """Write ``pbn`` to ``path`` in ASSA-PBN ``.pbn`` format (UTF-8)."""
    Path(path).write_text(to_assa_text(pbn), encoding="utf-8")


def sniff(path: str | os.PathLike, head: bytes) -> bool:
    """An ASSA-PBN file starts with ``type=``, ``n=``, ``perturbation=`` or ``nodeNames``."""
    first = first_content_line(head)
    return first is not None and bool(_START.match(first[1]))


FORMAT = Format("assa", "boolean", (".pbn", ".assa"), sniff, read_assa, "a first line 'type=', 'n=' or 'nodeNames'",
                write=write_assa, aliases=("pbn",))
