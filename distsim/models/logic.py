"""Expressions that mix numbers and logic over Boolean nodes (MaBoSS logic and rates, SBML-qual
MathML), compiled exactly into Boolean expressions of :mod:`.boolean` -- never run as code.

A node reads as the number 0 or 1. Logical operators and conditions treat any non-zero number as
true (C semantics, as in MaBoSS and MathML); comparisons give 0 or 1. Arithmetic uses the
:mod:`.arith` nodes :class:`~.arith.Num`, :class:`~.arith.BinOp`, :class:`~.arith.Neg` and
:class:`~.arith.Call` (``exp``/``log``), with :class:`~.boolean.Var` as a node reference.

:func:`cases` turns a term into a finite table ``{value: condition}`` -- the piecewise-constant
function of the node states it is -- and :func:`to_bool` gives the condition under which a term is
non-zero. Both are exact: every value is computed in IEEE doubles from the parsed tree, once per
combination of the cases of the operands.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from .arith import BinOp, Call, Neg, Num
from .boolean import FALSE, TRUE, And, AtLeast, Const, Expr, Not, Or, Var, Xor, children, postorder, variables

MAX_CASES = 4096  # distinct (value, condition) pairs one term may have
MAX_EXACT_VARS = 20  # truth-table checks (pruning, equivalence) up to this many variables


@dataclass(frozen=True, slots=True)
class Cmp:
    """``left op right`` with op one of ``== != < <= > >=``: 1 or 0."""

    op: str
    left: "Term"
    right: "Term"


@dataclass(frozen=True, slots=True)
class Cond:
    """``test ? then : other``."""

    test: "Term"
    then: "Term"
    other: "Term"


@dataclass(frozen=True, slots=True)
class Logic:
    """``op`` one of ``and or xor not`` over the truth values of ``args``: 1 or 0."""

    op: str
    args: tuple["Term", ...]


Term = Union[Num, Var, BinOp, Neg, Call, Cmp, Cond, Logic]


class TooComplex(ValueError):
    """A term has more than :data:`MAX_CASES` cases."""


# ---- Boolean constructors with constant folding ------------------------------------------------

def mk_not(a: Expr) -> Expr:
    if isinstance(a, Const):
        return FALSE if a.value else TRUE
    if isinstance(a, Not):
        return a.arg
    return Not(a)


def _flat(cls: type, args: tuple[Expr, ...] | list[Expr], unit: Const, zero: Const) -> Expr:
    out: list[Expr] = []
    seen: set[Expr] = set()  # (a list scan made a chain of k distinct operands cost k^3)
    for a in args:
        for b in (a.args if isinstance(a, cls) else (a,)):
            if isinstance(b, Const):  # the zero or the unit (a type check: Expr's == walks the trees)
                if b.value == zero.value:
                    return zero
                continue
            if b not in seen:
                seen.add(b)
                out.append(b)
    for b in out:  # a complementary pair (x, !x): checking each !x finds every pair, and makes no Not
        if isinstance(b, Not) and b.arg in seen:
            return zero
    if not out:
        return unit
    return out[0] if len(out) == 1 else cls(tuple(out))


def mk_and(*args: Expr) -> Expr:
    return _flat(And, args, TRUE, FALSE)


def mk_or(*args: Expr) -> Expr:
    return _flat(Or, args, FALSE, TRUE)


def mk_xor(*args: Expr) -> Expr:
    flip = False
    out: list[Expr] = []
    for a in args:
        if isinstance(a, Const):
            flip ^= a.value
        else:
            out.append(a)
    e: Expr = FALSE if not out else (out[0] if len(out) == 1 else Xor(tuple(out)))
    return mk_not(e) if flip else e


def substitute(e: Expr, i: int, value: bool) -> Expr:
    """``e`` with node ``i`` replaced by the constant ``value``, folded (no recursion on depth). Only the
    nodes above an occurrence of node ``i`` are rebuilt: a subtree without it is kept as it is (already
    folded, as every condition the mk_* constructors build is; ``e`` itself when it does not read node ``i``)."""
    order = postorder(e)
    new: dict[int, Expr] = {}  # the rebuilt nodes: those that read node i
    for x in order:
        if isinstance(x, Var):
            if x.index == i:
                new[id(x)] = Const(bool(value))
            continue
        if isinstance(x, Const):
            continue
        if isinstance(x, Not):
            if id(x.arg) in new:
                new[id(x)] = mk_not(new[id(x.arg)])
            continue
        if not any(id(a) in new for a in x.args):  # type: ignore[attr-defined]
            continue
        args = tuple(new.get(id(a), a) for a in x.args)  # type: ignore[attr-defined]
        if isinstance(x, And):
            r: Expr = mk_and(*args)
        elif isinstance(x, Or):
            r = mk_or(*args)
        elif isinstance(x, Xor):
            r = mk_xor(*args)
        else:
            assert isinstance(x, AtLeast)
            r = AtLeast(args, x.k)
        new[id(x)] = r
    return new.get(id(e), e)


def _column(k: int, j: int) -> int:
    """The rows of a ``k``-variable truth table where variable ``j`` is 1, as the bits of an int (row r:
    bit r; variable j: bit j of r): blocks of 2**j ones after 2**j zeros, repeated."""
    key = (k, j)
    m = _COLUMNS.get(key)
    if m is None:
        block = ((1 << (1 << j)) - 1) << (1 << j)
        m = block * (((1 << (1 << k)) - 1) // ((1 << (2 << j)) - 1))  # one copy per 2**(j+1) rows
        if len(_COLUMNS) < 4096:
            _COLUMNS[key] = m
    return m


_COLUMNS: dict[tuple[int, int], int] = {}


def _bits(e: Expr, over: tuple[int, ...], order: list[Expr] | None = None) -> int:
    """``e``'s truth table over the variables ``over`` (all of its own) as the bits of an int: bit r is its value
    where ``over[j]`` is bit j of r. Exact Boolean algebra on ints: a row costs a bit, not a byte, and no
    NumPy call per operation (satisfiable and equivalent of small conditions, the reader's inner loop)."""
    k = len(over)
    full = (1 << (1 << k)) - 1
    col = {v: _column(k, j) for j, v in enumerate(over)}
    done: dict[int, int] = {}
    users: dict[int, int] = {}  # parents still to read a node's value (freed after the last one)
    order = postorder(e) if order is None else order  # (``order``: e's postorder, when the caller has it)
    for x in order:
        for c in children(x):
            users[id(c)] = users.get(id(c), 0) + 1

    def take(c: Expr) -> int:
        users[id(c)] -= 1
        return done[id(c)] if users[id(c)] else done.pop(id(c))

    for x in order:
        if isinstance(x, Var):
            r = col[x.index]
        elif isinstance(x, Const):
            r = full if x.value else 0
        elif isinstance(x, Not):
            r = full ^ take(x.arg)
        elif isinstance(x, And):
            r = full
            for a in x.args:
                r &= take(a)
        elif isinstance(x, Or):
            r = 0
            for a in x.args:
                r |= take(a)
        elif isinstance(x, Xor):
            r = 0
            for a in x.args:
                r ^= take(a)
        elif isinstance(x, AtLeast):
            ge = [full] + [0] * x.k  # ge[m]: rows where at least m of the operands so far hold
            for a in x.args:
                v = take(a)
                for m in range(x.k, 0, -1):
                    ge[m] |= ge[m - 1] & v
            r = ge[x.k] if x.k >= 0 else full
        else:
            raise TypeError(f"not an expression: {x!r}")
        done[id(x)] = r
    return done[id(e)]


def equivalent(a: Expr, b: Expr) -> bool | None:
    """Whether ``a`` and ``b`` are the same function (None: too many variables to check)."""
    over = tuple(sorted(set(variables(a)) | set(variables(b))))
    if len(over) > MAX_EXACT_VARS:
        return None
    return _bits(a, over) == _bits(b, over)


_SAT: dict[Expr, bool] = {}  # satisfiable's answers by expression (immutable; a reader asks again and again)
_SAT_MAX = 4096


def satisfiable(e: Expr) -> bool:
    """False only when ``e`` is false in every state (True when too large to check)."""
    if isinstance(e, Const):
        return e.value
    known = _SAT.get(e)
    if known is not None:
        return known
    order = postorder(e)
    over = tuple(sorted({x.index for x in order if isinstance(x, Var)}))
    r = len(over) > MAX_EXACT_VARS or _bits(e, over, order) != 0
    if len(_SAT) >= _SAT_MAX:
        _SAT.clear()
    _SAT[e] = r
    return r


# ---- compilation ---------------------------------------------------------------------------------

_CMP = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _arith(op: str, a: float, b: float) -> float:
    with np.errstate(all="ignore"):
        x, y = np.float64(a), np.float64(b)
        r = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "^": np.power}[op](x, y)
    return float(r)


def _call(func: str, args: list[float]) -> float:
    with np.errstate(all="ignore"):
        x = np.float64(args[0])
        if func == "exp":
            r = np.exp(x) if len(args) == 1 else np.exp(x * np.log(np.float64(args[1])))
        elif func == "log":
            r = np.log(x) if len(args) == 1 else np.log(x) / np.log(np.float64(args[1]))
        else:
            raise ValueError(f"unsupported function {func!r}")
    return float(r)


def _key(v: float) -> float:
    return 0.0 if v == 0 else v  # -0.0 and 0.0 are one value


def _merge(pairs, limit: int = MAX_CASES) -> dict[float, Expr]:
    out: dict[float, Expr] = {}
    nan: Expr = FALSE
    for v, g in pairs:
        if g == FALSE:
            continue
        if isinstance(v, float) and math.isnan(v):
            nan = mk_or(nan, g)
            continue
        k = _key(v)
        out[k] = mk_or(out[k], g) if k in out else g
        if len(out) > limit:
            raise TooComplex(f"the expression takes more than {limit} distinct values")
    if nan != FALSE:
        out[math.nan] = nan
    return out


def cases(t: Term, memo: dict | None = None) -> dict[float, Expr]:
    """``{value: condition}``: in every state exactly one condition holds and ``t`` equals its value.

    Conditions that no state satisfies are dropped when they have at most
    :data:`MAX_EXACT_VARS` variables. A NaN value (0/0) is kept under the key ``math.nan``. ``memo``:
    one dict shared by calls on terms with common subtrees computes those once (keyed by id: the
    caller keeps every term alive while it uses the memo).
    """
    return _walk(t, _CASES, memo)


def to_bool(t: Term) -> Expr:
    """The condition under which ``t`` is non-zero (NaN counts as true, as in C)."""
    return _walk(t, _BOOL)


_CASES, _BOOL = 0, 1


def _term_children(t: Term) -> tuple[Term, ...]:
    if isinstance(t, Logic):
        return t.args
    if isinstance(t, Cond):
        return (t.test, t.then, t.other)
    if isinstance(t, Neg):
        return (t.arg,)
    if isinstance(t, (BinOp, Cmp)):
        return (t.left, t.right)
    if isinstance(t, Call):
        return tuple(t.args)
    if isinstance(t, (Num, Var)):
        return ()
    raise TypeError(f"not a term: {t!r}")


def _needs(t: Term, want: int) -> list[tuple[Term, int]]:
    """What computing ``want`` (cases or condition) of ``t`` needs first, of its operands."""
    if isinstance(t, (Num, Var)):
        return []
    if want == _BOOL:
        if isinstance(t, Logic):
            return [(a, _BOOL) for a in t.args]
        if isinstance(t, Cond):
            return [(t.test, _BOOL), (t.then, _BOOL), (t.other, _BOOL)]
        if isinstance(t, Cmp) and _compare_node(t) is not None:
            return []
        return [(t, _CASES)]
    if isinstance(t, Logic):
        return [(t, _BOOL)]
    if isinstance(t, Cond):
        return [(t.test, _BOOL), (t.then, _CASES), (t.other, _CASES)]
    return [(a, _CASES) for a in _term_children(t)]


def _walk(root: Term, want: int, memo: dict | None = None) -> Any:
    """The cases or the condition of ``root``, computed with an explicit stack (MathML and MaBoSS
    terms may nest deeper than Python's recursion limit)."""
    memo = {} if memo is None else memo  # (id of a term, _CASES | _BOOL) -> its cases | condition
    stack: list[tuple[Term, int, bool]] = [(root, want, False)]
    while stack:
        t, w, ready = stack.pop()
        key = (id(t), w)
        if key in memo:
            continue
        if not ready:
            stack.append((t, w, True))
            stack.extend((c, cw, False) for c, cw in reversed(_needs(t, w)) if (id(c), cw) not in memo)
            continue
        memo[key] = _one_bool(t, memo) if w == _BOOL else _one_cases(t, memo)
    return memo[(id(root), want)]


def _one_cases(t: Term, memo: dict) -> dict[float, Expr]:
    """The cases of ``t`` from those (and conditions) of its operands in ``memo``."""
    def sub(a: Term) -> dict[float, Expr]:
        return memo[(id(a), _CASES)]

    if isinstance(t, Num):
        return {_key(float(t.value)): TRUE}
    if isinstance(t, Var):
        return {1.0: t, 0.0: Not(t)}
    if isinstance(t, Logic):
        b = memo[(id(t), _BOOL)]
        return _merge([(1.0, b), (0.0, mk_not(b))])
    if isinstance(t, Cond):
        b = memo[(id(t.test), _BOOL)]
        pairs = [(v, mk_and(b, g)) for v, g in sub(t.then).items()]
        pairs += [(v, mk_and(mk_not(b), g)) for v, g in sub(t.other).items()]
        return _prune(_merge(pairs))
    if isinstance(t, Neg):
        return _merge([(_arith("-", 0.0, v), g) for v, g in sub(t.arg).items()])
    if isinstance(t, (BinOp, Cmp)):
        left, right = sub(t.left), sub(t.right)
        if len(left) * len(right) > MAX_CASES:
            raise TooComplex(f"the expression takes more than {MAX_CASES} distinct values")
        if isinstance(t, BinOp):
            pairs = [(_arith(t.op, a, b), mk_and(ga, gb)) for a, ga in left.items() for b, gb in right.items()]
        else:
            pairs = [(float(_CMP[t.op](a, b)), mk_and(ga, gb)) for a, ga in left.items() for b, gb in right.items()]
        return _prune(_merge(pairs))
    if isinstance(t, Call):
        combos: list[tuple[list[float], Expr]] = [([], TRUE)]
        for a in t.args:
            ca = sub(a)
            if len(combos) * len(ca) > MAX_CASES:
                raise TooComplex(f"the expression takes more than {MAX_CASES} distinct values")
            combos = [(vs + [v], mk_and(g, ga)) for vs, g in combos for v, ga in ca.items()]
        return _prune(_merge([(_call(t.func, vs), g) for vs, g in combos]))
    raise TypeError(f"not a term: {t!r}")


def _prune(table: dict[float, Expr]) -> dict[float, Expr]:
    return {v: g for v, g in table.items() if satisfiable(g)}


def _one_bool(t: Term, memo: dict) -> Expr:
    """The condition of ``t`` from those (or its own cases) in ``memo``."""
    if isinstance(t, Num):
        return Const(float(t.value) != 0 or math.isnan(float(t.value)))
    if isinstance(t, Var):
        return t
    if isinstance(t, Logic):
        args = [memo[(id(a), _BOOL)] for a in t.args]
        if t.op == "not":
            return mk_not(args[0])
        return {"and": mk_and, "or": mk_or, "xor": mk_xor}[t.op](*args)
    if isinstance(t, Cond):
        b, then, other = (memo[(id(x), _BOOL)] for x in (t.test, t.then, t.other))
        return mk_or(mk_and(b, then), mk_and(mk_not(b), other))
    if isinstance(t, Cmp):
        simple = _compare_node(t)
        if simple is not None:
            return simple
    return mk_or(*[g for v, g in memo[(id(t), _CASES)].items() if v != 0])


def _compare_node(t: Cmp) -> Expr | None:
    """``X op c`` or ``c op X`` for a node X and a constant c, written as X, !X or a constant."""
    if isinstance(t.left, Var) and isinstance(t.right, Num):
        var, c, op = t.left, float(t.right.value), t.op
        at = {v: bool(_CMP[op](v, c)) for v in (0.0, 1.0)}
    elif isinstance(t.right, Var) and isinstance(t.left, Num):
        var, c, op = t.right, float(t.left.value), t.op
        at = {v: bool(_CMP[op](c, v)) for v in (0.0, 1.0)}
    else:
        return None
    if at[0.0] == at[1.0]:
        return Const(at[0.0])
    return var if at[1.0] else Not(var)
