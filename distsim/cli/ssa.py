"""``distsim ssa simulate``: exact stochastic simulation (Gillespie) of reaction networks."""

from __future__ import annotations

import argparse
import time
from typing import Any

from .common import (LazyChoices, backend, check_outputs, client, finish, nonnegative_int, parse_assignments,
                     positive_float, positive_int, progress, subparser)


def register(subparsers: Any) -> None:
    """Add the ``ssa`` command and its subcommands."""
    ssa = subparsers.add_parser("ssa", help="exact stochastic simulation (Gillespie) of reaction networks")
    sub = ssa.add_subparsers(dest="ssa_command", metavar="SSA_COMMAND")
    sub.required = True
    p = subparser(sub, "simulate", help="simulate an ensemble of realizations and reduce it on the workers")
    p.add_argument("model", help="reaction network: SBML (.xml), antimony (.ant) or distsim reaction text (.rxn)")
    p.add_argument("--format", choices=["sbml", "antimony", "text"], default=None,
                   help="the model's format (default: from the extension, else the content)")
    p.add_argument("--reversible", choices=["split", "forward", "error"], default="split",
                   help="SBML reversible reactions: split a law kf*A - kr*B into two reactions, take the law as the "
                   "forward propensity, or refuse")
    p.add_argument("--system-size", type=positive_float, default=None, metavar="N",
                   help="SBML/antimony: molecules per substance unit (default: from the model's units: a mole is "
                        "Avogadro's number of molecules; no units declared: 1)")
    p.add_argument("--rounding", choices=["error", "nearest"], default="error",
                   help="SBML/antimony amounts that are not whole numbers of molecules: refuse (default), or round "
                        "to the nearest count (recorded in the result's attrs)")
    p.add_argument("--mass-action", choices=["as_written", "stochastic"], default="as_written",
                   help="SBML mass-action laws: the law is the propensity (default; k*A^2 fires at k x^2), or "
                        "stochastic: powers of reactants become falling factorials (k*A^2 -> k*A*(A-1); recorded "
                        "in the result's attrs)")
    p.add_argument("--guard", action="store_true",
                   help="SBML laws that are no propensities as written (a net rate that goes negative, a flux "
                        "that fires without what it consumes): split by sign into a forward and a backward "
                        "channel and multiplied by the indicator of their reactants (recorded in the result's "
                        "attrs); default: such a run stops with an error")
    p.add_argument("--fast", choices=["refuse", "as_slow"], default="refuse",
                   help="SBML reactions marked fast (rapid equilibrium): refuse (default), or as_slow: ordinary "
                        "reactions with their kinetic laws, the model with the flag ignored (recorded in the "
                        "result's attrs)")
    p.add_argument("--t-end", type=positive_float, required=True, metavar="T", help="end of the simulated time")
    p.add_argument("--points", type=positive_int, default=101, help="time points on the output grid, 0 to T")
    p.add_argument("--realizations", "-n", type=positive_int, default=1000, metavar="N", help="number of realizations")
    p.add_argument("--method", choices=LazyChoices("distsim.ssa.methods", "METHODS", ("auto",)), default="auto",
                   metavar="METHOD", help="selection method, one of %(choices)s; auto picks direct for small models, "
                   "else warp on GPUs and tree on CPUs")
    p.add_argument("--seed", type=int, default=0, help="random seed; a seed gives the same result on any hardware")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="override a rate parameter "
                   "(repeatable)")
    p.add_argument("--time-limit", type=positive_float, default=None, metavar="SECONDS",
                   help="run realizations in waves and start none past this many seconds (the result is that of "
                        "the realizations done)")
    p.add_argument("--keep-trajectories", action="store_true", help="keep every realization's states on the grid")
    p.add_argument("--max-events", type=nonnegative_int, default=0, metavar="N",
                   help="cap on the events of one realization (0: no cap)")
    p.add_argument("--output", "-o", default=None, metavar="PATH", help="write the result Dataset (.nc or .zarr)")
    p.add_argument("--plot", default=None, metavar="PNG", help="write a PNG of the mean and the 5-95%% band")


def run(args: argparse.Namespace) -> int:
    from ..ssa import load, simulate

    check_outputs(args, data=[args.output], figures=[args.plot])
    params = parse_assignments(args.param, "--param")
    net = load(args.model, format=args.format, reversible=args.reversible, system_size=args.system_size,
               rounding=args.rounding, mass_action=args.mass_action, fast=args.fast, guard=args.guard)
    if params:
        net = net.with_parameters(**params)
    if args.points < 2:
        raise ValueError(f"--points must be at least 2 (the grid holds 0 and T), got {args.points}")
    print(net.summary())
    t0 = time.perf_counter()
    with client(args) as dask_client:
        ds = simulate(net, t_end=args.t_end, points=args.points, realizations=args.realizations, method=args.method,
                      seed=args.seed, keep_trajectories=args.keep_trajectories, max_events=args.max_events,
                      client=dask_client, backend=backend(args), progress=progress(args), time_limit=args.time_limit)
    _print_ensemble(ds)

    def draw(path: str) -> None:
        from ..ssa.plots import plot_ensemble

        plot_ensemble(ds, path)

    return finish(args, ds, args.output, t0, {"plot": (args.plot, draw)})


def _print_ensemble(ds: Any) -> None:
    import numpy as np

    a = ds.attrs
    print(f"{a['realizations']} realizations to t={a['t_end']:g} ({a['method']}, {a['backend']}): "
          f"{a['firings_total']:.3g} firings, {a['firings_per_second']:.3g} firings/s, "
          f"{a['mean_firings_per_realization']:.1f} per realization"
          + (" -- stopped by the time limit" if a.get("stopped_by") == "time_limit" else ""))
    cont = list(ds["continuous"].values) if "continuous" in ds.coords else []  # rate-rule variables (reals)
    w = max([8, *(len(str(s)) for s in [*ds.species.values, *cont])])
    print(f"{'species':<{w}} {'mean(t_end)':>12} {'sd(t_end)':>10} {'5%':>8} {'50%':>8} {'95%':>8}")
    last = ds.isel(time=-1)
    for s_, name in enumerate(ds.species.values):
        qs = [int(last.quantile_value.values[q, s_]) for q in range(3)] if "quantile_value" in ds else ["", "", ""]
        print(f"{str(name):<{w}} {float(last['mean'][s_]):12.3f} {float(np.sqrt(last['variance'][s_])):10.3f} "
              f"{qs[0]:>8} {qs[1]:>8} {qs[2]:>8}")
    for c_, name in enumerate(cont):
        print(f"{str(name):<{w}} {float(last['continuous_mean'][c_]):12.6g} "
              f"{float(np.sqrt(last['continuous_variance'][c_])):10.3g}   (rate rule, model units)")
