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
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import ModelError

RULE_NAMES = ("most", "absolute_repressor", "joint_activators", "joint_repressors")
RULE_CODES = {"most": 0, "rule_of_the_most": 0, "absolute_repressor": 1, "abs": 1, "joint_activators": 2,
              "joint_action_of_2_activators": 2, "ja": 2, "joint_repressors": 3, "joint_action_of_2_repressors": 3,
              "jr": 3}
SIGNS = {"1": 1, "+1": 1, "+": 1, "activation": 1, "activates": 1, "-1": -1, "-": -1, "repression": -1,
         "represses": -1, "0": 0}
MAX_DENOMINATOR = 10_000


def _fraction(value: float, what: str) -> Fraction:
    f = Fraction(value).limit_denominator(MAX_DENOMINATOR)
    if abs(float(f) - value) > 1e-12 * max(1.0, abs(value)):
        raise ValueError(f"{what} must be a fraction with denominator <= {MAX_DENOMINATOR} (got {value!r}) so that "
                         "fitness comparisons are exact")
    return f


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
        if isinstance(self.iterations, bool) or int(self.iterations) != self.iterations or self.iterations < 1:
            raise ModelError(f"iterations must be a positive integer, got {self.iterations!r}", file=where)
        if not 0.0 <= self.lam <= 1.0:
            raise ModelError(f"lambda must be in [0, 1], got {self.lam}", file=where)
        if not self.rules or any(r not in (0, 1, 2, 3) for r in self.rules) or len(set(self.rules)) != len(self.rules):
            raise ModelError(f"rules must be distinct codes 0-3 ({', '.join(RULE_NAMES)})", file=where)
        object.__setattr__(self, "links", links.astype(np.int8))
        object.__setattr__(self, "initial", np.asarray(self.initial).astype(np.uint8))
        object.__setattr__(self, "target", np.asarray(self.target).astype(np.uint8))
        object.__setattr__(self, "rules", tuple(sorted(int(r) for r in self.rules)))
        _fraction(self.lam, "lambda")
        _fraction(self.max_connectivity_distance, "max_connectivity_distance")

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


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise ModelError(f"cannot read: {e.strerror or e}", file=str(path)) from e
    except UnicodeDecodeError as e:
        raise ModelError("not a UTF-8 text file", file=str(path)) from e


def _csv_rows(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, cells) of the non-empty, non-comment rows."""
    rows = []
    for lineno, line in enumerate(_read(path).splitlines(), start=1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        cells = [c.strip() for c in next(csv.reader(io.StringIO(s)))]
        rows.append((lineno, cells))
    if not rows:
        raise ModelError("the file is empty", file=str(path))
    return rows


def _bit(text: str, file: str, line: int, what: str) -> int:
    if text not in ("0", "1"):
        raise ModelError(f"{what} must be 0 or 1, got {text!r}", file=file, line=line)
    return int(text)


def _sign(text: str, file: str, line: int, allow_zero: bool = False) -> int:
    v = SIGNS.get(text.strip().lower())
    if v is None or (v == 0 and not allow_zero):
        ok = "-1, 0 or 1" if allow_zero else "1/+1/+/activation or -1/-/repression"
        raise ModelError(f"link sign must be {ok}, got {text!r}", file=file, line=line)
    return v


def read_states(path: str | os.PathLike) -> tuple[list[str], np.ndarray, np.ndarray]:
    """States CSV ``node,<initial>,<target>`` -> (genes, initial, target)."""
    p = Path(path)
    f = str(p)
    rows = _csv_rows(p)
    (hl, header), body = rows[0], rows[1:]
    if len(header) != 3:
        raise ModelError("states header must be node,<initial>,<target> (3 columns)", file=f, line=hl)
    genes, init, targ, seen = [], [], [], {}
    for line, cells in body:
        if len(cells) != 3:
            raise ModelError(f"expected 3 columns (node, initial, target), got {len(cells)}", file=f, line=line)
        name = cells[0]
        if not name:
            raise ModelError("empty gene name", file=f, line=line)
        if name in seen:
            raise ModelError(f"gene {name!r} listed twice (first on line {seen[name]})", file=f, line=line)
        seen[name] = line
        genes.append(name)
        init.append(_bit(cells[1], f, line, f"initial state of {name}"))
        targ.append(_bit(cells[2], f, line, f"target state of {name}"))
    if not genes:
        raise ModelError("no genes listed", file=f)
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
        raise ModelError("header must be target\\source,<gene>,<gene>,... with non-empty gene names", file=f,
                         line=hl)
    if len(set(names)) != len(names):
        raise ModelError("gene names in the header are not unique", file=f, line=hl)
    index = {g: i for i, g in enumerate(names)}
    n = len(names)
    L = np.zeros((n, n), np.int8)
    seen: dict[str, int] = {}
    for line, cells in body:
        if len(cells) != n + 1:
            raise ModelError(f"expected {n + 1} columns (target and {n} sources), got {len(cells)}", file=f,
                             line=line)
        tgt = cells[0]
        if tgt not in index:
            raise ModelError(f"row gene {tgt!r} is not in the header", file=f, line=line)
        if tgt in seen:
            raise ModelError(f"row for {tgt!r} given twice (first on line {seen[tgt]})", file=f, line=line)
        seen[tgt] = line
        L[index[tgt]] = [_sign(c, f, line, allow_zero=True) for c in cells[1:]]
    missing = [g for g in names if g not in seen]
    if missing:
        raise ModelError(f"no row for gene(s) {', '.join(missing[:5])}", file=f)
    if genes is not None:
        if set(genes) != set(names):
            raise ModelError("the genes of the links matrix and of the states file differ: "
                             f"{sorted(set(genes) ^ set(names))[:5]}", file=f, line=hl)
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
        raise ModelError("edge list header must be source,target,sign", file=f, line=hl)
    index = {g: i for i, g in enumerate(genes)}
    L = np.zeros((len(genes), len(genes)), np.int8)
    seen: dict[tuple[str, str], int] = {}
    for line, cells in body:
        if len(cells) != 3:
            raise ModelError(f"expected 3 columns (source, target, sign), got {len(cells)}", file=f, line=line)
        src, tgt, sign = cells
        for g in (src, tgt):
            if g not in index:
                raise ModelError(f"gene {g!r} is not in the states file", file=f, line=line)
        if (src, tgt) in seen:
            raise ModelError(f"edge {src} -> {tgt} given twice (first on line {seen[(src, tgt)]})", file=f, line=line)
        seen[(src, tgt)] = line
        L[index[tgt], index[src]] = _sign(sign, f, line)
    return L


def _line_of(text: str, needle: str) -> int | None:
    for i, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return i
    return None


def _from_mapping(d: Mapping[str, Any], f: str, text: str) -> Problem:
    def err(key: str, msg: str) -> ModelError:
        return ModelError(f"{key}: {msg}", file=f, line=_line_of(text, key))

    known = {"name", "genes", "links", "edges", "initial", "target", "iterations", "lambda", "rules",
             "max_connectivity_distance"}
    extra = sorted(set(d) - known)
    if extra:
        raise err(extra[0], f"unknown key (known: {', '.join(sorted(known))})")
    genes = d.get("genes")
    if not isinstance(genes, list) or not genes or not all(isinstance(g, str) and g for g in genes):
        raise err("genes", "must be a non-empty list of gene names")
    n = len(genes)
    index = {g: i for i, g in enumerate(genes)}
    if len(index) != n:
        raise err("genes", "gene names are not unique")

    def state(key: str) -> np.ndarray:
        v = d.get(key)
        if isinstance(v, list):
            if len(v) != n or not all(x in (0, 1) and not isinstance(x, float) for x in v):
                raise err(key, f"must be a list of {n} values 0/1")
            return np.array(v, np.uint8)
        if isinstance(v, dict):
            bad = sorted(set(v) - set(index))
            if bad:
                raise err(key, f"unknown gene {bad[0]!r}")
            miss = [g for g in genes if g not in v]
            if miss:
                raise err(key, f"no value for gene {miss[0]!r}")
            if not all(v[g] in (0, 1) and not isinstance(v[g], float) for g in genes):
                raise err(key, "values must be 0 or 1")
            return np.array([v[g] for g in genes], np.uint8)
        raise err(key, f"must be a list of {n} values 0/1 or a {{gene: 0/1}} table")

    if ("links" in d) == ("edges" in d):
        raise err("links" if "links" in d else "genes", "give exactly one of 'links' (matrix) and 'edges'")
    if "links" in d:
        m = d["links"]
        if not isinstance(m, list) or len(m) != n or not all(isinstance(r, list) and len(r) == n for r in m):
            raise err("links", f"must be an {n}x{n} matrix (row = target, column = source)")
        for j, row in enumerate(m):
            for i, v in enumerate(row):
                if isinstance(v, bool) or v not in (-1, 0, 1):
                    raise err("links", f"links[{j}][{i}] must be -1, 0 or 1, got {v!r}")
        L = np.array(m, np.int8)
    else:
        L = np.zeros((n, n), np.int8)
        edges = d["edges"]
        if not isinstance(edges, list):
            raise err("edges", "must be a list of [source, target, sign]")
        seen = set()
        for k, e in enumerate(edges):
            if not isinstance(e, list) or len(e) != 3:
                raise err("edges", f"edges[{k}] must be [source, target, sign], got {e!r}")
            src, tgt, sign = e
            for g in (src, tgt):
                if g not in index:
                    raise err("edges", f"edges[{k}]: unknown gene {g!r}")
            if (src, tgt) in seen:
                raise err("edges", f"edges[{k}]: edge {src} -> {tgt} given twice")
            seen.add((src, tgt))
            s = SIGNS.get(str(sign).strip().lower())
            if s is None or s == 0 or isinstance(sign, bool):
                raise err("edges", f"edges[{k}]: sign must be 1 or -1, got {sign!r}")
            L[index[tgt], index[src]] = s
    rules = d.get("rules", list(RULE_NAMES))
    if not isinstance(rules, list) or not rules:
        raise err("rules", "must be a non-empty list of rule names")
    codes = []
    for r in rules:
        c = RULE_CODES.get(str(r).strip().lower())
        if c is None:
            raise err("rules", f"unknown rule {r!r} (known: {', '.join(RULE_NAMES)})")
        codes.append(c)
    kw: dict[str, Any] = {}
    for key, typ in (("iterations", int), ("lambda", float), ("max_connectivity_distance", float)):
        if key in d:
            v = d[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or (typ is int and not isinstance(v, int)):
                raise err(key, f"must be a number{' (integer)' if typ is int else ''}, got {v!r}")
            kw["lam" if key == "lambda" else key] = typ(v)
    try:
        return Problem(tuple(genes), L, state("initial"), state("target"), rules=tuple(codes),
                       name=str(d.get("name", Path(f).stem)), source=f, **kw)
    except ValueError as e:
        if isinstance(e, ModelError):
            raise
        raise ModelError(str(e), file=f) from e


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
        text = _read(p)
        if suffix == ".json":
            try:
                d = json.loads(text)
            except json.JSONDecodeError as e:
                raise ModelError(f"invalid JSON: {e.msg}", file=f, line=e.lineno, column=e.colno) from e
        else:
            import tomllib

            try:
                d = tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                line = getattr(e, "lineno", None)
                raise ModelError(f"invalid TOML: {getattr(e, 'msg', e)}", file=f, line=line) from e
        if not isinstance(d, dict):
            raise ModelError("the top level must be a table/object", file=f, line=1)
        prob = _from_mapping(d, f, text)
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
        raise ValueError(f"{f}: unknown problem format {p.suffix!r}; use .toml, .json or .csv (+ states CSV)")
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
