"""The MaBoSS reader's fast paths (issue 31) give what the plain computations give: ``satisfiable`` and
``equivalent`` on int bit tables against NumPy truth tables, ``substitute`` (only the nodes above the
substituted one rebuilt) against a full rebuild, the one-pass tokenizer's tokens, lines and columns, and
``cases`` with a shared memo against fresh calls."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from distsim.errors import ModelError
from distsim.models import logic
from distsim.models.arith import Num
from distsim.models.boolean import And, AtLeast, Const, Not, Or, Var, Xor, postorder, truth_table
from distsim.models.formats.maboss import _tokenize
from distsim.models.logic import (Cond, Logic, cases, equivalent, mk_and, mk_not, mk_or, mk_xor, satisfiable,
                                  substitute)


def _raw(rng: random.Random, n_vars: int, depth: int):
    """A random expression built with the raw constructors (unfolded: constants, repeats, x & !x)."""
    if depth == 0 or rng.random() < 0.25:
        r = rng.random()
        return Const(rng.random() < 0.5) if r < 0.1 else Var(rng.randrange(n_vars))
    kind = rng.randrange(5)
    if kind == 0:
        return Not(_raw(rng, n_vars, depth - 1))
    args = tuple(_raw(rng, n_vars, depth - 1) for _ in range(rng.randint(1, 4)))
    if kind == 4:
        return AtLeast(args, rng.randint(-1, len(args) + 1))
    return (And, Or, Xor)[kind - 1](args)


def _folded(rng: random.Random, n_vars: int, depth: int):
    """A random expression built with the folding constructors (as the reader's conditions are)."""
    if depth == 0 or rng.random() < 0.25:
        return Var(rng.randrange(n_vars)) if rng.random() < 0.95 else Const(rng.random() < 0.5)
    kind = rng.randrange(4)
    if kind == 0:
        return mk_not(_folded(rng, n_vars, depth - 1))
    args = [_folded(rng, n_vars, depth - 1) for _ in range(rng.randint(1, 4))]
    return (mk_and, mk_or, mk_xor)[kind - 1](*args)


def _over(*es) -> tuple[int, ...]:
    return tuple(sorted({x.index for e in es for x in postorder(e) if isinstance(x, Var)}))


def _full_rebuild(e, i: int, value: bool):
    """substitute as it was: every node rebuilt through the folding constructors."""
    new = {}
    for x in postorder(e):
        if isinstance(x, Var):
            r = Const(bool(value)) if x.index == i else x
        elif isinstance(x, Const):
            r = x
        elif isinstance(x, Not):
            r = mk_not(new[id(x.arg)])
        else:
            args = tuple(new[id(a)] for a in x.args)
            r = AtLeast(args, x.k) if isinstance(x, AtLeast) else \
                {And: mk_and, Or: mk_or, Xor: mk_xor}[type(x)](*args)
        new[id(x)] = r
    return new[id(e)]


def test_satisfiable_and_equivalent_are_the_truth_tables():
    rng = random.Random(31)
    for trial in range(600):
        n_vars = rng.randint(1, 9)
        a, b = _raw(rng, n_vars, 4), _raw(rng, n_vars, 4)
        over = _over(a, b)
        ta, tb = truth_table(a, over), truth_table(b, over)  # NumPy, MSB-first: another row order
        logic._SAT.clear()
        assert satisfiable(a) == bool(ta.any()), (trial, a)
        assert equivalent(a, b) == bool(np.array_equal(ta, tb)), (trial, a, b)
        assert equivalent(a, a) is True


def test_satisfiable_at_the_exact_limit():
    n = logic.MAX_EXACT_VARS
    xs = tuple(Var(k) for k in range(n))
    logic._SAT.clear()
    assert satisfiable(And(xs)) and satisfiable(Or(xs)) and satisfiable(AtLeast(xs, n))
    assert not satisfiable(And((*xs, Not(xs[n - 1])))) and not satisfiable(AtLeast(xs, n + 1))
    assert not satisfiable(Xor((Xor(xs), Xor(xs))))  # x ^ x over 2**20 rows
    assert equivalent(AtLeast(xs, 1), Or(xs)) and equivalent(AtLeast(xs, n), And(xs))
    assert equivalent(And(xs), Or(xs)) is False
    assert equivalent(And((*xs, Var(n))), Or(xs)) is None  # one variable past the limit: not checked
    assert satisfiable(And((*xs, Var(n), Not(Var(n))))) is True  # (too large to check: True)


def test_substitute_equals_the_full_rebuild():
    rng = random.Random(7)
    for trial in range(800):
        n_vars = rng.randint(1, 6)
        e = _folded(rng, n_vars, 5)
        i, v = rng.randrange(n_vars + 1), rng.random() < 0.5
        got, want = substitute(e, i, v), _full_rebuild(e, i, v)
        assert got == want and repr(got) == repr(want), (trial, e, i, v)
        if i not in _over(e):
            assert got is e  # nothing to replace: the expression itself
        over = _over(e, Var(i))
        rows = truth_table(e, over)
        fixed = np.array([(r >> (len(over) - 1 - over.index(i))) & 1 == v for r in range(rows.size)])
        assert np.array_equal(truth_table(got, over)[fixed], rows[fixed]), (trial, e, i, v)


def test_cases_with_a_shared_memo_equal_fresh_calls():
    b = Logic("or", (Logic("and", (Var(0), Var(1))), Logic("not", (Var(2),))))
    up, down = Cond(b, Num(2.0), Num(0.0)), Cond(b, Num(0.0), Num(1.0))  # both read the same subtree
    memo: dict = {}
    shared = [cases(up, memo), cases(down, memo)]
    fresh = [cases(up), cases(down)]
    assert [list(t.items()) for t in shared] == [list(t.items()) for t in fresh]
    assert shared[1][0.0] is shared[0][2.0]  # the condition computed once: both tables hold it
    assert fresh[1][0.0] is not fresh[0][2.0] and fresh[1][0.0] == fresh[0][2.0]


def _fields(t) -> tuple:
    return t.kind, t.value, t.line, t.col


def test_tokens_lines_and_columns():
    text = ('# comment\nNode A {\r\n  logic = !B && $k1 >= 1.5e3; /* two\nlines */ x = "s\\"\n t";\t// end\n'
            '  y = .5 | 2. ^ 3;   \n')
    toks = [_fields(t) for t in _tokenize(text, "m.bnd", cfg=False)]
    assert toks == [
        ("name", "Node", 2, 1), ("name", "A", 2, 6), ("op", "{", 2, 8),
        ("name", "logic", 3, 3), ("op", "=", 3, 9), ("op", "!", 3, 11), ("name", "B", 3, 12), ("op", "&&", 3, 14),
        ("var", "$k1", 3, 17), ("op", ">=", 3, 21), ("num", "1.5e3", 3, 24), ("op", ";", 3, 29),
        ("name", "x", 4, 10), ("op", "=", 4, 12), ("str", 's\\"\n t', 4, 14), ("op", ";", 5, 4),
        ("name", "y", 6, 3), ("op", "=", 6, 5), ("num", ".5", 6, 7), ("op", "|", 6, 10), ("num", "2.", 6, 12),
        ("op", "^", 6, 15), ("num", "3", 6, 17), ("op", ";", 6, 18), ("eof", "", 7, 1)]
    assert [_fields(t) for t in _tokenize("a  \t ", "m.cfg", cfg=True)] == [("name", "a", 1, 1), ("eof", "", 1, 6)]
    assert [_fields(t) for t in _tokenize("", "m.cfg", cfg=True)] == [("eof", "", 1, 1)]


@pytest.mark.parametrize("text, cfg, line, col, message", [
    ("A = 1;\n  \t `x", False, 2, 5, "unexpected character '`'"),
    ("A = 1;\n  # x", False, 2, 3, "'#' is PopMaBoSS syntax"),
    ("# x\n", True, 1, 1, "'#' is PopMaBoSS syntax"),  # a .cfg has no '#' comments
    ("A\n /* open\n", False, 2, 2, "comment '/*' is never closed"),
    ("A = \"open", False, 1, 5, "string is never closed"),
])
def test_token_errors_name_line_and_column(text, cfg, line, col, message):
    with pytest.raises(ModelError, match=re.escape(message)) as e:
        _tokenize(text, "m.bnd", cfg=cfg)
    assert (e.value.file, e.value.line, e.value.column) == ("m.bnd", line, col)


def test_rate_tables_by_brute_force(tmp_path):
    """Each node's rate tables (with and without reading the node itself, @logic in both rates) against the
    rates computed by hand in every state."""
    from distsim.models.boolean import evaluate
    from distsim.models.formats.maboss import read_rates

    bnd = tmp_path / "m.bnd"
    bnd.write_text("Node A { logic = A | B; }\n"
                   "Node B { logic = !A; rate_up = @logic ? 2 : 0; rate_down = @logic ? 0 : 0.5; }\n"
                   "Node C { logic = A & B; rate_up = C ? 3 : @logic; rate_down = 1; }\n")
    m = read_rates(bnd)
    states = np.array([[(r >> k) & 1 for k in range(3)] for r in range(8)], dtype=bool)
    A, B, C = states.T
    want = {  # (rate_up where the node is 0, rate_down where it is 1), by hand
        "A": ((A | B) * 1.0, np.where(A | B, 0.0, 1.0)),
        "B": (np.where(~A, 2.0, 0.0), np.where(~A, 0.0, 0.5)),
        "C": (np.where(C, 3.0, (A & B) * 1.0), np.ones(8)),
    }
    for i, name in enumerate(m.nodes):
        for x_i, table in enumerate(m.rates[i]):
            at = states[:, i] == bool(x_i)
            rate = np.full(8, np.nan)
            for v, g in table.items():
                holds = evaluate(g, states) & at
                assert not np.any(holds & ~np.isnan(rate)), (name, x_i)  # the conditions are disjoint
                rate[holds] = v
            np.testing.assert_array_equal(rate[at], want[name][x_i][at], err_msg=f"{name} {x_i}")


def _flat_reference(cls, args, unit, zero):
    """mk_and/mk_or's folding as it was: the complement check makes !b for every operand b."""
    out, seen = [], set()
    for a in args:
        for b in (a.args if isinstance(a, cls) else (a,)):
            if isinstance(b, Const):
                if b.value == zero.value:
                    return zero
                continue
            if b not in seen:
                seen.add(b)
                out.append(b)
    for b in out:
        if mk_not(b) in seen:
            return zero
    if not out:
        return unit
    return out[0] if len(out) == 1 else cls(tuple(out))


def test_and_or_fold_as_before():
    rng = random.Random(5)
    for trial in range(3000):
        n_vars = rng.randint(1, 4)
        make = [_raw, _folded]
        args = [make[rng.random() < 0.5](rng, n_vars, 2) for _ in range(rng.randint(0, 5))]
        for mk, cls, unit, zero in ((mk_and, And, Const(True), Const(False)), (mk_or, Or, Const(False), Const(True))):
            got, want = mk(*args), _flat_reference(cls, args, unit, zero)
            assert got == want and repr(got) == repr(want), (trial, args)
