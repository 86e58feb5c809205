"""``distsim.maboss.maboss``: MaBoSS time courses of a ``.bnd`` + ``.cfg`` model, sharded over workers."""

from __future__ import annotations

import math
import os
import time
from typing import Any, Mapping, Sequence

import numpy as np
import xarray as xr

from .. import engine, results
from ..models.formats.maboss import read_rates
from ..rng import check_seed
from .model import CompiledModel, Model, compile_model, label_rows, load, name_labels, with_settings
from .block import QUANTA, SQ_SHIFT, TH_SQ_SHIFT, TH_UNITS, Block, Profile, merge, unique_rows
from .shard import simulate_block

ALIGN = 64
WAVE_MIN = 1024  # trajectories of a CPU shard, at least
GPU_WAVE_MIN = 1 << 19  # of a GPU shard (a launch fills the device)


def maboss(
    model: str | os.PathLike | Model,
    cfg: str | os.PathLike | None = None,
    *,
    trajectories: int | None = None,
    max_time: float | None = None,
    time_tick: float | None = None,
    seed: int | None = None,
    discrete_time: bool | None = None,
    variables: Mapping[str, float] | None = None,
    mutants: Mapping[str, int] | None = None,
    time_limit: float | None = None,
    client: Any = None,
    backend: str | None = None,
    progress: bool | None = None,
) -> xr.Dataset:
    """MaBoSS's time course of a model: ``trajectories`` continuous-time trajectories to ``max_time``.

    Every argument left None takes the ``.cfg``'s value (``sample_count``, ``max_time``, ``time_tick``,
    ``seed_pseudorandom``, ``discrete_time``; MaBoSS's defaults without one); ``variables`` replace its
    ``$variables``; ``mutants``: ``{"NODE": 0}`` knock-out, ``{"NODE": 1}`` over-expression. Returns a
    Dataset with ``probability(time, state)`` (MaBoSS's window averages over ``[t, t + time_tick)``),
    ``probability_error``, ``node_probability(time, node)``, the entropies ``TH``, ``ErrorTH``, ``H``,
    ``final_probability(state)`` (the state at ``max_time``) and ``fixed_point_probability(fixed_point)``.
    Trajectory c uses the Philox stream (seed, c): the same seed gives the same bits on any number of
    workers and on CPU or GPU. ``time_limit`` (seconds): trajectories run in waves and no wave starts
    past the limit (``attrs["trajectories"]`` says how many ran).
    """
    prof = Profile()
    over = dict(max_time=max_time, time_tick=time_tick, sample_count=trajectories,
                seed_pseudorandom=None if seed is None else check_seed(seed),
                discrete_time=None if discrete_time is None else float(bool(discrete_time)))
    if isinstance(model, Model):
        if variables:
            raise ValueError("variables= needs a model path (they are applied when the .bnd is read)")
        m = with_settings(model, **over)
    else:
        m = load(model, cfg, variables=variables, **over)
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and 0 < time_limit < math.inf):
        raise ValueError(f"time_limit must be a positive number of seconds, got {time_limit!r}")
    prof.lap("read")
    c = compile_model(m, mutants)
    prof.lap("compile")
    s = m.settings
    with engine.Run("maboss", client, backend, progress=progress, label="maboss") as run:
        run.progress.start(f"{s.sample_count} trajectories of {m.name} to t={s.max_time:g} on {run.describe()}",
                           total=s.sample_count, unit="traj")
        prof.lap("run start")
        res = _simulate(run, c, m, s.seed_pseudorandom, time_limit, prof)
    prof.lap("run end")
    ds = build_dataset(m, c, res, run.provenance(
        workload="maboss.simulate", seed=s.seed_pseudorandom, model_name=m.name, model_sha256=c.digest,
        max_time=s.max_time, time_tick=s.time_tick, discrete_time=int(s.discrete_time),
        trajectories=res["trajectories"], trajectories_requested=s.sample_count, events=res["events"],
        mutants=",".join(f"{k}={v}" for k, v in (mutants or {}).items()) or "none",
        variables=_variables_text(m),
        stopped_by="trajectories" if res["trajectories"] == s.sample_count else "time_limit"))
    prof.lap("dataset")
    prof.report(f"maboss call n={res['trajectories']} nodes={c.n} states={ds.sizes['state']} "
                f"fixed_points={ds.sizes['fixed_point']}")
    return ds


_VARIABLES: dict[int, tuple[Any, str]] = {}  # _variables_text by id of the rates (kept with them)


def _variables_text(m: Model) -> str:
    """The ``variables`` attr: the model's $variables as ``name=value,...`` (a large model has hundreds)."""
    hit = _VARIABLES.get(id(m.rates))
    if hit is None or hit[0] is not m.rates:
        if len(_VARIABLES) >= 64:
            _VARIABLES.clear()
        hit = _VARIABLES[id(m.rates)] = (m.rates, ",".join(f"{k}={v:g}" for k, v in
                                                           m.rates.config.variables.items()) or "none")
    return hit[1]


def _block(c: CompiledModel, m: Model, seed: int, r: range) -> Block:
    s = m.settings
    return Block(c, seed, r.start, len(r), s.n_windows, s.max_time, s.time_tick, s.discrete_time)


def _simulate(run: engine.Run, c: CompiledModel, m: Model, seed: int, time_limit: float | None,
              prof: Profile | None = None) -> dict:
    n, nw = m.settings.sample_count, run.n_workers()
    prof = prof or Profile()
    if time_limit is None:
        # up to 8 shards per worker, so that progress (and its ETA) moves during a long run; integer counts:
        # the split never changes the result
        waves = max(1, min(8, n // ((GPU_WAVE_MIN if run.uses_gpu() else WAVE_MIN) * nw)))
        blocks = [_block(c, m, seed, r) for r in run.split(n, align=ALIGN, shards=nw * waves)]
        out = run.round(simulate_block, blocks, counts=[b.n_traj for b in blocks])
        prof.lap(f"shards ({len(blocks)})")
        res = merge(out, m.settings.n_windows, c.n_words, c.vis_words)
        prof.lap("merge")
        return res
    t0, done, parts = time.perf_counter(), 0, []
    wave = min(n, ALIGN * nw)
    while done < n:
        k = min(wave, n - done)
        blocks = [_block(c, m, seed, range(done + r.start, done + r.stop))
                  for r in run.split(k, align=ALIGN, shards=nw)]
        parts += run.round(simulate_block, blocks, counts=[b.n_traj for b in blocks])
        done += k
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            break
        wave = int(np.clip(k * min(1.0, left) / max(run.last_round_seconds, 1e-3), ALIGN * nw, 8 * k))
    return merge(parts, m.settings.n_windows, c.n_words, c.vis_words)


def _error(sum_sq: np.ndarray, mean: np.ndarray, n: int) -> np.ndarray:
    """MaBoSS's standard error of a window average from the sum of squares of per-trajectory values."""
    if n < 2:
        return np.zeros_like(mean)
    var = sum_sq / (n - 1) - mean * mean * n / (n - 1)
    v = var / n
    return np.where(v >= np.finfo(np.float64).tiny, np.sqrt(np.maximum(v, 0.0)), 0.0)


def build_dataset(m: Model, c: CompiledModel, res: dict, attrs: dict) -> xr.Dataset:
    """The Dataset of :func:`maboss` from the merged integer counts ``res`` (see :mod:`.shard`)."""
    s = m.settings
    n_traj = res["trajectories"]
    n_win = s.n_windows
    vw = c.vis_words
    rows = np.concatenate([res["state"], res["final"]]).reshape(-1, vw).astype(np.uint64)
    codes, inv = unique_rows(rows)  # the visible states, sorted by their words
    col, fcol = inv[:len(res["state"])], inv[len(res["state"]):]
    j = np.arange(len(c.visible))
    bits = ((codes[:, j >> 6] >> (j & 63).astype(np.uint64)[None, :]) & np.uint64(1)).astype(np.uint8)
    vis_names = tuple(c.nodes[i] for i in c.visible)
    names = tuple(c.nodes[i] for i in c.order)
    q = np.zeros((n_win, len(codes)), np.int64)
    q2 = np.zeros((n_win, len(codes)), np.int64)
    q[res["win"], col] = res["q"]
    q2[res["win"], col] = res["q2"]
    prob = q / (float(QUANTA) * n_traj)
    perr = _error(q2 / float(1 << (2 * (30 - SQ_SHIFT))), prob, n_traj)
    th = res["th"] / (float(TH_UNITS) * n_traj)
    therr = _error(res["th2"] / float(1 << (2 * (24 - TH_SQ_SHIFT))), th, n_traj)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.sum(np.where(prob > 0, prob * np.log2(np.where(prob > 0, prob, 1.0)), 0.0), axis=1)
    at, table = label_rows(codes, vis_names, tuple(range(len(c.visible))))
    labels = table.coordinate("state", at)
    node_prob = (q @ bits.astype(np.int64)) / (float(QUANTA) * n_traj)  # integer sums: exact, no BLAS order
    final = np.zeros(len(codes), np.int64)
    final[fcol] = res["final_n"]
    idx = np.array(c.order, dtype=np.int64)
    fp_bits = ((res["fp"][:, idx >> 6] >> (idx.astype(np.uint64) & np.uint64(63))[None, :]) & np.uint64(1)
               ).astype(np.uint8)
    order = np.argsort(-res["fp_n"], kind="stable")
    fp_bits, fp_n = fp_bits[order], res["fp_n"][order]
    at, table = label_rows(res["fp"][order], names, c.order)
    fp_labels = table.coordinate("fixed_point", at)
    data = {
        "probability": (("time", "state"), prob, {"long_name": "probability of the visible state, averaged over the "
                                                  "window [time, time + time_tick)", "units": "1"}),
        "probability_error": (("time", "state"), perr, {"long_name": "standard error of probability (MaBoSS's "
                                                        "ErrorProba)", "units": "1"}),
        "node_probability": (("time", "node"), node_prob, {"long_name": "probability of the node being 1, window "
                                                           "average", "units": "1"}),
        "TH": ("time", th, {"long_name": "transition entropy, window average (MaBoSS's TH)", "units": "bit"}),
        "ErrorTH": ("time", therr, {"long_name": "standard error of TH", "units": "bit"}),
        "H": ("time", h, {"long_name": "entropy of the window's state distribution (MaBoSS's H)", "units": "bit"}),
        "final_probability": ("state", final / float(n_traj), {"long_name": "probability of the visible state at "
                                                               "max_time", "units": "1"}),
        "fixed_point_probability": ("fixed_point", fp_n / float(n_traj), {
            "long_name": "fraction of trajectories that reached the fixed point (all flip rates 0)", "units": "1"}),
        "fixed_point_state": (("fixed_point", "model_node"), fp_bits, {"long_name": "the fixed point's value of each "
                                                                       "node (internal ones too)"}),
    }
    coords = {"time": ("time", np.arange(n_win) * s.time_tick, {"units": "model time"}), "state": labels,
              "node": name_labels(vis_names).coordinate("node", np.arange(len(vis_names))),
              "fixed_point": fp_labels,
              "model_node": name_labels(names).coordinate("model_node", np.arange(len(names)))}
    ds = results.dataset(data, coords)
    ds.attrs = attrs
    return ds


def sweep(model: str | os.PathLike, cfg: str | os.PathLike | None = None, *,
          points: Sequence[Mapping[str, Any]], trajectories: int | None = None, max_time: float | None = None,
          time_tick: float | None = None, seed: int | None = None, discrete_time: bool | None = None,
          client: Any = None, backend: str | None = None, progress: bool | None = None) -> xr.Dataset:
    """Many variants of one model in one round of tasks, stacked along ``point``: each point a dict of
    ``mutants`` (``{"NODE": 0|1}``) and/or ``variables`` (``{"$x": 1.0}``). Point p uses the seed
    ``derive_seeds(seed, p)``, so it equals ``maboss(..., seed=derive_seeds(seed, p)[()])`` bit for bit."""
    from ..rng import derive_seeds  # Philox on the CPU (Numba): only sweeps derive seeds

    over = dict(max_time=max_time, time_tick=time_tick, sample_count=trajectories,
                discrete_time=None if discrete_time is None else float(bool(discrete_time)))
    base = load(model, cfg, **over)
    seed = base.settings.seed_pseudorandom if seed is None else check_seed(seed)
    seeds = derive_seeds(seed, np.arange(len(points)))
    runs = []
    for p, pt in enumerate(points):
        unknown = set(pt) - {"mutants", "variables"}
        if unknown:
            raise ValueError(f"point {p}: unknown keys {sorted(unknown)} (mutants, variables)")
        m = load(model, cfg, variables=pt["variables"], **over) if pt.get("variables") else base
        runs.append((m, compile_model(m, pt.get("mutants")), int(seeds[p])))
    total = sum(m.settings.sample_count for m, _, _ in runs)
    with engine.Run("maboss", client, backend, progress=progress, label="maboss sweep") as run:
        run.progress.start(f"{len(points)} points of {base.name} ({total} trajectories) on {run.describe()}",
                           total=total, unit="traj")
        blocks, owner = [], []
        for p, (m, c, s) in enumerate(runs):
            for r in run.split(m.settings.sample_count, align=ALIGN):
                blocks.append(_block(c, m, s, r))
                owner.append(p)
        out = run.round(simulate_block, blocks, counts=[b.n_traj for b in blocks])
    parts = []
    for p, (m, c, s) in enumerate(runs):
        res = merge([o for o, k in zip(out, owner) if k == p], m.settings.n_windows, c.n_words, c.vis_words)
        parts.append(build_dataset(m, c, res, {}))
    ds = xr.concat(parts, dim="point", join="outer", fill_value=0.0, combine_attrs="drop")
    ds = ds.assign_coords(point=[_point_label(pt) for pt in points], point_seed=("point", seeds.astype(np.int64)))
    s0 = base.settings
    ds.attrs = run.provenance(workload="maboss.sweep", seed=seed, model_name=base.name, max_time=s0.max_time,
                              time_tick=s0.time_tick, discrete_time=int(s0.discrete_time), trajectories=s0.sample_count,
                              points=len(points), events=int(sum(o["events"] for o in out)))
    return ds


def knockout_screen(model: str | os.PathLike, cfg: str | os.PathLike | None = None, *, over_expression: bool = False,
                    **options: Any) -> xr.Dataset:
    """Every node knocked out (or over-expressed), plus the wild type as point 'wild type'."""
    nodes = read_rates(model, cfg).nodes
    v = 1 if over_expression else 0
    return sweep(model, cfg, points=[{}] + [{"mutants": {nm: v}} for nm in nodes], **options)


def _point_label(pt: Mapping[str, Any]) -> str:
    parts = [f"{k}={'KO' if v == 0 else 'OE'}" for k, v in (pt.get("mutants") or {}).items()]
    parts += [f"{k if str(k).startswith('$') else '$' + str(k)}={v:g}" for k, v in (pt.get("variables") or {}).items()]
    return ", ".join(parts) or "wild type"
