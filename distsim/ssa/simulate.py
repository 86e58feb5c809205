"""``distsim.ssa.simulate``: ensembles of exact SSA realizations, sharded over the cluster's workers."""

from __future__ import annotations

import math
import os
import time
import warnings
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import xarray as xr

from .. import engine, results
from ..models.reactions import ReactionNetwork
from ..rng import check_seed
from . import cpu, gpu_events
from ..models.compile_reactions import compile_network
from .block import SSABlock, join
from .errors import ERR_MAX_EVENTS, merge, raise_if_failed, summary
from .methods import METHODS, choose_method
from .shard import simulate_block

ALIGN = 64
KEEP_EVENTS_MAX = 10**6  # realizations up to which per-realization event counts are returned
MAX_HIST_BINS = 512
PILOT = 256
WAVES, WAVE_MIN = 8, 8192  # CPU shards per worker (at most), realizations per shard (at least)


def load(source: Any, *, format: str | None = None, reversible: str = "split", system_size: float | None = None,
         rounding: str = "error", mass_action: str = "as_written", fast: str = "refuse", guard: bool = False
         ) -> ReactionNetwork:
    """Load a reaction network from a path (SBML ``.xml``/``.sbml``, antimony ``.ant``, distsim's text
    format), model text (an SBML string; antimony or ``.rxn`` text with ``format=``), a
    ``gillespy2.Model`` or a network. SBML and antimony options (see :mod:`distsim.models.formats.sbml`):
    ``reversible``, the reversible-reaction policy, ``"split"`` (default), ``"forward"`` or ``"error"``;
    ``system_size``, molecules per substance unit (default: from the model's units); ``rounding``,
    ``"error"`` (default: an amount that is not a whole number of molecules is refused) or
    ``"nearest"`` (rounded, and recorded in the network's metadata and the result's attrs); SBML only:
    ``mass_action``, ``"as_written"`` (default: the law is the propensity) or ``"stochastic"`` (powers of
    reactants in mass-action laws become falling factorials, ``k*A^2`` -> ``k*A*(A-1)``); ``fast``, ``"refuse"``
    (default: a reaction marked fast is refused) or ``"as_slow"`` (an ordinary reaction with its kinetic law);
    ``guard``, False (default: a law that goes negative, or fires without what it consumes, stops the run) or
    True (such a law is split by sign into ``max(0, v)`` and a backward ``<id>_reverse`` channel ``max(0, -v)``,
    and multiplied by the indicator of its reactants: the CTMC of the model as written until it would first
    fail; see :mod:`distsim.models.formats.sbml`)."""
    from ..models.sources import load_network

    return load_network(source, format=format, reversible=reversible, system_size=system_size, rounding=rounding,
                        mass_action=mass_action, fast=fast, guard=guard)


def simulate(
    net: ReactionNetwork | str | os.PathLike,
    *,
    t_end: float,
    points: int = 101,
    realizations: int = 1000,
    method: str = "auto",
    keep_trajectories: bool = False,
    keep_final: bool | None = None,
    quantiles: Sequence[float] | None = (0.05, 0.5, 0.95),
    max_bins: int = MAX_HIST_BINS,
    params: Mapping[str, float] | None = None,
    initial: Mapping[str, int] | None = None,
    seed: int = 0,
    max_events: int = 0,
    client: Any = None,
    backend: str | None = None,
    progress: bool | None = None,
    plot: str | None = None,
    time_limit: float | None = None,
) -> xr.Dataset:
    """Simulate ``realizations`` exact SSA realizations from t = 0 to ``t_end``.

    States are recorded on ``points`` equally spaced times and reduced on the workers: the Dataset
    has ``mean`` and ``variance`` over (time, species) from exact integer sums, per-reaction
    ``firings``, and -- unless ``quantiles`` is None -- histograms and quantiles per time point
    (at most ``max_bins`` bins per species, fitted to a pilot of the first realizations; unit-width,
    so exact, when the counts allow).
    ``keep_final`` (default: when realizations x species <= 1e7) keeps every final state, and the
    ``events`` per realization are kept up to 1e6 realizations (or with final states/trajectories),
    ``keep_trajectories`` every grid state. ``method``: 'auto', 'direct' (linear search), 'tree'
    (O(log M) sum tree), 'warp' (GPU: a warp, or part of one, per realization, 32-way block sums, seed 004;
    CPU workers run the tree), 'cr' (O(1) composition-rejection over exponent groups) or 'ar' (seed
    001's parallel acceptance-rejection election with exact exponential ratings); all are exact and
    give the same distribution. ``params``/``initial``
    override rate parameters and initial counts. Realization r uses the Philox stream (seed, r), so results do not depend on the number of
    workers; ``max_events`` (0 = no limit) caps the events per realization. SBML events (delayed
    ones included) and assignment rules are simulated exactly by every method (see :mod:`distsim.models.events`);
    kinetic laws reading ``time`` (sin/cos, piecewise) and rate rules for parameters by the hybrid loop
    (:func:`distsim.ssa.cpu.run_realization_hybrid`, whatever the method: direct selection, the
    integrated hazard to stated tolerances, :mod:`distsim.ssa.hybrid_ops`).
    ``time_limit`` (seconds): realizations run in waves and no wave starts past the limit; the
    result is then that of ``realizations`` = those done (attrs ``realizations``, ``stopped_by``).
    """
    if not isinstance(net, ReactionNetwork):
        net = load(net)
    if params:
        net = net.with_parameters(**params)
    if initial:
        net = net.with_initial(**initial)
    _check_options(t_end, points, realizations, quantiles, plot, time_limit)
    seed = check_seed(seed)
    with engine.Run("ssa", client, backend, progress=progress, label="ssa simulate") as run:
        block = _block_factory(net, run, method, t_end, points, realizations, seed, quantiles, max_bins, max_events,
                               keep_trajectories, keep_final)
        run.progress.start(f"{realizations} realizations of {net.name or 'network'} to t={t_end:g} "
                           f"({block(range(0)).method}) on {run.describe()}", total=realizations, unit="real")
        if time_limit is None:
            blocks = [block(r) for r in _shards(run, realizations)]
            res = run.round(simulate_block, blocks, counts=[b.realizations for b in blocks])
        else:
            blocks, res = _waves(run, block, realizations, time_limit)
    ds = _dataset(_Ensemble(net, blocks, res, quantiles, run.round_seconds), run)
    ds.attrs["stopped_by"] = "realizations" if ds.attrs["realizations"] == realizations else "time_limit"
    if plot is not None:
        from .plots import plot_ensemble

        plot_ensemble(ds, plot)
    return ds


def resolve_method(net: ReactionNetwork, run: engine.Run, method: str) -> str:
    """``method``, or for 'auto' the table's choice for the run's workers (GPU or CPU); checked."""
    method = choose_method(net, "gpu" if run.uses_gpu() else "cpu") if method == "auto" else method
    if method not in METHODS:
        raise ValueError(f"method must be 'auto' or one of {sorted(METHODS)}, got {method!r}")
    return method


def _block_factory(net: ReactionNetwork, run: engine.Run, method: str, t_end: float, points: int, realizations: int,
                   seed: int, quantiles: Sequence[float] | None, max_bins: int, max_events: int,
                   keep_trajectories: bool, keep_final: bool | None) -> Callable[[range], SSABlock]:
    """The method, the compiled network and the histogram bins (from the pilot) of a run: a function
    giving the shard payload of a range of realizations."""
    method = resolve_method(net, run, method)
    keep_final = realizations * net.n_species <= 10**7 if keep_final is None else bool(keep_final)
    # per-realization event counts travel only for modest runs (else their total is reduced on the device)
    keep_events = keep_final or keep_trajectories or realizations <= KEEP_EVENTS_MAX
    c = compile_network(net)
    if run.uses_gpu():
        gpu_events.check_gpu(net, c)
    grid = np.linspace(0.0, float(t_end), points)
    no_counts = net.n_species == 0  # an ODE model (rate rules alone): no counts to bin
    hist = (None, None, 0) if quantiles is None or no_counts else _histogram_bins(
        net, c, grid, seed, method, realizations, max_events, max_bins,
        gpu_here=run.executor.kind == "local" and run.uses_gpu())
    return lambda r: SSABlock(c, seed, r.start, len(r), grid, method, keep_trajectories, keep_final, *hist,
                              max_events, keep_events, ensemble=realizations)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _check_options(t_end: float, points: int, realizations: int, quantiles: Sequence[float] | None,
                   plot: str | None, time_limit: float | None = None) -> None:
    if not (_is_number(t_end) and t_end > 0 and math.isfinite(t_end)):
        raise ValueError(f"t_end must be positive and finite, got {t_end!r}")
    if isinstance(points, bool) or not isinstance(points, int) or points < 2:
        raise ValueError(f"points must be an integer >= 2, got {points!r}")
    if isinstance(realizations, bool) or not isinstance(realizations, int) or not 1 <= realizations <= 2**32:
        raise ValueError(f"realizations must be an integer in [1, 2**32], got {realizations!r}")
    if quantiles is not None and (isinstance(quantiles, (str, bytes)) or not hasattr(quantiles, "__iter__")
                                  or any(not (_is_number(q) and 0 <= q <= 1) for q in quantiles)):
        raise ValueError(f"quantiles must be in [0, 1], got {quantiles}")
    if plot is not None and not str(plot).lower().endswith(".png"):
        raise ValueError(f"plot must be a .png path, got {plot!r}")
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and 0 < time_limit < math.inf):
        raise ValueError(f"time_limit must be a positive number of seconds, got {time_limit!r}")


def _shards(run: engine.Run, realizations: int) -> list[range]:
    """One shard per worker; on CPU workers, up to WAVES per worker of at least WAVE_MIN realizations,
    so progress advances during a long run (the reductions are exact sums: any split gives the same
    result)."""
    waves = 1 if run.uses_gpu() else max(1, min(WAVES, realizations // (WAVE_MIN * run.n_workers())))
    return run.split(realizations, align=ALIGN, shards=run.n_workers() * waves)


def _waves(run: engine.Run, block: Any, realizations: int, time_limit: float) -> tuple[list[SSABlock], list[dict]]:
    """Realizations 0, 1, ... in waves (one round each, a shard per worker) until all are done or a
    wave ends past ``time_limit``. The first wave holds at least the histogram pilot (so the result
    equals a run of the realizations done); later ones are sized to about a second each."""
    t0, done, nw = time.perf_counter(), 0, run.n_workers()
    wave = min(realizations, max(PILOT, ALIGN * nw))
    blocks: list[SSABlock] = []
    res: list[dict] = []
    while done < realizations:
        n = min(wave, realizations - done)
        shards = [block(range(done + r.start, done + r.stop)) for r in run.split(n, align=ALIGN, shards=nw)]
        res += run.round(simulate_block, shards, counts=[b.realizations for b in shards])
        blocks += shards
        done += n
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            break
        wave = int(np.clip(n * min(1.0, left) / max(run.last_round_seconds, 1e-3), ALIGN * nw, 8 * n))
    return blocks, res


def _exact_ratio(num: np.ndarray, den: int) -> np.ndarray:
    """num / den correctly rounded (num: object array of Python ints). Where |num| < 2**53 (and den
    < 2**53) float division already is correctly rounded; elsewhere exact rationals are used."""
    small = np.abs(num) < 2**53
    out = num.astype(np.float64) / float(den) if den < 2**53 else np.zeros(num.shape)
    if den >= 2**53 or not small.all():
        for idx in zip(*np.nonzero(~small | (den >= 2**53))):
            out[idx] = float(Fraction(int(num[idx]), den))
    return out


def _histogram_bins(net, c, grid, seed, method, realizations, max_events, max_bins, gpu_here: bool = False
                    ) -> tuple[np.ndarray, np.ndarray, int]:
    """Histogram ranges from a pilot: the first min(R, 256) realizations, simulated here: on this process's
    GPU when the run's shards run on it (``gpu_here``: no Numba load in a GPU process, 0.5-0.7 s of its first
    call), else on the CPU; the same trajectories either way."""
    n = min(realizations, PILOT)
    if gpu_here:
        m = METHODS[method]
        b = SSABlock(c, seed, 0, n, grid, method, keep_trajectories=True, max_events=max_events, ensemble=realizations)
        pilot = (m.gpu if c.events is None else gpu_events.simulate)(b, m)
    else:
        pilot = cpu.simulate_block(c, method=METHODS[method].cpu, real0=0, realizations=n, seed=seed, grid=grid,
                                   keep_trajectories=True, max_events=max_events)
    _raise_if_failed(net, c, [summary(pilot["errors"], 0)], n, seed, method, grid, max_events, pilot=n < realizations)
    traj = pilot["trajectories"]
    lo, width, bins = bin_layout(traj.min(axis=(0, 1)), traj.max(axis=(0, 1)), max_bins)
    return lo, width, int(bins)


def bin_layout(lo_obs: Any, hi_obs: Any, max_bins: int) -> tuple[Any, Any, Any]:
    """Histogram bins from the pilot's lowest and highest counts per species (last axis; leading axes:
    one layout each, NumPy or CuPy): the observed range widened by half its span and 8 on each side,
    at most ``max_bins`` bins of equal integer width. Returns (lowest count, width, number of bins)."""
    span = hi_obs - lo_obs
    lo = (lo_obs - span // 2 - 8).clip(0)
    hi = hi_obs + span // 2 + 8
    width = (-(-(hi - lo + 1) // max_bins)).clip(1)
    bins = (-(-(hi - lo + 1) // width)).max(axis=-1)
    return lo.astype(np.int64), width.astype(np.int64), bins


@dataclass(frozen=True)
class _Ensemble:
    """What the Dataset is built from: the network, the shards' payloads and their reductions."""

    net: ReactionNetwork
    blocks: list[SSABlock]
    res: list[dict]
    quantiles: Sequence[float] | None
    seconds: float  # wall time of the round

    @property
    def first(self) -> SSABlock:
        return self.blocks[0]

    @property
    def realizations(self) -> int:
        return sum(b.realizations for b in self.blocks)

    @property
    def per_realization(self) -> bool:
        return all("events" in r for r in self.res)


def _dataset(ens: _Ensemble, run: engine.Run) -> xr.Dataset:
    net, b, res, R = ens.net, ens.first, ens.res, ens.realizations
    truncated = _check_errors(ens)
    data, coords = _moments(ens)
    if ens.per_realization:
        events = join([r["events"] for r in res]).astype(np.int64, copy=False)
        data["events"] = ("realization", events, {"long_name": "firings per realization"})
        events_total = int(events.sum())
    else:
        events_total = sum(r["events_sum"] for r in res)
    if ens.per_realization or b.keep_final or b.keep_trajectories:
        coords["realization"] = np.arange(R)
    if b.keep_final:
        data["final_state"] = (("realization", "species"), join([r["final"] for r in res]),
                               {"long_name": "state at t_end", "units": "molecules"})
    if b.keep_trajectories:
        data["trajectory"] = (("realization", "time", "species"), join([r["trajectories"] for r in res]),
                              {"long_name": "state on the time grid", "units": "molecules"})
    if b.bins:
        _histograms(ens, data, coords)
    if "continuous" in res[0]:
        _continuous(ens, data, coords)
    ds = results.dataset(data, coords)
    firings = int(ds["firings"].values.sum())
    ds.attrs = run.provenance(
        workload="ssa.simulate", seed=b.seed, model_name=net.name, model_sha256=net.digest(), method=b.method,
        realizations=R, t_end=float(b.grid[-1]), points=len(b.grid), firings_total=firings,
        firings_per_second=float(firings) / max(ens.seconds, 1e-12), mean_firings_per_realization=events_total / R,
        truncated_realizations=truncated, max_events=b.max_events,
        parameters=", ".join(f"{k}={v:g}" for k, v in net.params.items()), shards=len(ens.blocks),
    )
    ds.attrs.update({f"model_{k}": v for k, v in net.metadata})  # how the model was read (SBML units, rounding)
    return ds


def _check_errors(ens: _Ensemble) -> int:
    """Raise the error of the lowest-numbered failed realization; warn about (and return) those cut
    at max_events."""
    b = ens.first
    summaries = ([summary(np.concatenate([r["errors"] for r in ens.res]), 0)] if ens.per_realization else ens.res)
    counts = _raise_if_failed(ens.net, b.compiled, summaries, ens.realizations, b.seed, b.method, b.grid, b.max_events)
    truncated = counts.get(ERR_MAX_EVENTS, 0)
    if truncated:
        warnings.warn(f"{truncated} realizations reached max_events={b.max_events}; their later grid states "
                      "repeat the last state", stacklevel=4)
    return truncated


def _raise_if_failed(net, c, summaries, realizations, seed, method, grid, max_events, pilot=False) -> dict[int, int]:
    """Raise the error of the lowest-numbered failed realization (time and state from a CPU replay);
    else return the count of each error code."""
    counts, first = merge(summaries)
    raise_if_failed(net, counts, first, realizations, seed,
                    partial(cpu.replay, c, METHODS[method].cpu, seed=seed, grid=grid, max_events=max_events), pilot)
    return counts


VAR_ATTRS: dict[str, dict[str, str]] = {
    "mean": {"long_name": "mean count over realizations", "units": "molecules"},
    "variance": {"long_name": "sample variance over realizations (n-1)", "units": "molecules^2"},
    "firings": {"long_name": "firings of each reaction, all realizations"},
    "quantile_value": {"long_name": "quantile of the count (exact when bin_width is 1)"},
}


def result_coords(net: ReactionNetwork, grid: np.ndarray) -> dict[str, Any]:
    """The time, species and reaction coordinates of an ensemble's Dataset."""
    names = [r.name or f"R{j + 1}" for j, r in enumerate(net.reactions)]
    time = ("time", grid, {"long_name": "simulated time", "units": "1", "axis": "T",
                           "comment": "in the model's own time unit"})
    return {"time": time, "species": list(net.species), "reaction": names}


def _moments(ens: _Ensemble) -> tuple[dict[str, Any], dict[str, Any]]:
    """Mean and variance from exact integer sums, and the firings of each reaction."""
    net, res, R = ens.net, ens.res, ens.realizations
    sx = sum(r["sum_x"] for r in res)  # object arrays of Python ints: exact
    sx2 = sum(r["sum_x2"] for r in res)
    mean, var = mean_variance(sx, sx2, R)
    firings = np.sum([r["firings"] for r in res], axis=0).astype(np.int64)
    data: dict[str, Any] = {
        "mean": (("time", "species"), mean, VAR_ATTRS["mean"]),
        "variance": (("time", "species"), var, VAR_ATTRS["variance"]),
        "firings": ("reaction", firings, VAR_ATTRS["firings"]),
    }
    return data, result_coords(net, ens.first.grid)


def mean_variance(sx: np.ndarray, sx2: np.ndarray, R: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sample variance (n-1) of R values from their exact sums (object arrays of Python ints,
    or int64 arrays whose R sx2 - sx^2 cannot overflow), correctly rounded."""
    mean = _exact_ratio(sx, R)
    var = _exact_ratio(R * sx2 - sx * sx, R * (R - 1)) if R > 1 else np.full(np.shape(sx), np.nan)
    return mean, var


def _continuous(ens: _Ensemble, data: dict[str, Any], coords: dict[str, Any]) -> None:
    """Mean and sample variance over realizations of the reported rate-rule variables (SBML species with a rate
    rule, the variables of an ODE model) on the grid, in the model's own units: the values of every realization
    in realization order, reduced here, so any split into shards gives the same bits."""
    vals = join([r["continuous"] for r in ens.res])  # [R, K, C]
    names = [r.target for r in ens.net.rate_rules if r.reported]
    coords["continuous"] = ("continuous", names, {"long_name": "variables with a rate rule (real-valued)"})
    units = {"units": "the model's own (SBML amount or concentration, or parameter)"}
    d = vals - vals[:1]  # shifted by the first realization: equal realizations give their value and variance 0
    data["continuous_mean"] = (("time", "continuous"), vals[0] + d.mean(axis=0), {"long_name": "mean value", **units})
    n = len(vals)
    var = ((d * d).sum(axis=0) - d.sum(axis=0) ** 2 / n) / (n - 1) if n > 1 else np.full(vals.shape[1:], np.nan)
    var = np.maximum(var, 0.0)
    data["continuous_variance"] = (("time", "continuous"), var, {"long_name": "sample variance (n-1)"})
    if ens.first.keep_trajectories:
        data["continuous_trajectory"] = (("realization", "time", "continuous"), vals,
                                         {"long_name": "value on the time grid", **units})


def _histograms(ens: _Ensemble, data: dict[str, Any], coords: dict[str, Any]) -> None:
    """Histograms per time point and species, and the quantiles read from them."""
    b, R = ens.first, ens.realizations
    lo, width, bins = b.hist_lo, b.hist_width, b.bins
    hist = np.sum([r["histogram"] for r in ens.res], axis=0).astype(np.int64)  # [K, S, B]
    data["histogram"] = (("time", "species", "bin"), hist, {"long_name": "realizations per count bin"})
    data["bin_start"] = (("species", "bin"), lo[:, None] + width[:, None] * np.arange(bins)[None, :],
                         {"long_name": "lowest count in the bin (first/last bins also hold values outside)"})
    data["bin_width"] = ("species", width)
    q = np.asarray(ens.quantiles, dtype=np.float64)
    cdf = np.cumsum(hist, axis=2) / R
    idx = np.argmax(cdf[None, :, :, :] >= q[:, None, None, None] - 1e-12, axis=3)  # [Q, K, S]
    qv = lo[None, None, :] + width[None, None, :] * idx
    data["quantile_value"] = (("quantile", "time", "species"), qv.astype(np.int64), VAR_ATTRS["quantile_value"])
    coords["quantile"] = q
