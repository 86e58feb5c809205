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

Nothing here recurses on the nesting depth (issue 30: Biodivine models nest 10,000 deep): the parser
keeps its open parentheses and calls on an explicit stack, and every walk of a tree (equality,
hashing, pickling, ``repr``, :func:`remap`, :func:`to_text`, :func:`evaluate`) uses an explicit
stack or a post-order list. The tree has the shape of the text (``(a & b) & c`` is two nodes, ``!!x``
two negations), so compiled bit programs do not change. Downstream walkers must not recurse either:
:func:`postorder` lists a tree's nodes, children first.

Limits (a clear :class:`~distsim.errors.ModelError` beyond them, never a crash or a hang):
parentheses, calls and negations nest at most :data:`MAX_DEPTH` deep (a guard on memory, ten times
the deepest Biodivine model), and a threshold function (``maj``/``sumgt``/``sumlt``: n arguments,
threshold k) has n * k <= :data:`MAX_THRESHOLD_WORK`, the size of its expansion into and/or gates
when compiled. Readers also bound the length of a line (:data:`MAX_LINE_CHARS`); tokenising is
linear in the length of the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping

import numpy as np

from ..errors import ModelError



class Expr:
    """Base class of expression nodes (immutable, hashable).

    Equality, hashing, pickling and ``repr`` never recurse: a node's hash is computed once, from its
    children's, when it is made; ``==`` compares with an explicit stack; a pickle holds the whole
    tree as one flat table of nodes (see :func:`_encode`).
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Expr):
            return NotImplemented
        return _equal(self, other)

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return self._h  # type: ignore[attr-defined]

    def __reduce__(self):
        return _decode, (_encode(self),)

    def __repr__(self) -> str:
        return _repr(self)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Const(Expr):
    value: bool
    _h: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash((0, bool(self.value))))


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Var(Expr):
    index: int
    _h: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash((1, self.index)))


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Not(Expr):
    arg: Expr
    _h: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash((2, self.arg._h)))  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class And(Expr):
    args: tuple[Expr, ...]
    _h: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash((3, tuple(a._h for a in self.args))))  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Or(Expr):
    args: tuple[Expr, ...]
    _h: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash((4, tuple(a._h for a in self.args))))  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Xor(Expr):
    args: tuple[Expr, ...]
    _h: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash((5, tuple(a._h for a in self.args))))  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class AtLeast(Expr):
    """True when at least ``k`` of ``args`` are true (BoolNet's maj/sumgt/sumlt)."""

    args: tuple[Expr, ...]
    k: int
    _h: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash((6, self.k, tuple(a._h for a in self.args))))  # type: ignore[attr-defined]


TRUE = Const(True)
FALSE = Const(False)
_NARY = (And, Or, Xor, AtLeast)


# --------------------------------------------------------------------------------------------
# structure (explicit stacks throughout: trees may nest far deeper than Python's recursion limit)


def children(e: Expr) -> tuple[Expr, ...]:
    """The operands of ``e`` (empty for a constant or a variable)."""
    if isinstance(e, Not):
        return (e.arg,)
    if isinstance(e, _NARY):
        return e.args
    return ()


def postorder(root: Expr) -> list[Expr]:
    """Every distinct node (by identity) under ``root``, each once, children before parents."""
    out: list[Expr] = []
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        e, done = stack.pop()
        if done:
            out.append(e)
            continue
        if id(e) in seen:
            continue
        seen.add(id(e))
        stack.append((e, True))
        stack.extend((c, False) for c in reversed(children(e)) if id(c) not in seen)
    return out


def _equal(a: Expr, b: Expr) -> bool:
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if type(x) is not type(y) or x._h != y._h:  # type: ignore[attr-defined]
            return False
        if isinstance(x, Const):
            if x.value != y.value:  # type: ignore[attr-defined]
                return False
        elif isinstance(x, Var):
            if x.index != y.index:  # type: ignore[attr-defined]
                return False
        elif isinstance(x, Not):
            stack.append((x.arg, y.arg))  # type: ignore[attr-defined]
        else:
            xa, ya = x.args, y.args  # type: ignore[attr-defined]
            if len(xa) != len(ya) or (isinstance(x, AtLeast) and x.k != y.k):  # type: ignore[attr-defined]
                return False
            stack.extend(zip(xa, ya))
    return True


_CODE = {Const: 0, Var: 1, Not: 2, And: 3, Or: 4, Xor: 5, AtLeast: 6}


def _encode(root: Expr) -> tuple:
    """The tree as a flat table: one ``(code, payload, child rows...)`` row per distinct node,
    children first; the root is the last row. Shared nodes stay shared."""
    row: dict[int, int] = {}
    table = []
    for e in postorder(root):
        code = _CODE[type(e)]
        payload = e.value if code == 0 else e.index if code == 1 else e.k if code == 6 else 0  # type: ignore
        row[id(e)] = len(table)
        table.append((code, payload) + tuple(row[id(c)] for c in children(e)))
    return tuple(table)


def _decode(table: tuple) -> Expr:
    built: list[Expr] = []
    for code, payload, *kids in table:
        args = tuple(built[k] for k in kids)
        if code == 0:
            e: Expr = Const(bool(payload))
        elif code == 1:
            e = Var(int(payload))
        elif code == 2:
            e = Not(args[0])
        elif code == 6:
            e = AtLeast(args, int(payload))
        else:
            e = (And, Or, Xor)[code - 3](args)
        built.append(e)
    return built[-1]


def _repr(root: Expr) -> str:
    """``And(args=(Var(index=0), Not(arg=Var(index=1))))``, as the dataclass repr, without recursion."""
    out: list[str] = []
    stack: list[Expr | str] = [root]
    while stack:
        e = stack.pop()
        if isinstance(e, str):
            out.append(e)
        elif isinstance(e, Const):
            out.append(f"Const(value={e.value!r})")
        elif isinstance(e, Var):
            out.append(f"Var(index={e.index!r})")
        elif isinstance(e, Not):
            stack += [")", e.arg, "Not(arg="]
        else:
            args = e.args  # type: ignore[attr-defined]
            stack.append(("," if len(args) == 1 else "") + ")" + (f", k={e.k!r})" if isinstance(e, AtLeast) else ")"))
            for k, a in enumerate(reversed(args)):
                stack.append(a)
                if k < len(args) - 1:
                    stack.append(", ")
            stack.append(f"{type(e).__name__}(args=(")
    return "".join(out)


def variables(expr: Expr) -> tuple[int, ...]:
    """Sorted node indices the expression reads (its parents)."""
    return tuple(sorted({e.index for e in postorder(expr) if isinstance(e, Var)}))


def remap(expr: Expr, mapping: Mapping[int, int]) -> Expr:
    """Rename variable indices (``mapping[old] -> new``)."""
    new: dict[int, Expr] = {}
    for e in postorder(expr):
        if isinstance(e, Var):
            r: Expr = Var(mapping[e.index])
        elif isinstance(e, Const):
            r = e
        elif isinstance(e, Not):
            r = Not(new[id(e.arg)])
        elif isinstance(e, AtLeast):
            r = AtLeast(tuple(new[id(a)] for a in e.args), e.k)
        else:
            r = type(e)(tuple(new[id(a)] for a in e.args))  # type: ignore[call-arg, attr-defined]
        new[id(e)] = r
    return new[id(expr)]


_PREC = {And: 3, Xor: 2, Or: 1}  # '|' binds loosest; '!', names, constants and calls never need parentheses
_SYM = {And: " & ", Xor: " ^ ", Or: " | "}


def to_text(expr: Expr, names: tuple[str, ...] | list[str]) -> str:
    """Render with ``& | ! ^`` and parentheses (parsable by :func:`parse_expression`)."""
    out: list[str] = []
    stack: list[tuple[Expr, int] | str] = [(expr, 0)]  # (node, precedence of its context) or text
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        e, parent = item
        if isinstance(e, Const):
            out.append("1" if e.value else "0")
        elif isinstance(e, Var):
            out.append(names[e.index])
        elif isinstance(e, Not):
            out.append("!")
            stack.append((e.arg, 4))
        elif isinstance(e, AtLeast):
            stack.append(f", {e.k - 1})")
            _push_joined(stack, e.args, ", ", 0)
            stack.append("sumgt(")
        else:
            prec = _PREC[type(e)]
            wrap = prec < parent
            if wrap:
                stack.append(")")
            _push_joined(stack, e.args, _SYM[type(e)], prec)  # type: ignore[attr-defined]
            if wrap:
                stack.append("(")
    return "".join(out)


def _push_joined(stack: list, args: tuple[Expr, ...], sep: str, prec: int) -> None:
    """Push ``args`` joined by ``sep`` (in reverse, for a stack that pops the first one first)."""
    for k, a in enumerate(reversed(args)):
        stack.append((a, prec))
        if k < len(args) - 1:
            stack.append(sep)


# --------------------------------------------------------------------------------------------
# evaluation


def evaluate(expr: Expr, values: np.ndarray) -> np.ndarray:
    """Evaluate on a boolean array ``values[..., n]`` (node index last); returns ``values[..., 0]``'s shape."""
    values = np.asarray(values, dtype=bool)
    shape = values.shape[:-1]
    done: dict[int, np.ndarray] = {}
    users: dict[int, int] = {}  # parents still to read a node's value (freed after the last one)
    order = postorder(expr)
    for e in order:
        for c in children(e):
            users[id(c)] = users.get(id(c), 0) + 1

    def take(c: Expr) -> np.ndarray:
        users[id(c)] -= 1
        return done[id(c)] if users[id(c)] else done.pop(id(c))

    for e in order:
        if isinstance(e, Const):
            r = np.full(shape, e.value, dtype=bool)
        elif isinstance(e, Var):
            r = values[..., e.index]
        elif isinstance(e, Not):
            r = ~take(e.arg)
        elif isinstance(e, AtLeast):
            count = np.zeros(shape, np.int32)
            for a in e.args:
                count += take(a)
            r = np.asarray(count >= e.k)
        elif isinstance(e, (And, Or, Xor)):
            r = take(e.args[0]).copy()
            op = {And: np.bitwise_and, Or: np.bitwise_or, Xor: np.bitwise_xor}[type(e)]
            for a in e.args[1:]:
                op(r, take(a), out=r)
        else:
            raise TypeError(f"not an expression: {e!r}")
        done[id(e)] = r
    return done[id(expr)]


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
# parsing: a loop over the tokens with the open parentheses and calls on an explicit stack

_TOKEN = re.compile(r"\s*(?:(?P<op>[&|!^(),])|(?P<name>[^\s&|!^(),=:]+))")
_SPACE = re.compile(r"\s*")
_FUNCS = {"all", "any", "maj", "sumgt", "sumlt"}
MAX_DEPTH = 100_000  # open parentheses, calls and '!' (a guard on memory: the deepest Biodivine model nests 10,192)
MAX_THRESHOLD_WORK = 1_000_000
MAX_LINE_CHARS = 4_000_000  # one line of a model file (the longest Biodivine line has 1.3 million)

_Token = tuple[str, str, int]  # (kind "op" | "name", text, 1-based column)


def _scan(text: str, column: int, err: Callable[[str, int], ModelError]) -> Iterator[_Token]:
    """The tokens of ``text`` (no trailing white space), one at a time (linear time, constant memory)."""
    pos, n = 0, len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if not m:
            at = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
            raise err(f"unexpected character {text[at]!r} in expression", column + at)
        kind = "op" if m.group("op") else "name"
        yield kind, m.group(kind), column + m.start(kind)
        pos = m.end()


class _Frame:
    """An open group: the top level (kind 0), a parenthesis (1) or a call (2)."""

    __slots__ = ("kind", "fname", "col", "outer", "nots", "ands", "xors", "ors", "args")

    def __init__(self, kind: int, fname: str = "", col: int = 0, outer: int = 0):
        self.kind, self.fname, self.col = kind, fname, col
        self.outer = outer  # '!'s in front of the group, applied to its value
        self.nots = 0  # '!'s read in front of the operand that comes next
        self.ands: list[Expr] = []  # operands of the '&' run being read
        self.xors: list[Expr] = []  # finished '&' runs of the '^' run being read
        self.ors: list[Expr] = []  # finished '^' runs
        self.args: list[Expr] = []  # finished arguments of a call

    def fresh(self) -> bool:
        return not (self.ands or self.xors or self.ors or self.nots)

    def close_and(self) -> None:
        self.xors.append(_join(And, self.ands))
        self.ands = []

    def close_xor(self) -> None:
        self.close_and()
        self.ors.append(_join(Xor, self.xors))
        self.xors = []

    def value(self) -> Expr:
        self.close_xor()
        e = _join(Or, self.ors)
        self.ors = []
        return e


def _join(cls: type, items: list[Expr]) -> Expr:
    return items[0] if len(items) == 1 else cls(tuple(items))


def _negated(e: Expr, nots: int) -> Expr:
    for _ in range(nots):
        e = Not(e)
    return e


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
    1-based column of ``text[0]`` in the line). Nothing recurses: the nesting depth costs memory only.
    """

    def err(msg: str, col: int) -> ModelError:
        return ModelError(msg, file=file, line=line, column=col)

    stripped = text.rstrip()
    if len(stripped) > MAX_LINE_CHARS:
        raise err(f"expression of {len(stripped):,} characters is longer than the limit of {MAX_LINE_CHARS:,}", column)
    end_col = column + len(stripped)
    tokens = _scan(stripped, column, err)
    ahead: list[_Token] = []  # tokens read ahead (at most one)

    def take() -> _Token | None:
        return ahead.pop() if ahead else next(tokens, None)

    def peek() -> _Token | None:
        if not ahead:
            t = next(tokens, None)
            if t is None:
                return None
            ahead.append(t)
        return ahead[-1]

    def leaf(val: str, col: int) -> Expr:
        low = val.lower()
        if val in ("0", "1") or low in ("true", "false"):
            return Const(val == "1" or low == "true")
        if val[0].isdigit():
            raise err(f"node names cannot start with a digit: {val[:40]!r}", col)
        if val.endswith("]") or "[" in val:
            raise err(f"temporal predicates such as {val[:40]!r} are not supported", col)
        try:
            return Var(int(resolve(val)))
        except KeyError:
            raise err(f"unknown node {val[:80]!r}", col) from None

    def call(f: _Frame, threshold: tuple[str, int] | None) -> Expr:
        fname, col, terms = f.fname, f.col, tuple(f.args)
        if fname in ("sumgt", "sumlt"):
            if threshold is None or not terms:
                raise err(f"{fname}() needs arguments followed by an integer threshold", col)
            raw, rcol = threshold
            if len(raw) > 9:
                raise err(f"{fname}() threshold {raw[:20]}... is too large", rcol)
            k = int(raw)
            if fname == "sumgt":
                return _threshold(terms, k + 1, fname, col, err)
            return Not(_threshold(terms, k, fname, col, err))
        if fname == "all":
            return terms[0] if len(terms) == 1 else And(terms)
        if fname == "any":
            return terms[0] if len(terms) == 1 else Or(terms)
        return _threshold(terms, len(terms) // 2 + 1, fname, col, err)  # maj: more than half

    stack = [_Frame(0)]
    pending = 0  # '!'s whose operand is not finished yet (they nest like parentheses)
    operand = True  # whether an operand comes next (else an operator, ',' or ')')
    seen = False
    while True:
        t = take()
        f = stack[-1]
        if operand:
            if t is None:
                if not seen:
                    raise err("empty expression", column)
                raise err("expression ends where an operand was expected", end_col)
            seen = True
            kind, val, col = t
            done: Expr | None = None
            if kind == "op":
                if val == "!":
                    f.nots += 1
                    pending += 1
                    if len(stack) - 1 + pending > MAX_DEPTH:
                        raise err(f"expression nested too deeply (parentheses, calls and '!' more than {MAX_DEPTH:,} "
                                  "deep)", col)
                    continue
                if val != "(":
                    raise err(f"unexpected {val!r} where an operand was expected", col)
                opened = _Frame(1, col=col, outer=f.nots)
            else:
                nxt = peek()
                if val in _FUNCS and nxt is not None and nxt[0] == "op" and nxt[1] == "(":
                    take()
                    opened = _Frame(2, fname=val, col=col, outer=f.nots)
                elif (f.kind == 2 and f.fname in ("sumgt", "sumlt") and f.fresh() and val.isdigit()
                      and nxt is not None and nxt[0] == "op" and nxt[1] == ")"):
                    take()  # the threshold closes the call
                    stack.pop()
                    pending -= f.outer
                    done = _negated(call(f, (val, col)), f.outer)
                    f = stack[-1]
                    opened = None
                else:
                    done = leaf(val, col)
                    opened = None
            if opened is not None:
                f.nots = 0
                stack.append(opened)
                if len(stack) - 1 + pending > MAX_DEPTH:
                    raise err(f"expression nested too deeply (parentheses, calls and '!' more than {MAX_DEPTH:,} "
                              "deep)", col)
                continue
            assert done is not None
            f.ands.append(_negated(done, f.nots))
            pending -= f.nots
            f.nots = 0
            operand = False
            continue
        if t is None:
            if f.kind != 0:
                raise err("expected ')', found end of expression", end_col)
            return f.value()
        kind, val, col = t
        if kind == "op":
            if val == "&":
                operand = True
                continue
            if val == "^":
                f.close_and()
                operand = True
                continue
            if val == "|":
                f.close_xor()
                operand = True
                continue
            if val == "," and f.kind == 2:
                f.args.append(f.value())
                operand = True
                continue
            if val == ")" and f.kind != 0:
                e = f.value()
                if f.kind == 2:
                    f.args.append(e)
                    e = call(f, None)
                stack.pop()
                pending -= f.outer
                stack[-1].ands.append(_negated(e, f.outer))
                continue
        if f.kind == 0:
            raise err(f"unexpected {val[:80]!r} after a complete expression", col)
        raise err(f"expected ')', found {val[:80]!r}", col)


def _threshold(terms: tuple[Expr, ...], k: int, fname: str, col: int,
               err: Callable[[str, int], ModelError]) -> Expr:
    if len(terms) * min(k, len(terms)) > MAX_THRESHOLD_WORK:
        raise err(f"{fname}() with {len(terms)} arguments and threshold {k} is too large to expand "
                  f"(n * k > {MAX_THRESHOLD_WORK:,})", col)
    return _at_least(terms, k)


def _at_least(args: tuple[Expr, ...], k: int) -> Expr:
    if k <= 0:
        return TRUE
    if k > len(args):
        return FALSE
    return AtLeast(args, k)
