"""Many parameter points of one network in one run: :func:`simulate_batch` (the SSA sweeps' path).

Point p (its rate parameters and initial counts) with seed s_p gives, bit for bit, what
``simulate(net.with_parameters(...).with_initial(...), seed=s_p, ...)`` reduces: realization r of
point p uses the Philox stream (s_p, r); its initial counts, rate constants and law constants are row
p of per-point tables (:func:`distsim.models.compile_reactions.point_tables`) that one kernel launch
(GPU) or one parallel loop (CPU) reads, so points share the compiled network and the kernel. The
histogram bins of point p come, as in :func:`~distsim.ssa.simulate`, from its first min(R, 256)
realizations as the CPU simulates them (on a GPU: the same realizations, on the device; for 'warp',
whose realizations differ from the CPU's, a pilot pass of the bit-identical sum tree). Each point
keeps what a sweep keeps of a run: mean and variance (exact integer sums), firings per reaction,
bin widths and quantiles, firings in total and per realization, truncated realizations; errors are
raised, and truncations warned about, point by point in the per-point path's order.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import xarray as xr

from .. import engine, results
from ..models.compile_reactions import compile_network, point_tables
from ..models.reactions import ReactionNetwork
from ..rng import check_seeds
from . import cpu
from .batch_block import PointsBlock, concat_parts, event_reductions, pilot_bins, quantile_values
from .errors import ERR_MAX_EVENTS, FATAL
from .methods import METHODS
from .simulate import (MAX_HIST_BINS, VAR_ATTRS, _check_options, _raise_if_failed, mean_variance, resolve_method,
                       result_coords)

CPU_TRAJ_BYTES = 64 << 20  # grid states held at once by the CPU path when histograms are wanted
BATCH_MAX_REALIZATIONS = 1 << 20  # a point with more fills a device alone: sweeps run such points one by one


def simulate_batch(
    net: ReactionNetwork,
    params: Sequence[Mapping[str, float]],
    seeds: Sequence[int],
    *,
    initial: Sequence[Mapping[str, int]] | None = None,
    t_end: float,
    points: int = 101,
    realizations: int = 1000,
    method: str = "auto",
    quantiles: Sequence[float] | None = (0.05, 0.5, 0.95),
    max_bins: int = MAX_HIST_BINS,
    max_events: int = 0,
    client: Any = None,
    backend: str | None = None,
    progress: bool | None = None,
) -> xr.Dataset:
    """Simulate ``net`` at every parameter point p (``params[p]``: rate parameters, ``initial[p]``:
    initial counts, by name; ``seeds[p]``: its seed) with one launch per device for many points.
    The other arguments are those of :func:`~distsim.ssa.simulate`. Returns a Dataset with a
    ``point`` dimension: ``mean``, ``variance``, ``firings``, (``bin_width``, ``quantile_value``),
    ``firings_total``, ``mean_firings_per_realization``, ``truncated_realizations`` and
    ``wall_time_s`` (the run's wall time divided evenly), each equal to what ``simulate`` gives for
    that point alone. Networks with SBML events or rules are refused (their per-realization
    parameters are not batched); sweeps run them point by point."""
    net.require_plain("ssa.simulate_batch (use ssa.simulate point by point)")
    initial = [{}] * len(params) if initial is None else list(initial)
    _check_options(t_end, points, realizations, quantiles, None)
    seeds_arr = check_seeds(seeds)
    if len(seeds_arr) != len(params) or not len(params):
        raise ValueError(f"simulate_batch needs one seed per point and at least one point ({len(params)} points, "
                         f"{len(seeds_arr)} seeds)")
    c = compile_network(net)
    tables = point_tables(net, c, params, initial)
    grid = np.linspace(0.0, float(t_end), points)
    qs = None if quantiles is None else tuple(float(q) for q in quantiles)
    with engine.Run("ssa", client, backend, progress=progress, label="ssa batch") as run:
        method = resolve_method(net, run, method)
        whole = PointsBlock(c, tables, seeds_arr, realizations, grid, method, qs, max_bins, max_events)
        blocks = [whole.rows(r.start, r.stop) for r in run.split(len(params))]
        run.progress.start(f"{len(params)} points x {realizations} realizations of {net.name or 'network'} "
                           f"({method}) on {run.describe()}", total=len(params) * realizations, unit="real")
        res = concat_parts(run.round(simulate_points_block, blocks,
                                      counts=[b.n_points * realizations for b in blocks]))
        wall = run.elapsed()
    _raise_and_warn(net, params, initial, whole, res)
    ds = _dataset(net, whole, res, wall)
    ds.attrs = run.provenance(workload="ssa.simulate_batch", model_name=net.name, model_sha256=net.digest(),
                              method=method, points=len(params), realizations=realizations, t_end=float(t_end))
    ds.attrs.update({f"model_{k}": v for k, v in net.metadata})  # how the model was read (SBML units, rounding)
    return ds


def simulate_points_block(ctx: engine.ShardContext, b: PointsBlock) -> dict:
    """Shard task (runs on a worker): the GPU's batched kernels there, else the CPU loop."""
    method = METHODS[b.method]
    if ctx.backend == "gpu":
        from . import gpu_batch

        return gpu_batch.simulate_points(b, method)
    return _cpu_points(b, method)


# ---- chunk sizes: how many points one sweep task carries -------------------------------------------

FILL_REALIZATIONS = {"gpu": 1 << 22, "cpu": 1 << 14}  # realizations that keep a device busy (waves of threads)
NOMINAL_EVENTS_PER_SECOND = {"gpu": 1e10, "cpu": 1e7}  # per GPU, per CPU thread (benchmarks/RESULTS.md)
TASK_SECONDS = 60.0  # a task's nominal duration past the fill (progress, resume granularity)
RESULT_BYTES = 256 << 20  # a task's result, held on its worker and sent to the client
PILOT_REALIZATIONS = 256


@dataclass(frozen=True)
class CostPilot:
    """The payload of the pilot task: one point's first realizations, to measure a point's cost."""

    net: ReactionNetwork
    params: Mapping[str, float]
    initial: Mapping[str, int]
    seed: int
    kwargs: dict


def measure_point(ctx: engine.ShardContext, p: CostPilot) -> dict:
    """Pilot task (on a worker): events per realization of one point, the worker's backend, threads and
    free device memory (GPU) or None."""
    local = engine.LocalExecutor(ctx.backend)
    ds = simulate_batch(p.net, [p.params], [p.seed], initial=[p.initial], client=local, progress=False, **p.kwargs)
    free = None
    if ctx.backend == "gpu":
        import cupy as cp

        free = int(cp.cuda.Device().mem_info[0])
    from ..backends import cpu_threads

    return {"events": float(ds["mean_firings_per_realization"][0]), "backend": ctx.backend, "free": free,
            "threads": cpu_threads()}


def chunk_points(net: ReactionNetwork, params: Mapping[str, float], initial: Mapping[str, int], seed: int,
                 n_points: int, run: engine.Run, fixed: Mapping[str, Any]) -> int:
    """Points per sweep task, from a pilot of one point (its first min(R, 256) realizations on a
    worker) and the worker's device: at least enough realizations to fill the device, and beyond
    that up to TASK_SECONDS of nominal work; at most what RESULT_BYTES of results and a quarter of
    the device's free memory (per-point tables) hold, and at most an even share of the points per
    worker."""
    R = int(fixed.get("realizations", 1000))
    kwargs = {k: v for k, v in fixed.items() if k in ("t_end", "points", "method", "max_events")}
    kwargs["realizations"] = min(R, PILOT_REALIZATIONS)
    m = run.round(measure_point, [CostPilot(net, dict(params), dict(initial), seed, dict(kwargs, quantiles=None))])[0]
    backend = m["backend"]
    per_point_events = max(1.0, m["events"]) * R
    rate = NOMINAL_EVENTS_PER_SECOND[backend] * (m["threads"] if backend == "cpu" else 1)
    fill = -(-FILL_REALIZATIONS[backend] // R)
    by_time = int(TASK_SECONDS * rate // per_point_events)
    K, S, M = int(fixed.get("points", 101)), net.n_species, net.n_reactions
    Q = 0 if fixed.get("quantiles", ()) is None else len(fixed.get("quantiles", (0.05, 0.5, 0.95))) + 1
    by_result = RESULT_BYTES // (8 * (K * S * (2 + Q) + M + S + 8))
    by_device = n_points if m["free"] is None else (m["free"] // 4) // (8 * (2 * S + M + 8))
    share = -(-n_points // max(1, run.n_workers()))
    return int(max(1, min(share, by_result, by_device, max(fill, by_time))))


# ---- the CPU path ---------------------------------------------------------------------------------

def _cpu_points(b: PointsBlock, method: Any) -> dict:
    """All points in one parallel loop (with histograms: in groups whose grid states fit CPU_TRAJ_BYTES)."""
    c, R, K, S = b.compiled, b.realizations, len(b.grid), b.compiled.n_species
    group = b.n_points if b.quantiles is None else max(1, CPU_TRAJ_BYTES // (R * K * S * 8))
    parts = []
    for a in range(0, b.n_points, group):
        g = b.rows(a, min(a + group, b.n_points))
        t = g.tables
        out = cpu.simulate_points(c, t.x0, t.theta, t.law_arg, g.seeds, method=method.cpu, realizations=R,
                                  grid=g.grid, max_events=g.max_events, keep_trajectories=g.quantiles is not None)
        red = {"sum_x": out["sum_x"], "sum_x2": out["sum_x2"], "firings": out["firings"],
               **event_reductions(out["events"], out["errors"], g.pilot)}
        if g.quantiles is not None:
            vals = out["trajectories"].transpose(2, 3, 0, 1)  # (K, S, P, R)
            lo, width, bins = pilot_bins(vals, g.pilot, g.max_bins, np)
            red.update(hist_lo=lo, hist_width=width, quantile_value=quantile_values(
                _cpu_histogram(vals, lo, width, bins), lo, width, R, g.quantiles, np))
        parts.append(red)
    return concat_parts(parts)


def _cpu_histogram(vals: np.ndarray, lo: np.ndarray, width: np.ndarray, bins: np.ndarray) -> np.ndarray:
    """Counts per (point, time, species, bin) of grid states ``vals`` (K, S, P, R); bins past a point's
    own count stay empty."""
    K, S, P, _ = vals.shape
    B = int(bins.max())
    lo4, wd4 = lo.T[None, :, :, None], width.T[None, :, :, None]
    b = np.clip((vals - lo4) // wd4, 0, (bins - 1)[None, None, :, None])
    cell = (np.arange(P)[None, None, :, None] * K + np.arange(K)[:, None, None, None]) * S \
        + np.arange(S)[None, :, None, None]
    return np.bincount((cell * B + b).ravel(), minlength=P * K * S * B).reshape(P, K, S, B)


# ---- errors and the Dataset -----------------------------------------------------------------------

def _raise_and_warn(net: ReactionNetwork, params: Sequence[Mapping[str, float]],
                    initial: Sequence[Mapping[str, int]], b: PointsBlock, res: dict) -> None:
    """Point by point, as a loop of simulate() calls would: the pilot's error, then the run's, then
    the warning about realizations cut at max_events."""
    R, method = b.realizations, b.method
    counts = res["error_counts"]
    flagged = {p for p, _ in res["first"]} | set(np.flatnonzero(counts[:, ERR_MAX_EVENTS]).tolist())
    for p in sorted(flagged):  # the other points have nothing to raise or warn
        pilot_err, run_err = res["first"].get((p, "pilot")), res["first"].get((p, "run"))
        if pilot_err is not None or run_err is not None:
            net_p = net.with_parameters(**params[p]).with_initial(**initial[p])
            c_p, seed = compile_network(net_p), int(b.seeds[p])
            if pilot_err is not None:
                pilot_counts = {FATAL[0]: int(res["pilot_fatal"][p])}  # only the total of fatal errors is shown
                _raise_if_failed(net_p, c_p, [{"error_counts": pilot_counts, "first_error": pilot_err}], b.pilot,
                                 seed, method, b.grid, b.max_events, pilot=b.pilot < R)
            row = {k: int(n) for k, n in enumerate(counts[p]) if n}
            _raise_if_failed(net_p, c_p, [{"error_counts": row, "first_error": run_err}], R, seed, method, b.grid,
                             b.max_events)
        truncated = int(counts[p][ERR_MAX_EVENTS])
        if truncated:
            warnings.warn(f"{truncated} realizations reached max_events={b.max_events}; their later grid states "
                          "repeat the last state", stacklevel=4)


def _exact_ints(sx: np.ndarray, sx2: np.ndarray, R: int) -> tuple[np.ndarray, np.ndarray]:
    """The sums as int64 where R sx2 - sx^2 cannot overflow, else as Python ints."""
    big = max(int(np.abs(sx).max(initial=0)) ** 2, int(sx2.max(initial=0)) * R)
    if big < 2**62:
        return sx.astype(np.int64), sx2.astype(np.int64)
    return sx.astype(object), sx2.astype(object)


def _dataset(net: ReactionNetwork, b: PointsBlock, res: dict, wall: float) -> xr.Dataset:
    R, P = b.realizations, b.n_points
    sx, sx2 = _exact_ints(res["sum_x"], res["sum_x2"], R)
    mean, var = mean_variance(sx, sx2, R)
    firings = res["firings"].astype(np.int64)
    data: dict[str, Any] = {
        "mean": (("point", "time", "species"), mean, VAR_ATTRS["mean"]),
        "variance": (("point", "time", "species"), var, VAR_ATTRS["variance"]),
        "firings": (("point", "reaction"), firings, VAR_ATTRS["firings"]),
    }
    coords = result_coords(net, b.grid)
    if b.quantiles is not None:
        data["bin_width"] = (("point", "species"), res["hist_width"].astype(np.int64))
        data["quantile_value"] = (("point", "quantile", "time", "species"), res["quantile_value"],
                                  VAR_ATTRS["quantile_value"])
        coords["quantile"] = np.asarray(b.quantiles, dtype=np.float64)
    events = [int(e) for e in res["events_sum"]]
    data["wall_time_s"] = ("point", np.full(P, wall / P))
    data["firings_total"] = ("point", firings.sum(axis=1))
    data["mean_firings_per_realization"] = ("point", np.asarray([e / R for e in events], dtype=np.float64))
    data["truncated_realizations"] = ("point", res["error_counts"][:, ERR_MAX_EVENTS].astype(np.int64))
    return results.dataset(data, coords)


__all__ = ["BATCH_MAX_REALIZATIONS", "PointsBlock", "chunk_points", "simulate_batch", "simulate_points_block"]
