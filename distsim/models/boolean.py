"""Boolean expressions: an immutable AST, a safe parser (never ``eval``), and evaluation.

Grammar (case-sensitive names, operators as in ASSA-PBN, bnet and BoolNet)::

    expr    := xor ('|' xor)*
    xor     := conj ('^' conj)*
    conj    := unary ('&' unary)*
    unary   := '!' unary | primary
    primary := '(' expr ')' | '0' | '1' | 'true' | 'false' | NAME
             | ('all' | 'any' | 'maj') '(' expr (',' expr)* ')'
             | ('sumgt' | 'sumlt') '(' expr (',' expr)* ',' INTEGER ')'

BoolNet's ``maj`` is true when more than half of its arguments are true, ``sumgt(a.., k)`` when
more than ``k`` are true and ``sumlt(a.., k)`` when fewer than ``k`` are. Names are any run of
characters other than white space and ``& | ! ^ ( ) , = :``; a name equal to one of the functions
above followed by ``(`` is the function.

Limits (a clear :class:`~distsim.errors.ModelError` beyond them, never a crash or a hang):
parentheses, function calls and negations nest at most :data:`MAX_DEPTH` deep, and a threshold
function (``maj``/``sumgt``/``sumlt``: n arguments, threshold k) has n * k <= :data:`MAX_THRESHOLD_WORK`,
the size of its expansion into and/or gates when compiled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from ..errors import ModelError


class Expr:
    """Base class of expression nodes (immutable, hashable)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Const(Expr):
    value: bool


@dataclass(frozen=True, slots=True)
class Var(Expr):
    index: int


@dataclass(frozen=True, slots=True)
class Not(Expr):
    arg: Expr


@dataclass(frozen=True, slots=True)
class And(Expr):
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Or(Expr):
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Xor(Expr):
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class AtLeast(Expr):
    """True when at least ``k`` of ``args`` are true (BoolNet's maj/sumgt/sumlt)."""

    args: tuple[Expr, ...]
    k: int


TRUE = Const(True)
FALSE = Const(False)


# --------------------------------------------------------------------------------------------
# structure


def variables(expr: Expr) -> tuple[int, ...]:
    """Sorted node indices the expression reads (its parents)."""
    out: set[int] = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Var):
            out.add(e.index)
        elif isinstance(e, Not):
            stack.append(e.arg)
        elif isinstance(e, (And, Or, Xor, AtLeast)):
            stack.extend(e.args)
    return tuple(sorted(out))


def remap(expr: Expr, mapping: Mapping[int, int]) -> Expr:
    """Rename variable indices (``mapping[old] -> new``)."""
    if isinstance(expr, Var):
        return Var(mapping[expr.index])
    if isinstance(expr, Const):
        return expr
    if isinstance(expr, Not):
        return Not(remap(expr.arg, mapping))
    if isinstance(expr, AtLeast):
        return AtLeast(tuple(remap(a, mapping) for a in expr.args), expr.k)
    return type(expr)(tuple(remap(a, mapping) for a in expr.args))


def to_text(expr: Expr, names: tuple[str, ...] | list[str]) -> str:
    """Render with ``& | ! ^`` and parentheses (parsable by :func:`parse_expression`)."""

    def go(e: Expr, parent: int) -> str:
        # precedence: | 1, ^ 2, & 3, ! 4
        if isinstance(e, Const):
            return "1" if e.value else "0"
        if isinstance(e, Var):
            return names[e.index]
        if isinstance(e, Not):
            return "!" + go(e.arg, 4)
        if isinstance(e, AtLeast):
            inner = ", ".join(go(a, 0) for a in e.args)
            return f"sumgt({inner}, {e.k - 1})"
        prec, sym = {And: (3, " & "), Xor: (2, " ^ "), Or: (1, " | ")}[type(e)]
        s = sym.join(go(a, prec) for a in e.args)
        return f"({s})" if prec < parent else s

    return go(expr, 0)


# --------------------------------------------------------------------------------------------
# evaluation


def evaluate(expr: Expr, values: np.ndarray) -> np.ndarray:
    """Evaluate on a boolean array ``values[..., n]`` (node index last); returns ``values[..., 0]``'s shape."""
    values = np.asarray(values, dtype=bool)
    shape = values.shape[:-1]

    def go(e: Expr) -> np.ndarray:
        if isinstance(e, Const):
            return np.full(shape, e.value, dtype=bool)
        if isinstance(e, Var):
            return values[..., e.index]
        if isinstance(e, Not):
            return ~go(e.arg)
        if isinstance(e, And):
            r = go(e.args[0]).copy()
            for a in e.args[1:]:
                r &= go(a)
            return r
        if isinstance(e, Or):
            r = go(e.args[0]).copy()
            for a in e.args[1:]:
                r |= go(a)
            return r
        if isinstance(e, Xor):
            r = go(e.args[0]).copy()
            for a in e.args[1:]:
                r ^= go(a)
            return r
        if isinstance(e, AtLeast):
            count = sum(go(a).astype(np.int32) for a in e.args)
            return np.asarray(count >= e.k)
        raise TypeError(f"not an expression: {e!r}")

    return go(expr)


def truth_table(expr: Expr, parents: tuple[int, ...] | None = None) -> np.ndarray:
    """Truth table over ``parents`` (default: the expression's variables, sorted).

    Row ``r`` assigns parent ``k`` the bit ``(r >> (K-1-k)) & 1``: the lowest-index parent is the
    most significant bit (ASSA-PBN's and BANG's convention).
    """
    if parents is None:
        parents = variables(expr)
    k = len(parents)
    if k > 24:
        raise ValueError(f"a truth table over {k} parents would have 2**{k} rows; evaluate the expression instead")
    rows = np.arange(1 << k, dtype=np.int64)
    n = (max(parents) + 1) if parents else 1
    vals = np.zeros((1 << k, n), dtype=bool)
    for j, p in enumerate(parents):
        vals[:, p] = (rows >> (k - 1 - j)) & 1
    return evaluate(expr, vals)


# --------------------------------------------------------------------------------------------
# parsing

_TOKEN = re.compile(r"\s*(?:(?P<op>[&|!^(),])|(?P<name>[^\s&|!^(),=:]+))")
_FUNCS = {"all", "any", "maj", "sumgt", "sumlt"}
MAX_DEPTH = 100
MAX_THRESHOLD_WORK = 1_000_000


def parse_expression(
    text: str,
    resolve: Callable[[str], int],
    *,
    file: str | None = None,
    line: int | None = None,
    column: int = 1,
) -> Expr:
    """Parse ``text`` into an :class:`Expr`; ``resolve(name)`` returns a node index or raises ``KeyError``.

    Errors are :class:`ModelError` naming ``file``, ``line`` and the column (``column`` is the
    1-based column of ``text[0]`` in the line).
    """
    tokens: list[tuple[str, str, int]] = []  # (kind, value, column)
    pos = 0
    stripped = text.rstrip()
    while pos < len(stripped):
        m = _TOKEN.match(stripped, pos)
        if not m:
            bad = stripped[pos:].lstrip()[:1]
            raise ModelError(f"unexpected character {bad!r} in expression", file=file, line=line, column=column + pos)
        kind = "op" if m.group("op") else "name"
        start = m.start(kind)
        tokens.append((kind, m.group(kind), column + start))
        pos = m.end()
    end_col = column + len(stripped)
    i = 0
    depth = 0  # open parentheses, calls and negations

    def err(msg: str, col: int) -> ModelError:
        return ModelError(msg, file=file, line=line, column=col)

    def peek() -> tuple[str, str, int] | None:
        return tokens[i] if i < len(tokens) else None

    def expect(op: str) -> None:
        nonlocal i
        t = peek()
        if t is None or t[1] != op or t[0] != "op":
            got = "end of expression" if t is None else repr(t[1])
            raise err(f"expected {op!r}, found {got}", t[2] if t else end_col)
        i += 1

    def binary(sym: str, cls, sub):
        def rule() -> Expr:
            nonlocal i
            args = [sub()]
            while (t := peek()) is not None and t[0] == "op" and t[1] == sym:
                i += 1
                args.append(sub())
            return args[0] if len(args) == 1 else cls(tuple(args))

        return rule

    def unary() -> Expr:
        nonlocal i, depth
        nots = 0
        while (t := peek()) is not None and t[0] == "op" and t[1] == "!":
            i += 1
            nots += 1
        if t is None:
            raise err("expression ends where an operand was expected", end_col)
        depth += 1 + nots
        if depth > MAX_DEPTH:
            raise err(f"expression nested too deeply (parentheses, calls and '!' more than {MAX_DEPTH} deep)", t[2])
        e = primary()
        for _ in range(nots):
            e = Not(e)
        depth -= 1 + nots
        return e

    def primary() -> Expr:
        nonlocal i
        t = peek()
        if t is None:
            raise err("expression ends where an operand was expected", end_col)
        kind, val, col = t
        if kind == "op":
            if val == "(":
                i += 1
                e = disj()
                expect(")")
                return e
            raise err(f"unexpected {val!r} where an operand was expected", col)
        i += 1
        nxt = peek()
        if val in _FUNCS and nxt is not None and nxt[1] == "(" and nxt[0] == "op":
            return call(val, col)
        low = val.lower()
        if val in ("0", "1") or low in ("true", "false"):
            return Const(val == "1" or low == "true")
        if val[0].isdigit():
            raise err(f"node names cannot start with a digit: {val!r}", col)
        if val.endswith("]") or "[" in val:
            raise err(f"temporal predicates such as {val!r} are not supported", col)
        try:
            return Var(int(resolve(val)))
        except KeyError:
            raise err(f"unknown node {val!r}", col) from None

    def call(fname: str, col: int) -> Expr:
        nonlocal i
        expect("(")
        args: list[Expr] = []
        raw: list[tuple[str, int]] = []  # token text of single-token args (for the integer of sumgt/sumlt)
        while True:
            t = peek()
            raw.append((t[1], t[2]) if t is not None else ("", end_col))
            if fname in ("sumgt", "sumlt") and t is not None and t[0] == "name" and t[1].isdigit():
                nt = tokens[i + 1] if i + 1 < len(tokens) else None
                if nt is not None and nt[1] == ")":
                    i += 1
                    args.append(None)  # type: ignore[arg-type]  # placeholder for the integer
                    expect(")")
                    break
            args.append(disj())
            t = peek()
            if t is not None and t[0] == "op" and t[1] == ",":
                i += 1
                continue
            expect(")")
            break
        if fname in ("sumgt", "sumlt"):
            if len(args) < 2 or args[-1] is not None:
                raise err(f"{fname}() needs arguments followed by an integer threshold", col)
            if len(raw[-1][0]) > 9:
                raise err(f"{fname}() threshold {raw[-1][0][:20]}... is too large", raw[-1][1])
            k = int(raw[-1][0])
            terms = tuple(args[:-1])
            if fname == "sumgt":
                return threshold(terms, k + 1, fname, col)
            return Not(threshold(terms, k, fname, col))
        if any(a is None for a in args) or not args:
            raise err(f"{fname}() needs at least one argument", col)
        terms = tuple(args)
        if fname == "all":
            return terms[0] if len(terms) == 1 else And(terms)
        if fname == "any":
            return terms[0] if len(terms) == 1 else Or(terms)
        return threshold(terms, len(terms) // 2 + 1, fname, col)  # maj: more than half

    def threshold(terms: tuple[Expr, ...], k: int, fname: str, col: int) -> Expr:
        if len(terms) * min(k, len(terms)) > MAX_THRESHOLD_WORK:
            raise err(f"{fname}() with {len(terms)} arguments and threshold {k} is too large to expand "
                      f"(n * k > {MAX_THRESHOLD_WORK:,})", col)
        return _at_least(terms, k)

    conj = binary("&", And, unary)
    xor = binary("^", Xor, conj)
    disj = binary("|", Or, xor)

    if not tokens:
        raise err("empty expression", column)
    result = disj()
    if i != len(tokens):
        raise err(f"unexpected {tokens[i][1]!r} after a complete expression", tokens[i][2])
    return result


def _at_least(args: tuple[Expr, ...], k: int) -> Expr:
    if k <= 0:
        return TRUE
    if k > len(args):
        return FALSE
    return AtLeast(args, k)
