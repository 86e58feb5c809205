"""PNG figures of MaBoSS time courses (matplotlib, imported only when a figure is asked for)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..plotting import pyplot, save


def plot_time_course(ds: xr.Dataset, path: str, *, top: int = 10) -> str:
    """Left: the ``top`` most probable visible states over time (window averages; the rest summed as
    'others'). Right: the distribution of states at max_time (the same states)."""
    plt = pyplot()
    prob = ds.probability.values
    rank = np.argsort(-prob.max(axis=0), kind="stable")[:top]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.5), gridspec_kw={"width_ratios": [2, 1]})
    t = ds.time.values
    for j in rank:
        ax1.plot(t, prob[:, j], label=str(ds.state.values[j]))
    rest = prob.sum(axis=1) - prob[:, rank].sum(axis=1)
    if prob.shape[1] > len(rank):
        ax1.plot(t, rest, color="0.6", ls="--", label="others")
    ax1.set_xlabel("time")
    ax1.set_ylabel("probability (window average)")
    ax1.set_ylim(0, 1.02)
    ax1.legend(fontsize=7, loc="best")
    final = ds.final_probability.values
    order = np.argsort(-final, kind="stable")[:top]
    ax2.barh([str(ds.state.values[j]) for j in order][::-1], final[order][::-1], color="C0")
    ax2.set_xlabel(f"probability at t = {ds.attrs.get('max_time', '')}")
    ax2.tick_params(axis="y", labelsize=7)
    fig.suptitle(f"{ds.attrs.get('model_name', '')}: {ds.attrs.get('trajectories', '?')} trajectories", fontsize=9)
    fig.tight_layout()
    return save(fig, path)
