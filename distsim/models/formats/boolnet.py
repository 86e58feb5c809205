"""bnet (pyboolnet / Biodivine) and BoolNet text files: one reader for both.

Lines are ``target, expression`` (bnet) or ``target, expression, probability`` (BoolNet). An
optional first line ``targets, factors`` (bnet, BoolNet) or ``targets, factors, probabilities``
(BoolNet) is the header; lines starting with ``#`` are comments; white space around commas is free.
Commas inside parentheses belong to the expression (BoolNet's ``maj(a, b, c)``, ``sumgt(a, b, 1)``).

A target given on several lines has several predictor functions (a PBN). Probabilities, per
target: all omitted -> uniform; all given -> they must sum to 1 within 1e-6 (otherwise a
:class:`ModelError` names the target and line); some given and some omitted -> error. A file
whose header has no probabilities column may not give any.

Free inputs: a name that appears in an expression but has no line of its own. ``inputs`` decides
their function:

* ``"keep"`` (default): ``x(t+1) = x(t)``, the input keeps its initial value (:func:`identity`);
* ``"zero"`` / ``"one"``: the constant 0 / 1;
* ``"random"``: two functions, constant 0 and constant 1, each with probability 0.5 (a fresh
  random value each step).

An empty function (``X,`` with nothing after the comma) makes ``X`` a free input too, with a
:class:`UserWarning`: pyboolnet's ``primes2bnet`` (without ``minimize``) writes both constant
functions, 0 and 1, as an empty expression, so the value is not in the file (pyboolnet's own
parser, BNetToPrime, rejects such lines). With ``inputs="keep"`` the node keeps its initial value,
a constant over the run; ``inputs="zero"``/``"one"`` choose the constant.

Node order: targets in file order, then free inputs in order of first appearance. Names are kept
as written (the ``v_`` prefix of Biodivine models included). The files have no perturbation
syntax, so the network has perturbation 0 and no fixed nodes (use ``PBN.with_perturbation``).

:func:`write_bnet` writes a Boolean network (``targets, factors``) or an independent PBN (every
function of a node on its own line, with ``targets, factors, probabilities``). Functions are
written with ``& | ! ( )`` and ``0``/``1``; XOR and threshold functions as ``^`` and
``sumgt(..., k)``, which distsim and BoolNet read but pyboolnet does not.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import NamedTuple

from ...errors import ModelError
from ..boolean import FALSE, TRUE, parse_expression, to_text
from ..pbn import PBN, Predictor, identity
from .assa import check_line, check_name, parse_probability, read_lines
from .base import Format, first_content_line

__all__ = ["read_boolnet", "parse_boolnet", "INPUT_POLICIES", "input_predictors", "split_fields",
           "Entry", "build_network", "to_bnet_text", "write_bnet", "FORMAT"]

INPUT_POLICIES = ("keep", "zero", "one", "random")
PROB_TOL = 1e-6


class Entry(NamedTuple):
    """One function line: ``target``'s function ``expr`` (starting at 1-based ``column``)."""

    target: str
    expr: str
    column: int
    probability: float | None
    line: int


def split_fields(text: str, offset: int = 0) -> list[tuple[str, int]]:
    """Split at commas outside parentheses; return ``(stripped field, 1-based column)`` pairs.

    ``offset`` is the 0-based position of ``text[0]`` in its line.
    """
    fields: list[tuple[str, int]] = []
    depth, start = 0, 0
    for k, ch in enumerate(text + ","):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif ch == "," and (depth == 0 or k == len(text)):
            raw = text[start:k]
            lead = len(raw) - len(raw.lstrip()) if raw.strip() else 0
            fields.append((raw.strip(), offset + start + lead + 1))
            start = k + 1
    return fields


def input_predictors(i: int, policy: str) -> tuple[Predictor, ...]:
    """Predictors of free input ``i`` under ``policy`` (see the module docstring)."""
    if policy == "keep":
        return (identity(i),)
    if policy == "zero":
        return (Predictor(FALSE, 1.0),)
    if policy == "one":
        return (Predictor(TRUE, 1.0),)
    if policy == "random":
        return (Predictor(FALSE, 0.5), Predictor(TRUE, 0.5))
    raise ValueError(f"unknown free-input policy {policy!r}; expected one of {', '.join(INPUT_POLICIES)}")


def build_network(entries: list[Entry], *, file: str, name: str, inputs: str) -> PBN:
    """Parse the expressions of ``entries`` (probabilities already checked) and build the PBN."""
    if inputs not in INPUT_POLICIES:
        raise ValueError(f"unknown free-input policy {inputs!r}; expected one of {', '.join(INPUT_POLICIES)}")
    if not entries:
        raise ModelError("the file defines no node", file=file, line=1)
    index: dict[str, int] = {}
    for e in entries:
        index.setdefault(e.target, len(index))
    n_targets = len(index)

    def resolve(nm: str) -> int:
        if nm not in index:
            check_name(nm, file=file, line=current.line)
            index[nm] = len(index)
        return index[nm]

    preds: list[list[Predictor]] = [[] for _ in range(n_targets)]
    empty = []
    for current in entries:
        if not current.expr:
            if len([e for e in entries if e.target == current.target]) > 1 or current.probability not in (None, 1.0):
                raise ModelError(f"gene {current.target!r}: an empty function must be the node's only function",
                                 file=file, line=current.line)
            preds[index[current.target]] = list(input_predictors(index[current.target], inputs))
            empty.append(current.target)
            continue
        expr = parse_expression(current.expr, resolve, file=file, line=current.line, column=current.column)
        p = 1.0 if current.probability is None else current.probability
        preds[index[current.target]].append(Predictor(expr, p))
    for i in range(n_targets, len(index)):
        preds.append(list(input_predictors(i, inputs)))
    if empty:
        warnings.warn(f"{file}: {', '.join(empty)}: empty function, read as a free input (inputs={inputs!r}); "
                      "pyboolnet writes constants 0 and 1 this way without their value: pass inputs='zero' or "
                      "'one' if you know it", UserWarning, stacklevel=4)
    return PBN.create(list(index), preds, perturbation=0.0, name=name, source=file)


def read_boolnet(path: str | os.PathLike, *, inputs: str = "keep") -> PBN:
    """Read a ``.bnet`` or BoolNet file. ``name`` is the file stem and ``source`` the path."""
    file, lines = read_lines(path)
    return _parse(lines, file=file, name=Path(path).stem, inputs=inputs)


def parse_boolnet(text: str, *, file: str = "<string>", name: str = "", inputs: str = "keep") -> PBN:
    """Parse bnet/BoolNet text (``file`` is used in error messages and as ``source``)."""
    return _parse([ln.rstrip("\r") for ln in text.split("\n")], file=file, name=name, inputs=inputs)


def _parse(lines: list[str], *, file: str, name: str, inputs: str) -> PBN:
    def err(msg: str, line: int, column: int | None = None) -> ModelError:
        return ModelError(msg, file=file, line=line, column=column)

    entries: list[Entry] = []
    header: bool | None = None  # None: no content line yet; then whether the header had probabilities
    prob_column = True
    for lineno, raw in enumerate(lines, start=1):
        check_line(raw, file=file, line=lineno)
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        fields = split_fields(raw)
        if header is None:
            header = False
            if fields[0][0].lower() == "targets":
                cols = [f[0].lower() for f in fields]
                if cols not in (["targets", "factors"], ["targets", "factors", "probabilities"]):
                    raise err(f"bad header {s!r}; expected 'targets, factors' or "
                              "'targets, factors, probabilities'", lineno)
                prob_column = len(cols) == 3
                continue
        if len(fields) < 2:
            raise err(f"expected 'target, expression' but the line has no comma: {s!r}", lineno)
        if len(fields) > 3:
            raise err("too many comma-separated fields; expected 'target, expression[, probability]'",
                      lineno, fields[3][1])
        target, tcol = fields[0]
        check_name(target, file=file, line=lineno, column=tcol)
        prob = None
        if len(fields) == 3:
            if not prob_column:
                raise err("a probability is given but the header has no probabilities column", lineno, fields[2][1])
            prob = parse_probability(fields[2][0], what=f"the probability of a function of {target!r}",
                                     file=file, line=lineno, column=fields[2][1])
        entries.append(Entry(target, fields[1][0], fields[1][1], prob, lineno))

    groups: dict[str, list[Entry]] = {}
    for e in entries:
        groups.setdefault(e.target, []).append(e)
    final: list[Entry] = []
    for target, group in groups.items():
        given = [e for e in group if e.probability is not None]
        if not given:
            group = [e._replace(probability=1.0 / len(group)) for e in group]
        elif len(given) < len(group):
            missing = next(e for e in group if e.probability is None)
            raise err(f"gene {target!r}: some functions have a probability and this one does not", missing.line)
        else:
            total = sum(e.probability for e in group)  # type: ignore[misc]
            if abs(total - 1.0) > PROB_TOL:
                where = ", ".join(str(e.line) for e in group)
                raise err(f"the probabilities of gene {target!r} sum to {total:.10g}, not 1 (lines {where})",
                          group[-1].line)
        final.extend(group)
    final.sort(key=lambda e: e.line)
    return build_network(final, file=file, name=name, inputs=inputs)


def to_bnet_text(net: PBN) -> str:
    """The bnet text of ``net`` (see the module docstring); refuses what the format cannot hold."""
    if net.dependent:
        raise ValueError("a dependent PBN (contexts) cannot be written as bnet: write_assa keeps it")
    if net.perturbation > 0:
        raise ValueError(f"bnet has no perturbation (p = {net.perturbation:g}): write_assa keeps it, or write "
                         "net.with_perturbation(0)")
    for nm in net.nodes:
        check_name(nm, file=net.source or None, line=None)
    multi = net.n_functions > net.n
    lines = ["targets, factors, probabilities" if multi else "targets, factors"]
    for name, plist in zip(net.nodes, net.predictors):
        for p in plist:
            text = to_text(p.expr, net.nodes)
            lines.append(f"{name}, {text}, {p.probability!r}" if multi else f"{name}, {text}")
    return "\n".join(lines) + "\n"


def write_bnet(net: PBN, path: str | os.PathLike) -> None:
    """Write ``net`` as a bnet file (:func:`to_bnet_text`); :func:`read_boolnet` reads it back."""
    text = to_bnet_text(net)
    Path(path).write_text(text, encoding="utf-8")


def sniff(path: str | os.PathLike, head: bytes) -> bool:
    """A bnet/BoolNet file starts with the ``targets, factors`` header or a ``NAME, expr`` line."""
    first = first_content_line(head)
    return first is not None and (first[1].lower().startswith("targets") or "," in first[1])


FORMAT = Format("boolnet", "boolean", (".bnet",), sniff, read_boolnet,
                "'targets, factors' or 'NAME, expression[, probability]' lines", aliases=("bnet",),
                options=("inputs",), write=write_bnet)
