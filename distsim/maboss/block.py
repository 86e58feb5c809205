"""The payload of a shard and the integer counts every kernel call is reduced to (shared by both kernels).

Every count is a sum of integers over trajectories, so shards combine (:func:`merge`) to the same
numbers however the trajectories are split; the dataset is built from these counts alone.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .model import CompiledModel

# Units of the counts (both kernels; see :mod:`.cpu`). No Numba here: a GPU process never imports it.
QUANTA = 1 << 30  # quanta of time per time_tick
TH_UNITS = 1 << 24  # transition-entropy integral: units of 2**-24 tick x bit
TH_SCALE = TH_UNITS / QUANTA  # a power of two: the conversion is exact
TH_SQ_SHIFT = 12  # squares of entropy integrals at 2**12 units (ErrorTH)
SQ_SHIFT = 14  # squares of window quanta at 2**16 per tick (ErrorProba)

REC_CAP = 16  # records per trajectory: first slab min(REC_CAP + WIN_RECS * windows, 4 * REC_CAP) (records), or
WIN_RECS = 2  # of one window (dense tables); a stretch of whole windows in one state is one record
DENSE_MAX_VISIBLE = 16  # dense sum tables up to 2**16 visible states ...
DENSE_MAX_ENTRIES = 1 << 21  # ... and windows x states; else records (CPU) or the hash table (GPU)


@dataclass(frozen=True)
class Block:
    model: CompiledModel
    seed: int
    traj0: int
    n_traj: int
    n_win: int
    max_time: float
    tick: float
    discrete: bool


def dense_states(m: CompiledModel, n_win: int) -> int:
    """The number of visible states of the dense sum tables (0: too many for them)."""
    nv = len(m.visible)
    if nv > DENSE_MAX_VISIBLE or n_win << nv > DENSE_MAX_ENTRIES:
        return 0
    return 1 << nv


def table_offsets(n_win: int, S: int) -> tuple[dict[str, int], int]:
    """Where each sum table starts in one copy of the tables, and the copy's length (S = 0: no dense ones)."""
    sizes = {"q": n_win * S, "q2": n_win * S, "full": (n_win + 1) * S, "final": S, "th": n_win, "th2": n_win,
             "dth": n_win + 1, "dth2": n_win + 1, "ev": 1}
    off, length = {}, 0
    for k, v in sizes.items():
        off[k] = length
        length += v
    return off, length


def table_counts(tot: np.ndarray, off: dict[str, int], S: int, n_win: int) -> dict:
    """Counts of :func:`reduce_chunk`'s form from the summed tables ``tot`` (int64 or uint64: differences
    are summed modulo 2**64, which is exact): entropy sums, events and, with S > 0, the records and states
    at max_time."""
    tot = np.ascontiguousarray(tot).view(np.uint64)

    def seg(k: str, size: int) -> np.ndarray:
        return tot[off[k]:off[k] + size]

    out = {"th": (seg("th", n_win) + np.cumsum(seg("dth", n_win + 1), dtype=np.uint64)[:n_win]).view(np.int64),
           "th2": (seg("th2", n_win) + np.cumsum(seg("dth2", n_win + 1), dtype=np.uint64)[:n_win]).view(np.int64),
           "events": int(seg("ev", 1)[0])}
    if S:
        full = np.cumsum(seg("full", (n_win + 1) * S).reshape(n_win + 1, S), axis=0, dtype=np.uint64)[:n_win]
        q = seg("q", n_win * S).reshape(n_win, S) + full * np.uint64(QUANTA)
        q2 = seg("q2", n_win * S).reshape(n_win, S) + full * np.uint64((QUANTA >> SQ_SHIFT) ** 2)
        w, s = np.nonzero(q)  # window-major, states ascending: the order of _sum_rows
        fs = np.flatnonzero(seg("final", S))
        out.update(win=w.astype(np.int32), state=s.astype(np.uint64).reshape(-1, 1), q=q[w, s].view(np.int64),
                   q2=q2[w, s].view(np.int64), final=fs.astype(np.uint64).reshape(-1, 1),
                   final_n=seg("final", S)[fs].view(np.int64))
    return out


def first_cap(n_win: int) -> int:
    """The first record slab per trajectory of a kernel call (without one that sufficed before)."""
    return min(REC_CAP + WIN_RECS * n_win, 4 * REC_CAP)


def _empty(n_win: int, n_words: int, vw: int) -> dict:
    return {"win": np.zeros(0, np.int32), "state": np.zeros((0, vw), np.uint64), "q": np.zeros(0, np.int64),
            "q2": np.zeros(0, np.int64), "th": np.zeros(n_win, np.int64), "th2": np.zeros(n_win, np.int64),
            "final": np.zeros((0, vw), np.uint64), "final_n": np.zeros(0, np.int64),
            "fp": np.zeros((0, n_words), np.uint64), "fp_n": np.zeros(0, np.int64), "events": 0, "trajectories": 0}


def _sum_by(keys: tuple[np.ndarray, ...], *values: np.ndarray) -> tuple:
    """Unique rows of ``keys`` (sorted) and the integer sums of ``values`` over each."""
    if keys[0].size == 0:
        return tuple(k[:0] for k in keys) + tuple(v[:0] for v in values)
    if all(k[0] == k[-1] and (k == k[0]).all() for k in keys):  # one key (often: every trajectory's final state)
        return tuple(k[:1] for k in keys) + tuple(np.add.reduceat(v, [0]) for v in values)
    order = np.lexsort(keys[::-1])
    ks = [k[order] for k in keys]
    new = np.ones(ks[0].size, bool)
    new[1:] = np.any([k[1:] != k[:-1] for k in ks], axis=0)
    starts = np.flatnonzero(new)
    return tuple(k[starts] for k in ks) + tuple(np.add.reduceat(v[order], starts) for v in values)


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` of a 2-D unsigned array (the distinct rows in
    lexicographic order, word 0 first, and each row's index among them), by a lexsort (NumPy's sort of rows
    as structured values took ~1 ms for a few thousand rows)."""
    if rows.shape[0] == 0:
        return rows[:0].copy(), np.zeros(0, np.intp)
    order = np.lexsort(rows.T[::-1])
    s = rows[order]
    new = np.ones(len(s), bool)
    new[1:] = np.any(s[1:] != s[:-1], axis=1)
    inv = np.empty(len(s), np.intp)
    inv[order] = np.cumsum(new) - 1
    return s[new], inv


def _sum_rows(lead: tuple[np.ndarray, ...], rows: np.ndarray, *values: np.ndarray) -> tuple:
    """:func:`_sum_by` with the key's last part a 2-D array of words (a state): ``(*lead, rows, *sums)``."""
    out = _sum_by((*lead, *(rows[:, j] for j in range(rows.shape[1]))), *values)
    k = len(lead)
    words = np.stack(out[k:k + rows.shape[1]], axis=1) if rows.shape[1] else np.zeros((out[0].size, 0), rows.dtype)
    return (*out[:k], words.reshape(-1, rows.shape[1]), *out[k + rows.shape[1]:])


def merge(parts: list[dict], n_win: int, n_words: int, vw: int) -> dict:
    """Sum shard results (exact integers: the order and the split do not matter). A part is already summed by
    key in :func:`_sum_rows`' order (every kernel call's counts are), so one part is the sum."""
    if not parts:
        return _empty(n_win, n_words, vw)
    if len(parts) == 1:
        return parts[0]
    cat = {k: np.concatenate([p[k] for p in parts]) for k in ("win", "q", "q2", "final_n", "fp_n")}
    win, state, q, q2 = _sum_rows((cat["win"],), np.concatenate([p["state"] for p in parts]).reshape(-1, vw),
                                  cat["q"], cat["q2"])
    final, final_n = _sum_rows((), np.concatenate([p["final"] for p in parts]).reshape(-1, vw), cat["final_n"])
    fp, fp_n = _sum_rows((), np.concatenate([p["fp"] for p in parts]).reshape(-1, n_words), cat["fp_n"])
    return {"win": win, "state": state, "q": q, "q2": q2, "th": np.sum([p["th"] for p in parts], axis=0),
            "th2": np.sum([p["th2"] for p in parts], axis=0), "final": final, "final_n": final_n,
            "fp": fp, "fp_n": fp_n, "events": int(sum(p["events"] for p in parts)),
            "trajectories": int(sum(p["trajectories"] for p in parts))}


def _run_windows(win: np.ndarray, state: np.ndarray, full: np.ndarray) -> tuple:
    """(window, state, count) of every window covered by whole-window runs, from each run's +1 at its first
    window and -1 at the window after it (``full`` per (window, state) key; the -1s may be at window n_win)."""
    vw = state.shape[1]
    out = _sum_by((*(state[:, j] for j in range(vw)), win), full)  # by state, then window
    st, w, d = np.stack(out[:vw], axis=1).reshape(-1, vw), out[vw], out[vw + 1]
    f = np.cumsum(d)  # each state's differences sum to 0: the running sum restarts at every state
    i = np.flatnonzero(f > 0)  # a later key of the same state ends each stretch
    lens = (w[i + 1] - w[i]).astype(np.int64)
    rep = np.repeat(i, lens)
    step = np.arange(rep.size) - np.repeat(np.cumsum(lens) - lens, lens)
    return (w[rep] + step).astype(np.int32), st[rep], f[rep]


def reduce_chunk(kw, ks, sq, sq2, full, th_acc, final_vis, final_full, fixed, events) -> dict:
    """The counts of one call of :func:`cpu.simulate_chunk`: its hash tables (``kw[part, slot]``,
    ``ks[part, slot, word]``, ...: a key may be in several parts), entropy tables (``th_acc[part, table,
    window]``) and per-trajectory outputs (``final_vis[trajectory, word]``, ``final_full[trajectory, word]``)."""
    vw = ks.shape[2]
    kw, ks, sq, sq2, full = kw.reshape(-1), ks.reshape(-1, vw), sq.reshape(-1), sq2.reshape(-1), full.reshape(-1)
    part, run = (kw >= 0) & (sq != 0), (kw >= 0) & (full != 0)
    rw, rs, rn = _run_windows(kw[run], ks[run], full[run])
    win, state, qs, q2 = _sum_rows((np.concatenate([kw[part], rw]),), np.concatenate([ks[part], rs]),
                                   np.concatenate([sq[part], rn * QUANTA]),
                                   np.concatenate([sq2[part], rn * (QUANTA >> SQ_SHIFT) ** 2]))
    final, final_n = _sum_rows((), np.asarray(final_vis), np.ones(final_vis.shape[0], np.int64))
    fpmask = fixed.astype(bool)
    fp_rows = np.asarray(final_full) if fpmask.all() else np.asarray(final_full)[fpmask]
    fp, fp_n = _sum_rows((), fp_rows, np.ones(fp_rows.shape[0], np.int64))
    th = th_acc.sum(axis=0)
    n_win = th.shape[1] - 1
    return {"win": win, "state": state, "q": qs, "q2": q2, "th": th[0, :n_win] + np.cumsum(th[2])[:n_win],
            "th2": th[1, :n_win] + np.cumsum(th[3])[:n_win], "final": final, "final_n": final_n, "fp": fp,
            "fp_n": fp_n, "events": int(events.sum()), "trajectories": int(final_vis.shape[0])}


def event_tables(m: CompiledModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(child_start, child_index, vis_nodes): the nodes whose flip rates read node j are
    ``child_index[child_start[j]:child_start[j + 1]]`` (recomputed after j flips); the visible nodes in node
    order (the transition entropy's terms)."""
    n = m.n
    parents = np.repeat(np.arange(n, dtype=np.int32), np.diff(m.par_start))
    order = np.lexsort((parents, m.par_index))  # by parent, then child
    child_index = np.ascontiguousarray(parents[order], np.int32)
    child_start = np.zeros(n + 1, np.int32)
    np.cumsum(np.bincount(m.par_index, minlength=n), out=child_start[1:])
    if child_index.size == 0:
        child_index = np.zeros(1, np.int32)
    return child_start, child_index, np.flatnonzero(m.internal == 0).astype(np.int32)


def visible_positions(m: CompiledModel) -> np.ndarray:
    """``vpos[i]``: node i's bit in a visible state (-1: internal)."""
    vpos = np.full(m.n, -1, np.int32)
    vpos[list(m.visible)] = np.arange(len(m.visible), dtype=np.int32)
    return vpos


PROFILE_ENV = "DISTSIM_MABOSS_PROFILE"


class Profile:
    """Per-phase seconds on stderr when DISTSIM_MABOSS_PROFILE=1 (off by default): of a whole call
    (:func:`distsim.maboss.maboss`) and of each GPU chunk, the device synchronized at each lap (``cp``: CuPy,
    which costs a little)."""

    def __init__(self, cp: Any = None):
        self.on = os.environ.get(PROFILE_ENV, "") not in ("", "0")
        self.cp = cp
        self.laps: dict[str, float] = {}
        self.t = time.perf_counter()

    def lap(self, name: str) -> None:
        if not self.on:
            return
        sync = getattr(getattr(getattr(self.cp, "cuda", None), "runtime", None), "deviceSynchronize", None)
        if sync is not None:
            sync()
        t = time.perf_counter()
        self.laps[name] = self.laps.get(name, 0.0) + t - self.t
        self.t = t

    def report(self, what: str) -> None:
        if self.on:
            print(f"[distsim profile] {what}: " + ", ".join(f"{k} {v:.4f} s" for k, v in self.laps.items()),
                  file=sys.stderr, flush=True)
