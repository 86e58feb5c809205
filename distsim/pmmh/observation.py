"""Observation models: observables (formulas of species and parameters) with a noise model, and
experiments (observation times, measurements, initial counts and fixed parameters of a condition).

Noise models (y the measurement, h the observable's value, s its noise parameter):

* ``normal``: y ~ N(h, s^2);
* ``lognormal``: log y ~ N(log h, s^2) (y > 0);
* ``poisson``: y ~ Poisson(h) (y a count; no noise parameter);
* ``negbin``: y ~ negative binomial with mean h and dispersion s (variance h + h^2 / s; y a count).

Formulas are parsed by :func:`distsim.models.arith.parse_arith` (never evaluated as code).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numba
import numpy as np

from ..backends.dsmath import ds_log
from ..errors import DataError, ModelError, did_you_mean
from ..models import arith
from ..models.reactions import ReactionNetwork

NOISE_MODELS = ("normal", "lognormal", "poisson", "negbin")
LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class Observable:
    """An observable's formula (text) and noise model; ``noise_parameter``: formula of the noise
    parameter (sigma of normal/lognormal, dispersion of negbin; a number or a parameter name)."""

    name: str
    formula: str
    noise: str = "normal"
    noise_parameter: str | float | None = None


@dataclass(frozen=True)
class Experiment:
    """Measurements of one condition: ``data`` {observable: values at ``times``} (NaN: not measured);
    a value may be a sequence of replicates, independent measurements of that observable at that time
    (e.g. ``{"y": [4, [6, 7], 5]}``: two at the second time; their log densities add).
    ``initial`` counts and fixed ``parameters`` that differ from the model's in this condition. An
    initial value that is a parameter name (e.g. ``{"A": "a0"}``, ``a0`` inferred or a model parameter)
    makes that species start at round(a0 x species_scale) molecules (an amount, as observables read it)."""

    times: Sequence[float]
    data: Mapping[str, Sequence[float]]
    initial: Mapping[str, int | str] = field(default_factory=dict)
    parameters: Mapping[str, float] = field(default_factory=dict)
    name: str = ""
    source: str = ""


@dataclass(frozen=True)
class CompiledObservable:
    name: str
    formula: arith.Node
    noise: int  # index into NOISE_MODELS
    noise_parameter: arith.Node | None


@dataclass(frozen=True)
class CompiledExperiment:
    name: str
    times: np.ndarray  # float64 [T], increasing, >= 0
    data: np.ndarray  # float64 [O, K]: one row per (time, replicate), in time order (NaN: not measured)
    x0: np.ndarray  # int64 [S]
    fixed: dict[str, float]  # parameters fixed in this condition
    source: str
    x0_params: tuple[tuple[int, str, float], ...] = ()  # (species, parameter, molecules per unit) set by parameters
    starts: np.ndarray | None = None  # int64 [T + 1]: time k's rows are data[starts[k]:starts[k + 1]] (None: one each)

    def at(self, k: int) -> np.ndarray:
        """The measurement rows [R, K] of time k (R replicates; one row without)."""
        if self.starts is None:
            return self.data[k:k + 1]
        return self.data[self.starts[k]:self.starts[k + 1]]

    @property
    def row_times(self) -> np.ndarray:
        """The time index of each row of ``data`` [O]."""
        if self.starts is None:
            return np.arange(self.times.size)
        return np.repeat(np.arange(self.times.size), np.diff(self.starts))

    @property
    def row_replicates(self) -> np.ndarray:
        """Each row's replicate number among its time's rows (0, 1, ...) [O]."""
        if self.starts is None:
            return np.zeros(self.times.size, np.int64)
        return np.arange(self.data.shape[0]) - np.repeat(self.starts[:-1], np.diff(self.starts))

    def x0_of(self, values: Mapping[str, float]) -> np.ndarray | None:
        """The initial counts at these parameter values (None: a parameter gives no count >= 0 below 2^53)."""
        x0 = self.x0.copy()
        for i, name, scale in self.x0_params:
            v = math.floor(float(values[name]) * scale + 0.5)
            if not 0 <= v < 2.0**53:
                return None
            x0[i] = int(v)
        return x0


def compile_observables(net: ReactionNetwork, observables: Sequence[Observable], extra: Sequence[str],
                        species_scale: float = 1.0) -> list[CompiledObservable]:
    """Parse every observable's formulas over the species and the parameters (the model's and ``extra``);
    a species reads as its count / ``species_scale`` (1: the count; SBML's system size: the amount)."""
    params = set(net.params) | set(extra)
    known = list(net.species) + sorted(params)

    def resolve(name: str) -> arith.Node:
        if name in net.species:
            x = arith.Species(net.index(name))
            return x if species_scale == 1.0 else arith.BinOp("/", x, arith.Num(float(species_scale)))
        if name in params:
            return arith.Param(name)
        raise ModelError(f"unknown name {name!r} in an observable{did_you_mean(name, known)}")

    out, seen = [], set()
    for ob in observables:
        if not str(ob.name).isidentifier() or ob.name in seen:
            raise ModelError(f"observable name {ob.name!r} must be a unique identifier")
        seen.add(ob.name)
        if ob.noise not in NOISE_MODELS:
            raise ModelError(f"observable {ob.name!r}: noise model {ob.noise!r} is not one of "
                             f"{', '.join(NOISE_MODELS)}{did_you_mean(str(ob.noise), NOISE_MODELS)}")
        node = arith.parse_arith(str(ob.formula), resolve, file=f"observable {ob.name}")
        if any(isinstance(n, arith.Time) for n in arith.walk(node)):
            raise ModelError(f"observable {ob.name!r}: formulas of time are not supported")
        noise_node = None
        if ob.noise == "poisson":
            if ob.noise_parameter is not None:
                raise ModelError(f"observable {ob.name!r}: Poisson noise has no noise parameter")
        else:
            if ob.noise_parameter is None:
                raise ModelError(f"observable {ob.name!r}: {ob.noise} noise needs a noise parameter "
                                 "(a number or a parameter name)")
            noise_node = arith.parse_arith(str(ob.noise_parameter), resolve, file=f"noise of observable {ob.name}")
            if arith.species_of(noise_node):
                raise ModelError(f"observable {ob.name!r}: the noise parameter may read parameters, not species")
        out.append(CompiledObservable(ob.name, node, NOISE_MODELS.index(ob.noise), noise_node))
    if not out:
        raise ModelError("no observable given")
    return out


def measurement_problem(noise: str, y: float) -> str | None:
    """Why the measurement ``y`` (not NaN) has no density under the noise model ``noise``, else None (the
    readers of data files call it too, to name the line)."""
    if not math.isfinite(y):
        return "infinite measurement"
    if noise in ("poisson", "negbin") and (y < 0 or y != math.floor(y)):
        return f"{noise} noise needs counts (integers >= 0), got {y:g}"
    if noise == "lognormal" and y <= 0:
        return "lognormal noise needs measurements > 0"
    return None


def compile_experiment(net: ReactionNetwork, obs: Sequence[CompiledObservable], ex: Experiment, index: int,
                       extra: Sequence[str] = (), species_scale: float = 1.0) -> CompiledExperiment:
    """Check an experiment's times and data against the observables and noise models (``extra``: the
    inferred parameters that are not the model's, which may set initial amounts)."""
    src = ex.source or f"experiment {ex.name or index}"
    t = np.asarray(ex.times, dtype=np.float64)
    if t.ndim != 1 or not t.size or not np.all(np.isfinite(t)) or t[0] < 0 or np.any(np.diff(t) <= 0):
        raise DataError("observation times must be finite, >= 0 and strictly increasing", file=src)
    names = [o.name for o in obs]
    unknown = [k for k in ex.data if k not in names]
    if unknown:
        raise DataError(f"data for unknown observable {unknown[0]!r}{did_you_mean(unknown[0], names)}", file=src)
    cols: dict[int, list[np.ndarray]] = {}  # observable -> per time, its replicates
    for k, o in enumerate(obs):
        if o.name in ex.data:
            cols[k] = _replicates(ex.data[o.name], o.name, t.size, src)
    reps = np.array([max([1] + [c[i].size for c in cols.values()]) for i in range(t.size)], np.int64)
    starts = np.concatenate([[0], np.cumsum(reps)])
    data = np.full((int(starts[-1]), len(obs)), np.nan)
    for k, o in enumerate(obs):
        if k not in cols:
            continue
        for i, v in enumerate(cols[k]):
            data[starts[i]:starts[i] + v.size, k] = v
        col = data[:, k]
        for y in col[~np.isnan(col)]:
            why = measurement_problem(NOISE_MODELS[o.noise], float(y))
            if why:
                raise DataError(f"observable {o.name!r}: {why}", file=src)
    counts, by_param = {}, []
    params = list(net.params) + [n for n in extra if n not in net.params]
    for k, v in ex.initial.items():
        if k not in net.species:
            raise DataError(f"initial value for unknown species {k!r}{did_you_mean(k, net.species)}", file=src)
        if isinstance(v, str):
            if v not in params:
                raise DataError(f"initial value of {k!r} is {v!r}, neither a number nor a parameter"
                                f"{did_you_mean(v, params)}", file=src)
            by_param.append((net.index(k), v, float(species_scale)))
        else:
            counts[k] = v
    x0 = np.asarray(net.with_initial(**counts).initial if counts else net.initial, dtype=np.int64)
    for k in ex.parameters:
        if k not in net.params:
            raise DataError(f"condition sets unknown parameter {k!r}{did_you_mean(k, net.params)}", file=src)
    return CompiledExperiment(ex.name or f"experiment{index}", t, data, x0,
                              {k: float(v) for k, v in ex.parameters.items()}, src, tuple(by_param),
                              None if starts[-1] == t.size else starts)


def _replicates(values: Any, name: str, n: int, src: str) -> list[np.ndarray]:
    """Per time, the float64 replicates [R] of one observable's values (a number or a sequence each;
    NaN: not measured)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") or len(values) != n:
        size = len(values) if hasattr(values, "__len__") and not isinstance(values, (str, bytes)) else 1
        raise DataError(f"observable {name!r} has {size} values for {n} times", file=src)
    out = []
    for i, v in enumerate(values):
        try:
            a = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            raise DataError(f"observable {name!r}: value {i + 1} ({v!r}) is neither a number nor a sequence of "
                            "numbers (replicates)", file=src) from None
        if a.ndim > 1:
            raise DataError(f"observable {name!r}: value {i + 1} has {a.ndim} dimensions (a number or a sequence "
                            "of replicates)", file=src)
        a = a.reshape(-1)
        out.append(a[~np.isnan(a)] if a.size > 1 else a)
    return out


def noise_values(obs: Sequence[CompiledObservable], values: Mapping[str, float]) -> np.ndarray:
    """Each observable's noise parameter at the parameter ``values`` (NaN for Poisson)."""
    out = np.full(len(obs), np.nan)
    for k, o in enumerate(obs):
        if o.noise_parameter is not None:
            out[k] = float(arith.evaluate(o.noise_parameter, np.zeros(1), values))
    return out


@numba.njit(inline="always", cache=True)
def _log0(x):
    """ds_log with np.log's values at 0 (-inf), +inf (inf) and NaN (NaN; also below 0)."""
    if x > 0.0:
        return ds_log(x) if x < math.inf else x
    return -math.inf if x == 0.0 else math.nan


@numba.njit(inline="always", cache=True)
def log_density_at(noise, y, ly, h, s, c, ls):  # pragma: no cover - compiled
    """log p(y | h) of one measurement y (``ly`` = log y) for the observable's value h, noise parameter s
    and the constants c, ls of :func:`noise_constants`: the one home of the formulas (module docstring),
    twin of kernels/pmmh_filter.cu's pmmh_log_density. Per particle only IEEE operations and ds_log run
    (the same bits on CPU and GPU); the log-gamma terms, of y and s alone, are in c."""
    if noise != 2 and not s > 0.0:
        return -math.inf
    if noise == 0:  # normal: c = -log(2 pi) / 2 - log s
        z = (y - h) / s
        return c - 0.5 * (z * z)
    if noise == 1:  # lognormal: c = -log(2 pi) / 2 - log s - log y
        if not h > 0.0:
            return -math.inf
        z = (ly - _log0(h)) / s
        return c - 0.5 * (z * z)
    if not h >= 0.0:
        return -math.inf
    t = 0.0 if y == 0.0 else y * _log0(h)  # xlogy(y, h)
    if noise == 2:  # Poisson: c = lgamma(y + 1)
        return (t - h) - c
    q = s + h  # negative binomial: c = lgamma(y + s) - lgamma(s) - lgamma(y + 1), ls = log s
    lq = _log0(q)
    u = 0.0 if y == 0.0 else y * lq
    return ((c + s * (ls - lq)) + t) - u


@numba.njit(cache=True)
def _constants(noise, y, s, c, ls):  # pragma: no cover - compiled
    ly = _log0(y) if noise == 1 else 0.0
    for g in range(s.size):
        v = s[g]
        c[g], ls[g] = 0.0, 0.0
        if noise == 2:
            c[g] = math.lgamma(y + 1.0)
        elif v > 0.0:
            lv = _log0(v)
            if noise == 0:
                c[g] = -0.5 * LOG_2PI - lv
            elif noise == 1:
                c[g] = (-0.5 * LOG_2PI - lv) - ly
            else:
                c[g] = (math.lgamma(y + v) - math.lgamma(v)) - math.lgamma(y + 1.0)
                ls[g] = lv
    return ly


def noise_constants(noise: int, y: float, s: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(ly, c, ls) of :func:`log_density_at` for a measurement y and each chain's noise parameter ``s``,
    computed on the host for CPU and GPU alike, so the device never evaluates lgamma (libm's, by Numba).
    Every log is ds_log (:func:`_log0`), as per particle, so e.g. log y - log h is 0 where h = y."""
    s = np.ascontiguousarray(s, dtype=np.float64)
    c, ls = np.empty_like(s), np.empty_like(s)
    ly = _constants(int(noise), float(y), s, c, ls)
    return ly, c, ls


@numba.njit(cache=True)
def add_log_density_cpu(noise, y, ly, h, s, c, ls, lw):  # pragma: no cover - compiled
    """lw[g, p] += log_density_at(.., h[g, p], s[g], c[g], ls[g]): the twin of kernels/pmmh_filter.cu's pmmh_noise."""
    G, N = h.shape
    for g in range(G):
        for p in range(N):
            lw[g, p] = lw[g, p] + log_density_at(noise, y, ly, h[g, p], s[g], c[g], ls[g])


def add_log_density(xp: Any, noise: int, y: float, h: Any, s: np.ndarray, lw: Any) -> None:
    """lw [G, N] += log p(y | h) with chain g's noise parameter s[g], where h and lw live (``xp``: NumPy,
    or CuPy: kernels/pmmh_filter.cu on the current GPU, no copy to the host)."""
    ly, c, ls = noise_constants(noise, y, s)
    s = np.ascontiguousarray(s, dtype=np.float64)
    h = xp.ascontiguousarray(h, dtype=xp.float64)
    if xp is np:
        add_log_density_cpu(int(noise), float(y), ly, h, s, c, ls, lw)
        return
    G, N = h.shape
    n = G * N
    sc = xp.asarray(np.concatenate([s, c, ls]))
    filter_kernel("pmmh_noise")(((n + 255) // 256,), (256,), (np.int64(n), np.int32(N), np.int32(G), np.int32(noise),
                                                              np.float64(y), np.float64(ly), h, sc, lw))


def filter_kernel(name: str) -> Any:
    """A function of kernels/pmmh_filter.cu (the filter's device kernels) compiled for the current GPU."""
    from ..backends import cuda
    from ..ssa import gpu

    return gpu._module(("pmmh_filter",), lambda: cuda.kernel_source("pmmh_filter.cu")).get_function(name)


def log_density(noise: int, y: float, h: np.ndarray, s: float) -> np.ndarray:
    """log p(y | h) of one measurement for every particle's observable value h (one chain)."""
    h = np.asarray(h, dtype=np.float64).reshape(1, -1)
    lw = np.zeros(h.shape)
    add_log_density(np, noise, y, h, np.array([s], np.float64), lw)
    return lw[0]


def log_weights(obs: Sequence[CompiledObservable], row: np.ndarray, X: np.ndarray, values: Mapping[str, float],
                noise: np.ndarray) -> np.ndarray:
    """Sum over the measurements of one time point (``row``: [K], or [R, K] with replicates; NaN = not
    measured) of log p(y | particle state) for every particle (``X``: [N, S]): observable by observable,
    its replicates in row order (independent given the state: their log densities add)."""
    lw = np.zeros(X.shape[0])
    for k, ys in _measured(obs, row):
        h = np.asarray(arith.evaluate(obs[k].formula, X, values), dtype=np.float64)
        for y in ys:
            lw += log_density(obs[k].noise, y, h, float(noise[k]))
    return lw


def _measured(obs: Sequence[CompiledObservable], row: np.ndarray) -> list[tuple[int, list[float]]]:
    """(observable, its measurements) of one time point's rows ([K] or [R, K]), in the order they are added."""
    rows = np.asarray(row, dtype=np.float64).reshape(-1, len(obs))
    out = []
    for k in range(len(obs)):
        ys = [float(y) for y in rows[:, k] if not math.isnan(y)]
        if ys:
            out.append((k, ys))
    return out


_DEVICE_NODES = (arith.Num, arith.Species, arith.Param, arith.Neg)


def device_weights(obs: Sequence[CompiledObservable]) -> bool:
    """Whether :func:`log_weights_batched` covers these observables: formulas of + - * / (any noise model)."""
    return all(all(isinstance(n, _DEVICE_NODES) or (isinstance(n, arith.BinOp) and n.op in "+-*/")
                   for n in arith.walk(o.formula)) for o in obs)


def log_weights_batched(xp: Any, obs: Sequence[CompiledObservable], row: np.ndarray, X: Any,
                        values: Sequence[Mapping[str, float]], noise: np.ndarray) -> Any:
    """:func:`log_weights` of G chains at once (``row``: [K] or [R, K]; ``X``: [G, N, S] of the array module
    ``xp``, NumPy or CuPy; chain g's parameter ``values[g]`` and noise parameters ``noise[g]``) for observables that
    :func:`device_weights` accepts: the formula as array operations (IEEE, no contraction), the noise
    model by :func:`add_log_density`, so the same bits as chain by chain on the host. [G, N] log weights."""
    G, N = X.shape[0], X.shape[1]
    lw = xp.zeros((G, N))
    for k, ys in _measured(obs, row):
        h = _evaluate(xp, obs[k].formula, X, values)
        for y in ys:  # replicates: the device kernel once each
            add_log_density(xp, obs[k].noise, y, h, noise[:, k], lw)
    return lw


def _evaluate(xp: Any, node: arith.Node, X: Any, values: Sequence[Mapping[str, float]]) -> Any:
    """A formula of + - * / over species counts X [G, N, S] (float64) and per-chain parameters."""
    stack: list[Any] = []
    for n in _postorder(node):
        if isinstance(n, arith.Num):
            stack.append(xp.full(X.shape[:2], float(n.value)))
        elif isinstance(n, arith.Species):
            stack.append(X[:, :, n.index].astype(xp.float64))
        elif isinstance(n, arith.Param):
            col = xp.asarray(np.array([float(v[n.name]) for v in values]))[:, None]
            stack.append(xp.broadcast_to(col, X.shape[:2]))
        elif isinstance(n, arith.Neg):
            stack.append(-stack.pop())
        else:
            b, a = stack.pop(), stack.pop()
            stack.append({"+": xp.add, "-": xp.subtract, "*": xp.multiply, "/": xp.divide}[n.op](a, b))
    return stack[0]


def _postorder(node: arith.Node) -> list[arith.Node]:
    """The nodes of a formula of Num, Species, Param, Neg and BinOp, children before parents (no recursion)."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        if isinstance(n, arith.BinOp):
            stack += [n.left, n.right]
        elif isinstance(n, arith.Neg):
            stack.append(n.arg)
    return out[::-1]


def as_observables(items: Sequence[Any]) -> list[Observable]:
    """Observables from :class:`Observable` or dicts ``{"name":, "formula":, "noise":, "noise_parameter":}``."""
    out = []
    for it in items:
        if isinstance(it, Observable):
            out.append(it)
        elif isinstance(it, Mapping):
            out.append(Observable(**dict(it)))
        else:
            raise TypeError(f"an observable must be an Observable or a dict, got {it!r}")
    return out
