"""The ``distsim`` command line.

    distsim [--scheduler ADDRESS | --in-process] [--cpu] [--workers N] [--quiet] COMMAND ...

    distsim info
    distsim pbn simulate MODEL --steps N --trajectories N [--mode sync|async] [--target A=1,B=0] [-o out.nc]
    distsim pbn steady-state MODEL --target "A=1,B=0" [--target ...] [--precision R] [--confidence S]
                             [--perturbation P] [--chains N] [--seed S] [-o out.nc] [--plot conv.png]
    distsim pbn influence MODEL --node X [--parents A,B] [...same options...]
    distsim pbn convert MODEL -o model.pbn
    distsim ssa simulate MODEL --t-end T --points K --realizations N [--method auto|direct|tree|warp|ar] [-o out.nc]

Without ``--scheduler`` the command starts a local Dask cluster (one worker per GPU when GPUs are
present, else one per core) and shuts it down at the end; ``--in-process`` runs without Dask.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .. import __version__

# one module per command: distsim/cli/<name>.py with register(subparsers) and run(args) -> exit status
COMMANDS = ("info", "pbn", "ssa", "grn", "mcmc", "sweep")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="distsim", description="Stochastic systems-biology workloads on CPUs and GPUs "
                                 "through Dask.", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--version", action="version", version=f"distsim {__version__}")
    ap.add_argument("--scheduler", metavar="ADDRESS", default=None, help="connect to this Dask scheduler")
    ap.add_argument("--in-process", action="store_true", help="run in this process, without a Dask cluster")
    ap.add_argument("--cpu", action="store_true", help="CPU backend only, even when GPUs are present")
    ap.add_argument("--workers", type=int, default=None, help="workers of the local cluster (default: one per "
                    "GPU, else one per core)")
    ap.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.cpu:
        os.environ["DISTSIM_DISABLE_GPU"] = "1"  # also inherited by spawned local workers
    try:
        return importlib.import_module(f"{__name__}.{args.command}").run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (ValueError, KeyError, FileNotFoundError, TypeError, RuntimeError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"distsim: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
