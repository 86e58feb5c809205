"""The GRN inference problem: a reference signed network, initial and target states, four rules.

A candidate solution (an *individual*) is a signed links matrix ``L`` (row = target, column =
source; +1 activates, -1 represses, 0 no link) plus one rule per gene. From the initial state the
network is updated synchronously ``iterations`` times; for gene j only links from *active* sources
count: A = #active activators, R = #active repressors, and

* ``most`` (0): on if A > R, off if R > A, unchanged if A == R;
* ``absolute_repressor`` (1): off if R >= 1, else unchanged;
* ``joint_activators`` (2): on if A >= 2, else unchanged;
* ``joint_repressors`` (3): off if R >= 2, else unchanged.

Fitness (minimised) = lambda * node_mismatches / n + (1 - lambda) * link_mismatches / n^2, where node
mismatches compare the final state with the target and link mismatches compare L with the reference.
With lambda = p/q (a fraction) the fitness is ``score / (q n^2)`` for the integer
``score = p n node_mismatches + (q - p) link_mismatches``; the GA compares scores as integers, so
CPU and GPU runs rank individuals identically.

File formats (parsed, never executed; errors name the file and line):

* links matrix CSV: header ``target\\source,g1,g2,...``, then one row per target ``gj,v1,v2,...``
  with values -1/0/1; needs a states CSV;
* edge list CSV: header ``source,target,sign`` (sign 1/+1/-1/+/-/activation/repression); needs a
  states CSV (which also fixes the gene order);
* states CSV: header ``node,<initial>,<target>``, one row per gene with 0/1 values;
* one TOML or JSON file: ``genes``, ``links`` (matrix) or ``edges`` ([source, target, sign]),
  ``initial`` and ``target`` (lists or {gene: 0/1} tables), optional ``iterations`` (5),
  ``lambda`` (0.9), ``rules`` (allowed rule names, default all four), ``name``.

Bad CSV files raise :class:`~distsim.errors.DataError`, bad TOML/JSON files
:class:`~distsim.errors.ConfigError`, both naming the file and line; arrays and tables nest at
most :data:`MAX_NESTING` deep, numbers are finite and ``iterations`` is at most :data:`MAX_ITERATIONS`.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import ConfigError, DataError, ModelError, read_text

RULE_NAMES = ("most", "absolute_repressor", "joint_activators", "joint_repressors")
RULE_CODES = {"most": 0, "rule_of_the_most": 0, "absolute_repressor": 1, "abs": 1, "joint_activators": 2,
              "joint_action_of_2_activators": 2, "ja": 2, "joint_repressors": 3, "joint_action_of_2_repressors": 3,
              "jr": 3}
SIGNS = {"1": 1, "+1": 1, "+": 1, "activation": 1, "activates": 1, "-1": -1, "-": -1, "repression": -1,
         "represses": -1, "0": 0}
MAX_DENOMINATOR = 10_000
MAX_ITERATIONS = 1_000_000
MAX_NESTING = 32  # arrays/tables in a TOML or JSON problem file (the format needs 2)


def _fraction(value: float, what: str, file: str | None = None) -> Fraction:
    if not math.isfinite(value):
        raise ModelError(f"{what} must be a finite number, got {value!r}", file=file)
    f = Fraction(value).limit_denominator(MAX_DENOMINATOR)
    if abs(float(f) - value) > 1e-12 * max(1.0, abs(value)):
        raise ModelError(f"{what} must be a fraction with denominator <= {MAX_DENOMINATOR} (got {value!r}) so that "
                         "fitness comparisons are exact", file=file)
    return f


def _whole(v: Any, lo: int, hi: int) -> bool:
    """``v`` is a whole number (an int, or a float with an integer value) in [lo, hi], not a bool."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        return False
    return (not isinstance(v, (float, np.floating)) or float(v).is_integer()) and lo <= v <= hi


@dataclass(frozen=True, eq=False)
class Problem:
    """Reference network ``links`` [n, n] (int8, row = target), ``initial``/``target`` states [n] (0/1)."""

    genes: tuple[str, ...]
    links: np.ndarray
    initial: np.ndarray
    target: np.ndarray
    iterations: int = 5
    lam: float = 0.9
    rules: tuple[int, ...] = (0, 1, 2, 3)
    max_connectivity_distance: float = 0.1
    name: str = ""
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        n = len(self.genes)
        where = self.source or "<problem>"
        if n < 1:
            raise ModelError("the problem has no genes", file=where)
        if len(set(self.genes)) != n:
            raise ModelError("gene names are not unique", file=where)
        links = np.asarray(self.links)
        if links.shape != (n, n) or not np.isin(links, (-1, 0, 1)).all():
            raise ModelError(f"links must be an {n}x{n} matrix of -1/0/1", file=where)
        for nm in ("initial", "target"):
            v = np.asarray(getattr(self, nm))
            if v.shape != (n,) or not np.isin(v, (0, 1)).all():
                raise ModelError(f"{nm} state must have {n} values of 0/1", file=where)
        if not _whole(self.iterations, 1, MAX_ITERATIONS):
            raise ModelError(f"iterations must be an integer in [1, {MAX_ITERATIONS}], got {self.iterations!r}",
                             file=where)
        if not 0.0 <= self.lam <= 1.0:
            raise ModelError(f"lambda must be in [0, 1], got {self.lam}", file=where)
        if not self.rules or any(r not in (0, 1, 2, 3) for r in self.rules) or len(set(self.rules)) != len(self.rules):
            raise ModelError(f"rules must be distinct codes 0-3 ({', '.join(RULE_NAMES)})", file=where)
        object.__setattr__(self, "links", links.astype(np.int8))
        object.__setattr__(self, "initial", np.asarray(self.initial).astype(np.uint8))
        object.__setattr__(self, "target", np.asarray(self.target).astype(np.uint8))
        object.__setattr__(self, "rules", tuple(sorted(int(r) for r in self.rules)))
        _fraction(self.lam, "lambda", where)
        _fraction(self.max_connectivity_distance, "max_connectivity_distance", where)

    @property
    def n(self) -> int:
        return len(self.genes)

    def weights(self) -> tuple[int, int]:
        """(p, q) with lambda = p/q: fitness = (p n nm + (q - p) lm) / (q n^2)."""
        f = _fraction(self.lam, "lambda")
        return f.numerator, f.denominator

    def score(self, node_mismatches: int, link_mismatches: int) -> int:
        p, q = self.weights()
        return p * self.n * int(node_mismatches) + (q - p) * int(link_mismatches)

    def fitness_of_score(self, score: int | np.ndarray) -> Any:
        p, q = self.weights()
        return np.asarray(score, dtype=np.float64) / float(q * self.n * self.n)

    def score_of_fitness(self, fitness: float) -> int:
        """Largest integer score whose fitness is <= ``fitness`` (for target-fitness stopping)."""
        p, q = self.weights()
        return int(np.floor(fitness * q * self.n * self.n * (1 + 1e-12) + 1e-9))

    def simulate(self, links: np.ndarray, rules: np.ndarray) -> np.ndarray:
        """Reference (unpacked NumPy) trajectory x(0)..x(iterations) [iterations+1, n] of one individual."""
        L = np.asarray(links, dtype=np.int8)
        r = np.asarray(rules)
        x = self.initial.astype(bool)
        out = [x.astype(np.uint8)]
        for _ in range(self.iterations):
            A = ((L == 1) & x[None, :]).sum(axis=1)
            R = ((L == -1) & x[None, :]).sum(axis=1)
            nxt = x.copy()
            most = r == 0
            nxt[most & (A > R)] = True
            nxt[most & (R > A)] = False
            nxt[(r == 1) & (R >= 1)] = False
            nxt[(r == 2) & (A >= 2)] = True
            nxt[(r == 3) & (R >= 2)] = False
            x = nxt
            out.append(x.astype(np.uint8))
        return np.array(out)

    def mismatches(self, links: np.ndarray, rules: np.ndarray) -> tuple[int, int]:
        final = self.simulate(links, rules)[-1]
        return int(np.count_nonzero(final != self.target)), int(np.count_nonzero(np.asarray(links) != self.links))

    def fitness(self, links: np.ndarray, rules: np.ndarray) -> float:
        """Fitness of one individual (float64, from the exact integer score)."""
        return float(self.fitness_of_score(self.score(*self.mismatches(links, rules))))

    def digest(self) -> str:
        h = hashlib.sha256()
        h.update("\n".join(self.genes).encode())
        for a in (self.links, self.initial, self.target):
            h.update(np.ascontiguousarray(a).tobytes())
        h.update(repr((self.iterations, self.lam, self.rules, self.max_connectivity_distance)).encode())
        return h.hexdigest()

    def summary(self) -> str:
        nnz = int(np.count_nonzero(self.links))
        return (f"{self.name or 'GRN'}: {self.n} genes, {nnz} links ({int((self.links == 1).sum())} activations, "
                f"{int((self.links == -1).sum())} repressions), {int((self.initial != self.target).sum())} genes "
                f"change state, {self.iterations} iterations, lambda={self.lam:g}, rules "
                f"{', '.join(RULE_NAMES[r] for r in self.rules)}")


# ---------------------------------------------------------------------------------------------------------------
# loaders


def _csv_rows(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, cells) of the non-empty, non-comment rows."""
    f = str(path)
    rows = []
    for lineno, line in enumerate(read_text(path, error=DataError).split("\n"), start=1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        try:
            cells = next(csv.reader([s]))
        except csv.Error as e:
            raise DataError(f"bad CSV row ({e})", file=f, line=lineno) from None
        rows.append((lineno, [c.strip() for c in cells]))
    if not rows:
        raise DataError("the file is empty (no row that is not blank or a comment)", file=f, line=1)
    return rows


def _bit(text: str, file: str, line: int, what: str) -> int:
    if text not in ("0", "1"):
        raise DataError(f"{what} must be 0 or 1, got {text[:40]!r}", file=file, line=line)
    return int(text)


def _sign(text: str, file: str, line: int, allow_zero: bool = False) -> int:
    v = SIGNS.get(text.strip().lower())
    if v is None or (v == 0 and not allow_zero):
        ok = "-1, 0 or 1" if allow_zero else "1/+1/+/activation or -1/-/repression"
        raise DataError(f"link sign must be {ok}, got {text[:40]!r}", file=file, line=line)
    return v


def read_states(path: str | os.PathLike) -> tuple[list[str], np.ndarray, np.ndarray]:
    """States CSV ``node,<initial>,<target>`` -> (genes, initial, target)."""
    p = Path(path)
    f = str(p)
    rows = _csv_rows(p)
    (hl, header), body = rows[0], rows[1:]
    if len(header) != 3:
        raise DataError("states header must be node,<initial>,<target> (3 columns)", file=f, line=hl)
    genes, init, targ, seen = [], [], [], {}
    for line, cells in body:
        if len(cells) != 3:
            raise DataError(f"expected 3 columns (node, initial, target), got {len(cells)}", file=f, line=line)
        name = cells[0]
        if not name:
            raise DataError("empty gene name", file=f, line=line)
        if name in seen:
            raise DataError(f"gene {name!r} listed twice (first on line {seen[name]})", file=f, line=line)
        seen[name] = line
        genes.append(name)
        init.append(_bit(cells[1], f, line, f"initial state of {name}"))
        targ.append(_bit(cells[2], f, line, f"target state of {name}"))
    if not genes:
        raise DataError("no genes listed after the header", file=f, line=hl)
    return genes, np.array(init, np.uint8), np.array(targ, np.uint8)


def _is_edge_header(cells: list[str]) -> bool:
    return [c.lower() for c in cells[:3]] == ["source", "target", "sign"]


def read_links_matrix(path: str | os.PathLike, genes: Sequence[str] | None = None) -> tuple[list[str], np.ndarray]:
    """Links-matrix CSV (row = target, column = source) -> (genes in header order, matrix [n, n])."""
    p = Path(path)
    f = str(p)
    rows = _csv_rows(p)
    (hl, header), body = rows[0], rows[1:]
    names = header[1:]
    if not names or any(not c for c in names):
        raise DataError("header must be target\\source,<gene>,<gene>,... with non-empty gene names", file=f,
                        line=hl)
    if len(set(names)) != len(names):
        raise DataError("gene names in the header are not unique", file=f, line=hl)
    if genes is not None and set(genes) != set(names):
        raise DataError("the genes of the links matrix and of the states file differ: "
                        f"{sorted(set(genes) ^ set(names))[:5]}", file=f, line=hl)
    index = {g: i for i, g in enumerate(names)}
    n = len(names)
    L = np.zeros((n, n), np.int8)
    seen: dict[str, int] = {}
    for line, cells in body:
        if len(cells) != n + 1:
            raise DataError(f"expected {n + 1} columns (target and {n} sources), got {len(cells)}", file=f,
                            line=line)
        tgt = cells[0]
        if tgt not in index:
            raise DataError(f"row gene {tgt[:40]!r} is not in the header", file=f, line=line)
        if tgt in seen:
            raise DataError(f"row for {tgt!r} given twice (first on line {seen[tgt]})", file=f, line=line)
        seen[tgt] = line
        L[index[tgt]] = [_sign(c, f, line, allow_zero=True) for c in cells[1:]]
    missing = [g for g in names if g not in seen]
    if missing:
        raise DataError(f"no row for gene(s) {', '.join(missing[:5])} (listed in the header)", file=f, line=hl)
    if genes is not None:
        order = [index[g] for g in genes]
        return list(genes), L[np.ix_(order, order)]
    return names, L


def read_edges(path: str | os.PathLike, genes: Sequence[str]) -> np.ndarray:
    """Edge-list CSV ``source,target,sign`` -> matrix [n, n] over ``genes``."""
    p = Path(path)
    f = str(p)
    rows = _csv_rows(p)
    (hl, header), body = rows[0], rows[1:]
    if not _is_edge_header(header):
        raise DataError("edge list header must be source,target,sign", file=f, line=hl)
    index = {g: i for i, g in enumerate(genes)}
    L = np.zeros((len(genes), len(genes)), np.int8)
    seen: dict[tuple[str, str], int] = {}
    for line, cells in body:
        if len(cells) != 3:
            raise DataError(f"expected 3 columns (source, target, sign), got {len(cells)}", file=f, line=line)
        src, tgt, sign = cells
        for g in (src, tgt):
            if g not in index:
                raise DataError(f"gene {g[:40]!r} is not in the states file", file=f, line=line)
        if (src, tgt) in seen:
            raise DataError(f"edge {src} -> {tgt} given twice (first on line {seen[(src, tgt)]})", file=f, line=line)
        seen[(src, tgt)] = line
        L[index[tgt], index[src]] = _sign(sign, f, line)
    return L


# ---------------------------------------------------------------------------------------------------------------
# TOML / JSON problem files

# the nesting check: the next character that matters, and the ends of strings (scanned piece by piece,
# never with a repeated alternation: Python's re keeps a frame per repetition, 1.4 GB for a 10 MB string)
_JSON_STOP = re.compile(r'["\[\]{}\n]')
_TOML_STOP = re.compile(r'["\'#\[\]{}\n]')
_BASIC_STOP = re.compile(r'["\\\n]')
_LITERAL_STOP = re.compile(r"['\n]")
_TOML_POSITION = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)$")
_MAX_INT_DIGITS = 30


def _check_nesting(text: str, f: str, toml: bool) -> None:
    """ConfigError when arrays/tables nest deeper than MAX_NESTING (checked first: the JSON and TOML
    parsers recurse). Strings (an unterminated one ends at the end of its line) and TOML comments are
    skipped; linear time, constant memory."""
    depth, line, pos, n = 0, 1, 0, len(text)
    stop = _TOML_STOP if toml else _JSON_STOP
    while pos < n:
        m = stop.search(text, pos)
        if m is None:
            return
        c, i = m.group(), m.start()
        pos = i + 1
        if c == "\n":
            line += 1
        elif c == '"':
            while (e := _BASIC_STOP.search(text, pos)) is not None and e.group() == "\\" and text[e.end():e.end() + 1] \
                    not in ("", "\n"):
                pos = e.end() + 1  # an escaped character
            pos = n if e is None else e.end() if e.group() == '"' else e.start()
        elif c == "'":
            e = _LITERAL_STOP.search(text, pos)
            pos = n if e is None else e.end() if e.group() == "'" else e.start()
        elif c == "#":
            e_nl = text.find("\n", pos)
            pos = n if e_nl < 0 else e_nl
        elif c in ("[", "{"):
            depth += 1
            if depth > MAX_NESTING:
                raise ConfigError(f"arrays and tables nest more than {MAX_NESTING} deep", file=f, line=line,
                                  column=i - text.rfind("\n", 0, i))
        else:
            depth = max(depth - 1, 0)


def _line_of(text: str, needle: str) -> int:
    """Line of the key ``needle`` (``key =`` in TOML, ``"key":`` in JSON), else of its first
    occurrence, else 1."""
    q = re.escape(needle)
    m = re.search(rf"^\s*[\"']?{q}[\"']?\s*=|[\"']{q}[\"']\s*:", text, re.MULTILINE)
    pos = m.start() if m else text.find(needle)
    return text.count("\n", 0, pos) + 1 if pos >= 0 else 1


class _BadNumber(ValueError):
    pass


def _finite_float(s: str) -> float:
    v = float(s)
    if not math.isfinite(v):
        raise _BadNumber(s)
    return v


def _bounded_int(s: str) -> int:
    if len(s.lstrip("+-")) > _MAX_INT_DIGITS:
        raise _BadNumber(s)
    return int(s)


def _bad_number(text: str, f: str, token: str) -> ConfigError:
    pos = text.find(token)
    line = text.count("\n", 0, pos) + 1 if pos >= 0 else None
    return ConfigError(f"number {token[:20]}{'...' if len(token) > 20 else ''} is not finite or too large",
                       file=f, line=line)


def _parse_json(text: str, f: str) -> Any:
    _check_nesting(text, f, toml=False)
    try:
        return json.loads(text, parse_int=_bounded_int, parse_float=_finite_float, parse_constant=_finite_float)
    except json.JSONDecodeError as e:
        raise ConfigError(f"invalid JSON: {e.msg}", file=f, line=e.lineno, column=e.colno) from None
    except _BadNumber as e:
        raise _bad_number(text, f, str(e)) from None


def _parse_toml(text: str, f: str) -> Any:
    import tomllib

    _check_nesting(text, f, toml=True)
    try:
        return tomllib.loads(text, parse_float=_finite_float)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = _TOML_POSITION.search(msg)
        line, col = (int(m.group(1)), int(m.group(2))) if m and m.group(1) else (None, None)
        if m and line is None:  # at the end of the document
            line = text.count("\n") + 1 - text.endswith("\n")
        raise ConfigError(f"invalid TOML: {msg[:m.start()] if m else msg}", file=f, line=line, column=col) from None
    except _BadNumber as e:
        raise _bad_number(text, f, str(e)) from None
    except ValueError:  # an integer beyond Python's int-string limit (tomllib has no hook for integers)
        long = re.search(r"[0-9_]{4000,}", text)
        raise _bad_number(text, f, long.group() if long else "") from None


_KNOWN_KEYS = ("name", "genes", "links", "edges", "initial", "target", "iterations", "lambda", "rules",
               "max_connectivity_distance")


class _Mapping:
    """A parsed TOML/JSON problem with errors that name the file and the line of the key."""

    def __init__(self, d: Mapping[str, Any], f: str, text: str):
        self.d, self.f, self.text = d, f, text

    def err(self, key: str, msg: str) -> ConfigError:
        return ConfigError(f"{key}: {msg}", file=self.f, line=_line_of(self.text, key))

    def genes(self) -> list[str]:
        extra = sorted(set(self.d) - set(_KNOWN_KEYS))
        if extra:
            raise self.err(extra[0], f"unknown key (known: {', '.join(sorted(_KNOWN_KEYS))})")
        genes = self.d.get("genes")
        if not isinstance(genes, list) or not genes or not all(isinstance(g, str) and g for g in genes):
            raise self.err("genes", "must be a non-empty list of gene names")
        if len(set(genes)) != len(genes):
            raise self.err("genes", "gene names are not unique")
        return genes

    def state(self, key: str, genes: list[str]) -> np.ndarray:
        v, n = self.d.get(key), len(genes)

        def bit(x: Any) -> bool:
            return x in (0, 1) and not isinstance(x, float)

        if isinstance(v, list):
            if len(v) != n or not all(bit(x) for x in v):
                raise self.err(key, f"must be a list of {n} values 0/1")
            return np.array(v, np.uint8)
        if isinstance(v, dict):
            bad = sorted(set(v) - set(genes))
            if bad:
                raise self.err(key, f"unknown gene {bad[0]!r}")
            miss = [g for g in genes if g not in v]
            if miss:
                raise self.err(key, f"no value for gene {miss[0]!r}")
            if not all(bit(v[g]) for g in genes):
                raise self.err(key, "values must be 0 or 1")
            return np.array([v[g] for g in genes], np.uint8)
        raise self.err(key, f"must be a list of {n} values 0/1 or a {{gene: 0/1}} table")

    def links(self, genes: list[str]) -> np.ndarray:
        d, n = self.d, len(genes)
        if ("links" in d) == ("edges" in d):
            raise self.err("links" if "links" in d else "genes", "give exactly one of 'links' (matrix) and 'edges'")
        if "edges" in d:
            return self.edges(genes)
        m = d["links"]
        if not isinstance(m, list) or len(m) != n or not all(isinstance(r, list) and len(r) == n for r in m):
            raise self.err("links", f"must be an {n}x{n} matrix (row = target, column = source)")
        for j, row in enumerate(m):
            for i, v in enumerate(row):
                if isinstance(v, bool) or v not in (-1, 0, 1):
                    raise self.err("links", f"links[{j}][{i}] must be -1, 0 or 1, got {str(v)[:40]}")
        return np.array(m, np.int8)

    def edges(self, genes: list[str]) -> np.ndarray:
        index = {g: i for i, g in enumerate(genes)}
        L = np.zeros((len(genes), len(genes)), np.int8)
        edges = self.d["edges"]
        if not isinstance(edges, list):
            raise self.err("edges", "must be a list of [source, target, sign]")
        seen = set()
        for k, e in enumerate(edges):
            if not isinstance(e, list) or len(e) != 3:
                raise self.err("edges", f"edges[{k}] must be [source, target, sign], got {str(e)[:60]}")
            src, tgt, sign = e
            for g in (src, tgt):
                if not isinstance(g, str) or g not in index:
                    raise self.err("edges", f"edges[{k}]: unknown gene {str(g)[:40]!r}")
            if (src, tgt) in seen:
                raise self.err("edges", f"edges[{k}]: edge {src} -> {tgt} given twice")
            seen.add((src, tgt))
            s = SIGNS.get(str(sign).strip().lower()) if isinstance(sign, (str, int)) else None
            if s is None or s == 0 or isinstance(sign, bool):
                raise self.err("edges", f"edges[{k}]: sign must be 1 or -1, got {str(sign)[:40]}")
            L[index[tgt], index[src]] = s
        return L

    def rules(self) -> tuple[int, ...]:
        rules = self.d.get("rules", list(RULE_NAMES))
        if not isinstance(rules, list) or not rules:
            raise self.err("rules", "must be a non-empty list of rule names")
        codes = []
        for r in rules:
            c = RULE_CODES.get(r.strip().lower()) if isinstance(r, str) else None
            if c is None:
                raise self.err("rules", f"unknown rule {str(r)[:40]!r} (known: {', '.join(RULE_NAMES)})")
            codes.append(c)
        if len(set(codes)) != len(codes):
            raise self.err("rules", "a rule is listed twice")
        return tuple(codes)

    def numbers(self) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        for key, typ in (("iterations", int), ("lambda", float), ("max_connectivity_distance", float)):
            if key not in self.d:
                continue
            v = self.d[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or (typ is int and not isinstance(v, int)):
                raise self.err(key, f"must be a number{' (integer)' if typ is int else ''}, got {str(v)[:40]}")
            if typ is int:
                if not 1 <= v <= MAX_ITERATIONS:
                    raise self.err(key, f"must be in [1, {MAX_ITERATIONS}], got {str(v)[:40]}")
            else:
                hi = 1.0 if key == "lambda" else 2.0**53
                if not 0.0 <= v <= hi:
                    raise self.err(key, f"must be in [0, {'1' if key == 'lambda' else '2**53'}], got {str(v)[:40]}")
                try:
                    _fraction(float(v), key)
                except ModelError as e:
                    raise self.err(key, e.message) from None
            kw["lam" if key == "lambda" else key] = typ(v)
        return kw

    def problem(self) -> Problem:
        genes = self.genes()
        links = self.links(genes)
        initial, target = self.state("initial", genes), self.state("target", genes)
        name = self.d.get("name", Path(self.f).stem)
        try:
            return Problem(tuple(genes), links, initial, target, rules=self.rules(), name=str(name),
                           source=self.f, **self.numbers())
        except ModelError as e:
            raise ConfigError(e.message, file=self.f, line=1) from None


def load(path: str | os.PathLike, states: str | os.PathLike | None = None, *, iterations: int | None = None,
         lam: float | None = None) -> Problem:
    """Load a GRN problem: one ``.toml``/``.json`` file, or a links-matrix / edge-list ``.csv`` plus a
    states CSV (``states=``). ``iterations``/``lam`` override the file's values."""
    p = Path(path)
    f = str(p)
    suffix = p.suffix.lower()
    if suffix in (".toml", ".json"):
        if states is not None:
            raise ValueError(f"{f}: a {suffix} problem holds its own states; do not pass states=")
        text = read_text(p, error=ConfigError)
        d = _parse_json(text, f) if suffix == ".json" else _parse_toml(text, f)
        if not isinstance(d, dict):
            raise ConfigError("the top level must be a table/object", file=f, line=1)
        prob = _Mapping(d, f, text).problem()
    elif suffix in (".csv", ".txt", ".tsv"):
        if states is None:
            raise ValueError(f"{f}: a CSV links matrix or edge list needs a states file (states=, "
                             "CSV node,<initial>,<target>)")
        genes, init, targ = read_states(states)
        rows = _csv_rows(p)
        if _is_edge_header(rows[0][1]):
            L = read_edges(p, genes)
        else:
            _, L = read_links_matrix(p, genes)
        name = p.stem.replace("_links_matrix", "").replace("_edges", "")
        prob = Problem(tuple(genes), L, init, targ, name=name, source=f)
    else:
        raise ConfigError(f"unknown problem format {p.suffix!r}; use .toml, .json or .csv (+ states CSV)", file=f)
    if iterations is not None or lam is not None:
        prob = Problem(prob.genes, prob.links, prob.initial, prob.target,
                       iterations=prob.iterations if iterations is None else iterations,
                       lam=prob.lam if lam is None else lam, rules=prob.rules,
                       max_connectivity_distance=prob.max_connectivity_distance, name=prob.name, source=prob.source)
    return prob


# ---------------------------------------------------------------------------------------------------------------
# bit packing: the GA stores links as two bit sets per gene row, words laid out [word, target]


def n_words(n: int) -> int:
    return (n + 31) // 32


def pack_links(links: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Signed matrix [..., n, n] (row = target) -> (act, rep) uint32 [..., W, n]: bit i%32 of word
    [i//32, j] is set when source i activates (represses) target j."""
    L = np.asarray(links)
    n = L.shape[-1]
    W = n_words(n)

    def bits(mask: np.ndarray) -> np.ndarray:
        b = np.packbits(mask, axis=-1, bitorder="little")  # [..., n, ceil(n/8)] bytes
        pad = np.zeros(b.shape[:-1] + (4 * W,), np.uint8)
        pad[..., : b.shape[-1]] = b
        w = pad.view("<u4").astype(np.uint32)  # [..., n(target), W]
        return np.ascontiguousarray(np.swapaxes(w, -1, -2))

    return bits(L == 1), bits(L == -1)


def unpack_links(act: np.ndarray, rep: np.ndarray, n: int) -> np.ndarray:
    """Inverse of :func:`pack_links`: (act, rep) [..., W, n] -> signed int8 [..., n, n]."""
    a = np.swapaxes(np.asarray(act, np.uint32), -1, -2)[..., None]  # [..., n, W, 1]
    r = np.swapaxes(np.asarray(rep, np.uint32), -1, -2)[..., None]
    sh = np.arange(32, dtype=np.uint32)
    ab = ((a >> sh) & 1).reshape(a.shape[:-2] + (-1,))[..., :n]
    rb = ((r >> sh) & 1).reshape(r.shape[:-2] + (-1,))[..., :n]
    return (ab.astype(np.int8) - rb.astype(np.int8)).astype(np.int8)


def pack_state(x: np.ndarray) -> np.ndarray:
    """0/1 vector [n] -> uint32 words [W] (bit i%32 of word i//32)."""
    x = np.asarray(x).astype(np.uint64)
    W = n_words(len(x))
    out = np.zeros(W, np.uint64)
    for i, v in enumerate(x):
        out[i // 32] |= v << np.uint64(i % 32)
    return out.astype(np.uint32)
