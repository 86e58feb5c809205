"""PNG of a GRN inference result: fitness against generation, and the best network drawn on a circle."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..plotting import pyplot, save


def plot_result(ds: xr.Dataset, path: str) -> str:
    """Left: best fitness per island, mean fitness, best so far (log scale). Right: the best network,
    activations green, repressions red, changed links thick (dashed grey where a reference link was removed)."""
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 6), gridspec_kw={"width_ratios": [1.1, 1]})
    g = ds.generation.values
    for i in ds.island.values:
        ax1.plot(g, ds.best_fitness.values[i], lw=0.8, alpha=0.6, label=f"island {i} best" if len(ds.island) <= 8
                 else None)
    ax1.plot(g, ds.mean_fitness.values.mean(axis=0), "k:", lw=1, label="mean (all islands)")
    ax1.plot(g, ds.best_so_far.values, "k-", lw=2, label="best so far")
    ax1.set_yscale("log")
    ax1.set_xlabel("generation")
    ax1.set_ylabel("fitness (minimised)")
    a = ds.attrs
    ax1.set_title(f"{a.get('model_name', '')}: {a.get('model')} GA, {a.get('islands')} x {a.get('population')}, "
                  f"best {a.get('fitness', float('nan')):.6g}", fontsize=9)
    ax1.legend(fontsize=7)

    genes = [str(x) for x in ds.gene.values]
    n = len(genes)
    ang = 2 * np.pi * np.arange(n) / n
    xy = np.c_[np.cos(ang), np.sin(ang)]
    best, ref = ds.best_links.values, ds.reference_links.values
    for j in range(n):  # target
        for i in range(n):  # source
            b, r = int(best[j, i]), int(ref[j, i])
            if b == 0 and r == 0:
                continue
            changed = b != r
            if b == 0:
                style = dict(color="grey", ls="--", lw=1.5)
            else:
                style = dict(color="tab:green" if b > 0 else "tab:red", lw=2.5 if changed else 0.6,
                             alpha=1.0 if changed else 0.5)
            if i == j:
                ax2.add_patch(plt.Circle(xy[i] * 1.06, 0.05, fill=False, **{k: v for k, v in style.items()
                                                                          if k != "alpha"}))
                continue
            ax2.annotate("", xy=xy[j], xytext=xy[i], arrowprops=dict(arrowstyle="-|>" if b >= 0 else "-[",
                                                                      shrinkA=6, shrinkB=6, **style))
    on = ds.target_state.values.astype(bool)
    ax2.scatter(xy[:, 0], xy[:, 1], s=120 if n <= 64 else 10, c=np.where(on, "gold", "lightgrey"), edgecolors="k",
                zorder=3)
    if n <= 64:
        for k, name in enumerate(genes):
            ax2.text(*(xy[k] * 1.15), name, ha="center", va="center", fontsize=7)
    ax2.set_title(f"best network: {a.get('link_changes')} changed links (thick / dashed),\n"
                  f"{a.get('node_mismatches')} node mismatches; gold = on in the target", fontsize=9)
    ax2.set_aspect("equal")
    ax2.axis("off")
    return save(fig, path)
