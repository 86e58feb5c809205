"""MaBoSS models: a ``.bnd`` network and its ``.cfg`` run configuration (read only).

**What MaBoSS simulates.** A continuous-time Markov chain on Boolean states (Stoll et al. 2012,
BMC Syst Biol 6:116): in state x, node i flips with rate ``r_i(x) = rate_up_i(x)`` when
``x_i = 0`` and ``rate_down_i(x)`` when ``x_i = 1``. Without explicit rates a node has
``rate_up = @logic ? 1 : 0`` and ``rate_down = @logic ? 0 : 1``; a node with no logic and no rates
never changes (an input).

**How it becomes a PBN (exact).** Uniformization: with ``L`` the largest flip rate of any node
in any state, the chain observed at the events of a Poisson clock of rate ``n L`` jumps from x to
x with node i flipped with probability ``r_i(x) / (n L)``. distsim's asynchronous update picks
one of the n nodes uniformly and applies one of its predictors chosen by selection probability,
so node i gets, for the distinct positive values ``v_1 < ... < v_m`` its flip rate takes,

* one predictor per value: ``g_k(x) = x_i XOR [r_i(x) >= v_k]`` with probability
  ``(v_k - v_{k-1}) / L`` (``v_0 = 0``): summed over k, node i flips with probability
  ``r_i(x) / L`` once chosen;
* the identity ``x_i`` with the remaining probability ``1 - v_m / L``.

The asynchronous PBN's transition matrix is then exactly ``I + Q / (n L)`` for the generator Q of
MaBoSS's chain, so both have the same stationary distribution (and the same jump sequence, one
step being ``1 / (n L)`` units of MaBoSS time on average: ``MabossConfig.step_rate`` steps per
unit time). With the default rates (or all rates equal) every node has the single predictor
``logic`` and the PBN is the plain asynchronous Boolean network. Run the result with
``mode="async"`` and perturbation 0: a synchronous update of it is not MaBoSS's process.

**The .bnd language** (MaBoSS's own grammar): ``Node X { logic = ...; rate_up = ...;
rate_down = ...; any_attribute = ...; description = "..."; }``, the short forms ``X : expr;`` and
``X, expr`` (bnet lines; a ``targets, factors`` line is skipped), comments ``/* */``, ``//`` and
``#`` at the start of a line. Expressions are C-like over doubles: ``NOT ! AND && & OR || | XOR ^``
(keywords in any case; precedence from low to high: ``?:``, XOR/``^``, OR, AND, ``== !=``,
``< <= > >=``, ``+ -``, ``* /``, unary ``+ - !``), node names (0 or 1), ``@attribute`` (an
attribute of the same node, e.g. ``@logic``), ``$variables`` (set in the .cfg), numbers and the
functions ``log(x[, base])`` and ``exp(x[, base])``. Nothing is run as code: every expression is
parsed and compiled exactly (:mod:`distsim.models.logic`). A node used but not defined, a node
defined twice, an undefined ``$variable`` and a negative, infinite or NaN rate are errors that name
the file and line. PopMaBoSS (``division``, ``death``, ``#cell``), schedules and user functions are
not supported. Expressions are parsed, and their trees walked, with explicit stacks (never Python
recursion): parentheses, calls, conditionals and prefix operators nest at most
:data:`~distsim.models.boolean.MAX_DEPTH` deep, beyond which the file is refused naming file and line.

**The .cfg** sets ``$variables`` (evaluated in file order), run settings (``time_tick``,
``max_time``, ``sample_count``, ``discrete_time``, ...: kept in ``MabossConfig.settings``; the PBN
translation uses none of them, :mod:`distsim.maboss` all) and node attributes: ``X.istate = 0|1``
(``-1``: random), ``[X, Y].istate = p1 [0, 1], p2 [1, 0];`` (a joint initial distribution),
``X.is_internal``, ``X.refstate``, ``X.in_graph``. Initial states map to distsim's ``initial=``:
:attr:`MabossConfig.initial` holds the nodes whose initial value is certain; nodes that start at 0
or 1 with probability 1/2 each are left out (distsim draws them uniformly, the default). Any other
initial distribution (a probability other than 0, 1/2 or 1, or a correlated group) has no
``initial=`` equivalent (the PBN workload draws each node's start uniformly or fixes it): its nodes
are left random and :attr:`MabossConfig.notes` says so, naming them and pointing to
:mod:`distsim.maboss` (``distsim maboss``), which simulates any ``istate``; so it does for
``discrete_time = 1`` (MaBoSS's discrete-time mode samples the jump chain, whose statistics differ
from the continuous-time chain's). Each note is also issued as a :class:`UserWarning` (attributed to
the caller of ``read_maboss`` or ``distsim.pbn.load``), never silently.

:func:`read_rates` returns the continuous-time chain itself for :mod:`distsim.maboss` (each node's
flip-rate tables, the .cfg with ``$variables`` optionally replaced, and MaBoSS's node order: a node
is made at its first mention, a declaration counting at the end of its block; MaBoSS labels states
and orders its output columns so). :func:`read_maboss` returns ``(PBN, MabossConfig)``;
``distsim.pbn.load("model.bnd")`` returns the PBN and reads the ``.cfg`` beside it (``model.bnd.cfg``,
else ``model.cfg``) or the one given as ``cfg=``.
"""

from __future__ import annotations

import math
import os
import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NamedTuple

from ..arith import BinOp, Call, Neg, Num
from ..boolean import MAX_DEPTH, Expr, Var
from ...errors import ModelError
from .base import Format, first_content_line
from ..logic import (Cmp, Cond, Logic, Term, TooComplex, cases, equivalent, mk_and, mk_not, mk_or, satisfiable,
                     substitute)
from ..pbn import PBN, Predictor

__all__ = ["read_maboss", "read_rates", "find_cfg", "MabossConfig", "MabossRates"]

_FUNCS = {"log": (1, 2), "exp": (1, 2)}
_KEYWORDS = {"not": "!", "and": "&", "or": "|", "xor": "^"}


@dataclass(frozen=True)
class MabossConfig:
    """What a MaBoSS ``.cfg`` says, and how the model maps to the PBN (see the module docstring)."""

    initial: dict[str, int]  # nodes with a certain initial value: pass as initial=
    istates: dict[tuple[str, ...], tuple[tuple[float, tuple[int, ...]], ...]]  # every istate, normalised
    variables: dict[str, float]
    settings: dict[str, float]
    internal: tuple[str, ...]
    max_rate: float  # L: the largest flip rate of any node in any state
    n_nodes: int
    notes: tuple[str, ...] = ()
    cfg: str | None = None
    setting_lines: dict[str, int] = field(default_factory=dict)  # the .cfg line of each setting (its last)

    @property
    def step_rate(self) -> float:
        """Asynchronous PBN steps per unit of MaBoSS time (n L; 0 when nothing ever flips)."""
        return self.n_nodes * self.max_rate


# ---- tokens ---------------------------------------------------------------------------------------

_TOKEN = re.compile(r"""
  [ \t\f\v\r]*  # the spaces before a token, skipped by the same match
  (?:
  (?P<nl>\n)
| (?P<block>/\*)
| (?P<line>//[^\n]*)
| (?P<num>(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+)
| (?P<var>\$[A-Za-z_][A-Za-z_0-9]*)
| (?P<name>[A-Za-z_][A-Za-z_0-9]*)
| (?P<str>")
| (?P<op>==|!=|<=|>=|&&|\|\||[-+*/<>!&|^?:;,=@{}()\[\].\#])
| (?P<end>\Z)
  )
""", re.X)
_SPACES = re.compile(r"[ \t\f\v\r]*")


class _Tok(NamedTuple):
    kind: str  # num var name str op eof
    value: str
    line: int
    col: int


def _tokenize(text: str, file: str, cfg: bool) -> list[_Tok]:
    toks: list[_Tok] = []
    append, match = toks.append, _TOKEN.match
    pos, line, line_start = 0, 1, 0
    while True:
        if pos == line_start and not cfg and text.startswith("#", pos):  # a '#' comment at a line's start (.bnd)
            end = text.find("\n", pos)
            pos = len(text) if end < 0 else end
            continue
        m = match(text, pos)
        if m is None:
            at = _SPACES.match(text, pos).end()
            raise ModelError(f"unexpected character {text[at]!r}", file=file, line=line, column=at - line_start + 1)
        kind = m.lastgroup
        start = m.start(kind)
        if kind == "nl":
            line, line_start = line + 1, m.end()
        elif kind in ("num", "var", "name", "op"):
            if kind == "op" and m.group(kind) == "#":
                raise ModelError("'#' is PopMaBoSS syntax (or a comment not at the start of a line), which is not "
                                 "supported", file=file, line=line, column=start - line_start + 1)
            append(_Tok(kind, m.group(kind), line, start - line_start + 1))
        elif kind == "end":
            pos = m.end()
            break
        elif kind == "block":
            end = text.find("*/", m.end())
            if end < 0:
                raise ModelError("comment '/*' is never closed", file=file, line=line, column=start - line_start + 1)
            if "\n" in text[start:end]:
                line += text.count("\n", start, end)
                line_start = text.rfind("\n", start, end) + 1
            pos = end + 2
            continue
        elif kind == "str":
            k = m.end()
            while k < len(text) and text[k] != '"':
                k += 2 if text[k] == "\\" else 1
            if k >= len(text):
                raise ModelError("string is never closed", file=file, line=line, column=start - line_start + 1)
            append(_Tok("str", text[m.end():k], line, start - line_start + 1))
            if "\n" in text[m.end():k]:
                line += text.count("\n", m.end(), k)
                line_start = text.rfind("\n", m.end(), k) + 1
            pos = k + 1
            continue
        pos = m.end()
    toks.append(_Tok("eof", "", line, pos - line_start + 1))
    return toks


# ---- expressions (names resolved later) -------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Ref:
    """A node name, an ``@alias`` or a ``$variable`` at a place in the file."""

    kind: str  # node alias var
    name: str
    line: int
    col: int


class _Parser:
    def __init__(self, text: str, file: str, cfg: bool):
        self.file = file
        self.cfg = cfg
        self.toks = _tokenize(text, file, cfg)
        self.mentions: list[str] = []  # node names in the order MaBoSS creates its nodes
        self.i = 0

    # tokens
    def peek(self, k: int = 0) -> _Tok:
        try:
            return self.toks[self.i + k]
        except IndexError:  # past the end: the eof token
            return self.toks[-1]

    def next(self) -> _Tok:
        t = self.peek()
        self.i += 1
        return t

    def err(self, msg: str, t: _Tok | None = None) -> ModelError:
        t = t or self.peek()
        return ModelError(msg, file=self.file, line=t.line, column=t.col)

    def is_op(self, *ops: str, k: int = 0) -> bool:
        t = self.peek(k)
        if t.kind == "op":
            return t.value in ops
        return t.kind == "name" and _KEYWORDS.get(t.value.lower()) in ops

    def take(self, *ops: str) -> bool:
        if self.is_op(*ops):
            self.i += 1
            return True
        return False

    def expect(self, op: str, what: str = "") -> _Tok:
        t = self.peek()
        if not self.is_op(op):
            got = "end of file" if t.kind == "eof" else repr(t.value)
            raise self.err(f"expected {op!r}{' ' + what if what else ''}, found {got}", t)
        return self.next()

    def name(self, what: str) -> _Tok:
        t = self.peek()
        if t.kind != "name" or t.value.lower() in _KEYWORDS:
            raise self.err(f"expected {what}, found {t.value or 'end of file'!r}", t)
        return self.next()

    # expression grammar (MaBoSS's BooleanGrammar.y), parsed by a loop with an explicit stack: the
    # open parentheses, calls and 'test ?' parts are frames, each with its pending operands and
    # operators (shunting-yard), so nesting costs memory, never Python recursion
    def expression(self) -> Any:
        """``?:`` (right-associative, lowest), then the left-associative binary levels, unary ``+ - !``."""
        return self._parse(primary_only=False)

    def primary(self) -> Any:
        """A number, node, ``$variable``, ``@attribute``, call or parenthesised expression."""
        return self._parse(primary_only=True)

    def _binop(self) -> str | None:
        t = self.peek()
        op = t.value if t.kind == "op" else _KEYWORDS.get(t.value.lower()) if t.kind == "name" else None
        return op if op in _PREC else None

    def _parse(self, primary_only: bool) -> Any:
        frames = [_Frame("primary" if primary_only else "top", self.peek())]
        nest = 0  # open frames and pending prefix operators and conditionals, across all frames

        def deeper(t: _Tok) -> None:
            nonlocal nest
            nest += 1
            if nest > MAX_DEPTH:
                raise self.err(f"expression nested too deeply (parentheses, calls, conditionals and prefix "
                               f"operators more than {MAX_DEPTH:,} deep)", t)

        while True:
            f = frames[-1]
            # operand position: prefix operators, then a primary or an opening
            t = self.peek()
            if f.kind != "primary":
                if self.take("+"):
                    continue  # unary plus: the operand itself
                if self.is_op("-", "!"):
                    self.i += 1
                    deeper(t)
                    f.ops.append((_PREFIX, "neg" if t.value == "-" else "not", None))
                    continue
            operand: Any
            if t.kind == "num":
                self.i += 1
                operand = Num(float(t.value))
            elif t.kind == "var":
                self.i += 1
                operand = _Ref("var", t.value, t.line, t.col)
            elif t.kind == "name" and t.value.lower() not in _KEYWORDS:
                self.i += 1
                if self.cfg and t.value.lower() in ("true", "false"):
                    operand = Num(1.0 if t.value.lower() == "true" else 0.0)
                elif self.is_op("("):
                    self.i += 1
                    if not self.take(")"):
                        deeper(t)
                        frames.append(_Frame("call", t))
                        continue
                    operand = self._call(t, [])
                elif self.cfg:
                    raise self.err(f"node name {t.value!r} in a .cfg expression (only numbers and $variables)", t)
                else:
                    self.mentions.append(t.value)
                    operand = _Ref("node", t.value, t.line, t.col)
            elif self.take("@"):
                a = self.name("an attribute name after '@'")
                operand = _Ref("alias", a.value, a.line, a.col)
            elif self.take("("):
                deeper(t)
                frames.append(_Frame("paren", t))
                continue
            else:
                got = "end of file" if t.kind == "eof" else repr(t.value)
                raise self.err(f"expected a number, a node, @attribute, $variable or '(', found {got}", t)
            # operator position: a binary operator or '?' continues the frame; anything else closes it
            while True:
                f.operands.append(operand)
                if f.kind == "primary":
                    return f.operands[0]
                op = self._binop()
                if op is not None:
                    nest -= _reduce(f, _PREC[op])
                    f.ops.append((_PREC[op], "bin", op))
                    self.i += 1
                    break
                if self.is_op("?"):
                    nest -= _reduce(f, 1)
                    q = self.next()
                    deeper(q)
                    frames.append(_Frame("then", q, test=f.operands.pop()))
                    break
                nest -= _reduce(f, 0)
                (value,) = f.operands
                if f.kind == "top":
                    return value
                if f.kind == "call":
                    f.args.append(value)
                    f.operands.clear()
                    if self.take(","):
                        break  # the next argument, in this frame
                    self.expect(")")
                    value = self._call(f.tok, f.args)
                elif f.kind == "paren":
                    self.expect(")")
                else:  # the 'then' part: the conditional waits for its 'else' in the frame below
                    self.expect(":", "in a conditional 'test ? a : b'")
                frames.pop()
                nest -= 1
                parent = frames[-1]
                if f.kind == "then":
                    deeper(f.tok)
                    parent.ops.append((0, "cond", (f.test, value)))
                    break
                f, operand = parent, value

    def _call(self, fname: _Tok, args: list[Any]) -> Call:
        if fname.value not in _FUNCS:
            raise self.err(f"unknown function {fname.value!r} (MaBoSS's built-ins are log and exp; user functions "
                           "are not supported)", fname)
        lo, hi = _FUNCS[fname.value]
        if not lo <= len(args) <= hi:
            raise self.err(f"{fname.value}() takes 1 or 2 arguments, got {len(args)}", fname)
        return Call(fname.value, tuple(args))


# binary operators by precedence (low to high; '?:' is 0, prefix operators bind tightest)
_PREC = {"^": 1, "|": 2, "||": 2, "&": 3, "&&": 3, "==": 4, "!=": 4, "<": 5, ">": 5, "<=": 5, ">=": 5,
         "+": 6, "-": 6, "*": 7, "/": 7}
_PREFIX = 8
_LOGIC = {"^": "xor", "|": "or", "||": "or", "&": "and", "&&": "and"}


@dataclass
class _Frame:
    """An open part of an expression: the whole (top), a primary, '(' ... ')', a call's arguments, or
    the 'then' part of ``test ? then : else``."""

    kind: str  # top primary paren call then
    tok: _Tok  # where it opens (the function name of a call)
    operands: list[Any] = field(default_factory=list)
    ops: list[tuple[int, str, Any]] = field(default_factory=list)  # (precedence, bin|neg|not|cond, payload)
    args: list[Any] = field(default_factory=list)  # a call's finished arguments
    test: Any = None  # a 'then' part's test


def _reduce(f: _Frame, prec: int) -> int:
    """Apply ``f``'s pending operators of precedence >= ``prec``; returns how many prefix operators and
    conditionals that closed (they count in the nesting)."""
    closed = 0
    while f.ops and f.ops[-1][0] >= prec:
        _, kind, payload = f.ops.pop()
        b = f.operands.pop()
        if kind == "bin":
            a = f.operands.pop()
            f.operands.append(Logic(_LOGIC[payload], (a, b)) if payload in _LOGIC else
                              Cmp(payload, a, b) if _PREC[payload] in (4, 5) else BinOp(payload, a, b))
            continue
        closed += 1
        f.operands.append(Neg(b) if kind == "neg" else Logic("not", (b,)) if kind == "not" else
                          Cond(payload[0], payload[1], b))
    return closed


# ---- .bnd ------------------------------------------------------------------------------------------

@dataclass
class _NodeDecl:
    name: str
    line: int
    attrs: dict[str, Any] = field(default_factory=dict)  # attribute -> expression (strings dropped)
    maboss_index: int = 0  # MaBoSS's node order: first mention, a declaration counting at its end


def _parse_bnd(text: str, file: str) -> list[_NodeDecl]:
    p = _Parser(text, file, cfg=False)
    nodes: dict[str, _NodeDecl] = {}

    def define(tok: _Tok) -> _NodeDecl:
        if tok.value in nodes:
            raise p.err(f"node {tok.value!r} already defined (line {nodes[tok.value].line})", tok)
        nodes[tok.value] = _NodeDecl(tok.value, tok.line)
        return nodes[tok.value]

    while p.peek().kind != "eof":
        t = p.peek()
        if t.kind == "name" and t.value.lower() in ("division", "death"):
            raise p.err(f"{t.value!r} blocks are PopMaBoSS syntax, which is not supported", t)
        if t.kind == "name" and t.value.lower() == "node" and p.peek(1).kind == "name" and p.is_op("{", k=2):
            p.i += 1
            decl = define(p.name("a node name"))
            p.expect("{")
            while not p.take("}"):
                key = p.name("an attribute name (logic, rate_up, rate_down, ...) or '}'")
                p.expect("=", f"after attribute {key.value!r}")
                if p.peek().kind == "str":
                    p.next()  # description = "..." and other text attributes: not used
                else:
                    decl.attrs[key.value] = p.expression()
                p.expect(";", f"after attribute {key.value!r}")
            p.mentions.append(decl.name)  # MaBoSS makes the node at the end of its block
            continue
        if t.kind == "name" and p.is_op(":", ",", k=1):
            tok = p.name("a node name")
            sep = p.next().value
            start = p.i
            e = p.expression()
            p.take(";")
            if sep == "," and tok.value == "targets" and p.toks[start].value == "factors" and p.i - start <= 2:
                continue  # bnet header line
            define(tok).attrs["logic"] = e
            p.mentions.append(tok.value)
            continue
        got = "end of file" if t.kind == "eof" else repr(t.value)
        raise p.err(f"expected 'Node NAME {{ ... }}', 'NAME : logic;' or 'NAME, logic', found {got}", t)
    if not nodes:
        raise ModelError("the file defines no node", file=file, line=1)
    order = {nm: k for k, nm in enumerate(dict.fromkeys(p.mentions))}
    for k, d in enumerate(sorted(nodes.values(), key=lambda d: order.get(d.name, len(order)))):
        d.maboss_index = k
    return list(nodes.values())


# ---- .cfg ------------------------------------------------------------------------------------------

@dataclass
class _Cfg:
    variables: dict[str, float] = field(default_factory=dict)
    settings: dict[str, float] = field(default_factory=dict)
    setting_lines: dict[str, int] = field(default_factory=dict)
    istates: dict[tuple[str, ...], tuple[tuple[float, tuple[int, ...]], ...]] = field(default_factory=dict)
    internal: list[str] = field(default_factory=list)
    istate_lines: dict[str, int] = field(default_factory=dict)


def _constant(e: Any, variables: dict[str, float], p: _Parser, at: _Tok) -> float:
    """The value of a .cfg expression (numbers and $variables only)."""
    term = e if isinstance(e, Num) else _substitute_vars(e, variables, p.file)  # (a number: most lines)
    try:
        table = cases(term)
    except TooComplex as ex:  # pragma: no cover - constants have one case
        raise p.err(str(ex), at) from None
    (value,) = table
    return value


def _substitute_vars(e: Any, variables: dict[str, float], file: str) -> Term:
    def leaf(t: _Ref) -> Term:
        if t.kind != "var":  # '@name' (the .cfg parser allows no node names)
            raise ModelError(f"{'@' if t.kind == 'alias' else ''}{t.name} cannot appear here (only numbers and "
                             "$variables)", file=file, line=t.line, column=t.col)
        if t.name not in variables:
            raise ModelError(f"variable {t.name} is not defined (define it before use in the .cfg)", file=file,
                             line=t.line, column=t.col)
        return Num(variables[t.name])

    return _rebuild(e, leaf)


def _children(t: Any) -> tuple[Any, ...]:
    if isinstance(t, (BinOp, Cmp)):
        return (t.left, t.right)
    if isinstance(t, Neg):
        return (t.arg,)
    if isinstance(t, (Call, Logic)):
        return tuple(t.args)
    if isinstance(t, Cond):
        return (t.test, t.then, t.other)
    return ()


def _with_children(t: Any, c: list[Any]) -> Any:
    """``t`` with the children ``c`` (in :func:`_children`'s order)."""
    if isinstance(t, BinOp):
        return BinOp(t.op, c[0], c[1])
    if isinstance(t, Cmp):
        return Cmp(t.op, c[0], c[1])
    if isinstance(t, Neg):
        return Neg(c[0])
    if isinstance(t, Call):
        return Call(t.func, tuple(c))
    if isinstance(t, Logic):
        return Logic(t.op, tuple(c))
    if isinstance(t, Cond):
        return Cond(c[0], c[1], c[2])
    return t


def _rebuild(root: Any, leaf: Callable[[_Ref], Term], attrs: dict[str, Any] | None = None, path: tuple[str, ...] = (),
             node: str = "", file: str = "", done: dict[int, Any] | None = None) -> Term:
    """``root`` with every reference replaced, children before parents, with an explicit stack.

    ``leaf(ref)`` gives the term of a node or ``$variable`` reference. ``@name`` is replaced by the
    attribute ``attrs[name]`` of ``node``, itself rebuilt; ``path``: the attributes being rebuilt (a
    cycle is an error). References are met left to right, as a recursive walk meets them; a subtree
    reached twice (an attribute used twice) is rebuilt once and shared; ``done`` (by the id of the parsed
    subtree: the caller keeps them alive) shares them with later calls for the same node (one that
    succeeded left no cycle through them).
    """
    done = {} if done is None else done
    todo: list[tuple[Any, tuple[str, ...], bool]] = [(root, path, False)]
    while todo:
        t, at, ready = todo.pop()
        if id(t) in done:
            continue
        if isinstance(t, _Ref) and t.kind == "alias" and attrs is not None:
            if not ready:
                if t.name not in attrs:
                    raise ModelError(f"@{t.name}: node {node!r} has no attribute {t.name!r}", file=file,
                                     line=t.line, column=t.col)
                if t.name in at:
                    raise ModelError(f"@{t.name} refers to itself (node {node!r})", file=file, line=t.line,
                                     column=t.col)
                todo += [(t, at, True), (attrs[t.name], at + (t.name,), False)]
            else:
                done[id(t)] = done[id(attrs[t.name])]
        elif isinstance(t, _Ref):
            done[id(t)] = leaf(t)
        elif not ready:
            todo.append((t, at, True))
            todo.extend((c, at, False) for c in reversed(_children(t)))
        else:
            done[id(t)] = _with_children(t, [done[id(c)] for c in _children(t)])
    return done[id(root)]


def _parse_cfg(text: str, file: str, node_names: set[str], override: dict[str, float] | None = None) -> _Cfg:
    p = _Parser(text, file, cfg=True)
    override = override or {}
    out = _Cfg(variables=dict(override))  # overrides first, so that later definitions may use them

    def node(tok: _Tok) -> str:
        if tok.value not in node_names:
            raise p.err(f"node {tok.value!r} is not defined in the .bnd", tok)
        return tok.value

    def set_istate(names: tuple[str, ...], dist: list[tuple[float, tuple[int, ...]]], tok: _Tok) -> None:
        for nm in names:
            if nm in out.istate_lines:
                raise p.err(f"initial state of node {nm!r} given twice (also line {out.istate_lines[nm]})", tok)
            out.istate_lines[nm] = tok.line
        out.istates[names] = tuple(dist)

    while p.peek().kind != "eof":
        t = p.peek()
        if p.take(";"):
            continue
        if t.kind == "var":
            p.next()
            p.expect("=", f"after {t.value}")
            value = _constant(p.expression(), out.variables, p, t)
            out.variables[t.value] = override.get(t.value, value)
            p.expect(";", f"after the value of {t.value}")
            continue
        if p.take("["):
            names = [node(p.name("a node name"))]
            while p.take(","):
                names.append(node(p.name("a node name")))
            p.expect("]")
            p.expect(".")
            attr = p.name("'istate'")
            if attr.value.lower() != "istate":
                raise p.err(f"a node group has only the attribute 'istate', not {attr.value!r}", attr)
            p.expect("=")
            dist = []
            while True:
                at = p.peek()
                prob = _constant(p.primary(), out.variables, p, at)
                p.expect("[", "before the node values of an istate")
                values = [_constant(p.primary(), out.variables, p, p.peek())]
                while p.take(","):
                    values.append(_constant(p.primary(), out.variables, p, p.peek()))
                p.expect("]")
                if len(values) != len(names):
                    raise p.err(f"istate gives {len(values)} value(s) for {len(names)} node(s)", at)
                if not (prob >= 0 and math.isfinite(prob)):
                    raise p.err(f"istate probability must be a finite number >= 0, got {prob}", at)
                dist.append((prob, tuple(int(v != 0) for v in values)))
                if not p.take(","):
                    break
            p.expect(";")
            set_istate(tuple(names), dist, t)
            continue
        if t.kind == "name":
            p.next()
            if p.take("."):
                nm = node(t)
                attr = p.name("a node attribute")
                p.expect("=")
                if attr.value.lower() == "schedule":
                    raise p.err("scheduled flips are not supported", attr)
                value = _constant(p.expression(), out.variables, p, attr)
                p.expect(";")
                a = attr.value.lower()
                if a == "istate":
                    dist = [(0.5, (0,)), (0.5, (1,))] if value < 0 else [(1.0, (int(value != 0),))]
                    set_istate((nm,), dist, t)
                elif a == "is_internal":
                    if value != 0:
                        out.internal.append(nm)
                elif a not in ("refstate", "in_graph"):
                    raise p.err(f"unknown node attribute {attr.value!r} (istate, is_internal, refstate, in_graph)",
                                attr)
                continue
            if t.value == "custom_pop_output":
                raise p.err("custom_pop_output is PopMaBoSS syntax, which is not supported", t)
            p.expect("=", f"after setting {t.value!r}")
            out.settings[t.value] = _constant(p.expression(), out.variables, p, t)
            out.setting_lines[t.value] = t.line
            p.expect(";", f"after the value of {t.value!r}")
            continue
        raise p.err(f"expected '$variable = value;', 'setting = value;', 'NODE.istate = value;' or "
                    f"'[NODES].istate = ...;', found {t.value or 'end of file'!r}", t)
    return out


# ---- building the PBN -------------------------------------------------------------------------------

def find_cfg(bnd: str | os.PathLike) -> Path | None:
    """The .cfg beside ``bnd``: ``model.bnd.cfg`` (named after this very file), else ``model.cfg``;
    None when neither exists."""
    b = Path(bnd)
    for c in (b.with_name(b.name + ".cfg"), b.with_suffix(".cfg")):
        if c.is_file():
            return c
    return None


def read_maboss(bnd: str | os.PathLike, cfg: str | os.PathLike | None = None) -> tuple[PBN, MabossConfig]:
    """Read a MaBoSS ``.bnd`` (and its ``.cfg``: ``cfg`` or the one :func:`find_cfg` finds).

    Returns the asynchronous PBN of MaBoSS's continuous-time chain and the configuration (see the
    module docstring). A missing file raises :class:`FileNotFoundError`; bad input
    :class:`ModelError` with file and line.
    """
    m = read_rates(bnd, cfg, warn=True)
    preds = [_predictors(i, r, m.config.max_rate) for i, r in enumerate(m.rates)]
    net = PBN.create(list(m.nodes), preds, name=m.name, source=m.source, update="async")  # MaBoSS is asynchronous
    return net, m.config


_Rates = tuple[dict[float, Expr], dict[float, Expr]]  # (rate_up, rate_down): rate value -> states with that rate


@dataclass(frozen=True)
class MabossRates:
    """A MaBoSS model as its continuous-time chain: node i flips at rate ``v`` in the states where
    ``rates[i][x_i][v]`` holds (``rates[i][0]``: rate_up, the node at 0; ``rates[i][1]``: rate_down);
    ``rates[i]`` is None for a node that never changes. The conditions of one table partition the
    states where they apply."""

    nodes: tuple[str, ...]
    rates: tuple[_Rates | None, ...]
    config: MabossConfig
    name: str
    source: str
    maboss_order: tuple[int, ...]  # node indices in MaBoSS's order (its state labels and output columns)


def read_rates(bnd: str | os.PathLike, cfg: str | os.PathLike | None = None, *,
               variables: dict[str, float] | None = None, warn: bool = False) -> MabossRates:
    """The flip-rate tables and the full .cfg of a MaBoSS model (for continuous-time simulation).

    ``variables``: ``$name`` values that replace the .cfg's (``{"$rate": 2.0}`` or ``{"rate": 2.0}``);
    a name the .cfg does not define is added. ``warn``: issue :attr:`MabossConfig.notes` as warnings
    (they concern the PBN translation only)."""
    bfile = os.fspath(bnd)
    for f in (bnd, cfg):
        if f is not None and not Path(f).is_file():
            raise FileNotFoundError(f"model file not found: {os.fspath(f)}")
    cpath = Path(cfg) if cfg is not None else find_cfg(bnd)
    decls = _parse_bnd(Path(bnd).read_text(encoding="utf-8-sig", errors="replace"), bfile)
    names = [d.name for d in decls]
    override = {(k if k.startswith("$") else "$" + k): float(v) for k, v in (variables or {}).items()}
    for k, v in override.items():
        if not re.fullmatch(r"\$[A-Za-z_][A-Za-z_0-9]*", k) or not math.isfinite(v):
            raise ModelError(f"variable override {k} = {v}: a $name and a finite number are needed", file=bfile)
    conf = _parse_cfg(cpath.read_text(encoding="utf-8-sig", errors="replace"), os.fspath(cpath), set(names),
                      override) if cpath is not None else _Cfg(variables=dict(override))
    where = f" (no .cfg: looked for {Path(bnd).name}.cfg and {Path(bnd).with_suffix('.cfg').name}; pass cfg=)" \
        if cpath is None else f" in {cpath}"
    resolve = _Resolver({nm: i for i, nm in enumerate(names)}, conf.variables, bfile, where)
    rates = [_flip_rates(i, decl, resolve) for i, decl in enumerate(decls)]
    top = max((v for r in rates if r is not None for table in r for v in table), default=0.0)
    order = tuple(sorted(range(len(decls)), key=lambda i: decls[i].maboss_index))
    return MabossRates(tuple(names), tuple(rates), _config(conf, names, top, cpath, warn), Path(bnd).stem, bfile,
                       order)


@dataclass(frozen=True)
class _Resolver:
    """Replaces the node names, ``$variables`` and ``@attributes`` of a node's attribute expressions."""

    index: dict[str, int]  # node name -> variable index
    variables: dict[str, float]  # the .cfg's $variables
    file: str  # the .bnd
    where: str  # where the $variables come from, for the error message

    def __call__(self, t: Any, decl: _NodeDecl, stack: tuple[str, ...], done: dict[int, Any] | None = None,
                 reads: set[int] | None = None) -> Term:
        """``t`` resolved in node ``decl``; ``stack``: the attributes being resolved (a cycle is an error);
        ``done``: subtrees resolved by earlier calls for this node (:func:`_rebuild`); ``reads`` gets the
        index of every node resolved (those of ``done``'s subtrees when they were)."""
        leaf = self.leaf
        if reads is not None:
            def leaf(ref: _Ref) -> Term:
                term = self.leaf(ref)
                if isinstance(term, Var):
                    reads.add(term.index)
                return term
        return _rebuild(t, leaf, decl.attrs, stack, decl.name, self.file, done)

    def leaf(self, t: _Ref) -> Term:
        if t.kind == "node":
            if t.name not in self.index:
                raise ModelError(f"node {t.name!r} used but not defined", file=self.file, line=t.line, column=t.col)
            return Var(self.index[t.name])
        if t.name not in self.variables:
            raise ModelError(f"variable {t.name} is not defined{self.where}", file=self.file, line=t.line,
                             column=t.col)
        return Num(self.variables[t.name])


def _flip_rates(i: int, decl: _NodeDecl, resolve: _Resolver) -> _Rates | None:
    """Node ``i``'s flip rates as (rate_up, rate_down) tables; None for an input (both rates 0)."""
    a = decl.attrs
    if not {"logic", "rate_up", "rate_down"} & set(a):
        return None
    default_up = Cond(_Ref("alias", "logic", decl.line, 1), Num(1.0), Num(0.0)) if "logic" in a else Num(0.0)
    default_down = Cond(_Ref("alias", "logic", decl.line, 1), Num(0.0), Num(1.0)) if "logic" in a else Num(0.0)
    pair = []
    done: dict[int, Any] = {}  # resolved subtrees, shared by rate_up and rate_down (both read @logic) ...
    memo: dict = {}  # ... and their cases and conditions (keyed by id: `terms` keeps the terms alive)
    terms = []
    reads: set[int] = set()  # the nodes either rate reads
    for attr, default, state in (("rate_up", default_up, False), ("rate_down", default_down, True)):
        try:
            terms.append(resolve(a.get(attr, default), decl, (attr,), done, reads))
            table = cases(terms[-1], memo)
        except TooComplex as e:
            raise ModelError(f"node {decl.name!r}: {attr}: {e}", file=resolve.file, line=decl.line) from None
        # the rate applies only in states where the node is 0 (rate_up) or 1 (rate_down) (substitute would
        # give each condition itself when the rates never read the node)
        table = {v: g2 for v, g in table.items()
                 if satisfiable(g2 := substitute(g, i, state) if i in reads else g)}
        for v in table:
            if math.isnan(v) or v < 0 or math.isinf(v):
                raise ModelError(f"node {decl.name!r}: {attr} is {v} in some states; a rate must be a finite "
                                 "number >= 0", file=resolve.file, line=decl.line)
        pair.append(table)
    return pair[0], pair[1]


def _predictors(i: int, rates: _Rates | None, top: float) -> list[Predictor]:
    """Node ``i``'s predictors in the chain uniformized at the largest flip rate ``top`` (module docstring)."""
    row: dict[Expr, float] = {}
    prev = 0.0
    if rates is not None and top > 0:
        up, down = rates
        for v in sorted({v for table in rates for v in table if v > 0}):
            up_ge = mk_or(*[g for u, g in up.items() if u >= v])
            stay_on = mk_not(mk_or(*[g for d, g in down.items() if d >= v]))
            g = up_ge if equivalent(up_ge, stay_on) else \
                mk_or(mk_and(mk_not(Var(i)), up_ge), mk_and(Var(i), stay_on))  # x_i ? stay on : switch on
            row[g] = row.get(g, 0.0) + (v - prev) / top
            prev = v
    if prev < top or not row:
        row[Var(i)] = row.get(Var(i), 0.0) + (1.0 - prev / top if top > 0 else 1.0)
    return [Predictor(e, w) for e, w in row.items()]


def _config(conf: _Cfg, names: list[str], top: float, cpath: Path | None, warn: bool = True) -> MabossConfig:
    initial: dict[str, int] = {}
    notes: list[str] = []
    istates = {}
    for group, dist in conf.istates.items():
        total = sum(p for p, _ in dist)
        if total <= 0:
            notes.append(f"istate of {', '.join(group)}: the probabilities sum to 0; the node(s) start random")
            continue
        merged: dict[tuple[int, ...], float] = {}
        for p, vals in dist:
            if p > 0:
                merged[vals] = merged.get(vals, 0.0) + p / total
        istates[group] = tuple((p, v) for v, p in merged.items())
        if len(merged) == 1:
            initial.update(zip(group, next(iter(merged))))
        elif not _uniform(merged, len(group)):
            notes.append(f"istate of {', '.join(group)} is a distribution ({_describe(merged)}) that the PBN "
                         f"workload's initial= cannot express: pbn.simulate, pbn.steady_state and 'distsim pbn' start "
                         f"{'it' if len(group) == 1 else 'them'} uniformly random; 'distsim maboss' "
                         "(distsim.maboss.maboss) simulates this initial distribution")
    if conf.settings.get("discrete_time", 0) != 0:
        notes.append("discrete_time = 1 asks MaBoSS for its discrete-time (jump chain) mode; the PBN is MaBoSS's "
                     "continuous-time process, whose stationary distribution differs in general")
    for note in notes if warn else ():
        warnings.warn(f"{cpath}: {note}", UserWarning, stacklevel=_outside_distsim())
    return MabossConfig(initial=initial, istates=istates, variables=dict(conf.variables),
                        settings=dict(conf.settings), setting_lines=dict(conf.setting_lines),
                        internal=tuple(conf.internal), max_rate=top, n_nodes=len(names),
                        notes=tuple(notes), cfg=os.fspath(cpath) if cpath is not None else None)


def _outside_distsim() -> int:
    """The ``stacklevel`` of the first caller outside the distsim package, for a warning issued by the
    function that calls this one (``read_maboss``, ``pbn.load`` and the CLI reach it by different paths)."""
    package = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "")
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _uniform(dist: dict[tuple[int, ...], float], k: int) -> bool:
    """Every one of the 2**k value combinations with probability 2**-k."""
    return len(dist) == 1 << k and all(abs(p - 1.0 / (1 << k)) <= 1e-12 for p in dist.values())


def _describe(dist: dict[tuple[int, ...], float]) -> str:
    return ", ".join(f"{p:g} [{', '.join(map(str, v))}]" for v, p in dist.items())


_MABOSS_START = re.compile(r"node\s+[A-Za-z_][A-Za-z_0-9]*\s*(\{|$)", re.IGNORECASE)


def sniff(path: str | os.PathLike, head: bytes) -> bool:
    """A MaBoSS ``.bnd`` starts with a ``node NAME {`` block."""
    first = first_content_line(head)
    return first is not None and bool(_MABOSS_START.match(first[1]))


def read_bnd(path: str | os.PathLike, *, cfg: str | os.PathLike | None = None) -> PBN:
    """The network of a MaBoSS model (:func:`read_maboss`); a ``.cfg`` alone gets a clear error."""
    if Path(path).suffix.lower() == ".cfg":
        raise ModelError("a MaBoSS .cfg holds variables and run settings, not the network: load the .bnd (the .cfg "
                         "beside it is read, or pass cfg=)", file=os.fspath(path))
    return read_maboss(path, cfg)[0]


FORMAT = Format("maboss", "boolean", (".bnd", ".cfg"), sniff, read_bnd, "a MaBoSS 'node NAME {' block",
                aliases=("bnd",), options=("cfg",))
