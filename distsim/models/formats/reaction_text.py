"""A small, readable text format for reaction networks (exact SSA), its reader and its writer.

Example::

    # comments start with #; blank lines ignored
    # Michaelis-Menten (Niemi & Wheeler; seed 003): propensities theta * h(x)
    E + S -> ES      ; k1 = 0.001        # mass action; defines parameter k1
    ES -> E + S      ; k2 = 0.2
    ES -> E + P      ; k3 = 0.1
    init: E = 120, S = 301                # initial counts (unlisted species start at 0)

Grammar (one statement per line; ``#`` starts a comment that runs to the end of the line;
white space between tokens is free; keywords are lower case)::

    line      := reaction | param | init | species | fixed | (blank)
    reaction  := [NAME ':'] side '->'  side ';' rate
               | [NAME ':'] side '<->' side ';' rate ',' rate     # forward, backward
    side      := (empty) | '0' | '∅' | term ('+' term)*
    term      := [COUNT] NAME          # '2 A' or '2A' = 2 x A; COUNT is a positive integer
    rate      := NAME '=' NUMBER       # defines parameter NAME; mass action with theta = NAME
               | NAME                  # an existing parameter (defined anywhere in the file)
               | NUMBER                # mass action with this constant theta
               | 'law' ':' EXPR        # general kinetic law: EXPR *is* the propensity
    param     := 'param' NAME '=' NUMBER  |  NAME '=' NUMBER
    init      := 'init' ':' NAME '=' COUNT (',' NAME '=' COUNT)*
    species   := 'species' ':' NAME (',' NAME)*
    fixed     := 'fixed' ':' NAME (',' NAME)*
    NAME      := [A-Za-z_][A-Za-z0-9_]*
    NUMBER    := [+-]? (digits ['.' digits] | '.' digits) [('e'|'E') [+-] digits]

Semantics:

* **Mass action** (``rate`` is a parameter or a number): propensity ``theta * prod_i C(x_i, r_i)``
  with the *stochastic* rate constant ``theta`` (so ``2A -> B ; k = 0.5`` fires at
  ``0.5 * x(x-1)/2``). Rate constants must be >= 0.
* **General law** (``law: EXPR``): EXPR is the propensity itself, an arithmetic expression over
  species names (their counts), parameter names and numbers with ``+ - * / ^`` (``**`` = ``^``),
  parentheses and the functions exp, log (natural), ln, log10, sqrt, pow, abs, min, max, floor,
  ceil (see :mod:`distsim.models.arith`). It is parsed, never evaluated as Python.
* Any line containing ``->`` is a reaction line; ``NAME:`` before the arrow is its name. The
  rate part starts at the first ``;``. A reversible line gives two reactions, forward
  (LHS -> RHS) then backward (RHS -> LHS); a name ``R`` becomes ``R_f`` and ``R_r``. Its two
  rates are separated by the first comma outside parentheses (so ``law: max(A, B), k`` works);
  each direction has its own rate (any form).
* Repeated species on one side add up (``A + A`` = ``2A``). ``0``, ``∅`` or nothing = no species.
* **Species** are, in order of first appearance, the names in reactions, ``init:``,
  ``species:`` and ``fixed:`` lines. A species named only in ``init:`` or ``fixed:`` lines must
  also be used by a reaction or a law, or be declared with ``species:`` (this catches typos).
  Names that appear only inside a law must be parameters or declared species.
* **Parameters** are defined by ``param NAME = value``, ``NAME = value`` or ``; NAME = value``
  rates, anywhere in the file (a rate or law may use a parameter defined further down). Defining
  a parameter again with the same value is allowed, with a different value it is an error. A
  name may not be both a species and a parameter.
* ``init:`` sets initial counts (integers >= 0, ``1e3`` is accepted as 1000); species not listed
  start at 0; a species given twice is an error. ``fixed:`` species keep their count (reactions
  read them but do not change them: SBML boundary species).
* Reaction names are optional and must be unique.

Every problem raises :class:`~distsim.errors.ModelError` with file, line and (where known)
column: missing ``->``, bad coefficients or terms, missing or bad rates, unknown parameters,
bad numbers, parse errors in laws, conflicting parameter values, negative or non-integer
counts, unknown species, an empty model.

:func:`to_reaction_text` writes a network back in this format (a ``species:`` line first, so the
species order survives); ``parse_reactions(to_reaction_text(net))`` has the same species,
initial counts, parameters, fixed species, stoichiometry and propensities as ``net``.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import ModelError, read_text
from ..arith import BinOp, Call, Neg, Node, Num, Param, Species, parse_arith, species_of
from ..reactions import MAX_COUNT, MAX_STOICHIOMETRY, Reaction, ReactionNetwork
from .base import Format, content_lines

__all__ = ["read_reactions", "parse_reactions", "to_reaction_text", "write_reactions", "law_text", "FORMAT"]

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_NAME_RE = re.compile(_NAME + r"$")
_NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")  # linear time: no nested repeats
_LABEL_RE = re.compile(r"\s*(" + _NAME + r")\s*:")
_TERM_RE = re.compile(r"(?:(\d+)\s*)?(" + _NAME + r")$")
_KEYWORD_RE = re.compile(r"\s*(init|species|fixed)\s*:")
_PARAM_RE = re.compile(r"\s*(?:param\s+)?(" + _NAME + r")\s*=")
_LAW_RE = re.compile(r"law\s*:")
_EMPTY_SIDE = {"", "0", "∅"}


@dataclass
class _Rate:
    kind: str  # "param" (parameter name) | "number" | "law"
    value: object  # parameter name, float, or law text
    line: int
    column: int


@dataclass
class _RawReaction:
    name: str
    reactants: dict[str, int]
    products: dict[str, int]
    rate: _Rate
    line: int
    column: int | None = None


@dataclass
class _State:
    file: str
    species: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> first (line, column)
    used: set[str] = field(default_factory=set)  # species named in reactions / declared by 'species:'
    params: dict[str, tuple[float, int, int]] = field(default_factory=dict)  # name -> (value, line, column)
    param_refs: list[tuple[str, int, int]] = field(default_factory=list)
    initial: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (count, line)
    fixed: dict[str, tuple[int, int]] = field(default_factory=dict)
    soft: list[tuple[str, int, int, str]] = field(default_factory=list)  # (species, line, col, where)
    reactions: list[_RawReaction] = field(default_factory=list)

    def err(self, msg: str, line: int | None = None, column: int | None = None) -> ModelError:
        return ModelError(msg, file=self.file, line=line, column=column)

    def add_species(self, name: str, line: int, column: int) -> None:
        self.species.setdefault(name, (line, column))

    def define_param(self, name: str, value: float, line: int, column: int) -> None:
        if name in self.params:
            old, old_line, _ = self.params[name]
            if old != value:
                raise self.err(f"parameter {name!r} redefined with a different value ({_fmt(value)}; "
                               f"it is {_fmt(old)} on line {old_line})", line, column)
            return
        self.params[name] = (value, line, column)


# ------------------------------------------------------------------------------------------------
# reading


def read_reactions(path: str | os.PathLike) -> ReactionNetwork:
    """Read a reaction-network text file (see the module docstring for the format).

    The network is named after the file stem. A missing file raises :class:`FileNotFoundError`;
    anything wrong inside the file raises :class:`ModelError`.
    """
    return parse_reactions(read_text(path), file=os.fspath(path), name=Path(path).stem)


def parse_reactions(text: str, *, file: str = "<string>", name: str = "") -> ReactionNetwork:
    """Parse reaction-network text; ``file`` is used in error messages and as the network's source."""
    st = _State(file=file)
    lines = text.split("\n")
    for lineno, raw in enumerate(lines, start=1):
        _parse_line(st, raw.split("#", 1)[0].rstrip(), lineno)
    return _build(st, name, last_line=max(1, len(lines) - (lines[-1] == "")))


def _parse_line(st: _State, s: str, lineno: int) -> None:
    if not s.strip():
        return
    if "->" in s:
        _parse_reaction(st, s, lineno)
        return
    m = _KEYWORD_RE.match(s)
    if m:
        _parse_list(st, m.group(1), s, m.end(), lineno)
        return
    m = _PARAM_RE.match(s)
    if m:
        value = _number(st, s[m.end():], m.end(), lineno, f"value of parameter {m.group(1)!r}")
        st.define_param(m.group(1), value, lineno, m.start(1) + 1)
        return
    col = _first_col(s, 0)
    if s.lstrip().startswith("param"):
        raise st.err("expected 'param NAME = number'", lineno, col)
    if ";" in s or "<-" in s or "=>" in s:
        raise st.err("missing '->' in reaction (expected 'LHS -> RHS ; RATE')", lineno, col)
    raise st.err("cannot read this line: expected a reaction 'LHS -> RHS ; RATE', 'param NAME = number', "
                 "'init: A = 10', 'species: A, B' or 'fixed: A'", lineno, col)


def _parse_reaction(st: _State, s: str, lineno: int) -> None:
    semi = s.find(";")
    body = s if semi < 0 else s[:semi]
    arrow = body.find("->")
    if arrow < 0:  # '->' only after ';'
        raise st.err("missing '->' in reaction (expected 'LHS -> RHS ; RATE')", lineno, _first_col(s, 0))
    reversible = arrow > 0 and body[arrow - 1] == "<"
    lhs_start = 0
    label = ""
    label_col = None
    m = _LABEL_RE.match(body)
    if m and m.end() <= arrow - (1 if reversible else 0):
        label, lhs_start, label_col = m.group(1), m.end(), m.start(1) + 1
    lhs_end = arrow - 1 if reversible else arrow
    rhs_start = arrow + 2
    if "->" in body[rhs_start:]:
        raise st.err("more than one '->' in a reaction", lineno, body.find("->", rhs_start) + 1)
    if semi < 0:
        raise st.err("missing rate: expected '; RATE' after the reaction", lineno, len(s) + 1)
    lhs = _side(st, body, lhs_start, lhs_end, lineno)
    rhs = _side(st, body, rhs_start, len(body), lineno)
    for sp in list(lhs) + list(rhs):
        st.used.add(sp)
    rates = _split_commas(s, semi + 1)
    if reversible:
        if len(rates) != 2:
            raise st.err(f"a reversible reaction '<->' needs two rates 'FORWARD, BACKWARD', got {len(rates)}",
                         lineno, _first_col(s, semi + 1))
    elif len(rates) != 1:
        raise st.err("more than one rate for an irreversible reaction (use '<->' for forward and backward)",
                     lineno, rates[1][1])
    parsed = [_rate(st, txt, col, lineno) for txt, col in rates]
    if reversible:
        names = (f"{label}_f", f"{label}_r") if label else ("", "")
        st.reactions.append(_RawReaction(names[0], lhs, rhs, parsed[0], lineno, label_col))
        st.reactions.append(_RawReaction(names[1], rhs, lhs, parsed[1], lineno, label_col))
    else:
        st.reactions.append(_RawReaction(label, lhs, rhs, parsed[0], lineno, label_col))


def _side(st: _State, s: str, start: int, end: int, lineno: int) -> dict[str, int]:
    text = s[start:end]
    if text.strip() in _EMPTY_SIDE:
        return {}
    out: dict[str, int] = {}
    pos = start
    for part in text.split("+"):
        col = _first_col(s, pos)
        term = part.strip()
        pos += len(part) + 1
        if not term:
            raise st.err("empty term in a reaction side (a '+' without a species)", lineno, col)
        if term in _EMPTY_SIDE:
            raise st.err(f"{term!r} (nothing) cannot be combined with other terms", lineno, col)
        m = _TERM_RE.match(term)
        if not m:
            bad = re.match(r"([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)\s*(" + _NAME + r")?$", term)
            if bad and bad.group(2):
                raise st.err(f"bad coefficient {bad.group(1)!r}: stoichiometric coefficients are positive integers",
                             lineno, col)
            raise st.err(f"bad term {term!r}: expected '[count] Species' (a species name is "
                         "[A-Za-z_][A-Za-z0-9_]*)", lineno, col)
        digits = m.group(1)
        if digits is not None and len(digits.lstrip("0")) > len(str(MAX_STOICHIOMETRY)):
            raise st.err(f"stoichiometric coefficient {digits[:20]}... is too large (at most {MAX_STOICHIOMETRY})",
                         lineno, col)
        count = int(digits) if digits is not None else 1
        if count <= 0:
            raise st.err(f"bad coefficient {m.group(1)!r}: stoichiometric coefficients are positive integers",
                         lineno, col)
        if count > MAX_STOICHIOMETRY:
            raise st.err(f"stoichiometric coefficient {count} is too large (at most {MAX_STOICHIOMETRY})", lineno, col)
        sp = m.group(2)
        st.add_species(sp, lineno, col + (m.start(2) if m.group(1) else 0))
        out[sp] = out.get(sp, 0) + count
    return out


def _rate(st: _State, txt: str, col: int, lineno: int) -> _Rate:
    if not txt:
        raise st.err("missing rate after ';' (expected 'k = 0.1', a parameter name, a number or 'law: EXPR')",
                     lineno, col)
    m = _LAW_RE.match(txt)
    if m:
        expr = txt[m.end():]
        lead = len(expr) - len(expr.lstrip())
        if not expr.strip():
            raise st.err("empty kinetic law after 'law:'", lineno, col + m.end())
        return _Rate("law", expr.strip(), lineno, col + m.end() + lead)
    m = re.match(r"(" + _NAME + r")\s*=", txt)
    if m:
        value = _number(st, txt[m.end():], col - 1 + m.end(), lineno, f"value of parameter {m.group(1)!r}")
        st.define_param(m.group(1), value, lineno, col)
        return _Rate("param", m.group(1), lineno, col)
    if _NAME_RE.match(txt):
        st.param_refs.append((txt, lineno, col))
        return _Rate("param", txt, lineno, col)
    if _NUMBER_RE.match(txt):
        return _Rate("number", _number(st, txt, col - 1, lineno, "rate constant"), lineno, col)
    raise st.err(f"bad rate {txt!r}: expected 'NAME = number', a parameter name, a number or 'law: EXPR'",
                 lineno, col)


def _parse_list(st: _State, kind: str, s: str, start: int, lineno: int) -> None:
    items = _split_commas(s, start)
    if len(items) == 1 and not items[0][0]:
        raise st.err(f"'{kind}:' needs at least one entry", lineno, items[0][1])
    for txt, col in items:
        if not txt:
            raise st.err(f"empty entry in '{kind}:' list", lineno, col)
        if kind == "init":
            m = re.match(r"(" + _NAME + r")\s*=\s*(.*)$", txt)
            if not m:
                raise st.err(f"bad entry {txt!r} in 'init:': expected 'Species = count'", lineno, col)
            sp = m.group(1)
            vcol = col + m.start(2)
            count = _count(st, m.group(2), vcol, lineno, sp)
            if sp in st.initial:
                raise st.err(f"initial count of {sp!r} given twice (first on line {st.initial[sp][1]})", lineno, col)
            st.initial[sp] = (count, lineno)
        else:
            if not _NAME_RE.match(txt):
                raise st.err(f"bad species name {txt!r} in '{kind}:'", lineno, col)
            sp = txt
            if kind == "fixed":
                st.fixed.setdefault(sp, (lineno, col))
        st.add_species(sp, lineno, col)
        if kind == "species":
            st.used.add(sp)
        else:
            st.soft.append((sp, lineno, col, kind))


def _count(st: _State, txt: str, col: int, lineno: int, sp: str) -> int:
    t = txt.strip()
    if re.fullmatch(r"[+]?\d+", t):
        v: float = int(t) if len(t) <= 20 else math.inf
    elif not _NUMBER_RE.match(t):
        raise st.err(f"bad number {t[:40]!r} for the initial count of {sp!r}", lineno, col)
    else:
        v = float(t)
        if v < 0:
            raise st.err(f"negative initial count {t} for {sp!r}", lineno, col)
        if math.isfinite(v) and v != math.floor(v):
            raise st.err(f"initial count of {sp!r} must be a whole number, got {t}", lineno, col)
    if v > MAX_COUNT:
        raise st.err(f"initial count of {sp!r} is too large ({t[:40]}; at most 2**53)", lineno, col)
    return int(v)


def _number(st: _State, txt: str, offset: int, lineno: int, what: str) -> float:
    t = txt.strip()
    col = _first_col(txt, 0) + offset
    if not t:
        raise st.err(f"missing number for the {what}", lineno, col)
    if not _NUMBER_RE.match(t):
        raise st.err(f"bad number {t!r} for the {what}", lineno, col)
    v = float(t)
    if not math.isfinite(v):
        raise st.err(f"the {what} is not finite ({t})", lineno, col)
    return v


def _split_commas(s: str, start: int) -> list[tuple[str, int]]:
    """Split ``s[start:]`` at commas outside parentheses: ``(stripped text, 1-based column)``."""
    out: list[tuple[str, int]] = []
    depth, begin = 0, start
    for k in range(start, len(s) + 1):
        ch = s[k] if k < len(s) else ","
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif ch == "," and (depth == 0 or k == len(s)):
            out.append((s[begin:k].strip(), _first_col(s[:k], begin)))
            begin = k + 1
    return out


def _first_col(s: str, pos: int) -> int:
    """1-based column of the first non-blank character at or after ``pos`` (or ``pos + 1``)."""
    k = pos
    while k < len(s) and s[k] in " \t":
        k += 1
    return (k if k < len(s) else pos) + 1


def _build(st: _State, name: str, last_line: int) -> ReactionNetwork:
    if not st.reactions:
        raise st.err("empty model: no reactions (expected lines like 'A + B -> C ; k = 0.1')", last_line)
    clash = [p for p in st.params if p in st.species]
    if clash:
        p = clash[0]
        raise st.err(f"{p!r} is both a species and a parameter", st.params[p][1], st.params[p][2])
    for p, line, col in st.param_refs:
        if p not in st.params:
            if p in st.species:
                raise st.err(f"rate {p!r} is a species, not a parameter (write 'law: ...' for a general law)",
                             line, col)
            raise st.err(f"unknown parameter {p!r} (define it with 'param {p} = value' or '{p} = value')",
                         line, col)
    species = list(st.species)
    index = {s: i for i, s in enumerate(species)}
    params = {k: v for k, (v, _, _) in st.params.items()}

    def resolve(nm: str) -> Node:
        if nm in index:
            return Species(index[nm])
        if nm in params:
            return Param(nm)
        raise KeyError(nm)

    seen_names: dict[str, int] = {}
    reactions: list[Reaction] = []
    law_species: set[int] = set()
    for raw in st.reactions:
        if raw.name:
            if raw.name in seen_names:
                raise st.err(f"duplicate reaction name {raw.name!r} (first on line {seen_names[raw.name]})", raw.line,
                             raw.column)
            seen_names[raw.name] = raw.line
        reac = tuple((index[s], n) for s, n in raw.reactants.items())
        prod = tuple((index[s], n) for s, n in raw.products.items())
        r = raw.rate
        if r.kind == "law":
            law = parse_arith(str(r.value), resolve, file=st.file, line=r.line, column=r.column)
            law_species.update(species_of(law))
            reactions.append(Reaction(reac, prod, law=law, name=raw.name))
            continue
        theta = params[r.value] if r.kind == "param" else r.value
        if theta < 0:
            what = f"parameter {r.value!r} = {_fmt(theta)}" if r.kind == "param" else _fmt(theta)
            raise st.err(f"mass-action rate constant must be >= 0, got {what}", r.line, r.column)
        reactions.append(Reaction(reac, prod, rate=r.value, name=raw.name))
    used = st.used | {species[i] for i in law_species}
    for sp, line, col, kind in st.soft:
        if sp not in used:
            raise st.err(f"unknown species {sp!r} in '{kind}:' (it appears in no reaction or kinetic law; "
                         f"declare it with 'species: {sp}' to keep it)", line, col)
    initial = [st.initial[s][0] if s in st.initial else 0 for s in species]
    return ReactionNetwork.create(species, initial, reactions, params, fixed=[index[s] for s in st.fixed],
                                  name=name, source=st.file)


# ------------------------------------------------------------------------------------------------
# writing


def to_reaction_text(net: ReactionNetwork) -> str:
    """The network in the text format; parsing the result gives an equivalent network.

    Reaction names that are not identifiers are rewritten (other characters become ``_``); all
    other content (species order, counts, parameters, fixed species, stoichiometry, rates and
    laws) is written exactly (floats with ``repr``). Networks with events or rules are refused.
    """
    net.require_plain("the reaction text format")
    out: list[str] = []
    if net.name:
        out.append(f"# {net.name}")
    out.append(f"# {net.n_species} species, {net.n_reactions} reactions, {len(net.parameters)} parameters")
    out.append("species: " + ", ".join(net.species))
    for k, v in net.parameters:
        out.append(f"param {k} = {_fmt(v)}")
    names: set[str] = set()
    for j, r in enumerate(net.reactions):
        label = ""
        if r.name:
            label = r.name if _NAME_RE.match(r.name) else re.sub(r"[^A-Za-z0-9_]", "_", r.name)
            if not re.match(r"[A-Za-z_]", label):
                label = "_" + label
            base, k = label, 2
            while label in names:
                label, k = f"{base}_{k}", k + 1
            names.add(label)
            label += ": "
        lhs = _write_side(net.species, r.reactants)
        rhs = _write_side(net.species, r.products)
        if r.law is not None:
            rate = "law: " + law_text(r.law, net.species)
        else:
            rate = r.rate if isinstance(r.rate, str) else _fmt(float(r.rate))
        out.append(f"{label}{lhs} -> {rhs} ; {rate}")
    entries = [f"{s} = {x}" for s, x in zip(net.species, net.initial) if x != 0]
    for k in range(0, len(entries), 8):
        out.append("init: " + ", ".join(entries[k:k + 8]))
    if net.fixed:
        out.append("fixed: " + ", ".join(net.species[i] for i in sorted(net.fixed)))
    return "\n".join(out) + "\n"


def write_reactions(net: ReactionNetwork, path: str | os.PathLike) -> None:
    """Write :func:`to_reaction_text` of ``net`` to ``path`` (UTF-8)."""
    Path(path).write_text(to_reaction_text(net), encoding="utf-8")


def law_text(node: Node, species: tuple[str, ...] | list[str]) -> str:
    """A kinetic law as text that :func:`~distsim.models.arith.parse_arith` reads back to the same tree
    (negative operands and numbers are parenthesised, so ``(-x) ^ 2`` stays ``(-x) ^ 2``)."""
    prec = {"+": 1, "-": 1, "*": 2, "/": 2, "^": 3}

    def go(n: Node, parent: int) -> str:
        if isinstance(n, Num):
            txt = repr(float(n.value))
            return f"({txt})" if n.value < 0 or txt.startswith("-") else txt
        if isinstance(n, Species):
            return species[n.index]
        if isinstance(n, Param):
            return n.name
        if isinstance(n, Neg):
            txt = "-" + go(n.arg, 4)
            return f"({txt})" if parent > 0 else txt
        if isinstance(n, Call):
            return f"{n.func}({', '.join(go(a, 0) for a in n.args)})"
        if isinstance(n, BinOp):
            p = prec[n.op]
            if n.op == "^":
                txt = f"{go(n.left, p + 1)} ^ {go(n.right, p)}"
            else:
                txt = f"{go(n.left, p)} {n.op} {go(n.right, p + 1)}"
            return f"({txt})" if p < parent else txt
        raise TypeError(f"not a kinetic-law node: {n!r}")

    return go(node, 0)


def _write_side(species: tuple[str, ...], side: tuple[tuple[int, int], ...]) -> str:
    if not side:
        return "0"
    return " + ".join(species[i] if n == 1 else f"{n} {species[i]}" for i, n in side)


def _fmt(v: float) -> str:
    v = float(v)
    return repr(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)


def sniff(path: str | os.PathLike, head: bytes) -> bool:
    """A reaction text file has a line with ``->`` (ignoring ``#`` comments)."""
    return any("->" in s.split("#", 1)[0] for _, s in content_lines(head, comments=("#",)))


FORMAT = Format("text", "reaction", (".rxn",), sniff, read_reactions, "reaction lines 'A + B -> C ; k = 0.1'",
                write=write_reactions, aliases=("rxn", "txt"))
