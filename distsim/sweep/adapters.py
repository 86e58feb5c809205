"""Adapters: what the sweep needs to know about one workload call. Adding a workload is one entry.

An :class:`Adapter` names the analysis function (imported lazily, on the worker too), how to load
its model from a file, how one sweep point changes the model or the call (:attr:`Adapter.apply`),
and how to cut its result Dataset down to a fixed shape per point (variables over dims in
``drop_dims`` are dropped, attrs named in ``scalars`` become per-point variables). ``run_chunk``
may replace the per-point loop by one batched call (SSA: many parameter points in one launch).
"""

from __future__ import annotations

import importlib
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import xarray as xr

from ..errors import did_you_mean
from ..models.recent import Recent

Point = Mapping[str, Any]


@dataclass(frozen=True)
class Adapter:
    """How :func:`distsim.sweep.sweep` drives one analysis (see the module docstring)."""

    name: str  # "ssa.simulate"
    function: str  # import path "module:attr", resolved where it runs
    load: Callable[..., Any]  # (path, **model_options) -> model
    apply: Callable[[Any, Point], tuple[Any, dict]]  # (model, point) -> (model for the point, extra kwargs)
    parameters: Callable[[Any], list[str]]  # default parameters of a one-at-a-time study
    baseline: Callable[[Any, str], float]  # current value of a parameter (for factors)
    drop_dims: tuple[str, ...] = ()
    scalars: tuple[str, ...] = ("wall_time_s",)
    reserved: tuple[str, ...] = ("seed", "client", "backend", "progress", "plot")
    max_chunk: int = 64
    # batched alternative to the per-point loop: (model, points as {name: value} with parameter/factor
    # already resolved, seeds, fixed kwargs, in-process executor of the worker's backend) -> the
    # summarized results equal to what the loop would give: one Dataset with a leading "point"
    # dimension, or one Dataset per point; None: run the per-point loop for this chunk
    run_chunk: Callable[..., xr.Dataset | list[xr.Dataset] | None] | None = None
    # points per task when the caller gives no chunk_size: (model, first point resolved, its seed,
    # number of points, the sweep's engine.Run, fixed kwargs) -> int, or None for the default rule
    plan_chunk: Callable[..., int | None] | None = None
    # (model, point resolved) -> None, raising what ``apply`` would for a bad point, faster (the
    # sweep checks every distinct value before any work); default: ``apply``
    check: Callable[[Any, Point], None] | None = None
    # (model, point resolved, fixed kwargs) -> None, raising what the analysis raises for these
    # arguments before it runs (its option checks); run by the sweep before any work and by
    # ``distsim sweep --check``, so that a bad value never fails only at run time
    validate: Callable[[Any, Point, dict], None] | None = None

    def resolve(self) -> Callable[..., xr.Dataset]:
        module, _, attr = self.function.partition(":")
        return getattr(importlib.import_module(module), attr)

    def summarize(self, ds: xr.Dataset) -> xr.Dataset:
        """The fixed-shape part of one point's result."""
        out = ds.drop_vars([v for v in ds.variables if set(ds[v].dims) & set(self.drop_dims)])
        out = out.drop_dims([d for d in self.drop_dims if d in out.dims])
        for key in self.scalars:
            if key in ds.attrs:
                out[key] = ((), ds.attrs[key])
        out.attrs = {}
        return out


def _call_args(fn: Callable[..., Any], given: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """The arguments ``names`` of a call of ``fn``: those given, else ``fn``'s defaults."""
    import inspect

    params = inspect.signature(fn).parameters
    return {n: given[n] if n in given else params[n].default for n in names}


# ---- SSA ------------------------------------------------------------------------------------------

def _ssa_load(path: str | os.PathLike, **options: Any) -> Any:
    from ..ssa import load

    return load(path, **options)


def _ssa_apply(net: Any, point: Point) -> tuple[Any, dict]:
    """Rate parameters and initial counts by name (``init.NAME`` forces the species meaning)."""
    params, init = _ssa_split(net, point)
    if params:
        net = net.with_parameters(**params)
    if init:
        net = net.with_initial(**init)
    return net, {}


def _ssa_check(net: Any, point: Point) -> None:
    """What ``_ssa_apply`` raises for a bad point, checking only the reactions that its parameters reach."""
    params, _ = _ssa_split(net, point)
    net.check_parameters(**params)


def _ssa_validate(net: Any, point: Point, fixed: dict) -> None:
    """ssa.simulate's option checks (t_end, points, realizations, quantiles, plot, time_limit), once:
    they read only the fixed arguments (a point's own values are checked by ``check``)."""
    if point or "t_end" not in fixed:
        return
    from ..ssa.simulate import _check_options, simulate

    _check_options(**_call_args(simulate, fixed, ("t_end", "points", "realizations", "quantiles", "plot",
                                                  "time_limit")))


def _ssa_split(net: Any, point: Point) -> tuple[dict[str, float], dict[str, int]]:
    """A point's rate parameters and initial counts (checked)."""
    return _ssa_splitter(net)(point)


_SPLITTERS: Recent = Recent()


def _ssa_splitter(net: Any) -> Callable[[Point], tuple[dict[str, float], dict[str, int]]]:
    """:func:`_ssa_split` for many points of ``net`` (kept for the last few networks): its names are
    looked up once, each name classified once."""
    return _SPLITTERS.get(net) or _SPLITTERS.put(net, (), _new_splitter(net))


def _new_splitter(net: Any) -> Callable[[Point], tuple[dict[str, float], dict[str, int]]]:
    known, species = net.params, set(net.species)
    kinds: dict[str, str] = {}  # name -> "init.SPECIES" or "param"

    def kind(name: str) -> str:
        if name.startswith("init.") or (name not in known and name in species):
            sp = name.removeprefix("init.")
            if sp not in species:
                raise ValueError(f"{name!r}: unknown species {sp!r}{did_you_mean(sp, net.species)}")
            return "init." + sp
        if name in known:
            return "param"
        raise ValueError(f"{name!r} is neither a parameter ({', '.join(known) or 'none'}) nor a species "
                         f"({', '.join(net.species)}) of {net.name or 'the network'}")

    def split(point: Point) -> tuple[dict[str, float], dict[str, int]]:
        params, init = {}, {}
        for name, value in point.items():
            k = kinds.get(name) or kinds.setdefault(name, kind(name))
            if k == "param":
                params[name] = float(value)
                continue
            v = float(value)
            if not (v >= 0 and v == math.floor(v)):
                raise ValueError(f"{name!r}: an initial count must be a non-negative integer, got {value!r}")
            init[k[5:]] = int(v)
        return params, init
    return split


def _ssa_batchable(net: Any, fixed: dict) -> bool:
    """Whether a chunk runs batched: not when one point's realizations alone fill a device, nor for
    networks with SBML events or rules (simulated point by point)."""
    from ..ssa.batch import BATCH_MAX_REALIZATIONS

    return fixed.get("realizations", 1000) <= BATCH_MAX_REALIZATIONS and not net.has_hooks


def _ssa_run_chunk(net: Any, points: Sequence[Point], seeds: Sequence[int], fixed: dict,
                   executor: Any) -> xr.Dataset | None:
    """Every point of the chunk in one batched run (:func:`distsim.ssa.batch.simulate_batch`); None
    (the per-point loop) where :func:`_ssa_batchable` says no."""
    from ..ssa.batch import simulate_batch

    if not _ssa_batchable(net, fixed):
        return None
    split = list(map(_ssa_splitter(net), points))
    ds = simulate_batch(net, [p for p, _ in split], seeds, initial=[i for _, i in split], client=executor,
                        progress=False, **fixed)
    ds.attrs = {}
    return ds


def _ssa_plan_chunk(net: Any, point: Point, seed: int, n_points: int, run: Any, fixed: dict) -> int | None:
    """Points per task from a pilot of the first point and the workers' devices
    (:func:`distsim.ssa.batch.chunk_points`); None (the default rule) for the per-point loop."""
    from ..ssa.batch import chunk_points

    if not _ssa_batchable(net, fixed):
        return None
    params, init = _ssa_split(net, point)
    return chunk_points(net, params, init, seed, n_points, run, fixed)


def _ssa_parameters(net: Any) -> list[str]:
    return list(net.params)


def _ssa_baseline(net: Any, name: str) -> float:
    if name in net.params:
        return net.params[name]
    raise ValueError(f"{name!r} is not a rate parameter of {net.name or 'the network'} (parameters: "
                     f"{', '.join(net.params) or 'none'})")


SSA_SIMULATE = Adapter(
    name="ssa.simulate", function="distsim.ssa:simulate", load=_ssa_load, apply=_ssa_apply,
    parameters=_ssa_parameters, baseline=_ssa_baseline,
    drop_dims=("realization", "bin"),
    scalars=("wall_time_s", "firings_total", "mean_firings_per_realization", "truncated_realizations"),
    reserved=("seed", "client", "backend", "progress", "plot", "params", "initial", "keep_trajectories",
              "keep_final"),
    run_chunk=_ssa_run_chunk, plan_chunk=_ssa_plan_chunk, check=_ssa_check, validate=_ssa_validate,
)


# ---- PBN ------------------------------------------------------------------------------------------

def _pbn_load(path: str | os.PathLike, **options: Any) -> Any:
    from ..pbn import load

    return load(path, **options)


def _pbn_apply(net: Any, point: Point) -> tuple[Any, dict]:
    """``perturbation`` (or ``p``), ``select.NODE.K`` (selection probability of predictor K of NODE;
    the node's other predictors share the rest in proportion) and ``fix.NODE`` (0 or 1: a knockout
    or mutation, :meth:`~distsim.models.pbn.PBN.with_fixed`; None or "-": not fixed)."""
    fix: dict[str, int] = {}
    for name, value in point.items():
        if name in ("perturbation", "p"):
            net = net.with_perturbation(float(value))
        elif name.startswith("select."):
            node, _, k = name.removeprefix("select.").rpartition(".")
            if not node or not k.isdigit():
                raise ValueError(f"{name!r}: expected select.NODE.K with K the predictor index (0, 1, ...)")
            if node not in net.nodes:
                raise ValueError(f"{name!r}: unknown node {node!r}{did_you_mean(node, net.nodes)}")
            net = net.with_selection(node, int(k), float(value))
        elif name.startswith("fix."):
            node = name.removeprefix("fix.")
            if node not in net.nodes:
                raise ValueError(f"{name!r}: unknown node {node!r}{did_you_mean(node, net.nodes)}")
            if value is None or value == "-" or (isinstance(value, float) and math.isnan(value)):
                continue
            if isinstance(value, bool) or value not in (0, 1):
                raise ValueError(f"{name!r}: a node is fixed to 0 or 1 (None or '-': not fixed), got {value!r}")
            fix[node] = int(value)
        else:
            raise ValueError(f"{name!r}: a PBN sweep parameter is 'perturbation', 'select.NODE.K' or 'fix.NODE'")
    return (net.with_fixed(fix) if fix else net), {}


def _pbn_baseline(net: Any, name: str) -> float:
    if name in ("perturbation", "p"):
        return net.perturbation
    if name.startswith("select."):
        node, _, k = name.removeprefix("select.").rpartition(".")
        return net.predictors[net.index(node)][int(k)].probability
    raise ValueError(f"{name!r}: a PBN sweep parameter to scale is 'perturbation' or 'select.NODE.K'")


def _pbn_parameters(net: Any) -> list[str]:
    return ["perturbation"]


def _pbn_batched(kind: str) -> Callable[..., list[xr.Dataset]]:
    """``run_chunk`` of a PBN analysis: the chunk's points in one batch (:mod:`distsim.pbn.batch`: the
    chains of every point advance together, one launch per round on a GPU, the same numbers as one
    call per point); points that cannot share a batch (selection probabilities) run one by one."""
    def run_chunk(net: Any, points: list[dict], seeds: list[int], fixed: dict, local: Any) -> list[xr.Dataset]:
        from ..backends import resolve
        from ..pbn import batch

        adapter = PBN_STEADY_STATE if kind == "steady_states" else PBN_SIMULATE
        nets = [_pbn_apply(net, p)[0] for p in points]
        parts = getattr(batch, kind)(net, nets, seeds, resolve(local.backend), **fixed)
        if parts is None:
            fn = adapter.resolve()
            parts = [fn(m, **fixed, seed=int(s), client=local, progress=False) for m, s in zip(nets, seeds)]
        return [adapter.summarize(ds) for ds in parts]
    return run_chunk


def _pbn_validate(kind: str) -> Callable[[Any, Point, dict], None]:
    """``validate`` of a PBN analysis: its option checks with the fixed arguments (targets, mode,
    counts, initial states, precision ...), once; a point's own values are checked by ``apply``."""
    def validate(net: Any, point: Point, fixed: dict) -> None:
        import inspect
        import warnings

        if point:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a run warns (p = 0 ...); a check only raises
            if kind == "steady_states":
                from ..pbn.steady import prepare

                if "target" in fixed:
                    accepted = inspect.signature(prepare).parameters
                    prepare(net, **{k: v for k, v in fixed.items() if k in accepted}, build=False)
            elif "steps" in fixed and "trajectories" in fixed:
                from ..pbn import inputs

                args = _call_args(PBN_SIMULATE.resolve(), fixed, ("perturbation", "fixed", "mode", "initial",
                                                                   "targets"))
                pbn = inputs.as_network(net, perturbation=args["perturbation"], fixed=args["fixed"])
                inputs.check_mode(inputs.resolve_mode(args["mode"], pbn))
                inputs.check_count("steps", fixed["steps"], 1, 2**62)
                inputs.check_count("trajectories", fixed["trajectories"], 1, 2**32)
                inputs.parse_targets(args["targets"], pbn)
                inputs.initial_state(args["initial"], pbn)
    return validate


_PBN_RESERVED = ("seed", "client", "backend", "progress", "plot", "perturbation")

PBN_STEADY_STATE = Adapter(
    name="pbn.steady_state", function="distsim.pbn:steady_state", load=_pbn_load, apply=_pbn_apply,
    parameters=_pbn_parameters, baseline=_pbn_baseline, drop_dims=("round",),
    scalars=("wall_time_s", "chains", "chain_length", "steps_simulated", "rounds", "converged"),
    reserved=_PBN_RESERVED, max_chunk=256, run_chunk=_pbn_batched("steady_states"),
    validate=_pbn_validate("steady_states"),
)

PBN_SIMULATE = Adapter(
    name="pbn.simulate", function="distsim.pbn:simulate", load=_pbn_load, apply=_pbn_apply,
    parameters=_pbn_parameters, baseline=_pbn_baseline, drop_dims=("trajectory",),
    scalars=("wall_time_s", "steps_simulated"), reserved=_PBN_RESERVED + ("keep_states",), max_chunk=256,
    run_chunk=_pbn_batched("simulations"), validate=_pbn_validate("simulations"),
)

# ---- GRN inference --------------------------------------------------------------------------------

# GA settings a point may set (passed to grn.infer), with their types
_GRN_SETTINGS: dict[str, type] = {
    "population": int, "islands": int, "migration_interval": int, "generations": int, "migration_rate": float,
    "link_mutation": float, "rule_mutation": float, "target_fitness": float, "time_limit": float,
    "selection": str, "model": str, "mode": str,
}


def _grn_load(path: str | os.PathLike, **options: Any) -> Any:
    from ..grn import load

    return load(path, **options)


def _grn_apply(problem: Any, point: Point) -> tuple[Any, dict]:
    """GA settings by name (population, migration_rate, link_mutation, selection, ...)."""
    extra = {}
    for name, value in point.items():
        kind = _GRN_SETTINGS.get(name)
        if kind is None:
            raise ValueError(f"{name!r}: a GRN sweep parameter is one of {', '.join(sorted(_GRN_SETTINGS))}")
        if kind is int and float(value) != math.floor(float(value)):
            raise ValueError(f"{name!r} must be an integer, got {value!r}")
        extra[name] = kind(float(value)) if kind is int else kind(value)
    return problem, extra


def _grn_validate(problem: Any, point: Point, fixed: dict) -> None:
    """grn.infer's checks of the GA settings (model, selection, mode, population, islands, migration,
    mutation probabilities, generations) for the point's settings and the fixed ones."""
    import inspect

    from ..grn.infer import _params, infer

    _, extra = _grn_apply(problem, point)
    names = [n for n in inspect.signature(_params).parameters if n not in ("problem", "seed")]
    _params(problem, seed=0, **_call_args(infer, {**fixed, **extra}, names))
    time_limit = {**fixed, **extra}.get("time_limit")
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"time_limit must be positive, got {time_limit}")


def _grn_baseline(problem: Any, name: str) -> float:
    import inspect

    from ..grn import infer

    default = inspect.signature(infer).parameters.get(name)
    if name not in _GRN_SETTINGS or default is None or not isinstance(default.default, (int, float)):
        raise ValueError(f"{name!r} has no numeric default to scale; give its values explicitly")
    return float(default.default)


GRN_INFER = Adapter(
    name="grn.infer", function="distsim.grn:infer", load=_grn_load, apply=_grn_apply,
    parameters=lambda problem: ["link_mutation", "rule_mutation"], baseline=_grn_baseline,
    drop_dims=("island", "generation"),
    scalars=("wall_time_s", "fitness", "node_mismatches", "link_mismatches", "link_changes", "generations",
             "reached_target", "best_generation", "evaluations"),
    max_chunk=8, validate=_grn_validate,
)


# ---- MCMC rate inference --------------------------------------------------------------------------

def _mcmc_apply(net: Any, point: Point) -> tuple[Any, dict]:
    """Gamma priors: ``prior.NAME.shape`` and ``prior.NAME.rate``; every point must give both for every
    rate parameter (the point is the whole prior: prior sensitivity studies sweep these)."""
    prior: dict[str, list[float]] = {}
    for name, value in point.items():
        parts = name.split(".")
        if len(parts) != 3 or parts[0] != "prior" or parts[2] not in ("shape", "rate"):
            raise ValueError(f"{name!r}: an MCMC sweep parameter is prior.NAME.shape or prior.NAME.rate")
        if parts[1] not in net.params:
            raise ValueError(f"{name!r}: {parts[1]!r} is not a rate parameter ({', '.join(net.params)})")
        prior.setdefault(parts[1], [math.nan, math.nan])[parts[2] == "rate"] = float(value)
    # a parameter without a (complete) prior is refused by infer_rates, naming it
    return net, {"prior": {k: tuple(v) for k, v in prior.items()}}


def _mcmc_baseline(net: Any, name: str) -> float:
    raise ValueError(f"{name!r}: MCMC sweeps take explicit prior values (no baseline to scale)")


@dataclass(frozen=True)
class _MCMCAdapter(Adapter):
    def summarize(self, ds: xr.Dataset) -> xr.Dataset:
        """Per point: posterior mean, sd, 95% interval, R-hat and bulk ESS of every variable."""
        from ..mcmc import summary

        table = summary(ds, prob=0.95)
        cols = {"posterior_mean": "mean", "posterior_sd": "sd", "ci95_low": "2.5%", "ci95_high": "97.5%",
                "rhat": "rhat", "ess_bulk": "ess_bulk"}
        out = xr.Dataset({k: ("variable", table[c].to_numpy()) for k, c in cols.items()},
                         coords={"variable": table.index.to_numpy()})
        out["wall_time_s"] = ((), ds.attrs.get("wall_time_s", math.nan))
        return out


MCMC_INFER_RATES = _MCMCAdapter(
    name="mcmc.infer_rates", function="distsim.mcmc:infer_rates", load=_ssa_load, apply=_mcmc_apply,
    parameters=lambda net: [], baseline=_mcmc_baseline,
    reserved=("seed", "client", "backend", "progress", "prior"), max_chunk=4,
)

ADAPTERS: dict[str, Adapter] = {a.name: a for a in (SSA_SIMULATE, PBN_STEADY_STATE, PBN_SIMULATE, GRN_INFER,
                                                    MCMC_INFER_RATES)}


def register(adapter: Adapter) -> None:
    """Make an adapter known by its name (and by its function object)."""
    ADAPTERS[adapter.name] = adapter


def adapter_for(analysis: str | Callable[..., Any] | Adapter) -> Adapter:
    """An :class:`Adapter` from a name ('ssa.simulate', 'distsim.ssa.simulate'), the function itself,
    or an adapter."""
    if isinstance(analysis, Adapter):
        return analysis
    if isinstance(analysis, str):
        key = analysis.removeprefix("distsim.")
        if key in ADAPTERS:
            return ADAPTERS[key]
        raise ValueError(f"unknown analysis {analysis!r}; sweepable analyses: {', '.join(sorted(ADAPTERS))}")
    if callable(analysis):
        for a in ADAPTERS.values():
            try:
                if a.resolve() is analysis:
                    return a
            except ImportError:
                continue
        name = getattr(analysis, "__qualname__", repr(analysis))
        raise ValueError(f"{name} has no sweep adapter; sweepable analyses: {', '.join(sorted(ADAPTERS))}")
    raise TypeError(f"analysis must be a name, a function or an Adapter, got {type(analysis).__name__}")


def check_fixed(adapter: Adapter, fixed: Mapping[str, Any], swept: Sequence[str] = ()) -> list[str]:
    """Problems with the fixed keyword arguments: unknown to the analysis, set by the sweep, swept, or
    a required argument missing."""
    import inspect

    params = list(inspect.signature(adapter.resolve()).parameters.values())[1:]  # all but the model
    accepted = {p.name for p in params}
    problems = []
    for key in fixed:
        if key in adapter.reserved:
            problems.append(f"{key!r} is set by the sweep and cannot be fixed")
        elif key not in accepted:
            problems.append(f"{key!r} is not an argument of {adapter.name} (accepted: "
                            f"{', '.join(sorted(accepted - set(adapter.reserved)))})")
        elif key in swept:
            problems.append(f"{key!r} is both fixed and swept")
    problems += [f"{p.name!r} is a required argument of {adapter.name} (give it under fixed)"
                 for p in params if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_KEYWORD,
                 p.VAR_POSITIONAL) and p.name not in fixed and p.name not in swept and p.name not in adapter.reserved]
    return problems
