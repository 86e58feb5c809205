"""PNG figures of PBN results (matplotlib, imported only when a figure is asked for)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..plotting import pyplot, save


def plot_convergence(ds: xr.Dataset, path: str) -> str:
    """Top: R-hat of the Gelman-Rubin rounds against chain length. Bottom: each estimate's distance
    from its final value in units of the requested precision r (the shaded band is +-r), so every
    target's convergence shows on one scale whatever its probability."""
    plt = pyplot()
    from matplotlib.ticker import LogLocator, NullFormatter, NullLocator, ScalarFormatter

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7.5, 6.5), sharex=True)
    length = ds.history_length.values
    r = float(ds.attrs.get("precision", np.nan))
    for t, label in enumerate(ds.target.values):
        rh = ds.history_rhat.values[:, t]
        ok = np.isfinite(rh)
        line, = ax1.plot(length[ok], rh[ok], "o-", ms=4)
        final = float(ds.probability.values[t])
        ax2.plot(length, (ds.history_estimate.values[:, t] - final) / r, "o-", ms=4, color=line.get_color(),
                 label=f"{label}: {final:.5g}")
    ax2.axhspan(-1, 1, color="0.85", zorder=0, label="+-r")
    ax2.axhline(0, color="k", lw=0.6)
    thr = ds.attrs.get("rhat_threshold")
    if thr:
        ax1.axhline(float(thr), color="k", lw=0.8, ls=":", label=f"threshold {thr}")
        ax1.legend(fontsize=8, loc="upper right")
    ax1.set_ylabel("R-hat")
    ax2.set_ylabel("(estimate - final) / r")
    ax2.set_xlabel("chain length (steps)")
    ax2.legend(fontsize=8, loc="best")
    ax2.set_xscale("log", base=2)
    ax2.xaxis.set_major_locator(LogLocator(base=2))
    ax2.xaxis.set_major_formatter(ScalarFormatter())
    ax2.xaxis.set_minor_locator(NullLocator())
    ax2.xaxis.set_minor_formatter(NullFormatter())
    ax1.set_title(f"{ds.attrs.get('model_name', '')}: {ds.attrs.get('chains', '?')} chains, r = {r:g}, "
                  f"s = {ds.attrs.get('confidence')}", fontsize=9)
    return save(fig, path)
