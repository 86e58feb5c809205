"""PNG of an SSA ensemble: mean and a 5-95% band per species against time."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..plotting import pyplot, save


def plot_ensemble(ds: xr.Dataset, path: str, lower: float = 0.05, upper: float = 0.95) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    t = ds.time.values
    band = "quantile_value" in ds and lower in ds["quantile"].values and upper in ds["quantile"].values
    for s, name in enumerate(ds.species.values):
        (line,) = ax.plot(t, ds["mean"].values[:, s], label=str(name))
        if band:
            lo = ds.quantile_value.sel(quantile=lower).values[:, s]
            hi = ds.quantile_value.sel(quantile=upper).values[:, s]
            ax.fill_between(t, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
        else:  # no histograms: mean +- 1.645 sd (normal approximation, labelled)
            sd = np.sqrt(np.maximum(ds["variance"].values[:, s], 0))
            ax.fill_between(t, ds["mean"].values[:, s] - 1.645 * sd, ds["mean"].values[:, s] + 1.645 * sd,
                            color=line.get_color(), alpha=0.15, lw=0)
    what = f"{int(lower * 100)}-{int(upper * 100)}% band" if band else "mean +- 1.645 sd"
    ax.set_title(f"{ds.attrs.get('model_name', '')}: {ds.attrs.get('realizations')} realizations, mean and {what}",
                 fontsize=9)
    ax.set_xlabel("time")
    ax.set_ylabel("molecules")
    ax.legend(fontsize=8)
    return save(fig, path)
