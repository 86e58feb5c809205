"""PNGs of a posterior: histograms and a pair plot of the rates, and latent-path credible bands."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..plotting import pyplot


def plot_posterior(ds: xr.Dataset, path: str) -> str:
    """Histogram per posterior variable (top row) and, for the first two parameters, a joint scatter."""
    plt = pyplot()
    names = ds.attrs["posterior_variables"].split(",")
    params = ds.attrs["parameters"].split(",")
    k = len(names) + (1 if len(params) >= 2 else 0)
    fig, axes = plt.subplots(1, k, figsize=(3.2 * k, 3.0))
    axes = np.atleast_1d(axes)
    for ax, nm in zip(axes, names):
        x = ds[nm].values.ravel()
        x = x[np.isfinite(x)]
        ax.hist(x, bins=60, color="0.4")
        lo, hi = np.quantile(x, [0.025, 0.975])
        ax.axvline(lo, color="k", ls="--", lw=0.8)
        ax.axvline(hi, color="k", ls="--", lw=0.8)
        ax.set_title(f"{nm}\n95%: [{lo:.3g}, {hi:.3g}]", fontsize=9)
        ax.set_yticks([])
    if len(params) >= 2:
        ax = axes[-1]
        ax.scatter(ds[params[0]].values.ravel(), ds[params[1]].values.ravel(), s=1, alpha=0.2, color="0.2")
        ax.set_xlabel(params[0])
        ax.set_ylabel(params[1])
        ax.set_title("joint", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_bands(tr: xr.Dataset, path: str) -> str:
    """Pointwise credible band and three sampled paths per species, with the observations."""
    plt = pyplot()
    species = list(tr.species.values)
    fig, axes = plt.subplots(1, len(species), figsize=(3.4 * len(species), 3.0), squeeze=False)
    t = tr.time.values
    for s, (ax, nm) in enumerate(zip(axes[0], species)):
        ax.fill_between(t, tr.lower.values[:, s], tr.upper.values[:, s], color="0.85", step="post")
        ax.plot(t, tr.lower.values[:, s], "k-", lw=0.7, drawstyle="steps-post")
        ax.plot(t, tr.upper.values[:, s], "k-", lw=0.7, drawstyle="steps-post")
        for k in np.linspace(0, tr.sizes["sample"] - 1, min(3, tr.sizes["sample"])).astype(int):
            ax.plot(t, tr.path.values[k, :, s], lw=0.8, drawstyle="steps-post")
        seen = tr.observed.values[:, s].astype(bool)
        ax.plot(tr.obs_time.values[seen], tr.observed_state.values[seen, s], "ro", ms=3)
        ax.set_title(str(nm))
        ax.set_xlabel("time")
    fig.suptitle(f"{tr.attrs['prob']:.0%} pointwise credible bands ({tr.attrs['draws']} draws)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
