"""One-at-a-time sensitivity: every parameter scaled by every factor (a sweep), then normalised
sensitivity coefficients with their Monte Carlo standard errors, and a figure to look at them.

The normalised (logarithmic) sensitivity of the expected count of species X at time t to parameter k is

    S(k, X, t) = d ln E[X(t)] / d ln k, at the baseline value of k,

the relative change of E[X(t)] per relative change of k (S = 1: proportional; 0: insensitive). It is
estimated by central differences over the factors nearest to 1 on either side, f- < 1 < f+:

    S = (ln m+ - ln m-) / (ln f+ - ln f-),   m+- = the mean count at k x f+- (R realizations),

or, when the factors lie on one side of 1 and 1 is among them, by the one-sided difference with the
baseline. The points are independent (their own seeds), so by the delta method

    SE(S) = sqrt(v+ / (R m+^2) + v- / (R m-^2)) / (ln f+ - ln f-),   v+- = the sample variances.

A mean of 0 on either side leaves S undefined (NaN). Coefficients are computed for analyses whose
result has ``mean`` and ``variance`` over realizations (``ssa.simulate``); for the others the
result holds the reshaped sweep only.
"""

from __future__ import annotations

import inspect
import json
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import xarray as xr

from .adapters import Adapter, adapter_for
from .core import sweep
from .points import one_at_a_time


def sensitivity(
    analysis: str | Callable[..., Any] | Adapter,
    model: Any,
    factors: Sequence[float],
    /,
    *,
    parameters: Sequence[str] | None = None,
    model_options: Mapping[str, Any] | None = None,
    plot: str | None = None,
    **kwargs: Any,
) -> xr.Dataset:
    """One-at-a-time sensitivity: every parameter (default: every rate of the model) scaled by every
    factor, the others at baseline (a :func:`~distsim.sweep.sweep`; ``kwargs`` go to it: ``seed``,
    ``client``, ``store``, the analysis's fixed arguments ...). Returns the sweep's results over
    (``parameter``, ``factor``) instead of ``point``, with ``sensitivity`` and ``sensitivity_se`` over
    (parameter, time, species): the normalised coefficients d ln E[X] / d ln k and their standard
    errors (see :mod:`distsim.sweep.sensitivity`). ``plot``: a PNG of them
    (:func:`plot_sensitivity`)."""
    adapter = adapter_for(analysis)
    if not hasattr(model, "digest"):
        model = adapter.load(model, **dict(model_options or {}))
    names = list(parameters) if parameters is not None else adapter.parameters(model)
    if plot is not None and not str(plot).lower().endswith(".png"):
        raise ValueError(f"plot must be a .png path, got {plot!r}")
    ds = coefficients(sweep(adapter, model, one_at_a_time(names, factors), **kwargs), _realizations(adapter, kwargs))
    if plot is not None:
        plot_sensitivity(ds, plot)
    return ds


def _realizations(adapter: Adapter, fixed: Mapping[str, Any]) -> int | None:
    """Realizations per point: the fixed argument, else the analysis's default (None if it has none)."""
    if "realizations" in fixed:
        return int(fixed["realizations"])
    default = inspect.signature(adapter.resolve()).parameters.get("realizations")
    return None if default is None or not isinstance(default.default, int) else default.default


def _brackets(factors: np.ndarray) -> tuple[int, int] | None:
    """Indices (lower, upper) of the factors the derivative at 1 is taken between, or None."""
    below = [i for i, f in enumerate(factors) if 0 < f < 1]
    above = [i for i, f in enumerate(factors) if f > 1]
    one = [i for i, f in enumerate(factors) if f == 1]
    lo = max(below, key=lambda i: factors[i]) if below else (one[0] if one else None)
    hi = min(above, key=lambda i: factors[i]) if above else (one[0] if one else None)
    if lo is None or hi is None or lo == hi:
        return None
    return lo, hi


def coefficients(ds: xr.Dataset, realizations: int | None = None) -> xr.Dataset:
    """A one-at-a-time sweep (points with ``parameter`` and ``factor`` coordinates) reshaped to
    (parameter, factor), with ``sensitivity`` and ``sensitivity_se`` when it has ``mean`` and
    ``variance`` and ``realizations`` is known (see the module docstring)."""
    if "parameter" not in ds.coords or "factor" not in ds.coords:
        raise ValueError("a sensitivity needs a one-at-a-time sweep (points with 'parameter' and 'factor')")
    order = list(dict.fromkeys(str(p) for p in ds["parameter"].values))
    out = ds.drop_vars("point").set_index(point=["parameter", "factor"]).unstack("point")
    out = out.reindex(parameter=order).transpose("parameter", "factor", ...)
    out.attrs = dict(ds.attrs)
    if "mean" not in out or "variance" not in out or realizations is None:
        return out
    f = out["factor"].values.astype(np.float64)
    pair = _brackets(f)
    if pair is None:
        raise ValueError(f"factors {f.tolist()} do not bracket 1 (need one below and one above 1, or 1 and one "
                         "other factor)")
    lo, hi = pair
    m = out["mean"].isel(factor=[lo, hi]).values  # (parameter, 2, time, species)
    v = out["variance"].isel(factor=[lo, hi]).values
    dlog = math.log(f[hi]) - math.log(f[lo])
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = (m[:, 0] > 0) & (m[:, 1] > 0)
        s = np.where(ok, (np.log(np.where(ok, m[:, 1], 1.0)) - np.log(np.where(ok, m[:, 0], 1.0))) / dlog, np.nan)
        se = np.where(ok, np.sqrt(v[:, 1] / (realizations * m[:, 1] ** 2) + v[:, 0] / (realizations * m[:, 0] ** 2))
                      / abs(dlog), np.nan)
    dims = ("parameter",) + out["mean"].dims[2:]
    out["sensitivity"] = (dims, s, {"long_name": "normalised sensitivity d ln E[X] / d ln k",
                                    "comment": f"central difference between factors {f[lo]:g} and {f[hi]:g}"})
    out["sensitivity_se"] = (dims, se, {"long_name": "Monte Carlo standard error of the sensitivity (delta method)"})
    out.attrs["sensitivity_factors"] = json.dumps([float(f[lo]), float(f[hi])])
    out.attrs["sensitivity_realizations"] = int(realizations)
    return out


def plot_sensitivity(ds: xr.Dataset, path: str, species: str | None = None, time: int = -1, top: int = 25) -> str:
    """PNG: left, the ``top`` parameters ranked by the size of S for ``species`` (default: the
    species with the largest) at time index ``time`` (default: the last), bars +- 1.96 SE (red: positive, blue:
    negative); right, a heat map of S for those parameters and every species (at most 40 shown) at
    that time, on the same colours."""
    from ..plotting import pyplot, save

    if "sensitivity" not in ds:
        raise ValueError("no sensitivity coefficients in this Dataset (see distsim.sweep.sensitivity)")
    plt = pyplot()
    s = ds["sensitivity"].isel(time=time)  # (parameter, species)
    se = ds["sensitivity_se"].isel(time=time)
    mag = np.nan_to_num(np.abs(s.values))
    sp = int(np.argmax(mag.max(axis=0))) if species is None else list(ds.species.values).index(species)
    rank = np.argsort(-mag[:, sp], kind="stable")[:top]
    names = [str(p) for p in ds.parameter.values[rank]]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, max(4.0, 0.28 * len(rank) + 1.5)),
                                   gridspec_kw={"width_ratios": [1, 1.3]})
    y = np.arange(len(rank))[::-1]
    vals = s.values[rank, sp]
    ax1.barh(y, vals, xerr=1.96 * se.values[rank, sp], color=np.where(vals >= 0, "tab:red", "tab:blue"),
             ecolor="k", capsize=2)
    ax1.set_yticks(y, names, fontsize=7)
    ax1.axvline(0, color="k", lw=0.6)
    t = float(ds.time.values[time])
    ax1.set_xlabel(f"d ln E[{ds.species.values[sp]}] / d ln k  (t = {t:g}; bars: 95% interval)")
    ax1.set_title(f"top {len(rank)} of {ds.sizes['parameter']} parameters by |S|, species "
                  f"{ds.species.values[sp]}", fontsize=9)
    cols = np.argsort(-mag.max(axis=0), kind="stable")[:40]
    heat = s.values[np.ix_(rank, cols)]
    lim = float(np.nanmax(np.abs(heat))) if np.isfinite(heat).any() else 1.0
    im = ax2.imshow(heat, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
    ax2.set_yticks(np.arange(len(rank)), names, fontsize=7)
    ax2.set_xticks(np.arange(len(cols)), [str(x) for x in ds.species.values[cols]], rotation=90, fontsize=7)
    ax2.set_title(f"S at t = {t:g}: the same parameters x species (most sensitive first)", fontsize=9)
    fig.colorbar(im, ax=ax2, shrink=0.8, label="normalised sensitivity")
    fig.suptitle(f"{ds.attrs.get('model_name') or ''} one-at-a-time sensitivity "
                 f"({ds.attrs.get('sensitivity_realizations', '?')} realizations per point)", fontsize=10)
    return save(fig, path)


__all__ = ["coefficients", "plot_sensitivity", "sensitivity"]
