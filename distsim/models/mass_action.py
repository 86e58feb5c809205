"""Recognise mass action in kinetic laws written as expressions (SBML, GillesPy2, antimony).

A law *is* a propensity (see :mod:`distsim.models.formats.sbml` for the convention). It is
recognised as **mass action** only when it equals a distsim mass-action propensity exactly, as a
function of the counts: ``law(x) = c * p * prod_i C(x_i, r_i)`` where ``r_i`` are the reaction's
reactant stoichiometries, ``p`` is at most one rate parameter (to the power 1) and ``c`` is a
constant made of numbers and compartment sizes. Species factors must be the falling factorial
``x (x - 1) ... (x - r + 1)`` (= ``r! C(x, r)``), in any order and grouping. So:

* ``k1 * E * S`` (E + S -> ...), ``k * A * (A - 1) / 2`` (2A -> ...), ``k`` (0 -> ...) are mass action
  with theta = ``k``; with concentrations (``hasOnlySubstanceUnits=false``) the volume factors
  go into ``c``: ``V * k1 * (E/V) * (S/V)`` has ``c = 1/V``.
* ``k * A^2`` or ``k * A * A`` on ``2A -> ...`` is **not** mass action: its value k x^2 differs from
  theta x (x - 1) / 2 for every theta. It stays a general law with propensity k x^2.
* ``k * A * (A - 1)`` on ``2A -> ...`` has the mass-action shape with ``c = 2``.

:func:`mass_action_shape` returns the shape; a caller makes a mass-action reaction only when
``c == 1`` (theta is then the parameter itself, so rate inference can use it) or when there is no
parameter (theta = ``c``); otherwise the law stays a general law (same propensity).
:func:`split_difference` splits ``F - B`` (possibly times common factors, ``V * (F - B)``) for
reversible reactions; :func:`signed_parts` splits any law into its positive and negative terms
(the general net-rate split of the SBML reader). :func:`falling_powers` rewrites ``k * A^2`` on
``2A -> ...`` to ``k * A * (A - 1)`` (the SBML reader's ``mass_action="stochastic"``).
:func:`nonnegative`, :func:`positive_part` and :func:`at_least` are the pieces of the SBML reader's
``guard=True`` reading (sign split and reactant guard, arithmetic only: no kernel changes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from .arith import BinOp, Call, Neg, Node, Num, Param, Piecewise, Relation, Species, Time, children, evaluate, fold

__all__ = ["MassActionShape", "mass_action_shape", "falling_powers", "split_difference", "signed_parts", "mixed_factors", "vanishes_without", "cancel_species",
           "nonnegative", "sign_bits", "sign_of_number", "parameter_signs", "positive_part", "at_least",
           "SIGN_POS", "SIGN_NEG", "SIGN_ANY", "UNIT_TOLERANCE"]

UNIT_TOLERANCE = 1e-12  # |c - 1| below which the constant factor counts as 1 (float rounding of V * (1/V) etc.)
_MAX_POWER = 64


@dataclass(frozen=True)
class MassActionShape:
    """``law(x) = factor * param * prod_i C(x_i, orders[i])`` (``param`` None: no parameter)."""

    factor: float
    param: str | None
    orders: dict[int, int]

    def is_unit(self) -> bool:
        return abs(self.factor - 1.0) <= UNIT_TOLERANCE


def mass_action_shape(law: Node, constants: Mapping[str, float], rate_params: set[str] | frozenset[str]
                      ) -> MassActionShape | None:
    """The mass-action shape of ``law``, or None. ``constants``: parameters folded into the factor
    (compartment sizes); ``rate_params``: parameters that may be the rate constant."""
    product = _Product()
    stack: list[tuple[Node, int]] = [(law, 1)]
    while stack:
        n, e = stack.pop()
        if isinstance(n, BinOp) and n.op in "*/":
            stack.append((n.left, e))
            stack.append((n.right, e if n.op == "*" else -e))
        elif isinstance(n, BinOp) and n.op == "^":
            power = _whole_power(n.right)
            if power is None:
                return None
            stack.extend([(n.left, e)] * power)
        elif isinstance(n, Neg):
            product.factor = -product.factor
            stack.append((n.arg, e))
        elif not product.multiply(n, e, constants, rate_params):
            return None
    return product.shape()


@dataclass
class _Product:
    """The factors of a law met so far: a constant factor, rate parameters and linear species factors."""

    factor: float = 1.0
    params: list[str] = field(default_factory=list)
    linear: dict[int, list[int]] = field(default_factory=dict)  # species -> offsets k of its factors (x - k)

    def multiply(self, n: Node, e: int, constants: Mapping[str, float], rate_params: set[str] | frozenset[str]
                 ) -> bool:
        """Multiply by ``n`` (e = 1) or divide by it (e = -1); False when that leaves mass action."""
        if isinstance(n, Num):
            self.factor *= _power(n.value, e)
        elif isinstance(n, Param) and n.name in constants:
            self.factor *= _power(float(constants[n.name]), e)
        elif isinstance(n, Param) and n.name in rate_params:
            if e < 0:
                return False
            self.params.append(n.name)
        else:
            lin = _linear_factor(n, constants)
            if lin is None or e < 0:
                return False
            i, scale, k = lin
            self.factor *= scale
            self.linear.setdefault(i, []).append(k)
        return True

    def shape(self) -> MassActionShape | None:
        """The mass-action shape of the whole product, or None."""
        if len(self.params) > 1 or not (math.isfinite(self.factor) and self.factor > 0):
            return None
        factor = self.factor
        orders: dict[int, int] = {}
        for i, offsets in self.linear.items():
            r = len(offsets)
            if sorted(offsets) != list(range(r)):
                return None
            orders[i] = r
            factor *= math.factorial(r)  # x (x-1) ... (x-r+1) = r! C(x, r)
        return MassActionShape(factor, self.params[0] if self.params else None, orders)


def _power(v: float, e: int) -> float:
    """``v`` (e > 0) or ``1 / v`` (e < 0; infinite for v = 0)."""
    return v if e > 0 else 1.0 / v if v != 0 else math.inf


def _whole_power(exponent: Node) -> int | None:
    """The exponent of ``base ^ exponent`` when it is a whole number in [0, _MAX_POWER], else None."""
    if isinstance(exponent, Num) and float(exponent.value).is_integer() and 0 <= exponent.value <= _MAX_POWER:
        return int(exponent.value)
    return None


def _linear_factor(n: Node, constants: Mapping[str, float]) -> tuple[int, float, int] | None:
    """``s * (x_i - k)`` with k >= 0 an integer, as (i, s, k): ``Species``, a concentration ``Species / V``
    (s = 1/V), either of them minus a number (``x/V - 1`` = ``(x - V)/V``: k = V must be an integer)."""
    offset = 0.0
    if isinstance(n, BinOp) and n.op in "+-" and isinstance(n.right, Num):
        offset = -n.right.value if n.op == "+" else n.right.value
        n = n.left
    if isinstance(n, Species):
        i, scale = n.index, 1.0
    elif (isinstance(n, BinOp) and n.op == "/" and isinstance(n.left, Species) and isinstance(n.right, Param)
          and n.right.name in constants and constants[n.right.name] > 0):
        i, scale = n.left.index, 1.0 / float(constants[n.right.name])
    else:
        return None
    k = offset / scale  # x * s - offset = s * (x - offset / s)
    if not (math.isfinite(k) and 0 <= k <= _MAX_POWER and abs(k - round(k)) <= UNIT_TOLERANCE * max(1.0, k)):
        return None
    return i, scale, int(round(k))


def split_difference(law: Node) -> tuple[Node, Node] | None:
    """``(F, B)`` when ``law`` is ``F - B``, possibly multiplied or divided by common factors on either
    side (``V * (F - B)`` gives ``(V * F, V * B)``); else None."""
    if isinstance(law, BinOp) and law.op == "-":
        return law.left, law.right
    if isinstance(law, BinOp) and law.op in "*/":
        inner = split_difference(law.left) if law.op == "/" else None
        if inner is not None:
            return BinOp(law.op, inner[0], law.right), BinOp(law.op, inner[1], law.right)
        if law.op == "*":
            for side in (law.left, law.right):
                inner = split_difference(side)
                if inner is not None:
                    other = law.right if side is law.left else law.left
                    if side is law.left:
                        return BinOp("*", inner[0], other), BinOp("*", inner[1], other)
                    return BinOp("*", other, inner[0]), BinOp("*", other, inner[1])
    return None


def signed_parts(law: Node, negative: frozenset[str] | set[str] = frozenset(),
                 values: Mapping[str, float] | None = None) -> tuple[Node | None, Node | None] | None:
    """``(P, N)`` with ``law = P - N`` where P and N are sums of products of factors taken as
    non-negative (None: no such terms), found by distributing products and quotients over sums and
    differences: ``V * (kf*A/(K + A) - kr*B)`` gives ``(V*(kf*A/(K + A)), V*(kr*B))``. Factors are
    species, parameters (those in ``negative`` count as negative), numbers by their sign, and -- each
    as a whole -- falling-factorial factors ``x - k``, calls and powers (their sign is checked at run
    time); a denominator with terms of both signs divides both parts whole (``1 + a - b``: its
    sign, like every factor's, is checked at run time). None when the parts would be more than
    four times the law's size (plus 64 nodes). Without recursion (explicit stack).
    ``values``: parameters that keep these values for the whole run; a subexpression of numbers and
    such parameters only is a constant, one factor of its sign (``k*A*(1 - F)`` with F = 0.2 is
    positive: no negative terms), never distributed into terms of both signs. A species that is a
    factor of both the numerator and the denominator of one term cancels (:func:`cancel_species`)."""
    done: dict[int, tuple[Node | None, Node | None]] = {}
    const: dict[int, float | None] = {}  # the value of a constant subexpression, None for the others
    stack: list[tuple[Node, bool]] = [(law, False)]
    while stack:
        n, ready = stack.pop()
        if id(n) in done:
            continue
        if _falling_factor(n):
            done[id(n)] = (n, None)
            continue
        kids = (n.left, n.right) if isinstance(n, BinOp) else (n.arg,) if isinstance(n, Neg) else ()
        if not ready and kids:
            stack.append((n, True))
            stack.extend((k, False) for k in kids)
            continue
        v = const[id(n)] = _constant(n, const, values or {})
        if v is not None and v != 0.0 and math.isfinite(v) and not isinstance(n, Num):
            done[id(n)] = (n, None) if v > 0 else (None, Neg(n))
            continue
        done[id(n)] = _signed(n, done, negative)
    p, q = (None if part is None else cancel_species(part) for part in done[id(law)])
    limit = 4 * _size(law) + 64
    if (p is not None and _size(p) > limit) or (q is not None and _size(q) > limit):
        return None
    return p, q


def cancel_species(node: Node) -> Node:
    """``node`` with every factor that reads a species and divides and multiplies one product cancelled
    (in every product, those inside sums too): ``kf * S * (P / (S * Keq))`` is ``kf * P / Keq``. This is
    the law's value wherever it is defined, and its limit where the product as written is 0 * inf or
    0 / 0 (NaN): Haldane forms ``S / K * (1 - P / (S * Keq))`` split into ``S / K`` and
    ``S / K * P / (S * Keq)``, whose backward channel would otherwise be NaN when S is absent. A
    product where nothing cancels is kept as it is (the same bits). Without recursion."""
    done: dict[tuple[int, bool], Node] = {}
    stack: list[tuple[Node, bool, bool]] = [(node, False, False)]  # (node, operands done, inside a product)
    while stack:
        n, ready, inner = stack.pop()
        if (id(n), inner) in done:
            continue
        if not isinstance(n, (BinOp, Neg)):
            done[(id(n), inner)] = n
            continue
        chain = isinstance(n, BinOp) and n.op in "*/"
        kids = (n.left, n.right) if isinstance(n, BinOp) else (n.arg,)
        if not ready:
            stack.append((n, True, inner))
            stack.extend((k, False, chain) for k in kids)
            continue
        new = [done[(id(k), chain)] for k in kids]
        if all(a is b for a, b in zip(new, kids)):
            out: Node = n
        else:
            out = BinOp(n.op, new[0], new[1]) if isinstance(n, BinOp) else Neg(new[0])
        done[(id(n), inner)] = _cancel_product(out) if chain and not inner else out
    return done[(id(node), False)]


def _cancel_product(term: Node) -> Node:
    """One product of :func:`cancel_species` (itself when nothing cancels)."""
    num, den = [], []
    factors: list[tuple[Node, bool]] = [(term, True)]
    while factors:  # flatten products and quotients: (factor, in the numerator)
        n, up = factors.pop()
        if isinstance(n, BinOp) and n.op in "*/":
            factors.extend(((n.right, up if n.op == "*" else not up), (n.left, up)))
        else:
            (num if up else den).append(n)
    table: dict[tuple, int] = {}
    keys = [_key(n, table) for n in num]
    cancelled = False
    for d in list(den):
        k = _key(d, table)
        if k in keys and _reads_species(d):
            del num[keys.index(k)]
            keys.remove(k)
            den.remove(d)
            cancelled = True
    if not cancelled:
        return term
    top, bottom = _product(num) or Num(1.0), _product(den)
    return top if bottom is None else BinOp("/", top, bottom)


def _key(root: Node, table: dict[tuple, int]) -> int:
    """A number that two nodes share exactly when they are the same tree: each distinct (kind, operator or
    value, operands' numbers) gets the next number in ``table`` (no recursion on the depth, as dataclass
    equality would)."""
    def visit(n: Node, kids: list[int]) -> int:
        head = {BinOp: lambda: n.op, Num: lambda: repr(n.value), Species: lambda: n.index,
                Param: lambda: n.name, Call: lambda: n.func, Relation: lambda: n.op}.get(type(n), lambda: "")()
        return table.setdefault((type(n).__name__, head, tuple(kids)), len(table))
    return fold(root, visit)


def _reads_species(node: Node) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Species):
            return True
        stack.extend(children(n))
    return False


def _product(factors: list[Node]) -> Node | None:
    out: Node | None = None
    for f in factors:
        out = f if out is None else BinOp("*", out, f)
    return out


def _constant(n: Node, const: dict[int, float | None], values: Mapping[str, float]) -> float | None:
    """The value of ``n`` when it is made of numbers and parameters in ``values`` only (its operands'
    values already in ``const``), else None."""
    if isinstance(n, Num):
        return n.value
    if isinstance(n, Param):
        return values.get(n.name)
    if isinstance(n, Neg):
        a = const.get(id(n.arg))
        return None if a is None else -a
    if not isinstance(n, BinOp):
        return None
    a, b = const.get(id(n.left)), const.get(id(n.right))
    if a is None or b is None:
        return None
    try:
        r = {"+": a + b, "-": a - b, "*": a * b}.get(n.op) if n.op in "+-*" else a / b if n.op == "/" else a ** b
    except (ArithmeticError, ValueError):
        return None
    return float(r) if isinstance(r, (int, float)) else None  # (a complex power is no constant of a sign)


def _falling_factor(n: Node) -> bool:
    """``x - k`` (x a species' symbol: ``Species``, or it divided by something; k >= 0 a number): a
    factor of a falling factorial ``x (x - 1) ...``, one factor for :func:`signed_parts`."""
    if not (isinstance(n, BinOp) and n.op == "-" and isinstance(n.right, Num) and n.right.value >= 0):
        return False
    x = n.left
    while isinstance(x, BinOp) and x.op == "/":
        x = x.left
    return isinstance(x, Species)


def _signed(n: Node, done: dict, negative: frozenset[str] | set[str]) -> tuple[Node | None, Node | None]:
    """(P, N) of one node from those of its operands (already in ``done``)."""
    if isinstance(n, Num):
        return (n, None) if n.value > 0 else (None, Num(-n.value)) if n.value < 0 else (None, None)
    if isinstance(n, Param) and n.name in negative:
        return None, Neg(n)
    if isinstance(n, Neg):
        p, q = done[id(n.arg)]
        return q, p
    if not isinstance(n, BinOp):
        return n, None
    (pa, na), (pb, nb) = done[id(n.left)], done[id(n.right)]
    if n.op == "+":
        return _add(pa, pb), _add(na, nb)
    if n.op == "-":
        return _add(pa, nb), _add(na, pb)
    if n.op == "*":
        return _add(_mul(pa, pb), _mul(na, nb)), _add(_mul(pa, nb), _mul(na, pb))
    if n.op == "/":
        if pb is None and nb is not None:
            return _div(na, nb), _div(pa, nb)
        return _div(pa, n.right), _div(na, n.right)  # a denominator of both signs stays whole
    return n, None  # '^': a power is one factor (its sign is checked at run time)


def _add(a: Node | None, b: Node | None) -> Node | None:
    return b if a is None else a if b is None else BinOp("+", a, b)


def _mul(a: Node | None, b: Node | None) -> Node | None:
    if a is None or b is None:
        return None
    return b if a == Num(1.0) else a if b == Num(1.0) else BinOp("*", a, b)


def _div(a: Node | None, b: Node) -> Node | None:
    return None if a is None else BinOp("/", a, b)


def _size(root: Node) -> int:
    """Nodes of the tree as written out (shared subtrees counted each time), without expanding it."""
    return fold(root, lambda n, kids: 1 + sum(kids))


def vanishes_without(node: Node, i: int) -> bool:
    """Whether ``node`` is 0 whenever species ``i`` is 0 by its form: species i is a factor of every
    term (a factor of a product, the numerator of a quotient, the base of a positive power)."""
    zero: dict[int, bool] = {}
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        n, ready = stack.pop()
        if id(n) in zero:
            continue
        kids = (n.left, n.right) if isinstance(n, BinOp) else (n.arg,) if isinstance(n, Neg) else ()
        if not ready and kids:
            stack.append((n, True))
            stack.extend((k, False) for k in kids)
            continue
        if isinstance(n, Species):
            zero[id(n)] = n.index == i
        elif isinstance(n, Neg):
            zero[id(n)] = zero[id(n.arg)]
        elif isinstance(n, BinOp):
            a, b = zero[id(n.left)], zero[id(n.right)]
            zero[id(n)] = {"*": a or b, "/": a, "+": a and b, "-": a and b,
                           "^": a and isinstance(n.right, Num) and n.right.value > 0}[n.op]
        else:
            zero[id(n)] = False
    return zero[id(node)]


def mixed_factors(law: Node, negative: frozenset[str] | set[str] = frozenset()) -> int:
    """How many factors of ``law`` (the operands of its top-level products and quotients) have terms
    of both signs by :func:`signed_parts` (``(100 - 2 * P2) * (99 - 2 * P2)``: 2, a falling factorial in
    disguise, never negative on whole counts; ``D * (c2 - c1)``: 1, a net rate)."""
    count = 0
    stack = [law]
    while stack:
        n = stack.pop()
        if isinstance(n, BinOp) and n.op in "*/":
            stack.extend((n.left, n.right))
        elif isinstance(n, Neg):
            stack.append(n.arg)
        else:
            parts = signed_parts(n, negative)
            count += parts is not None and parts[0] is not None and parts[1] is not None
    return count


def falling_powers(law: Node, orders: Mapping[int, int], constants: Mapping[str, float],
                   rate_params: set[str] | frozenset[str]) -> Node | None:
    """``law`` with each reactant power x^r (r > 1) made the falling factorial x (x - 1) ... (x - r + 1),
    or None when that changes nothing or the result is not of exact mass-action shape in ``orders``.

    The textbook conversion of a deterministic mass-action rate to a propensity (Gillespie 1977):
    ``k * A^2`` (or ``k * A * A``, ``k * (A/V)^2``) on ``2A -> ...`` becomes ``k * A * (A - 1)``
    (``k * (A/V) * ((A - 1)/V)``); the mean-field limit is the law. Only the bare species factors of
    reactants consumed more than once change (the k-th occurrence of x becomes x - k), and only when
    every such factor of them is bare (a law already written with falling factorials is left alone).
    Without recursion (explicit stacks)."""
    targets = {i for i, r in orders.items() if r > 1}
    if not targets:
        return None
    seen = {i: 0 for i in targets}
    values: list[Node] = []
    tasks: list[tuple[str, Node | int]] = [("visit", law)]
    while tasks:
        what, n = tasks.pop()
        if what == "visit":
            assert isinstance(n, Node)
            power = _whole_power(n.right) if isinstance(n, BinOp) and n.op == "^" else None
            if power is not None and power > 0 and _has_species(n.left, targets):  # type: ignore[union-attr]
                tasks.append(("power", power))
                tasks.extend([("visit", n.left)] * power)  # type: ignore[union-attr]
            elif isinstance(n, BinOp) and n.op in "*/":
                tasks.extend([("binop", n), ("visit", n.right), ("visit", n.left)])
            elif isinstance(n, Neg):
                tasks.extend([("neg", n), ("visit", n.arg)])
            elif isinstance(n, Species) and n.index in targets:
                k = seen[n.index]
                seen[n.index] = k + 1
                values.append(n if k == 0 else BinOp("-", n, Num(float(k))))
            else:
                values.append(n)
        elif what == "binop":
            assert isinstance(n, BinOp)
            right, left = values.pop(), values.pop()
            values.append(BinOp(n.op, left, right))
        elif what == "neg":
            values.append(Neg(values.pop()))
        else:  # "power": the product of its expanded factors
            assert isinstance(n, int)
            factors = values[-n:]
            del values[-n:]
            out = factors[0]
            for f in factors[1:]:
                out = BinOp("*", out, f)
            values.append(out)
    if any(seen[i] != orders[i] for i in targets):
        return None
    new = values.pop()
    shape = mass_action_shape(new, constants, rate_params)
    return new if shape is not None and shape.orders == dict(orders) else None


def _has_species(n: Node, targets: set[int]) -> bool:
    """Whether a bare factor of ``n``'s product structure (``*``, ``/``, whole powers, ``-``) is one of ``targets``."""
    stack = [n]
    while stack:
        m = stack.pop()
        if isinstance(m, Species) and m.index in targets:
            return True
        if isinstance(m, BinOp) and (m.op in "*/" or (m.op == "^" and _whole_power(m.right) is not None)):
            stack.extend((m.left,) if m.op == "^" else (m.left, m.right))
        elif isinstance(m, Neg):
            stack.append(m.arg)
    return False


# Signs as bits: SIGN_POS = may be > 0, SIGN_NEG = may be < 0 (0: always 0; SIGN_ANY: either sign).
SIGN_POS, SIGN_NEG = 1, 2
SIGN_ANY = SIGN_POS | SIGN_NEG
_SAME_SIGN = frozenset({"floor", "ceil", "sinh", "tanh", "arcsinh", "arctanh"})  # sign(f(a)) = sign(a) or 0
_NONNEG_FUNCS = frozenset({"exp", "sqrt", "abs", "cosh", "sech", "arccosh"})  # >= 0 (or NaN)


def _flip(s: int) -> int:
    return ((s & SIGN_POS) << 1) | ((s & SIGN_NEG) >> 1)


def sign_of_number(v: float) -> int:
    """The sign bits of a number (NaN: either sign)."""
    return SIGN_ANY if v != v else (SIGN_POS if v > 0 else 0) | (SIGN_NEG if v < 0 else 0)


def _sign_step(n: Node, kids: list[int], signs: Mapping[str, int]) -> int:
    """The sign bits of ``n`` from its operands' (:func:`sign_bits`)."""
    if isinstance(n, Num):
        return sign_of_number(n.value)
    if isinstance(n, (Species, Time, Relation)):  # counts, time (from 0) and truth values are >= 0
        return SIGN_POS
    if isinstance(n, Param):
        return signs.get(n.name, SIGN_ANY)
    if isinstance(n, Neg):
        return _flip(kids[0])
    if isinstance(n, Piecewise):  # any of its values (the conditions do not matter)
        out = 0
        for k in kids[0:-1:2] + [kids[-1]]:
            out |= k
        return out
    if isinstance(n, Call) and n.func in ("min", "max"):
        a, b = kids
        if n.func == "min":
            return (a & b & SIGN_POS) | ((a | b) & SIGN_NEG)
        return ((a | b) & SIGN_POS) | (a & b & SIGN_NEG)
    if isinstance(n, Call):
        if n.func in _NONNEG_FUNCS:
            return SIGN_POS
        if n.func in _SAME_SIGN:
            return kids[0]
        if n.func == "pow":
            return _power_sign(kids[0], n.args[1])
        return SIGN_ANY  # log, sin, cos, tan, ...
    if isinstance(n, BinOp):
        a, b = kids
        if n.op == "+":
            return a | b
        if n.op == "-":
            return a | _flip(b)
        if n.op in "*/":
            pos = SIGN_POS if (a & SIGN_POS and b & SIGN_POS) or (a & SIGN_NEG and b & SIGN_NEG) else 0
            neg = SIGN_NEG if (a & SIGN_POS and b & SIGN_NEG) or (a & SIGN_NEG and b & SIGN_POS) else 0
            return pos | neg
        return _power_sign(a, n.right)
    return SIGN_ANY


def _power_sign(base: int, exponent: Node) -> int:
    """Sign bits of ``base ^ exponent``: a base >= 0 gives >= 0 (or NaN / inf); a number exponent: even
    gives >= 0, odd keeps the base's sign, not whole gives >= 0 or NaN (a negative base); else either."""
    if not base & SIGN_NEG:
        return SIGN_POS
    if isinstance(exponent, Num):
        if not float(exponent.value).is_integer():
            return SIGN_POS
        return SIGN_POS if int(exponent.value) % 2 == 0 else base
    return SIGN_ANY


def sign_bits(node: Node, signs: Mapping[str, int], values: Mapping[str, float] | None = None) -> int:
    """The signs ``node`` may take in any state, by its form (where it is finite): every operation
    keeps what its operands' signs decide. Counts, time and truth values are >= 0; a parameter has its
    bits in ``signs`` (absent: either sign); a subexpression of numbers and parameters in ``values`` (one
    value for the run) has the sign of its value (``1 - F`` with F = 0.2). ``a - b``, ``-a``, logs and sines
    may have either sign unless the operands' signs decide it. Conservative: a sign this allows need not
    occur. Explicit stack."""
    values = values or {}

    def visit(n: Node, kids: list[tuple[int, bool]]) -> tuple[int, bool]:
        constant = (all(c for _, c in kids) if kids else isinstance(n, Num) or (isinstance(n, Param)
                                                                                and n.name in values))
        if constant and kids and not isinstance(n, (Relation, Piecewise)):
            with np.errstate(all="ignore"):
                return sign_of_number(float(evaluate(n, np.zeros((1, 0)), values)[0])), True
        return _sign_step(n, [b for b, _ in kids], signs), constant

    return fold(node, visit)[0]


def parameter_signs(fixed: Mapping[str, float], assigned: Mapping[str, list[Node]], initial: Mapping[str, float]
                    ) -> dict[str, int]:
    """Sign bits of every parameter: ``fixed`` ones (one value for the run) the sign of their value; an
    ``assigned`` one (by rules or events: the expressions that give it values) the union of the signs of
    its expressions and of its ``initial`` value if any (an event-assigned parameter until its first
    event), to the least fixed point (a rule may read another rule's parameter). A parameter neither fixed
    nor assigned (a rate rule's) is left out: either sign."""
    signs = {p: sign_of_number(v) for p, v in fixed.items()}
    for p in assigned:
        signs[p] = sign_of_number(initial[p]) if p in initial else 0
    changed = True
    while changed:  # each pass only adds bits (at most 2 per parameter): it ends
        changed = False
        for p, exprs in assigned.items():
            bits = signs[p]
            for e in exprs:
                bits |= sign_bits(e, signs, fixed)
            if bits != signs[p]:
                signs[p], changed = bits, True
    return signs


def nonnegative(law: Node, signs: Mapping[str, int], values: Mapping[str, float] | None = None) -> bool:
    """Whether ``law`` is >= 0 in every state by its form alone (:func:`sign_bits`): ``k * (c - S)`` is not,
    ``-k_mal`` with k_mal of either sign is not, ``-k`` with k <= 0 for the run is, ``Vm * S / (K + S)`` with
    Vm, K >= 0 is."""
    return not sign_bits(law, signs, values) & SIGN_NEG


def positive_part(law: Node) -> Node:
    """``max(0, law)``: ``law`` where it is >= 0, else 0. The 0 is the first operand so that a NaN law
    stays NaN in the kernels' ``a > b ? a : b`` (a run stops on it as before)."""
    return Call("max", (Num(0.0), law))


def at_least(i: int, n: int) -> Node:
    """The indicator of count x_i >= n (n >= 1) in arithmetic only, for whole x_i >= 0:
    ``min(max(x_i - (n - 1), 0), 1)`` (``min(x_i, 1)`` for n = 1)."""
    x: Node = Species(i)
    if n > 1:
        x = Call("max", (BinOp("-", x, Num(float(n - 1))), Num(0.0)))
    return Call("min", (x, Num(1.0)))
