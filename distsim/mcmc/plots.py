"""PNGs of a posterior: histograms and a pair plot of the rates, and latent-path credible bands."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..plotting import pyplot, save


def _compact_ticks(ax) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(4))
    ax.ticklabel_format(axis="x", style="sci", scilimits=(-3, 4))


def plot_posterior(ds: xr.Dataset, path: str) -> str:
    """Histogram per posterior variable and, for the first two parameters, a joint scatter."""
    plt = pyplot()
    names = ds.attrs["posterior_variables"].split(",")
    params = ds.attrs["parameters"].split(",")
    k = len(names) + (1 if len(params) >= 2 else 0)
    cols = min(k, 3)
    rows = -(-k // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.0 * rows), squeeze=False)
    axes = axes.ravel()
    for ax, nm in zip(axes, names):
        x = ds[nm].values.ravel()
        x = x[np.isfinite(x)]
        ax.hist(x, bins=60, color="0.4")
        lo, hi = np.quantile(x, [0.025, 0.975])
        ax.axvline(lo, color="k", ls="--", lw=0.8)
        ax.axvline(hi, color="k", ls="--", lw=0.8)
        ax.set_title(f"{nm}\n95%: [{lo:.3g}, {hi:.3g}]", fontsize=9)
        ax.set_yticks([])
        _compact_ticks(ax)
    if len(params) >= 2:
        ax = axes[len(names)]
        ax.scatter(ds[params[0]].values.ravel(), ds[params[1]].values.ravel(), s=1, alpha=0.2, color="0.2")
        ax.set_xlabel(params[0])
        ax.set_ylabel(params[1])
        ax.set_title("joint", fontsize=9)
        _compact_ticks(ax)
    for ax in axes[k:]:
        ax.axis("off")
    return save(fig, path)


def plot_trace(ds: xr.Dataset, path: str) -> str:
    """Draws against iteration, one line per chain, one row per posterior variable (with R-hat)."""
    plt = pyplot()
    names = ds.attrs["posterior_variables"].split(",")
    fig, axes = plt.subplots(len(names), 1, figsize=(8, 1.8 * len(names)), sharex=True, squeeze=False)
    it = ds.iteration.values
    rhat = dict(zip(ds.variable.values, ds.rhat.values)) if "rhat" in ds else {}
    for ax, nm in zip(axes[:, 0], names):
        for c in range(ds.sizes["chain"]):
            ax.plot(it, ds[nm].values[c], lw=0.5, label=f"chain {c}")
        ax.set_ylabel(nm)
        ax.set_title(f"R-hat {rhat.get(nm, float('nan')):.3f}", fontsize=8, loc="right")
    axes[0, 0].legend(fontsize=7, ncol=min(4, ds.sizes["chain"]), loc="upper left")
    axes[-1, 0].set_xlabel("iteration")
    return save(fig, path)


def plot_bands(tr: xr.Dataset, path: str) -> str:
    """Pointwise credible band and three sampled paths per species, with the observations."""
    plt = pyplot()
    species = list(tr.species.values)
    fig, axes = plt.subplots(1, len(species), figsize=(3.4 * len(species), 3.2), squeeze=False)
    t = tr.time.values
    prob = f"{tr.attrs['prob']:.0%}"
    for s, (ax, nm) in enumerate(zip(axes[0], species)):
        ax.fill_between(t, tr.lower.values[:, s], tr.upper.values[:, s], color="0.85", step="post",
                        label=f"{prob} band")
        ax.plot(t, tr.lower.values[:, s], "k-", lw=0.7, drawstyle="steps-post")
        ax.plot(t, tr.upper.values[:, s], "k-", lw=0.7, drawstyle="steps-post")
        for n, k in enumerate(np.linspace(0, tr.sizes["sample"] - 1, min(3, tr.sizes["sample"])).astype(int)):
            ax.plot(t, tr.path.values[k, :, s], lw=0.8, drawstyle="steps-post", label="sampled paths" if n == 0 else None)
        seen = tr.observed.values[:, s].astype(bool)
        ax.plot(tr.obs_time.values[seen], tr.observed_state.values[seen, s], "ro", ms=3, label="observed")
        ax.set_title(str(nm))
        ax.set_xlabel("time")
    axes[0, 0].set_ylabel("molecules")
    axes[0, 0].legend(fontsize=7, loc="best")
    fig.suptitle(f"{prob} pointwise credible bands of the latent paths ({tr.attrs['draws']} posterior draws)",
                 fontsize=9)
    return save(fig, path)
