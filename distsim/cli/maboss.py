"""``distsim maboss MODEL.bnd [MODEL.cfg]``: MaBoSS time courses (continuous-time Boolean models)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ..errors import UsageError
from .common import backend, check_outputs, client, finish, parse_assignments, positive_float, positive_int, progress, \
    subparser


SHOWN_FIXED_POINTS = 10  # fixed points printed in the summary


def register(subparsers: Any) -> None:
    """Add the ``maboss`` command."""
    p = subparser(subparsers, "maboss", help="MaBoSS time courses of a .bnd + .cfg model (continuous-time Boolean)")
    p.add_argument("model", help="MaBoSS .bnd network")
    p.add_argument("cfg", nargs="?", default=None, help="its .cfg (default: MODEL.bnd.cfg, else MODEL.cfg beside it)")
    p.add_argument("--trajectories", "-n", type=positive_int, default=None, metavar="N",
                   help="number of trajectories (default: the .cfg's sample_count)")
    p.add_argument("--max-time", type=positive_float, default=None, metavar="T", help="default: the .cfg's max_time")
    p.add_argument("--time-tick", type=positive_float, default=None, metavar="DT",
                   help="window width (default: the .cfg's time_tick)")
    p.add_argument("--seed", type=int, default=None, help="random seed (default: the .cfg's seed_pseudorandom); a "
                   "seed gives the same result on any hardware")
    p.add_argument("--discrete-time", choices=["0", "1"], default=None, help="override the .cfg's discrete_time")
    p.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                   help="set a $variable of the .cfg (repeatable; the $ is optional)")
    p.add_argument("--mutant", action="append", default=[], metavar="NODE=0|1",
                   help="knock a node out (0) or over-express it (1) (repeatable)")
    p.add_argument("--screen", choices=["knockout", "overexpression"], default=None,
                   help="every node knocked out (over-expressed) in turn, plus the wild type, along 'point'")
    p.add_argument("--time-limit", type=positive_float, default=None, metavar="SECONDS",
                   help="run trajectories in waves and start none past this many seconds (the result is that of "
                        "the trajectories done)")
    p.add_argument("--output", "-o", default=None, metavar="PATH", help="write the result Dataset (.nc or .zarr)")
    p.add_argument("--csv", default=None, metavar="PREFIX",
                   help="write MaBoSS's PREFIX_probtraj.csv and PREFIX_fp.csv")
    p.add_argument("--plot", default=None, metavar="PNG", help="a PNG of the state probabilities and final states")


def run(args: argparse.Namespace) -> int:
    from ..maboss import knockout_screen, maboss, write_csv

    csv_files = [f"{args.csv}_probtraj.csv", f"{args.csv}_fp.csv"] if args.csv else []
    check_outputs(args, data=[args.output], figures=[args.plot], files=csv_files)
    variables = parse_assignments(args.var, "--var")
    mutants = {}
    for name, value in parse_assignments(args.mutant, "--mutant").items():
        if value not in (0, 1):
            raise UsageError(f"--mutant {name}={value:g}: the value is 0 (knock-out) or 1 (over-expression)")
        mutants[name] = int(value)
    if args.screen and (mutants or args.csv or args.plot):
        raise UsageError("--screen runs every mutant; --mutant, --csv and --plot apply to a single run")
    opts = dict(trajectories=args.trajectories, max_time=args.max_time, time_tick=args.time_tick, seed=args.seed,
                discrete_time=None if args.discrete_time is None else args.discrete_time == "1")
    t0 = time.perf_counter()
    args.in_process = runs_in_process(args)
    with client(args) as dask_client:
        run_opts = dict(client=dask_client, backend=backend(args), progress=progress(args))
        if args.screen:
            if variables or args.time_limit:
                raise UsageError("--screen takes neither --var (set the variables in the .cfg) nor --time-limit")
            ds = knockout_screen(args.model, args.cfg, over_expression=args.screen == "overexpression", **opts,
                                 **run_opts)
        else:
            ds = maboss(args.model, args.cfg, variables=variables, mutants=mutants, time_limit=args.time_limit,
                        **opts, **run_opts)
    _print_summary(ds)
    if args.csv:
        for path in write_csv(ds, args.csv, overwrite=args.overwrite):
            print(f"written: {path}")

    def draw(path: str) -> None:
        from ..maboss.plots import plot_time_course

        plot_time_course(ds, path)

    return finish(args, ds, args.output, t0, {"plot": (args.plot, draw)})


def runs_in_process(args: argparse.Namespace) -> bool:
    """Whether this command runs in this process: with --in-process, and also by default when a local
    cluster would hold a single device (one GPU, or the CPU: one process runs all its cores), so that a
    run of a second starts no cluster. --scheduler, --scheduler-file or --workers ask for Dask; two or
    more local GPUs get one worker each. The result is the same bits either way."""
    if args.in_process:
        return True
    if args.scheduler or getattr(args, "scheduler_file", None) or args.workers is not None:
        return False
    if args.cpu:
        return True
    from ..backends import count_gpus

    return count_gpus() <= 1


def _print_summary(ds: Any) -> None:
    import numpy as np

    a = ds.attrs
    print(f"{a['model_name']}: {a['trajectories']} trajectories to t={a['max_time']:g} (time_tick {a['time_tick']:g}"
          f"{', discrete time' if a['discrete_time'] else ''}, seed {a['seed']}, {a.get('backend')}), "
          f"{a['events']} transitions" + (" -- stopped by the time limit" if a.get("stopped_by") == "time_limit"
                                          else ""))
    if "point" in ds.dims:
        more = " ..." if ds.point.size > 6 else ""
        print(f"{ds.point.size} points: {', '.join(map(str, ds.point.values[:6]))}{more}")
        return
    final = ds.final_probability.values
    top = np.argsort(-final, kind="stable")[:10]
    states = [str(s) for s in ds.indexes["state"][top]]  # the index, not .values: no copy of every label
    w = max([5] + [len(s) for s in states])
    print(f"{'state at max_time':<{w}} {'probability':>11}")
    for s, j in zip(states, top):
        print(f"{s:<{w}} {final[j]:11.5f}")
    fp = ds.fixed_point_probability.values  # the most frequent first; a large model has thousands (the Dataset
    k = SHOWN_FIXED_POINTS  # and --csv hold them all)
    for lab, p in zip(ds.indexes["fixed_point"][:k], fp[:k]):
        print(f"fixed point {lab}: {p:.5f}")
    if fp.size > k:
        print(f"... {fp.size - k} more fixed points (probability {fp[k:].sum():.5f} in all)")
