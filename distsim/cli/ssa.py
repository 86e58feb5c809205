"""``distsim ssa simulate``: exact stochastic simulation (Gillespie) of reaction networks."""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from ..ssa.methods import METHODS
from .common import client, finish


def register(subparsers: Any) -> None:
    """Add the ``ssa`` command and its subcommands."""
    ssa = subparsers.add_parser("ssa", help="exact stochastic simulation (Gillespie) of reaction networks")
    ss2 = ssa.add_subparsers(dest="ssa_command", metavar="SSA_COMMAND")
    ss2.required = True
    sim2 = ss2.add_parser("simulate", help="simulate an ensemble of realizations")
    sim2.add_argument("model", help="SBML (.xml) or distsim reaction text (.rxn)")
    sim2.add_argument("--t-end", type=float, required=True)
    sim2.add_argument("--points", type=int, default=101, help="time points on the output grid (default 101)")
    sim2.add_argument("--realizations", "-n", type=int, default=1000)
    sim2.add_argument("--method", choices=["auto", *METHODS], default="auto")
    sim2.add_argument("--seed", type=int, default=0)
    sim2.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="override a parameter")
    sim2.add_argument("--trajectories", action="store_true", help="keep every realization's grid states")
    sim2.add_argument("--max-events", type=int, default=0, help="cap on events per realization (0: none)")
    sim2.add_argument("--output", "-o", default=None, help="write the result Dataset (.nc or .zarr)")
    sim2.add_argument("--plot", default=None, help="write a PNG of the mean and 5-95%% band")



def run(args: argparse.Namespace) -> int:
    from .. import results
    from ..ssa import load, simulate

    if args.output:
        results.check_output_path(args.output)
    params = {}
    for item in args.param:
        if "=" not in item:
            raise ValueError(f"--param: expected NAME=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        params[k.strip()] = float(v)
    net = load(args.model)
    print(net.summary())
    t0 = time.perf_counter()
    with client(args) as dask_client:
        ds = simulate(net, t_end=args.t_end, points=args.points, realizations=args.realizations, method=args.method,
                      seed=args.seed, params=params or None, keep_trajectories=args.trajectories,
                      max_events=args.max_events, client=dask_client, backend="cpu" if args.cpu else None,
                      progress=not args.quiet, plot=args.plot)
    a = ds.attrs
    print(f"{a['realizations']} realizations to t={a['t_end']:g} ({a['method']}, {a['backend']}): "
          f"{a['firings_total']:.3g} firings, {a['firings_per_second']:.3g} firings/s, "
          f"{a['mean_firings_per_realization']:.1f} per realization")
    print(f"{'species':<16} {'mean(t_end)':>12} {'sd(t_end)':>10} {'5%':>8} {'50%':>8} {'95%':>8}")
    last = ds.isel(time=-1)
    for s_, name in enumerate(ds.species.values):
        qs = [int(last.quantile_value.values[q, s_]) for q in range(3)] if "quantile_value" in ds else ["", "", ""]
        print(f"{str(name):<16} {float(last['mean'][s_]):12.3f} {float(np.sqrt(last['variance'][s_])):10.3f} "
              f"{qs[0]:>8} {qs[1]:>8} {qs[2]:>8}")
    return finish(ds, args.output, t0, plot=args.plot)
