"""``distsim.sweep``: one analysis over many parameter points, spread over every worker.

Points are packed into chunks of consecutive points; each chunk is one Dask task that runs the
analysis in-process on its worker (the worker's backend: its GPU when it has one). Point i uses the
seed ``derive_seeds(seed, i)`` (a Philox-keyed permutation, so points never share a stream), so the
result depends neither on the number of workers nor on the chunking nor on the order of completion.
Results are collected as tasks finish and, with ``store``, written to zarr chunk by chunk with their
checksums; a rerun with the same store computes only the chunks whose data are not there or do not
verify (:mod:`distsim.sweep.store`).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import xarray as xr

from .. import engine, results
from ..rng import check_seed, derive_seeds
from .adapters import Adapter, adapter_for, check_fixed
from .layout import LAYOUT_ATTR, PARAMETERS_ATTR, shaped
from .points import SCALE_KEYS, Points, as_points
from .store import StoreRepaired, SweepStore, locked, point_ranges


@dataclass(frozen=True)
class Chunk:
    """One sweep task: points ``start, start + step, ..`` (as columns) with their seeds."""

    adapter: Adapter
    model: Any
    fixed: dict
    start: int
    points: Points
    seeds: np.ndarray  # one per point
    step: int = 1

    def index(self) -> np.ndarray:
        """The positions of its points in the sweep."""
        return self.start + self.step * np.arange(self.points.n)


def resolve_point(adapter: Adapter, model: Any, point: Mapping[str, Any]) -> dict[str, Any]:
    """A table point with ``parameter``/``factor`` becomes {parameter: baseline x factor}."""
    point = dict(point)
    if "parameter" in point:
        name, factor = point.pop("parameter"), point.pop("factor")
        if name in point:
            raise ValueError(f"{name!r} is both scaled (parameter/factor) and set in the same point")
        point[name] = adapter.baseline(model, name) * factor
    return point


def run_chunk(ctx: engine.ShardContext, chunk: Chunk) -> xr.Dataset:
    """Sweep task (runs on a worker): the analysis for every point of the chunk, in this process."""
    local = engine.LocalExecutor(ctx.backend)
    points = chunk.points.dicts()
    if "parameter" in chunk.points.names:
        points = [resolve_point(chunk.adapter, chunk.model, p) for p in points]
    seeds = np.asarray(chunk.seeds).tolist()  # Python ints
    parts = None
    if chunk.adapter.run_chunk is not None:
        parts = chunk.adapter.run_chunk(chunk.model, points, seeds, dict(chunk.fixed), local)
        if isinstance(parts, xr.Dataset):
            return parts
    if parts is None:
        fn = chunk.adapter.resolve()
        parts = []
        for point, seed in zip(points, seeds):
            model, extra = chunk.adapter.apply(chunk.model, point)
            ds = fn(model, **chunk.fixed, **extra, seed=int(seed), client=local, progress=False)
            parts.append(chunk.adapter.summarize(ds))
    return xr.concat(parts, dim="point", coords="minimal", compat="override", join="exact")


def _canonical(value: Any) -> Any:
    """JSON-able form of a fixed argument (for the configuration digest)."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, np.ndarray):
        return _canonical(value.tolist())
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"fixed argument value {value!r} ({type(value).__name__}) cannot be recorded; use numbers, "
                    "strings, lists or dicts")


def _model_digest(model: Any) -> str:
    digest = getattr(model, "digest", None)
    if digest is None:
        raise TypeError(f"the model ({type(model).__name__}) needs a digest() method for the sweep record")
    return digest()


def default_chunk_size(adapter: Adapter, n_points: int, n_workers: int, gpu: bool = False) -> int:
    """About four tasks per worker (for progress and balance), at most ``adapter.max_chunk`` points
    per task; one task per worker for a batched analysis on GPU workers, where a task's points share
    one launch per step and more points per launch fill the device better."""
    per_worker = 1 if gpu and adapter.run_chunk is not None else 4
    return int(max(1, min(adapter.max_chunk, -(-n_points // (per_worker * max(1, n_workers))))))


def _chunk_size(adapter: Adapter, model: Any, fixed: dict, pts: Points, seeds: np.ndarray, run: engine.Run,
                st: SweepStore | None, chunk_size: int | None) -> int:
    """Points per task: a resumed store's; else ``chunk_size``; else the adapter's plan (a batched
    analysis: from a pilot of the first point and the workers' devices), else :func:`default_chunk_size`."""
    if st is not None and st.exists:
        return st.chunk_size
    C = chunk_size or _planned_chunk_size(adapter, model, fixed, pts, seeds, run)
    if st is not None:
        st.chunk_size = C
    return C


def _planned_chunk_size(adapter: Adapter, model: Any, fixed: dict, pts: Points, seeds: np.ndarray,
                        run: engine.Run) -> int:
    if adapter.plan_chunk is not None:
        first = resolve_point(adapter, model, pts.point(0))
        planned = adapter.plan_chunk(model, first, int(seeds[0]), pts.n, run, dict(fixed))
        if planned is not None:
            return balanced_chunk_size(int(planned), pts.n, run.n_workers())
    return balanced_chunk_size(default_chunk_size(adapter, pts.n, run.n_workers(), run.uses_gpu()), pts.n,
                               run.n_workers())


def balanced_chunk_size(size: int, n_points: int, n_workers: int) -> int:
    """At most ``size`` points per task, the tasks as equal as they can be and their count a multiple of
    the workers: 10,000 points in tasks of 3,000 on 2 workers are 4 tasks of 2,500, not 3,000 x 3 +
    1,000 (one worker 6,000 points, the other 4,000: the sweep waits for the slower). Only the tasks
    change: every point's answer is its own (its seed is the point's)."""
    size = max(1, min(n_points, int(size)))
    W = max(1, int(n_workers))
    tasks = -(-n_points // size)
    if tasks > 1 or W > 1:
        tasks = min(n_points, -(-tasks // W) * W)
    return -(-n_points // tasks)


def sweep(
    analysis: str | Callable[..., Any] | Adapter,
    model: Any,
    points: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]] | Any,
    /,
    *,
    seed: int = 0,
    client: Any = None,
    store: str | os.PathLike | None = None,
    chunk_size: int | None = None,
    backend: str | None = None,
    progress: bool | None = None,
    model_options: Mapping[str, Any] | None = None,
    **fixed: Any,
) -> xr.Dataset:
    """Run ``analysis`` (``ssa.simulate``, ``pbn.steady_state``, ``pbn.simulate`` -- the function, its
    name or an :class:`Adapter`) on ``model`` (object or file path) at every point of ``points``.

    ``points``: a grid ``{"k1": [...], "S": [...]}`` (Cartesian product, last key fastest), a list of
    dicts, a pandas DataFrame, or :func:`one_at_a_time` rows. SSA points set rate parameters and
    initial counts by name; PBN points set ``perturbation`` and ``select.NODE.K``. ``fixed``: keyword
    arguments of the analysis shared by every point (``t_end=``, ``realizations=``, ``target=`` ...).
    Point i gets the seed ``derive_seeds(seed, i)``. ``store`` (``.zarr``): results are written as
    they arrive with a checksum per chunk and variable, and a rerun with the same store computes only
    the points that are missing or whose data fail their checksums (warning :class:`StoreRepaired`,
    naming them); a finished store is read back (verified) without computing; a sweep whose points
    extend the store's (appended: a grid grown in its first parameter, a table by rows) computes only
    the new ones; a store of another sweep is refused, and so is a store that another sweep holds
    (:class:`StoreLocked`, naming its host, process and start). ``chunk_size``: points per task
    (default: for SSA, whose chunks run batched, one launch's worth from a pilot of the first point
    and the worker's device, :func:`distsim.ssa.batch.chunk_points`; else about 4 tasks per worker,
    capped per analysis).
    ``analysis``, ``model`` and ``points`` are positional, so the analysis's own ``points=`` (SSA time
    points) can be fixed. Returns one Dataset with each point's results as variables: for a grid, one
    dimension per swept parameter (in the grid's order, indexed by its values; ``point`` and ``seed``
    are coordinates over them); for a table, a ``point`` dimension with the swept values (and
    ``seed``) as coordinates on it (:func:`distsim.sweep.as_grid` reshapes a table that is a full grid).
    """
    adapter = adapter_for(analysis)
    if not hasattr(model, "digest"):
        model = adapter.load(model, **dict(model_options or {}))
    elif model_options:
        raise ValueError("model_options apply only when the model is given as a file path")
    pts = as_points(points)
    seed = check_seed(seed)
    _check_arguments(adapter, model, pts, fixed, chunk_size)
    seeds = derive_seeds(seed, np.arange(pts.n))
    config, coords = _config(adapter, model, pts, seed, fixed, store is not None, seeds)
    fields = dict(workload="sweep", seed=seed, model_name=getattr(model, "name", None),
                  model_sha256=config["model_sha256"], analysis=adapter.name, points=pts.n,
                  fixed=json.dumps(config["fixed"], sort_keys=True),
                  store=os.fspath(store) if store is not None else None, **_layout(pts))
    with contextlib.ExitStack() as stack:
        st, repaired = None, 0
        if store is not None:
            note = stack.enter_context(locked(store))
            if note:
                warnings.warn(StoreRepaired(f"{store}: {note}"), stacklevel=2)
            st = _open_store(store, config, coords, pts, chunk_size)
            repaired = _report(st)
            if st.exists and st.done_chunks().all():  # a finished sweep: its result, nothing computed
                t0 = time.perf_counter()
                ds = st.load(verify=False)
                ds.attrs.update(results.provenance(
                    executor="none (every point is in the store)", wall_time_s=time.perf_counter() - t0,
                    chunk_size=st.chunk_size, tasks=0, points_computed=0, points_resumed=pts.n, points_repaired=0,
                    task_seconds=0.0, **fields))
                return shaped(ds)
        with engine.Run("sweep", client, backend, progress=progress, label="sweep") as run:
            C = _chunk_size(adapter, model, fixed, pts, seeds, run, st, chunk_size)
            plan = _plan(adapter, model, fixed, pts, seeds, C, st)
            run.progress.start(f"{adapter.name}: {pts.n} points in {plan.chunks} chunks of {plan.chunk_size}; "
                               f"{plan.resumed} already done; {run.describe()}", total=pts.n, unit="pt")
            run.progress.update(plan.resumed)
            parts = _collect(run, plan, st, coords, _attrs(adapter, model, config, plan.chunk_size, pts))
        attrs = _attrs(adapter, model, config, plan.chunk_size, pts)
        ds = st.load() if st is not None else _assemble(parts, coords, attrs)
    ds.attrs.update(run.provenance(
        chunk_size=plan.chunk_size, tasks=len(plan.tasks), points_computed=sum(t.points.n for t in plan.tasks),
        points_resumed=plan.resumed, points_repaired=repaired,
        task_seconds=float(sum(m["seconds"] for m in run.metas)), **fields))
    return shaped(ds)


def _layout(pts: Points) -> dict[str, str]:
    """The result attributes that say how it is shaped (:mod:`distsim.sweep.layout`)."""
    return {LAYOUT_ATTR: "grid" if pts.grid else "table", PARAMETERS_ATTR: json.dumps(list(pts.names))}


def _config(adapter: Adapter, model: Any, pts: Points, seed: int, fixed: dict, stored: bool = True,
            seeds: np.ndarray | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A sweep's identity in its store (analysis, model digest, seed, fixed arguments, points: their
    digest only when ``stored``) and its per-point coordinates (swept values and ``seeds``, derived
    when not given)."""
    config = {"analysis": adapter.name, "model_sha256": _model_digest(model), "seed": seed,
              "fixed": _canonical(fixed), "parameters": list(pts.names), "n_points": pts.n}
    if stored:
        config["points_sha256"] = pts.digest()
    coords = {name: pts.column(name) for name in pts.names}
    coords["seed"] = (derive_seeds(seed, np.arange(pts.n)) if seeds is None else seeds).astype(np.int64)
    return config, coords


def _open_store(store: str | os.PathLike, config: dict[str, Any], coords: dict[str, np.ndarray], pts: Points,
                chunk_size: int | None, grow: bool = True) -> SweepStore:
    return SweepStore(store, config, pts.n, chunk_size or 1, coords, lambda n: pts.prefix(n).digest(), grow)


def store_status(analysis: str | Adapter, model: Any, points: Any, store: str | os.PathLike, /, *, seed: int = 0,
                 **fixed: Any) -> str:
    """What a sweep would find in ``store`` (``distsim sweep --check``): a line saying how many points
    are done and verified and how many it would compute; warns of damage as a run does; raises
    :class:`StoreMismatch` for a store of another sweep and :class:`StoreLocked` while one runs."""
    adapter = adapter_for(analysis)
    pts = as_points(points)
    config, coords = _config(adapter, model, pts, check_seed(seed), fixed)
    with locked(store):
        st = _open_store(store, config, coords, pts, None, grow=False)
        if not st.exists:
            return f"store {store}: none yet; the sweep computes all {pts.n} points"
        if st.grows_from is not None:
            return (f"store {store}: holds this sweep's first {st.grows_from} points (verified when it runs); the "
                    f"sweep adds {pts.n - st.grows_from}")
        damaged = _report(st)
        C, done = st.chunk_size, st.done_chunks()
        n_done = sum(min((k + 1) * C, pts.n) - k * C for k in np.flatnonzero(done))
    extra = f", {damaged} of them damaged" if damaged else ""
    return (f"store {store}: {n_done} of {pts.n} points done and verified; the sweep computes {pts.n - n_done}"
            f"{extra}")


def _report(st: SweepStore) -> int:
    """Warn of the damaged chunks of a store that the sweep recomputes (naming their points and files)
    and of the old points recomputed because the store grew; returns the number of damaged points."""
    v = st.verified
    if v is None:
        return 0
    C = st.chunk_size
    points = {k: list(range(k * C, min((k + 1) * C, st.n))) for k in v.damaged}
    if v.damaged:
        parts = [f"points {point_ranges(points[k])} ({why})" for k, why in sorted(v.damaged.items())]
        warnings.warn(StoreRepaired(f"{st.path} is damaged; recomputing " + "; ".join(parts)), stacklevel=3)
    if v.regrown:
        warnings.warn(StoreRepaired(f"{st.path} grows to {st.n} points; its last chunk was partial, so points "
                                    f"{point_ranges(v.regrown)} are recomputed with the new ones"), stacklevel=3)
    return sum(len(p) for p in points.values())


def _check_arguments(adapter: Adapter, model: Any, pts: Points, fixed: dict, chunk_size: int | None) -> None:
    """Everything wrong with the call, before any work: fixed arguments, every point's values, the chunk size."""
    problems = check_fixed(adapter, fixed, pts.swept())
    if problems:
        raise ValueError("fixed arguments: " + "; ".join(problems))
    _check_values(adapter, model, pts, fixed)
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")


def _assemble(parts: dict, coords: dict, attrs: dict) -> xr.Dataset:
    """The chunks' Datasets (without a store) as one Dataset over ``point``, in point order."""
    ds = xr.concat([parts[k] for k in sorted(parts)], dim="point", coords="minimal", compat="override", join="exact")
    order = np.argsort(ds["point"].values, kind="stable")
    if (order != np.arange(len(order))).any():  # interleaved chunks
        ds = ds.isel(point=order)
    ds = ds.assign_coords({k: results.variable("point", v) for k, v in coords.items()})
    ds.attrs = attrs
    return ds


@dataclass(frozen=True)
class _Plan:
    """The chunks still to compute (a resumed store has some done)."""

    tasks: list[Chunk]
    chunk_size: int
    chunks: int  # in the whole sweep
    resumed: int  # points already in the store


def _plan(adapter: Adapter, model: Any, fixed: dict, pts: Points, seeds: np.ndarray, C: int,
          st: SweepStore | None) -> _Plan:
    """Chunks of C consecutive points (a store's regions), or without a store K chunks of every K-th
    point: neighbouring points of a grid cost alike, so interleaved chunks cost alike (a 10,000-point
    MM sweep's two halves took 0.63 and 0.90 s on two GPUs); every point's answer is its own."""
    done = st.done_chunks() if st is not None else np.zeros(-(-pts.n // C), dtype=bool)
    K = len(done)
    tasks = []
    for k in np.flatnonzero(~done):
        if st is None:
            tasks.append(Chunk(adapter, model, dict(fixed), int(k), pts.rows(int(k), pts.n, K), seeds[k::K], K))
            continue
        a, b = int(k) * C, min((int(k) + 1) * C, pts.n)
        tasks.append(Chunk(adapter, model, dict(fixed), a, pts.rows(a, b), seeds[a:b]))
    resumed = int(sum(min((k + 1) * C, pts.n) - k * C for k in range(len(done)) if done[k]))
    return _Plan(tasks, C, len(done), resumed)


def _collect(run: engine.Run, plan: _Plan, st: SweepStore | None, coords: dict[str, np.ndarray],
             attrs: dict[str, Any]) -> dict[int, xr.Dataset]:
    """Run the chunks; each result goes to the store as it arrives (or is kept, by first point)."""
    parts: dict[int, xr.Dataset] = {}
    for index, part in run.stream(run_chunk, plan.tasks):
        task = plan.tasks[index]
        part = part.assign_coords(point=results.coordinate("point", task.index()))
        if st is None:
            parts[task.start] = part
        else:
            if not st.exists:
                st.create(part, coords, attrs)
            st.write(task.start, part)
        run.progress.add(task.points.n)
    return parts


def _check_values(adapter: Adapter, model: Any, pts: Points, fixed: dict) -> None:
    """Every distinct value of every column is applied once on the client, and the analysis's own
    checks (``adapter.validate``) run with it and the fixed arguments, so unknown names and bad values
    fail before any work (naming the first point that has them)."""
    try:
        validate(adapter, model, {}, fixed)
    except (ValueError, KeyError) as e:
        raise ValueError(f"fixed arguments: {_message(e)}") from None
    for i, single in distinct_singles(pts):
        try:
            check_point(adapter, model, single, fixed)
        except (ValueError, KeyError) as e:
            raise ValueError(f"point {i} {pts.point(i)}: {_message(e)}") from None


def distinct_singles(pts: Points) -> list[tuple[int, dict[str, Any]]]:
    """Each distinct setting of the points once (a value of a column; a scaled parameter with its
    factor), with the first point that has it, in the order of a walk over the points and each
    point's settings (found column by column, not point by point)."""
    cols = dict(zip(pts.names, pts.columns))
    found = []  # (first point, position among the point's settings, setting)
    plain = [k for k in pts.names if k not in SCALE_KEYS]
    for j, k in enumerate(plain):
        first = dict(zip(reversed(cols[k]), range(pts.n - 1, -1, -1)))  # the last write is the first point
        found += [(i, j, {k: cols[k][i]}) for i in first.values()]
    if "parameter" in cols:
        pairs = list(zip(cols["parameter"], cols["factor"]))
        first = dict(zip(reversed(pairs), range(pts.n - 1, -1, -1)))
        found += [(i, len(plain), {"parameter": pairs[i][0], "factor": pairs[i][1]}) for i in first.values()]
    found.sort(key=lambda t: t[:2])
    return [(i, single) for i, _, single in found]


def check_point(adapter: Adapter, model: Any, point: dict[str, Any], fixed: dict) -> None:
    """What running ``point`` would raise before any work: the adapter's check (or apply), then the
    analysis's own checks with the fixed arguments."""
    resolved = resolve_point(adapter, model, point)
    (adapter.check or adapter.apply)(model, resolved)
    validate(adapter, model, resolved, fixed)


def validate(adapter: Adapter, model: Any, point: dict[str, Any], fixed: dict) -> None:
    if adapter.validate is not None:
        adapter.validate(model, point, dict(fixed))


def _message(e: Exception) -> str:
    return e.args[0] if isinstance(e, KeyError) and e.args else str(e)


def _attrs(adapter: Adapter, model: Any, config: dict, chunk_size: int, pts: Points) -> dict[str, Any]:
    return results.provenance(workload="sweep", analysis=adapter.name, seed=config["seed"],
                              model_name=getattr(model, "name", None), model_sha256=config["model_sha256"],
                              points=config["n_points"], chunk_size=chunk_size,
                              fixed=json.dumps(config["fixed"], sort_keys=True), **_layout(pts))


__all__ = ["Chunk", "SCALE_KEYS", "default_chunk_size", "resolve_point", "run_chunk", "sweep"]
