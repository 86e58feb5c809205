"""Latent trajectories from stored Philox addresses (seed 003, section 4.3 and Figure 5).

A posterior draw keeps only, per interval, the index of its accepted attempt; with the draw's theta
and the address (seed, chain; event, attempt, iteration + 1, interval) the path is re-simulated
exactly. A thinned subset of draws gives pointwise credible bands per species.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import xarray as xr

from ..models.reactions import ReactionNetwork
from . import cpu
from .observations import as_observations
from .priors import rate_model
from .sampler import build_problem


def latent_trajectories(ds: xr.Dataset, net: ReactionNetwork | str | os.PathLike, observations: Any, *,
                        draws: int = 200, points_per_interval: int = 21, prob: float = 0.95,
                        plot: str | None = None) -> xr.Dataset:
    """Re-simulate the accepted paths of ``draws`` posterior draws (evenly spread over chains and
    draws) on a grid of ``points_per_interval`` times per interval; returns the paths
    (sample, time, species) and the pointwise ``prob`` band (``lower``, ``median``, ``upper``)."""
    if not isinstance(net, ReactionNetwork):
        from ..models.sources import load_network as load

        net = load(net)
    obs = as_observations(net, observations)
    rm = rate_model(net, {n: (1.0, 1.0) for n in ds.attrs["parameters"].split(",")})
    pr = build_problem(net, obs, rm)
    seed = int(ds.attrs["seed"])
    C, D = ds.sizes["chain"], ds.sizes["draw"]
    picks = np.unique(np.linspace(0, C * D - 1, min(draws, C * D)).astype(np.int64))
    n, S = obs.n_intervals, net.n_species
    local = np.linspace(0.0, 1.0, points_per_interval)
    grid_t = np.concatenate([obs.times[i] + local[:-1] * (obs.times[i + 1] - obs.times[i]) for i in range(n)]
                            + [obs.times[-1:]])
    paths = np.zeros((len(picks), len(grid_t), S), dtype=np.int64)
    theta_all = np.stack([ds[nm].values for nm in rm.names], axis=-1)
    x = np.empty(S, np.int64)
    h = np.empty(net.n_reactions)
    a = np.empty(net.n_reactions)
    r_d = np.zeros(net.n_reactions, np.int64)
    b_d = np.zeros(net.n_reactions)
    for k, flat in enumerate(picks):
        c, d = divmod(int(flat), D)
        theta_rx = rm.theta_reactions(theta_all[c, d])
        it = int(ds["iteration"].values[d]) + 1
        chain = int(ds["chain"].values[c])
        for i in range(n):
            dt = float(pr.dts[i])
            g = local[:-1] * dt
            rec = np.zeros((len(g), S), np.int64)
            idx = int(ds["attempts"].values[c, d, i]) - 1
            ok, err = cpu.run_attempt(np.uint64(seed), np.uint64(chain), it, i, idx, pr.starts[i], pr.targets[i], dt,
                                      theta_rx, pr.rct_start, pr.rct_species, pr.rct_stoich, pr.chg_start,
                                      pr.chg_species, pr.chg_delta, pr.dep_start, pr.dep_list, pr.can_inc,
                                      pr.can_dec, pr.max_events, x, h, a, False, r_d, b_d, g, rec)
            if not ok:
                raise RuntimeError(f"re-simulating chain {chain}, iteration {it}, interval {i + 1} did not reproduce the "
                                   "accepted path: the Dataset does not match this model and these observations")
            paths[k, i * (points_per_interval - 1):(i + 1) * (points_per_interval - 1)] = rec
        paths[k, -1] = obs.states[-1]
    q = np.quantile(paths, [(1 - prob) / 2, 0.5, 1 - (1 - prob) / 2], axis=0)
    out = xr.Dataset(
        {"path": (("sample", "time", "species"), paths, {"long_name": "re-simulated latent path",
                                                         "units": "molecules"}),
         "lower": (("time", "species"), q[0], {"long_name": f"pointwise {(1 - prob) / 2:.3g} quantile"}),
         "median": (("time", "species"), q[1], {"long_name": "pointwise median"}),
         "upper": (("time", "species"), q[2], {"long_name": f"pointwise {1 - (1 - prob) / 2:.3g} quantile"}),
         "observed_state": (("obs_time", "species"), obs.states),
         "observed": (("obs_time", "species"), obs.observed.astype(np.int8))},
        coords={"time": grid_t, "species": list(net.species), "obs_time": obs.times,
                "sample_chain": ("sample", picks // D), "sample_draw": ("sample", picks % D)},
        attrs={"workload": "mcmc.latent_trajectories", "prob": prob, "seed": seed, "draws": len(picks)},
    )
    if plot is not None:
        from .plots import plot_bands

        plot_bands(out, plot)
    return out
