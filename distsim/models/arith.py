"""Arithmetic expressions for kinetic laws: an immutable AST, a safe parser (never ``eval``),
evaluation, and a compact stack program that the SSA kernels interpret on CPU and GPU.

Grammar::

    expr   := term (('+' | '-') term)*
    term   := unary (('*' | '/') unary)*
    unary  := '-' unary | '+' unary | power   # so -2^2 = -(2^2)
    power  := atom ('^' unary)?              # right-associative: 2^3^2 = 2^(3^2)
    atom   := NUMBER | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'

Functions: exp, log (natural), log10, sqrt, pow, abs, min, max, floor, ceil, sin, cos (the last two only
in the hybrid loop: :func:`distsim.backends.dsmath.ds_sin`), and :data:`ELEMENTARY` (sinh, ..., arccoth,
tan, sec, csc, cot: :func:`elementary`). A NAME resolves (via
the caller) to a species count or a parameter value. Numbers must be finite (``1e309`` is an
error); parentheses, calls, signs and powers nest at most :data:`MAX_DEPTH` deep.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Mapping, TypeVar

import numpy as np

from ..errors import ModelError

T = TypeVar("T")


class Node:
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Num(Node):
    value: float


@dataclass(frozen=True, slots=True)
class Species(Node):
    index: int


@dataclass(frozen=True, slots=True)
class Param(Node):
    name: str


@dataclass(frozen=True, slots=True)
class Time(Node):
    """The simulation time (SBML's ``time`` symbol): in event triggers, event assignments and
    assignment rules (:mod:`distsim.models.events`), and in kinetic laws and rate rules, which the
    SSA's hybrid loop integrates (:mod:`distsim.models.compile_events`)."""


@dataclass(frozen=True, slots=True)
class Relation(Node):
    """A comparison (``op`` in REL_OPS[:6], two args) or logical operator (and/or/xor: two or more
    args, not: one) with value 1.0 (true) or 0.0; in piecewise conditions (SBML readers)."""

    op: str
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Piecewise(Node):
    """``value_1 if cond_1 else value_2 if cond_2 ... else otherwise`` (conditions: nonzero is true)."""

    pieces: tuple[tuple[Node, Node], ...]  # (value, condition)
    otherwise: Node


@dataclass(frozen=True, slots=True)
class BinOp(Node):
    op: str  # + - * / ^
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Neg(Node):
    arg: Node


@dataclass(frozen=True, slots=True)
class Call(Node):
    func: str
    args: tuple[Node, ...]


FUNCS: dict[str, tuple[int, Callable]] = {
    "exp": (1, np.exp), "log": (1, np.log), "ln": (1, np.log), "log10": (1, np.log10), "sqrt": (1, np.sqrt),
    "abs": (1, np.abs), "floor": (1, np.floor), "ceil": (1, np.ceil), "pow": (2, np.power),
    "min": (2, np.minimum), "max": (2, np.maximum), "sin": (1, np.sin), "cos": (1, np.cos),
}

MAX_DEPTH = 100
_TOKEN = re.compile(r"\s*(?:(?P<num>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z_0-9]*)|"
                    r"(?P<op>\*\*|[-+*/^(),]))")


def parse_arith(text: str, resolve: Callable[[str], Node], *, file: str | None = None, line: int | None = None,
                column: int = 1) -> Node:
    """Parse a kinetic law; ``resolve(name)`` returns a :class:`Species` or :class:`Param` or raises KeyError."""
    toks: list[tuple[str, str, int]] = []
    pos = 0
    s = text.rstrip()
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if not m or m.end() == pos:
            bad = s[pos:].lstrip()[:1]
            raise ModelError(f"unexpected character {bad!r} in expression", file=file, line=line, column=column + pos)
        kind = m.lastgroup
        val = m.group(kind)
        toks.append((kind, "^" if val == "**" else val, column + m.start(kind)))
        pos = m.end()
    end = column + len(s)
    i = 0
    depth = 0  # open parentheses, calls, signs and powers

    def err(msg: str, col: int) -> ModelError:
        return ModelError(msg, file=file, line=line, column=col)

    def peek():
        return toks[i] if i < len(toks) else None

    def take(op: str) -> bool:
        nonlocal i
        t = peek()
        if t and t[0] == "op" and t[1] == op:
            i += 1
            return True
        return False

    def left_assoc(ops: str, sub: Callable[[], Node]) -> Callable[[], Node]:
        def rule() -> Node:
            node = sub()
            while True:
                for op in ops:
                    if take(op):
                        node = BinOp(op, node, sub())
                        break
                else:
                    return node

        return rule

    def unary() -> Node:
        nonlocal depth
        signs = []
        while (t := peek()) is not None and t[0] == "op" and t[1] in "+-":
            signs.append(t[1])
            take(t[1])
        negs = signs.count("-")
        depth += 1 + negs
        if depth > MAX_DEPTH:
            raise err(f"expression nested too deeply (parentheses, calls, signs and powers more than {MAX_DEPTH} "
                      "deep)", t[2] if t else end)
        node = power()
        for _ in range(negs):
            node = Neg(node)
        depth -= 1 + negs
        return node

    def power() -> Node:
        base = atom()
        if take("^"):
            return BinOp("^", base, unary())
        return base

    def atom() -> Node:
        nonlocal i
        t = peek()
        if t is None:
            raise err("expression ends where an operand was expected", end)
        kind, val, col = t
        i += 1
        if kind == "num":
            value = float(val)
            if not math.isfinite(value):
                raise err(f"number {val[:20]}{'...' if len(val) > 20 else ''} is too large", col)
            return Num(value)
        if kind == "name":
            if take("("):
                if val not in FUNCS:
                    raise err(f"unknown function {val!r}", col)
                args = [expr()]
                while take(","):
                    args.append(expr())
                if not take(")"):
                    t2 = peek()
                    raise err("expected ')'", t2[2] if t2 else end)
                arity = FUNCS[val][0]
                if len(args) != arity:
                    raise err(f"{val}() takes {arity} argument(s), got {len(args)}", col)
                return Call("log" if val == "ln" else val, tuple(args))
            try:
                return resolve(val)
            except KeyError:
                raise err(f"unknown name {val!r} (not a species or parameter)", col) from None
        if val == "(":
            node = expr()
            if not take(")"):
                t2 = peek()
                raise err("expected ')'", t2[2] if t2 else end)
            return node
        raise err(f"unexpected {val!r}", col)

    term = left_assoc("*/", unary)
    expr = left_assoc("+-", term)

    if not toks:
        raise err("empty expression", column)
    node = expr()
    if i != len(toks):
        raise err(f"unexpected {toks[i][1]!r} after a complete expression", toks[i][2])
    return node


def walk(node: Node):
    """Every node of the tree, depth first."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, BinOp):
            stack += [n.right, n.left]
        elif isinstance(n, Neg):
            stack.append(n.arg)
        elif isinstance(n, (Call, Relation)):
            stack.extend(reversed(n.args))
        elif isinstance(n, Piecewise):
            stack.append(n.otherwise)
            for v, c in reversed(n.pieces):
                stack += [c, v]


def species_of(node: Node) -> tuple[int, ...]:
    """Sorted indices of the species the expression reads."""
    return tuple(sorted({n.index for n in walk(node) if isinstance(n, Species)}))


def params_of(node: Node) -> tuple[str, ...]:
    """Sorted names of the parameters the expression reads."""
    return tuple(sorted({n.name for n in walk(node) if isinstance(n, Param)}))


def evaluate(node: Node, x: np.ndarray, params: Mapping[str, float], t: float = 0.0) -> np.ndarray:
    """Evaluate on species counts ``x[..., n_species]`` at time ``t`` (vectorised)."""
    x = np.asarray(x, dtype=np.float64)
    shape = x.shape[:-1]

    def go(n: Node):
        if isinstance(n, Num):
            return np.full(shape, n.value)
        if isinstance(n, Species):
            return x[..., n.index]
        if isinstance(n, Param):
            return np.full(shape, float(params[n.name]))
        if isinstance(n, Time):
            return np.full(shape, float(t))
        if isinstance(n, Neg):
            return -go(n.arg)
        if isinstance(n, BinOp):
            a, b = go(n.left), go(n.right)
            return {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "^": np.power}[n.op](a, b)
        if isinstance(n, Call):
            return FUNCS[n.func][1](*[go(a) for a in n.args])
        if isinstance(n, Relation):
            vals = [go(a) for a in n.args]
            if n.op == "not":
                return np.where(vals[0] != 0, 0.0, 1.0)
            if n.op in _REL_FUNCS:
                return _REL_FUNCS[n.op](vals[0], vals[1]).astype(np.float64)
            out = vals[0] != 0
            for v in vals[1:]:
                out = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[n.op](out, v != 0)
            return out.astype(np.float64)
        if isinstance(n, Piecewise):
            out = go(n.otherwise)
            for v, c in reversed(n.pieces):
                out = np.where(go(c) != 0, go(v), out)
            return out
        raise TypeError(n)

    with np.errstate(divide="ignore", invalid="ignore"):
        return go(node)


def to_text(node: Node, species: tuple[str, ...] | list[str]) -> str:
    def go(n: Node, parent: int) -> str:
        if isinstance(n, Num):
            return repr(n.value)
        if isinstance(n, Species):
            return species[n.index]
        if isinstance(n, Param):
            return n.name
        if isinstance(n, Time):
            return "time"
        if isinstance(n, Neg):
            txt = f"-{go(n.arg, 4)}"
            return f"({txt})" if parent >= 4 else txt  # a negative base of ^ needs parentheses
        if isinstance(n, Call):
            return f"{n.func}({', '.join(go(a, 0) for a in n.args)})"
        if isinstance(n, Relation):
            if n.op == "not":
                return f"not ({go(n.args[0], 0)})"
            return "(" + f" {n.op} ".join(f"({go(a, 0)})" for a in n.args) + ")"
        if isinstance(n, Piecewise):
            parts = [go(x, 0) for v, c in n.pieces for x in (v, c)] + [go(n.otherwise, 0)]
            return f"piecewise({', '.join(parts)})"
        prec = {"+": 1, "-": 1, "*": 2, "/": 2, "^": 3}[n.op]
        right_prec = prec + (0 if n.op == "^" else 1)
        txt = f"{go(n.left, prec + (1 if n.op == '^' else 0))} {n.op} {go(n.right, right_prec)}"
        return f"({txt})" if prec < parent else txt

    return go(node, 0)


# ----------------------------------------------------------------------------------------------
# stack program (interpreted by the SSA kernels)

OP_PUSH_CONST, OP_PUSH_SPECIES, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW, OP_NEG, OP_PUSH_TIME = range(9)
OP_FUNC_BASE = 16
FUNC_CODES = {name: OP_FUNC_BASE + k for k, name in enumerate(["exp", "log", "log10", "sqrt", "abs", "floor", "ceil",
                                                                "pow", "min", "max", "sin", "cos"])}
TRIG_CODES = (FUNC_CODES["sin"], FUNC_CODES["cos"])  # unary, after the binary ones: only the hybrid loop runs them
# relations and piecewise (only the hybrid loop's programs run them): comparisons, then logical operators
# (distsim.models.events uses the same codes in triggers), and select (pops value, condition, otherwise)
REL_OPS = ("<", "<=", ">", ">=", "==", "!=", "and", "or", "xor", "not")
OP_REL_BASE = OP_FUNC_BASE + 32
REL_CODES = {op: OP_REL_BASE + k for k, op in enumerate(REL_OPS)}
OP_SELECT = OP_REL_BASE + len(REL_OPS) + 1  # (OP_REL_BASE + len(REL_OPS): events' OP_PUSH_BOOL)
_REL_FUNCS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
              "!=": np.not_equal}


def has_logic(node: Node) -> bool:
    """Whether an expression holds a relation or piecewise (only the hybrid loop evaluates them)."""
    return any(isinstance(n, (Relation, Piecewise)) for n in walk(node))


def compile_stack(node: Node, params: Mapping[str, float], slots: list[tuple[int, str]] | None = None
                  ) -> tuple[list[tuple[int, float]], int]:
    """Postfix program [(op, operand)] with parameters folded to constants; returns (program, max stack depth).
    ``slots``: receives (position in the program, parameter name) of every folded parameter."""
    prog: list[tuple[int, float]] = []
    depth = 0
    best = 0

    def push(op: int, arg: float, delta: int) -> None:
        nonlocal depth, best
        prog.append((op, arg))
        depth += delta
        best = max(best, depth)

    def go(n: Node) -> None:
        if isinstance(n, Num):
            push(OP_PUSH_CONST, n.value, 1)
        elif isinstance(n, Param):
            if slots is not None:
                slots.append((len(prog), n.name))
            push(OP_PUSH_CONST, float(params[n.name]), 1)
        elif isinstance(n, Species):
            push(OP_PUSH_SPECIES, float(n.index), 1)
        elif isinstance(n, Time):
            push(OP_PUSH_TIME, 0.0, 1)
        elif isinstance(n, Neg):
            go(n.arg)
            push(OP_NEG, 0.0, 0)
        elif isinstance(n, BinOp):
            go(n.left)
            go(n.right)
            push({"+": OP_ADD, "-": OP_SUB, "*": OP_MUL, "/": OP_DIV, "^": OP_POW}[n.op], 0.0, -1)
        elif isinstance(n, Call) and n.func in _EXPANSION:
            go(elementary(n.func, n.args[0]))
        elif isinstance(n, Call):
            for a in n.args:
                go(a)
            push(FUNC_CODES[n.func], 0.0, 1 - len(n.args))
        elif isinstance(n, Relation):
            go(n.args[0])
            if n.op == "not":
                push(REL_CODES["not"], 0.0, 0)
            for a in n.args[1:]:
                go(a)
                push(REL_CODES[n.op], 0.0, -1)
        elif isinstance(n, Piecewise):
            def piece(i: int) -> None:  # value_i, cond_i, (the rest), select
                if i == len(n.pieces):
                    go(n.otherwise)
                    return
                go(n.pieces[i][0])
                go(n.pieces[i][1])
                piece(i + 1)
                push(OP_SELECT, 0.0, -2)
            piece(0)
        else:
            raise TypeError(n)

    go(node)
    return prog, best


ELEMENTARY = ("sinh", "cosh", "tanh", "sech", "csch", "coth", "arcsinh", "arccosh", "arctanh", "arcsech",
              "arccsch", "arccoth", "tan", "sec", "csc", "cot")


def elementary(func: str, x: Node) -> Node:
    """MathML's hyperbolic functions, their inverses, tan, sec, csc and cot as trees of exp, log, sqrt,
    sin, cos, min, max and arithmetic, expanded when compiled (:func:`compile_stack`) and evaluated
    (:func:`evaluate`) -- the tree keeps the call, one factor to the law's analyses (its sign is checked at
    run time, as sin's) -- so CPU and GPU evaluate them with the same bits (distsim's own
    exp/log/sin/cos, :mod:`distsim.backends.dsmath`) and no kernel needs a new operation. Overflow
    gives the limit (tanh(800) = 1, cosh(800) = inf); near 0 sinh, tanh and arctanh err by a few ulps
    of 1 (absolute, not of the value: exp(x) - exp(-x) cancels), so csch and coth, their reciprocals, by
    a few ulps of f^2 (relative eps / |x|). ``x`` may appear more than once (the tree shares it)."""
    one, two, half = Num(1.0), Num(2.0), Num(0.5)

    def div(a: Node, b: Node) -> Node:
        return BinOp("/", a, b)

    def e(a: Node) -> Node:
        return Call("exp", (a,))

    def ln(a: Node) -> Node:
        return Call("log", (a,))

    def tanh(a: Node) -> Node:  # 1 - 2 / (e^2a + 1): exact limits +-1, no inf / inf
        return BinOp("-", one, div(two, BinOp("+", e(BinOp("*", two, a)), one)))

    def asinh(a: Node) -> Node:  # sign(a) log(|a| + sqrt(a^2 + 1)): no cancellation for a < 0
        sign = Call("min", (Call("max", (BinOp("*", BinOp("*", a, Num(1e300)), Num(1e300)), Num(-1.0))), one))
        return BinOp("*", sign, ln(BinOp("+", Call("abs", (a,)), Call("sqrt", (BinOp("+", BinOp("*", a, a), one),)))))

    def acosh(a: Node) -> Node:
        return ln(BinOp("+", a, Call("sqrt", (BinOp("-", BinOp("*", a, a), one),))))

    def atanh(a: Node) -> Node:
        return BinOp("*", half, ln(div(BinOp("+", one, a), BinOp("-", one, a))))

    sin, cos = Call("sin", (x,)), Call("cos", (x,))
    forms = {
        "sinh": lambda: BinOp("*", half, BinOp("-", e(x), e(Neg(x)))),
        "cosh": lambda: BinOp("*", half, BinOp("+", e(x), e(Neg(x)))),
        "tanh": lambda: tanh(x),
        "sech": lambda: div(two, BinOp("+", e(x), e(Neg(x)))),
        "csch": lambda: div(two, BinOp("-", e(x), e(Neg(x)))),
        "coth": lambda: div(one, tanh(x)),
        "arcsinh": lambda: asinh(x), "arccosh": lambda: acosh(x), "arctanh": lambda: atanh(x),
        "arcsech": lambda: acosh(div(one, x)), "arccsch": lambda: asinh(div(one, x)),
        "arccoth": lambda: atanh(div(one, x)),
        "tan": lambda: div(sin, cos), "sec": lambda: div(one, cos), "csc": lambda: div(one, sin),
        "cot": lambda: div(cos, sin),
    }
    return forms[func]()


def _expansion_cost(func: str) -> tuple[int, int, int]:
    """(nodes besides the argument, uses of the argument, depth above the argument) of ``func``'s expansion."""
    hole = Param("\0")
    size = depth = uses = 0
    stack: list[tuple[Node, int]] = [(elementary(func, hole), 1)]
    while stack:
        n, d = stack.pop()
        if n is hole:
            uses += 1
            depth = max(depth, d - 1)
            continue
        size += 1
        stack.extend((k, d + 1) for k in children(n))
    return size, uses, depth


def fold(root: Node, visit: Callable[[Node, list], T]) -> T:
    """``visit(n, [the values of n's children])`` for every node after its children, once per distinct
    node (memoised by identity: a shared subtree costs one visit); the root's value. An explicit stack:
    no recursion on the depth."""
    val: dict[int, T] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        n, ready = stack.pop()
        if id(n) in val:
            continue
        kids = children(n)
        if not ready and kids:
            stack.append((n, True))
            stack.extend((k, False) for k in kids if id(k) not in val)
            continue
        val[id(n)] = visit(n, [val[id(k)] for k in kids])
    return val[id(root)]


def tree_size(node: Node, limit: int) -> int:
    """Nodes of the expression counted as a tree (a shared subtree once per use), capped at ``limit`` + 1."""
    def visit(n: Node, kids: list[int]) -> int:
        if isinstance(n, Call) and n.func in _EXPANSION:  # as compiled: its expansion, the argument used k times
            extra, uses, _ = _EXPANSION[n.func]
            return min(limit + 1, extra + uses * kids[0])
        return min(limit + 1, 1 + sum(kids))
    return fold(node, visit)


def tree_depth(node: Node) -> int:
    """Nesting depth of the expression (a leaf: 1; explicit stack)."""
    best = 0
    stack = [(node, 1)]
    while stack:
        n, d = stack.pop()
        best = max(best, d)
        step = _EXPANSION[n.func][2] if isinstance(n, Call) and n.func in _EXPANSION else 1
        stack.extend((k, d + step) for k in children(n))
    return best


def children(n: Node) -> tuple[Node, ...]:
    """The operands of a node (none for a leaf)."""
    if isinstance(n, BinOp):
        return n.left, n.right
    if isinstance(n, Neg):
        return (n.arg,)
    if isinstance(n, (Call, Relation)):
        return n.args
    if isinstance(n, Piecewise):
        return (*[x for p in n.pieces for x in p], n.otherwise)
    return ()


_EXPANSION = {f: _expansion_cost(f) for f in ELEMENTARY}
FUNCS.update({f: (1, lambda a, f=f: evaluate(elementary(f, Species(0)), np.asarray(a, dtype=np.float64)[..., None], {}))
              for f in ELEMENTARY})
TRIG_FUNCS = ("sin", "cos", "tan", "sec", "csc", "cot")  # calls that only the hybrid loop evaluates (sin, cos)


def is_finite_constant(node: Node, params: Mapping[str, float]) -> bool:
    return not species_of(node) and math.isfinite(float(evaluate(node, np.zeros((1, 1)), params)[0]))
