"""PNG figures of PBN results (matplotlib, imported only when a figure is asked for)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..plotting import pyplot


def plot_convergence(ds: xr.Dataset, path: str) -> str:
    """R-hat (Gelman-Rubin rounds) and the estimate against chain length, one line per target."""
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    length = ds.history_length.values
    for t, label in enumerate(ds.target.values):
        r = ds.history_rhat.values[:, t]
        ok = np.isfinite(r)
        ax1.plot(length[ok], r[ok], "o-", label=str(label))
        ax2.plot(length, ds.history_estimate.values[:, t], "o-", label=str(label))
        p = float(ds.probability.values[t])
        ax2.axhspan(float(ds.ci_low.values[t]), float(ds.ci_high.values[t]), alpha=0.15)
        ax2.axhline(p, lw=0.8, ls="--")
    thr = ds.attrs.get("rhat_threshold")
    if thr:
        ax1.axhline(float(thr), color="k", lw=0.8, ls=":", label=f"threshold {thr}")
    ax1.set_ylabel("R-hat")
    ax1.set_xscale("log")
    ax1.legend(fontsize=8)
    ax2.set_ylabel("estimate")
    ax2.set_xlabel("chain length (steps)")
    ax1.set_title(f"{ds.attrs.get('model_name', '')}: {ds.attrs.get('chains', '?')} chains, "
                  f"r={ds.attrs.get('precision')}, s={ds.attrs.get('confidence')}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
