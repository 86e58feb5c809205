"""The ``distsim`` command line: one module per command, registered in :data:`COMMANDS`.

Each module has ``register(subparsers)`` and ``run(args) -> exit status``. Errors in the input
print one line ``distsim: error: ...`` and exit with status 2; an interrupted run exits with 130.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import signal
import sys
import threading
import warnings
from typing import Any

from .. import __version__
from .common import HelpFormatter, add_global_options, catch_sigint, sigint_met

# one module per command: distsim/cli/<name>.py with register(subparsers) and run(args) -> exit status
COMMANDS = ("info", "pbn", "ssa", "grn", "mcmc", "maboss", "sweep", "export")

EPILOG = """\
commands:
  distsim info                          versions, backend, GPUs seen, the cluster a run would start
  distsim pbn simulate|steady-state|influence|convert MODEL ...
                                        probabilistic Boolean networks
  distsim ssa simulate MODEL ...        exact stochastic simulation of reaction networks
  distsim grn infer PROBLEM ...         GRN inference by parallel genetic algorithms
  distsim mcmc rates MODEL --data CSV   Bayesian rate inference (data-augmentation MCMC)
  distsim mcmc noisy MODEL --data CSV --noise MODEL:PARAM
                                        ... from noisy measurements (particle MCMC; PEtab: mcmc petab)
  distsim maboss MODEL.bnd [MODEL.cfg]  MaBoSS time courses of continuous-time Boolean models
  distsim sweep CONFIG.yaml             a parameter sweep of any of these (resumable)
  distsim export RESULT -o TABLE.csv    a result's summary as a tidy table (CSV, TSV, Parquet)

'distsim COMMAND --help' describes a command. Without --scheduler, --scheduler-file or --in-process
a run starts a local Dask cluster (one worker per GPU when GPUs are present, else one per usable
CPU; TLS with a temporary certificate: yours alone) when it needs workers, and stops it at the end.
'distsim maboss' runs in this process on a single device (one GPU, or the CPU) unless --workers is given.
"""

# exit statuses (a figure that fails after the data were written: 1)
USAGE, INTERRUPTED, BROKEN_PIPE = 2, 130, 141


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="distsim", description="Stochastic systems-biology workloads on one CPU, "
                                 "one GPU or many GPUs through Dask.", formatter_class=HelpFormatter, epilog=EPILOG)
    ap.add_argument("--version", action="version", version=f"distsim {__version__}")
    add_global_options(ap, leaf=False)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return ap


def _user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions reported in one line with exit status 2: bad input, arguments or model behaviour."""
    from ..errors import DistsimError

    return (DistsimError, ValueError, KeyError, TypeError, OSError, RuntimeError)


def _format_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                    line: str | None = None) -> str:
    """Warnings as one line each, like the errors (no file and source line)."""
    return f"distsim: warning: {message}\n"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    previous = warnings.formatwarning
    warnings.formatwarning = _format_warning
    rc = None
    if argv is None and threading.current_thread() is threading.main_thread():
        catch_sigint()
    try:
        rc = _run(args)
        return rc
    finally:
        warnings.formatwarning = previous
        sigint_met()  # (a Ctrl-C the command outran is not raised again as the process ends)
        if argv is None:  # the process's own command line: it ends now, and its last full garbage collection
            gc.freeze()  # would walk every object of NumPy, xarray, Numba, ... (~0.2 s of a 1 s run)
            if rc == INTERRUPTED:
                sys.unraisablehook = _ignore_unraisable
                # a further SIGINT (a second Ctrl-C) must not kill the ending process by signal half-way
                # through its exit: status -2 where 130 is promised (seen once in a CI rehearsal)
                with contextlib.suppress(ValueError):  # (not the main thread: signals are not ours)
                    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _ignore_unraisable(unraisable: Any) -> None:
    """After "distsim: interrupted" the process only exits: objects that Ctrl-C left half-built (an LLVM
    object of a Numba compile it stopped) may fail in their finalizers as the interpreter clears its
    modules ("Exception ignored in ... __del__"); an interrupted run prints its one line and nothing else."""


def _run(args: argparse.Namespace) -> int:
    if args.cpu:
        os.environ["DISTSIM_DISABLE_GPU"] = "1"  # also inherited by spawned local workers
    try:
        return importlib.import_module(f"{__name__}.{args.command}").run(args)
    except KeyboardInterrupt:
        sigint_met()
        print("distsim: interrupted", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:  # the reader of our output went away (`distsim ... | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE
    except _user_errors() as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"distsim: error: {msg}".replace("\n", " "), file=sys.stderr)
        return USAGE


if __name__ == "__main__":
    sys.exit(main())
