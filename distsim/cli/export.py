"""``distsim export RESULT``: a result's summary as a tidy table (CSV, TSV or Parquet; CSV on stdout
without ``-o``), built one variable at a time (:func:`distsim.results.to_table`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import subparser


def register(subparsers: Any) -> None:
    """Add the ``export`` subcommand."""
    p = subparser(subparsers, "export", help="a result's summary as a tidy table (CSV, TSV, Parquet)",
                  description="Write a result (.nc or .zarr) as a table: by default its summary (every variable "
                              "without a per-realization, per-trajectory or histogram dimension; posterior draws as "
                              "mean, sd, quantiles, R-hat and ESS), in long form (name, coordinates, value).")
    p.add_argument("result", help="a result written by distsim (.nc or .zarr; a sweep's store is read verified)")
    p.add_argument("--output", "-o", default=None, metavar="PATH",
                   help="the table (.csv, .tsv or .parquet; default: CSV on standard output)")
    p.add_argument("--variable", action="append", default=None, metavar="NAME", dest="variables",
                   help="a variable to export, repeatable (default: the summary)")
    p.add_argument("--wide", action="store_true", help="one column per variable (the variables must share "
                   "their dimensions)")


def run(args: argparse.Namespace) -> int:
    from .. import results

    if args.output:
        results.check_table_path(args.output, overwrite=args.overwrite)
    source: Any = args.result
    from ..sweep.store import is_sweep_store, open_store

    if is_sweep_store(source):  # verified, in the sweep's layout, without the store's bookkeeping arrays
        source = open_store(source)
    table = results.to_table(source, args.variables, wide=args.wide)
    if args.output:
        results.write_table(table, args.output, overwrite=args.overwrite)
        print(f"written: {args.output} ({len(table)} rows)", file=sys.stderr)
    else:
        table.to_csv(sys.stdout, index=False)
    return 0
