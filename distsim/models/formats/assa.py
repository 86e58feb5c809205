"""ASSA-PBN ``.pbn`` files: reader and writer.

Syntax (ASSA-PBN's own example file, as read by BANG)::

    // comments start with // (whole line or after the content); blank lines are ignored
    type=synchronous          // or asynchronous; ASSA-PBN 3.0's rog | rmg | rmgrm | rmgro | rmgrorm | aro are
                              // stored as stated: a run then needs an explicit mode= (distsim has not
                              // verified those schemes)
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
from ..boolean import MAX_LINE_CHARS, Expr, parse_expression, to_text
from ..pbn import PBN, Predictor
from .base import Format, first_content_line

__all__ = ["read_assa", "parse_assa", "to_assa_text", "write_assa", "check_name", "check_line", "read_lines",
           "parse_probability", "TYPES", "FORMAT"]

TYPES = frozenset({"synchronous", "asynchronous", "rog", "rmg", "rmgrm", "rmgro", "rmgrorm", "aro"})
UPDATE = {"synchronous": "sync", "asynchronous": "async"}  # the header's type as PBN.update (others kept as written)
_BAD_NAME_CHARS = re.compile(r"[\s&!|^=:(),\[\]\x00-\x1f\x7f]")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")  # linear time: no nested repeats
MAX_FILE_BYTES = 256 << 20  # a Boolean-network text file (the largest Biodivine model has 1.5 MB)
_START = re.compile(r"(type|n|perturbation)\s*=|nodeNames\s*$")


# --------------------------------------------------------------------------------------------
# helpers shared by the readers


def read_lines(path: str | os.PathLike) -> tuple[str, list[str]]:
    """Read ``path`` as UTF-8 text; return ``(path string, lines)`` (line ``k`` is ``lines[k-1]``).

    A missing file raises :class:`FileNotFoundError`; bytes that are not UTF-8 raise
    :class:`ModelError` naming the line; a file over :data:`MAX_FILE_BYTES` raises one naming the file.
    """
    file = str(path)
    try:
        size = os.stat(file).st_size
    except OSError:
        size = 0  # read_text says what is wrong
    if size > MAX_FILE_BYTES:
        raise ModelError(f"the file has {size:,} bytes, more than the limit of {MAX_FILE_BYTES:,} for a Boolean "
                         "network", file=file)
    return file, [ln.rstrip("\r") for ln in read_text(file).split("\n")]


def check_line(raw: str, *, file: str | None, line: int) -> None:
    """Raise :class:`ModelError` when a line is longer than :data:`~distsim.models.boolean.MAX_LINE_CHARS`
    (checked before the line is split or tokenised)."""
    if len(raw) > MAX_LINE_CHARS:
        raise ModelError(f"the line has {len(raw):,} characters, more than the limit of {MAX_LINE_CHARS:,}",
                         file=file, line=line)


def check_name(name: str, *, file: str | None, line: int | None, column: int | None = None) -> None:
    """Raise :class:`ModelError` unless ``name`` is a valid node name."""
    if not name:
        raise ModelError("empty node name", file=file, line=line, column=column)
    if name[0].isdigit():
        raise ModelError(f"node names cannot start with a digit: {name!r}", file=file, line=line, column=column)
    m = _BAD_NAME_CHARS.search(name)
    if m:
        raise ModelError(f"node name {name[:80]!r} contains the character {m.group()!r}, which is not allowed "
                         "(not allowed: white space, control characters and & ! | ^ = : ( ) , [ ])", file=file,
                         line=line, column=column)
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
    r = _Reader(file)
    last = 0
    for lineno, raw in enumerate(lines, start=1):
        check_line(raw, file=file, line=lineno)
        cut = raw.find("//")
        content = raw if cut < 0 else raw[:cut]
        s = content.strip()
        if s:
            last = lineno
            r.state(s, content, lineno)
    return r.finish(max(last, 1), name)


class _Reader:
    """The reader's state machine: ``state`` is the method that reads the next line (top level, the
    nodeNames list, a node block, the npNode list)."""

    def __init__(self, file: str):
        self.file = file
        self.header: dict[str, tuple[str, int]] = {}  # key -> (value, line)
        self.names: list[str] = []
        self.name_line: dict[str, int] = {}
        self.index: dict[str, int] | None = None  # node -> index, set at endNodeNames
        self.blocks: dict[str, list[tuple[Expr, float]]] = {}
        self.block_line: dict[str, int] = {}
        self.fixed: set[str] = set()
        self.state = self.top
        self.current = ""
        self.opened = 0

    def err(self, msg: str, line: int, column: int | None = None) -> ModelError:
        return ModelError(msg, file=self.file, line=line, column=column)

    def names_list(self, s: str, content: str, lineno: int) -> None:
        if s == "endNodeNames":
            self.state = self.top
            self.index = {n: i for i, n in enumerate(self.names)}
            return
        check_name(s, file=self.file, line=lineno, column=content.index(s) + 1)
        if s in self.name_line:
            raise self.err(f"duplicate node name {s!r} (first listed at line {self.name_line[s]})", lineno)
        self.names.append(s)
        self.name_line[s] = lineno

    def node_block(self, s: str, content: str, lineno: int) -> None:
        current = self.current
        if s == "endNode":
            if not self.blocks[current]:
                raise self.err(f"node {current!r} has no function (a node block needs at least one "
                               "'<probability> : <expression>' line)", lineno)
            self.state = self.top
            return
        if ":" not in s:
            if s.split()[0] in ("node", "npNode", "nodeNames", "endNodeNames", "endNpNode"):
                raise self.err(f"missing endNode: the block of node {current!r} opened at line {self.opened} "
                               "is not closed", lineno)
            raise self.err(f"expected '<probability> : <expression>' or endNode in the block of node "
                           f"{current!r}, got {s!r}", lineno)
        colon = content.index(":")
        start = content.index(s)
        prob = parse_probability(content[:colon], what=f"the selection probability of a function of node {current!r}",
                                 file=self.file, line=lineno, column=start + 1)
        expr_text = content[colon + 1:]
        col = colon + 2 + (len(expr_text) - len(expr_text.lstrip()))
        expr = parse_expression(expr_text.strip(), self.index.__getitem__, file=self.file, line=lineno, column=col)
        self.blocks[current].append((expr, prob))

    def np_list(self, s: str, content: str, lineno: int) -> None:
        if s == "endNpNode":
            self.state = self.top
            return
        if s not in self.index:
            raise self.err(f"npNode lists {s!r}, which is not a node (not in nodeNames)", lineno, content.index(s) + 1)
        self.fixed.add(s)

    def top(self, s: str, content: str, lineno: int) -> None:
        if "=" in s:
            self.keyword(s, lineno)
            return
        words = s.split()
        if s == "nodeNames":
            if self.index is not None:
                raise self.err("nodeNames is given twice", lineno)
            self.state = self.names_list
        elif words[0] == "node" and len(words) == 2:
            self.open_block(words[1], lineno)
        elif s == "npNode":
            if self.index is None:
                raise self.err("npNode comes before the nodeNames ... endNodeNames list", lineno)
            self.state = self.np_list
        elif s == "endNode":
            raise self.err("endNode without a matching 'node NAME' line", lineno)
        else:
            raise self.err(f"unknown keyword or unexpected line {s!r}", lineno)

    def keyword(self, s: str, lineno: int) -> None:
        key, _, value = (t.strip() for t in s.partition("="))
        if key not in ("type", "n", "perturbation"):
            raise self.err(f"unknown keyword {key!r} (expected type=, n= or perturbation=)", lineno)
        if key in self.header:
            raise self.err(f"{key}= is given twice (first at line {self.header[key][1]})", lineno)
        self.header[key] = (value, lineno)
        if key == "type" and value not in TYPES:
            raise self.err(f"unknown type {value!r}; expected one of {', '.join(sorted(TYPES))}", lineno)
        if key == "n" and not re.fullmatch(r"\d{1,9}", value):
            raise self.err(f"n must be a non-negative integer (below 10**9), got {value[:40]!r}", lineno)
        if key == "perturbation" and not (_NUMBER.fullmatch(value) and 0.0 <= float(value) < 1.0):
            raise self.err(f"perturbation must be a number in [0, 1), got {value!r}", lineno)

    def open_block(self, node: str, lineno: int) -> None:
        if self.index is None:
            raise self.err("a node block comes before the nodeNames ... endNodeNames list", lineno)
        if node not in self.index:
            raise self.err(f"node block for {node!r}, which is not in nodeNames", lineno)
        if node in self.blocks:
            raise self.err(f"duplicate node block for {node!r} (first at line {self.block_line[node]})", lineno)
        self.blocks[node], self.block_line[node] = [], lineno
        self.state, self.current, self.opened = self.node_block, node, lineno

    def finish(self, end: int, name: str) -> PBN:
        if self.state == self.node_block:
            raise self.err(f"missing endNode: the block of node {self.current!r} opened at line {self.opened} is "
                           "not closed", end)
        if self.state == self.names_list:
            raise self.err("missing endNodeNames at the end of the file", end)
        if self.state == self.np_list:
            raise self.err("missing endNpNode at the end of the file", end)
        if self.index is None:
            raise self.err("no nodeNames ... endNodeNames list", end)
        if "n" not in self.header:
            raise self.err("missing n= (the number of nodes)", end)
        n_decl, n_line = int(self.header["n"][0]), self.header["n"][1]
        if n_decl != len(self.names):
            raise self.err(f"n={n_decl} but nodeNames lists {len(self.names)} names", n_line)
        for node in self.names:
            if node not in self.blocks:
                raise self.err(f"node {node!r} has no 'node {node}' block with its functions", self.name_line[node])
        perturbation = float(self.header["perturbation"][0]) if "perturbation" in self.header else 0.0
        preds = [[Predictor(e, p) for e, p in self.blocks[node]] for node in self.names]
        stated = self.header["type"][0] if "type" in self.header else None
        return PBN.create(self.names, preds, perturbation=perturbation, fixed=sorted(self.index[f] for f in self.fixed),
                          name=name, source=self.file, update=UPDATE.get(stated, stated))


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
    stated = {v: k for k, v in UPDATE.items()}.get(pbn.update or "sync", pbn.update)
    out = [f"// {pbn.name or 'network'}: written by distsim", f"type={stated}", f"n={pbn.n}",
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
