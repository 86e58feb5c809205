"""``distsim sweep CONFIG.yaml``: a parameter sweep described by a YAML file (resumable)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from .common import UsageError, backend, check_outputs, client, finish, positive_int, progress, subparser


def register(subparsers: Any) -> None:
    """Add the ``sweep`` subcommand."""
    p = subparser(subparsers, "sweep", help="run a parameter sweep described by a YAML file (resumable)",
                  description="Run one analysis over a grid, a table or a one-at-a-time design of parameter points. "
                              "The YAML schema is documented in distsim/sweep/config.py; examples: the sweeps/ folder of "
                              "the example models ('distsim info' prints where they are installed).")
    p.add_argument("config", help="sweep configuration (.yaml)")
    p.add_argument("--store", default=None, metavar="PATH", help="zarr store (.zarr) written as points finish; "
                   "a rerun resumes it (overrides the file's 'store')")
    p.add_argument("--output", "-o", default=None, metavar="PATH",
                   help="write the final Dataset (.nc or .zarr; a grid's has one dimension per parameter, a "
                        "table's a 'point' dimension; overrides the file's 'output')")
    p.add_argument("--chunk-size", type=positive_int, default=None, metavar="N",
                   help="points per task (overrides the file's 'chunk_size')")
    p.add_argument("--check", action="store_true", help="validate the configuration as a run does (every point's "
                   "values and the analysis's own checks) and exit")


def run(args: argparse.Namespace) -> int:
    """Run the sweep of ``args.config``; returns the exit status."""
    from pathlib import Path

    from ..sweep.config import load_config
    from ..sweep.core import sweep

    cfg = load_config(args.config)
    store = Path(args.store) if args.store else cfg.store
    output = Path(args.output) if args.output else cfg.output
    if store is not None and output is not None and store.resolve() == output.resolve():
        raise UsageError(f"{output} is both the sweep's store and its output; name two paths")
    check_outputs(args, data=[output])
    chunk = args.chunk_size or cfg.chunk_size
    print(f"{cfg.adapter.name} on {getattr(cfg.model, 'name', '') or cfg.path.name}: {cfg.points.n} points "
          f"({', '.join(cfg.points.names)}), seed {cfg.seed}" + (f", store {store}" if store else ""))
    if args.check:
        if store is not None:
            from ..sweep.core import store_status

            print(store_status(cfg.adapter, cfg.model, cfg.points, store,
                               seed=cfg.seed, **cfg.fixed))
        print("configuration ok")
        return 0
    t0 = time.perf_counter()
    with client(args) as dask_client:
        ds = sweep(cfg.adapter, cfg.model, cfg.points, seed=cfg.seed,
                   client=dask_client, store=store, chunk_size=chunk, backend=backend(args), progress=progress(args),
                   **cfg.fixed)
    a = ds.attrs
    if a["tasks"] == 0:
        print(f"{a['points']} points: every one is in the store {store}, verified; nothing computed")
    else:
        repaired = f" ({a['points_repaired']} of them repaired)" if a["points_repaired"] else ""
        print(f"{a['points']} points: {a['points_computed']} computed{repaired}, {a['points_resumed']} resumed from "
              f"the store, {a['tasks']} tasks of <= {a['chunk_size']} points on {a.get('backend', '-')}")
    return finish(args, ds, output, t0)
