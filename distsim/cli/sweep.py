"""``distsim sweep CONFIG.yaml``: a parameter sweep described by a YAML file (resumable)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from .common import client


def register(subparsers: Any) -> None:
    """Add the ``sweep`` subcommand."""
    p = subparsers.add_parser("sweep", help="run a parameter sweep described by a YAML file (resumable)",
                              description="Run one analysis over a grid, a table or a one-at-a-time design of "
                                          "parameter points. The YAML schema is documented in "
                                          "distsim/sweep/config.py and examples/sweeps/.")
    p.add_argument("config", help="sweep configuration (.yaml)")
    p.add_argument("--store", default=None, help="zarr store (.zarr) overriding the file's 'store'")
    p.add_argument("--output", "-o", default=None, help="write the final Dataset (.nc or .zarr), overriding 'output'")
    p.add_argument("--chunk-size", type=int, default=None, help="points per task, overriding 'chunk_size'")
    p.add_argument("--check", action="store_true", help="validate the configuration and exit")


def run(args: argparse.Namespace) -> int:
    """Run the sweep of ``args.config``; returns the exit status."""
    from pathlib import Path

    from .. import results
    from ..sweep.config import load_config
    from ..sweep.core import sweep

    cfg = load_config(args.config)
    store = Path(args.store) if args.store else cfg.store
    output = Path(args.output) if args.output else cfg.output
    if output is not None:
        results.check_output_path(output)
    chunk = args.chunk_size or cfg.chunk_size
    print(f"{cfg.adapter.name} on {getattr(cfg.model, 'name', '') or cfg.path.name}: {cfg.points.n} points "
          f"({', '.join(cfg.points.names)}), seed {cfg.seed}" + (f", store {store}" if store else ""))
    if args.check:
        print("configuration ok")
        return 0
    t0 = time.perf_counter()
    with client(args) as dask_client:
        ds = sweep(cfg.adapter, cfg.model, [cfg.points.point(i) for i in range(cfg.points.n)], seed=cfg.seed,
                   client=dask_client, store=store, chunk_size=chunk, backend="cpu" if getattr(args, "cpu", False) else None,
                   progress=not getattr(args, "quiet", False), **cfg.fixed)
    a = ds.attrs
    print(f"{a['points']} points: {a['points_computed']} computed, {a['points_resumed']} resumed from the store, "
          f"{a['tasks']} tasks of <= {a['chunk_size']} points on {a.get('backend', '-')}, "
          f"{time.perf_counter() - t0:.2f} s", file=sys.stdout)
    if output is not None:
        results.write(ds, output)
        print(f"written: {output}")
    return 0
