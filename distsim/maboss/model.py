"""A MaBoSS model compiled to flat arrays for the trajectory kernels, and its run settings.

**Flip rates.** Node i's flip rate is a table over its *parents* (the nodes its rate_up/rate_down
read, and i itself; at most :data:`MAX_PARENTS`): row r gives parent k the bit ``(r >> (K-1-k)) & 1``
(:func:`distsim.models.boolean.truth_table`'s convention) and holds an index into the node's distinct
rate values (index 0: rate 0). The tables come from the reader's condition for each value
(:func:`distsim.models.formats.maboss.read_rates`); no expression is ever evaluated as code.

**Initial states.** Every node belongs to exactly one *group*: a ``.cfg`` istate (one node or a joint
``[A, B].istate``) or, without one, a node of its own that is 0 or 1 with probability 1/2 (MaBoSS's
default). Group g draws one uniform and takes the first entry whose cumulative probability exceeds it.

**Mutants.** A knocked-out (over-expressed) node starts at 0 (1) and its flip rate is 0 in every state.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

import numpy as np

from ..errors import ConfigError, ModelError
from ..models.formats.maboss import MabossRates, find_cfg, read_rates
from ..models.boolean import Var, truth_table, variables
from ..models.logic import mk_and, mk_not, mk_or
from ..results import Labels

MAX_VISIBLE = 1024  # a visible state is up to 16 64-bit words (the GPU kernel keeps it in registers)
MAX_PARENTS = 20  # nodes a flip rate may read (its table has 2**K rows)

SETTINGS = ("max_time", "time_tick", "sample_count", "seed_pseudorandom", "discrete_time")
DEFAULTS = {"max_time": 10.0, "time_tick": 0.1, "sample_count": 1000, "seed_pseudorandom": 0, "discrete_time": 0}


@dataclass(frozen=True)
class Settings:
    """The run settings of a ``.cfg`` (MaBoSS's names and defaults), after overrides."""

    max_time: float
    time_tick: float
    sample_count: int
    seed_pseudorandom: int
    discrete_time: bool

    @property
    def n_windows(self) -> int:
        """MaBoSS's number of probtraj windows, ``int(max_time / time_tick)``."""
        return int(self.max_time / self.time_tick)


def settings_from(cfg: Mapping[str, float], overrides: Mapping[str, float | None], file: str | None,
                  lines: Mapping[str, int] | None = None) -> Settings:
    """The .cfg settings with ``overrides`` (None: keep the file's); clear errors for bad values, naming the
    .cfg line of a value that comes from the file (``lines``)."""
    v: dict[str, float] = {k: float(cfg.get(k, DEFAULTS[k])) for k in SETTINGS}
    given: set[str] = set()
    for k, x in overrides.items():
        if k not in DEFAULTS:
            raise ConfigError(f"unknown MaBoSS setting {k!r} (one of {', '.join(SETTINGS)})")
        if x is not None:
            v[k] = float(x)
            given.add(k)

    def where(*keys: str) -> dict:
        for k in keys:
            if k not in given and lines and k in lines and file:
                return {"file": file, "line": lines[k]}
        return {"file": file or "the settings"}

    if not (math.isfinite(v["max_time"]) and v["max_time"] > 0):
        raise ConfigError(f"max_time must be a finite number > 0, got {v['max_time']}", **where("max_time"))
    if not (math.isfinite(v["time_tick"]) and 0 < v["time_tick"] <= v["max_time"]):
        raise ConfigError(f"time_tick must be > 0 and <= max_time ({v['max_time']}), got {v['time_tick']}",
                          **where("time_tick", "max_time"))
    if v["max_time"] / v["time_tick"] > 2**20:
        raise ConfigError(f"max_time / time_tick = {v['max_time'] / v['time_tick']:.0f} windows; at most 2**20",
                          **where("time_tick", "max_time"))
    n = v["sample_count"]
    if not (n == int(n) and 1 <= n <= 2**32):
        raise ConfigError(f"sample_count (trajectories) must be an integer in [1, 2**32], got {n:g}",
                          **where("sample_count"))
    s = v["seed_pseudorandom"]
    if not (s == int(s) and 0 <= s < 2**32):
        raise ConfigError(f"seed_pseudorandom must be an integer in [0, 2**32), got {s:g}",
                          **where("seed_pseudorandom"))
    return Settings(v["max_time"], v["time_tick"], int(n), int(s), v["discrete_time"] != 0)


@dataclass(frozen=True)
class CompiledModel:
    """Flat arrays of a MaBoSS model for the CPU and GPU trajectory kernels."""

    nodes: tuple[str, ...]
    visible: tuple[int, ...]  # the visible (not is_internal) nodes in MaBoSS's order; bit j % 64 of word j // 64
    # of a visible state
    order: tuple[int, ...]  # every node in MaBoSS's order (labels, output columns)
    internal: np.ndarray  # uint8 [n]
    par_start: np.ndarray  # int32 [n+1]: node i's parents par_index[par_start[i]:par_start[i+1]]
    par_index: np.ndarray  # int32: parents, sorted (the first is the most significant bit of a row)
    tt_start: np.ndarray  # int64 [n]: node i's table tt[tt_start[i] : tt_start[i] + 2**K]
    tt: np.ndarray  # uint8: index into the node's rate values
    val_start: np.ndarray  # int32 [n]: node i's rate values vals[val_start[i] + index]
    vals: np.ndarray  # float64: each node's distinct rates, 0 first
    grp_start: np.ndarray  # int32 [G+1]: group g owns options grp_start[g]:grp_start[g+1]
    grp_cum: np.ndarray  # float64 [O]: cumulative probabilities (the last is 1)
    grp_node_start: np.ndarray  # int32 [G+1]: group g's nodes grp_nodes[...]
    grp_nodes: np.ndarray  # int32 [sum of group sizes]
    opt_bits: np.ndarray  # uint64 [O]: bit k = value of the group's k-th node
    fix_mask: np.ndarray  # uint8 [n]: mutant nodes
    fix_val: np.ndarray  # uint8 [n]
    digest: str = field(default="")
    # with mutants: the same model without them (the generated GPU kernel is the unmutated model's, the
    # mutant nodes' rates masked at run time from fix_mask: one kernel for every point of a knock-out screen)
    unmutated: "CompiledModel | None" = field(default=None, repr=False, compare=False)

    @property
    def n(self) -> int:
        return len(self.nodes)

    @property
    def vis_words(self) -> int:
        """64-bit words of a visible state."""
        return max(1, (len(self.visible) + 63) // 64)

    @property
    def n_words(self) -> int:
        """64-bit words of a full state."""
        return (self.n + 63) // 64


@dataclass(frozen=True)
class Model:
    """A MaBoSS model read for continuous-time simulation: rates, istates, settings, hidden nodes."""

    rates: MabossRates
    settings: Settings

    @property
    def nodes(self) -> tuple[str, ...]:
        return self.rates.nodes

    @property
    def name(self) -> str:
        return self.rates.name


def load(bnd: str | os.PathLike, cfg: str | os.PathLike | None = None, *, variables: Mapping[str, float] | None = None,
         **settings: float | None) -> Model:
    """Read ``bnd`` and its ``.cfg`` (``cfg``, else the one beside it); ``variables`` replace the .cfg's
    ``$variables``, ``settings`` (max_time, time_tick, sample_count, seed_pseudorandom, discrete_time)
    its run settings."""
    rates = _read_rates(bnd, cfg, dict(variables or {}))
    return Model(rates, settings_from(rates.config.settings, settings, rates.config.cfg, rates.config.setting_lines))


_RATES: dict[tuple, MabossRates] = {}  # read_rates by the files' contents: a large model's takes 0.1-0.4 s
_RATES_MAX = 16


def _read_rates(bnd: str | os.PathLike, cfg: str | os.PathLike | None, variables: dict) -> MabossRates:
    """:func:`read_rates`, parsed once per process for the same paths, contents and variables."""
    files = [Path(bnd), Path(cfg) if cfg is not None else None]
    if not files[0].is_file() or (files[1] is not None and not files[1].is_file()):
        return read_rates(bnd, cfg, variables=variables)  # its clear error
    if files[1] is None:
        files[1] = find_cfg(bnd)
    key = (*((os.fspath(f), hashlib.sha256(f.read_bytes()).hexdigest()) if f is not None else None for f in files),
           tuple(sorted((str(k), repr(v)) for k, v in variables.items())))
    rates = _RATES.get(key)
    if rates is None:
        rates = read_rates(bnd, cfg, variables=variables)
        if len(_RATES) >= _RATES_MAX:
            _RATES.clear()
        _RATES[key] = rates
    return rates


def with_settings(model: Model, **settings: float | None) -> Model:
    base = {k: getattr(model.settings, k) for k in SETTINGS}
    return replace(model, settings=settings_from(base, settings, model.rates.config.cfg,
                                                 model.rates.config.setting_lines))


_COMPILED: dict[tuple, tuple[MabossRates, CompiledModel]] = {}  # by (id of the rates, mutants)


def compile_model(model: Model, mutants: Mapping[str, int] | None = None) -> CompiledModel:
    """The kernels' arrays; ``mutants``: ``{"NODE": 0}`` knock-out, ``{"NODE": 1}`` over-expression.
    Compiled once per process for the same rates object (:func:`load` keeps one per file contents and
    variables; the truth tables take 0.02-0.1 s, most of a warm 1e5-trajectory GPU run's fixed cost)."""
    r = model.rates
    key = (id(r), tuple(sorted((str(k), repr(v)) for k, v in (mutants or {}).items())))
    hit = _COMPILED.get(key)
    if hit is not None and hit[0] is r:
        return hit[1]
    c = _compile(model, mutants)
    if len(_COMPILED) >= 4 * _RATES_MAX:
        _COMPILED.clear()
    _COMPILED[key] = (r, c)
    return c


def _compile(model: Model, mutants: Mapping[str, int] | None) -> CompiledModel:
    r = model.rates
    n = len(r.nodes)
    index = {nm: i for i, nm in enumerate(r.nodes)}
    fix_mask = np.zeros(n, np.uint8)
    fix_val = np.zeros(n, np.uint8)
    for nm, v in (mutants or {}).items():
        if nm not in index:
            raise ModelError(f"mutant node {nm!r} is not in the model", file=r.source)
        if v not in (0, 1):
            raise ModelError(f"mutant {nm!r}: value must be 0 (knock-out) or 1 (over-expression), got {v!r}",
                             file=r.source)
        fix_mask[index[nm]] = 1
        fix_val[index[nm]] = int(v)
    visible = tuple(i for i in r.maboss_order if r.nodes[i] not in set(r.config.internal))
    if len(visible) > MAX_VISIBLE:
        raise ModelError(f"{len(visible)} visible nodes; at most {MAX_VISIBLE} (mark others is_internal in the .cfg)",
                         file=r.config.cfg or r.source)
    par_start, par_index, tt_start, tts, val_start, rate_vals = [0], [], [], [], [], []
    at = 0
    for i, tables in enumerate(r.rates):
        values = [0.0]
        parents: tuple[int, ...] = ()
        table = np.zeros(1, np.uint8)
        if tables is not None and not fix_mask[i]:
            up, down = tables
            conds = []
            for v in sorted({v for t in tables for v in t if v > 0}):
                g_up = mk_or(*[g for u, g in up.items() if u == v])
                g_down = mk_or(*[g for d, g in down.items() if d == v])
                conds.append(mk_or(mk_and(mk_not(Var(i)), g_up), mk_and(Var(i), g_down)))
                values.append(v)
            if len(values) > 255:
                raise ModelError(f"node {r.nodes[i]!r}: more than 254 distinct flip rates", file=r.source)
            parents = tuple(sorted({i, *(p for g in conds for p in variables(g))}))
            if len(parents) > MAX_PARENTS:
                raise ModelError(f"node {r.nodes[i]!r}: its rates read {len(parents)} nodes; at most {MAX_PARENTS}",
                                 file=r.source)
            table = np.zeros(1 << len(parents), np.uint8)
            for k, g in enumerate(conds, start=1):  # the conditions are disjoint
                table[truth_table(g, parents)] = k
        par_index.extend(parents)
        par_start.append(len(par_index))
        tt_start.append(at)
        tts.append(table)
        at += table.size
        val_start.append(len(rate_vals))
        rate_vals.extend(values)
    groups: list[tuple[tuple[int, ...], tuple[tuple[float, tuple[int, ...]], ...]]] = []
    seen: set[int] = set()
    for names, dist in r.config.istates.items():
        groups.append((tuple(index[nm] for nm in names), dist))
        seen.update(index[nm] for nm in names)
    for i in range(n):
        if i not in seen:
            groups.append(((i,), ((0.5, (0,)), (0.5, (1,)))))
    groups.sort(key=lambda g: min(g[0]))
    grp_start, grp_cum, grp_node_start, grp_nodes, opt_bits = [0], [], [0], [], []
    for members, dist in groups:
        if len(members) > 64:
            raise ModelError("an istate group of more than 64 nodes", file=r.config.cfg)
        acc = 0.0
        for k, (p, vals) in enumerate(dist):
            acc += p
            grp_cum.append(1.0 if k == len(dist) - 1 else acc)
            opt_bits.append(sum(int(b) << j for j, b in enumerate(vals)))
        grp_start.append(len(grp_cum))
        grp_nodes.extend(members)
        grp_node_start.append(len(grp_nodes))
    arrays = dict(
        internal=np.array([0 if i in visible else 1 for i in range(n)], np.uint8),
        par_start=np.array(par_start, np.int32), par_index=np.array(par_index, np.int32).reshape(-1),
        tt_start=np.array(tt_start, np.int64), tt=np.concatenate(tts).astype(np.uint8),
        val_start=np.array(val_start, np.int32), vals=np.array(rate_vals, np.float64),
        grp_start=np.array(grp_start, np.int32),
        grp_cum=np.array(grp_cum, np.float64), grp_node_start=np.array(grp_node_start, np.int32),
        grp_nodes=np.array(grp_nodes, np.int32), opt_bits=np.array(opt_bits, np.uint64), fix_mask=fix_mask,
        fix_val=fix_val)
    h = hashlib.sha256(repr(r.nodes).encode())
    for k in sorted(arrays):
        h.update(k.encode())
        h.update(np.ascontiguousarray(arrays[k]).tobytes())
    return CompiledModel(nodes=r.nodes, visible=visible, order=r.maboss_order, digest=h.hexdigest(),
                         unmutated=compile_model(model) if fix_mask.any() else None, **arrays)


_LABELS: dict[tuple, tuple[dict[bytes, int], Labels]] = {}  # label_rows' memo: (names, bits) -> (state words ->
# row, the labels by row)
LABELS_MAX = 1 << 17  # labels kept in all, at most (a fixed point of a large model's label: ~1 kB, kept twice:
# the str and its row of the pandas Index)


def label_rows(words: np.ndarray, names: tuple[str, ...], bits: tuple[int, ...]) -> tuple[np.ndarray, Labels]:
    """MaBoSS's label of every row of ``words`` (uint64 [rows, words]): the ``names[k]`` whose bit ``bits[k]``
    (bit ``b % 64`` of word ``b // 64``) is set, in the order of ``names``, joined by ' -- ' ('<nil>' for none),
    as rows of a table of labels: ``(rows, table)``, row ``i``'s label ``table.text[rows[i]]``. The table is
    kept per model (its states and fixed points recur from call to call; joining a large model's names, and
    building the coordinate of its long labels, took most of a warm call's host time)."""
    memo, table = _LABELS.get((names, bits)) or ({}, Labels())
    _LABELS[(names, bits)] = (memo, table)
    if len(words) == 0:
        return np.zeros(0, np.intp), table
    words = np.ascontiguousarray(words, np.uint64).reshape(len(words), -1)
    w = words.shape[1] * 8
    raw = words.tobytes()
    keys = [raw[i:i + w] for i in range(0, len(raw), w)]
    new = {k: None for k in keys if k not in memo}  # the unseen states, once each, in order
    if new:
        if sum(len(t) for _, t in _LABELS.values()) + len(new) > LABELS_MAX:
            _LABELS.clear()
            memo, table = {}, Labels()
            _LABELS[(names, bits)] = (memo, table)
            new = dict.fromkeys(keys)
        miss = np.frombuffer(b"".join(new), np.uint64).reshape(len(new), -1)
        b = np.asarray(bits, np.int64)
        on = (miss[:, b >> 6] >> (b & 63).astype(np.uint64)) & np.uint64(1)
        rows, cols = np.nonzero(on)  # row-major: each row's active nodes in the order of names
        flat = np.array(list(names) or [""], dtype=object)[cols].tolist()
        ends = np.cumsum(np.bincount(rows, minlength=len(miss))).tolist()
        labels, start = [], 0
        for end in ends:
            labels.append(" -- ".join(flat[start:end]) or "<nil>")
            start = end
        memo.update(zip(new, range(len(table), len(table) + len(new))))
        table.extend(labels)
    return np.fromiter(map(memo.__getitem__, keys), np.intp, len(keys)), table


_NAMES: dict[tuple[str, ...], Labels] = {}  # name_labels' memo


def name_labels(names: tuple[str, ...]) -> Labels:
    """A model's node names as a table of labels (rows 0..len(names) - 1), kept per process."""
    table = _NAMES.get(names)
    if table is None:
        if len(_NAMES) >= 64:
            _NAMES.clear()
        table = _NAMES[names] = Labels()
        table.extend(list(names))
    return table


def state_labels(words: np.ndarray, names: tuple[str, ...], bits: tuple[int, ...]) -> list[str]:
    """The labels of :func:`label_rows` as a list."""
    rows, table = label_rows(words, names, bits)
    return [table.text[i] for i in rows.tolist()]
