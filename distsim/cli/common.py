"""Plumbing shared by the command modules: global options, the Dask client of a command (started
only when the run needs it, so bad arguments fail before any cluster starts), output checks, and
the end of a run (data first, then figures)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from ..errors import UsageError

CONNECT_TIMEOUT_S = 10  # an unreachable --scheduler / --scheduler-file fails after this long



class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows the default of every option that takes a value and is not required (``none`` for None or
    an empty list; 0 is a default like any other), unless the help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (not action.option_strings or action.required or action.nargs == 0 or default is argparse.SUPPRESS
                or "%(default)" in text or "default" in text):
            return text
        if default is None or (isinstance(default, list) and not default):
            return text + " (default: none)"
        return text + " (default: %(default)s)"


def add_global_options(parser: argparse.ArgumentParser, *, leaf: bool) -> None:
    """The options every command takes, before or after the subcommand (``leaf``: on a subcommand,
    where they must not overwrite a value given before it)."""
    d = {"default": argparse.SUPPRESS} if leaf else {}
    g = parser.add_argument_group("run options (before or after the command)")
    g.add_argument("--scheduler", metavar="ADDRESS", help="connect to this Dask scheduler (tcp://host:8786, "
                   "tls://...) instead of starting a local cluster", **({"default": None} | d))
    g.add_argument("--scheduler-file", metavar="PATH", help="connect to the Dask scheduler that wrote this file "
                   "(dask scheduler --scheduler-file PATH) instead of starting a local cluster",
                   **({"default": None} | d))
    g.add_argument("--in-process", action="store_true", help="run in this process, without Dask", **d)
    g.add_argument("--cpu", action="store_true", help="use the CPU backend even when GPUs are present", **d)
    g.add_argument("--workers", type=positive_int, metavar="N", help="workers of the local cluster (default: one per "
                   "GPU, else one per usable CPU: affinity and cgroup quota)", **({"default": None} | d))
    g.add_argument("--quiet", "-q", action="store_true", help="no progress output", **d)
    g.add_argument("--progress", action="store_true", help="progress lines from the start when stderr is not a "
                   "terminal (by default a run that lasts prints one every 30 s)", **d)
    g.add_argument("--overwrite", action="store_true", help="replace existing output files", **d)


def subparser(subparsers: Any, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A subcommand parser with the shared formatter and the global options."""
    p = subparsers.add_parser(name, formatter_class=HelpFormatter, **kwargs)
    add_global_options(p, leaf=True)
    return p


class LazyDefault:
    """A default read from a module only when it is shown or used (keeps ``distsim --help`` fast), so
    a command and the Python API share one constant. :meth:`resolve` gives an argument's value."""

    def __init__(self, module: str, attr: str):
        self.module, self.attr = module, attr

    def value(self) -> Any:
        return getattr(importlib.import_module(self.module), self.attr)

    def __str__(self) -> str:
        v = self.value()
        return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)

    @staticmethod
    def resolve(v: Any) -> Any:
        return v.value() if isinstance(v, LazyDefault) else v


class LazyChoices:
    """Choices read from a module only when argparse needs them (keeps ``distsim --help`` fast)."""

    def __init__(self, module: str, attr: str, extra: tuple = ()):
        self.module, self.attr, self.extra = module, attr, extra

    def _values(self) -> tuple:
        return self.extra + tuple(getattr(importlib.import_module(self.module), self.attr))

    def __contains__(self, item: object) -> bool:
        return item in self._values()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values())

    def __len__(self) -> int:
        return len(self._values())


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def nonnegative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text}")
    return value


def progress(args: argparse.Namespace) -> bool | None:
    """--quiet: off; --progress: on; else automatic (a terminal or a notebook)."""
    return False if args.quiet else (True if args.progress else None)


def backend(args: argparse.Namespace) -> str | None:
    return "cpu" if args.cpu else None


# ---- the Dask client ------------------------------------------------------------------------------


class LazyClient:
    """A Dask client started on first use (a run first validates its arguments, then asks for workers)."""

    def __init__(self, args: argparse.Namespace):
        self._args = args
        self._client: Any = None

    def _get(self) -> Any:
        if self._client is None:
            _start(self._args, self._keep)
        return self._client

    def _keep(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)

    def shutdown(self, interrupted: bool = False) -> None:
        """Close the client (and the local cluster it started); ``interrupted``: at once, killing the
        local workers rather than waiting for their tasks."""
        client, self._client = self._client, None
        if client is None:
            return
        with contextlib.suppress(Exception):
            if interrupted and hasattr(client, "abort"):
                client.abort()
            else:
                client.close()  # a local cluster closes with its client (distsim.cluster)


def _start(args: argparse.Namespace, keep: Callable[[Any], None]) -> None:
    """Connect or start the cluster, handing the client to ``keep`` as soon as it exists (a Ctrl-C during
    a local start kills its workers: :func:`_start_local`)."""
    from ..cluster import connect, dashboard_link

    scheduler_file = getattr(args, "scheduler_file", None)
    if args.scheduler or scheduler_file:
        if args.scheduler and scheduler_file:
            raise UsageError("give --scheduler or --scheduler-file, not both")
        try:
            client = connect(args.scheduler, scheduler_file=scheduler_file, timeout=CONNECT_TIMEOUT_S)
        except (OSError, ValueError) as e:  # ConnectionError, a missing file, a malformed address
            raise UsageError(str(e).splitlines()[0]) from None
        keep(client)
    else:
        client = _start_local(args)
        keep(client)
    if not args.quiet:
        link = dashboard_link(client)
        print(f"[distsim] cluster: {describe(client)}" + (f"; dashboard {link}" if link else ""), file=sys.stderr)


# ---- Ctrl-C ------------------------------------------------------------------------------------------

REDELIVER_S = 0.25  # a Ctrl-C the command line has not yet met is raised again after this long
_sigint = {"pending": False}


def catch_sigint() -> None:
    """SIGINT in the process's own command line: KeyboardInterrupt as Python's default handler raises it,
    and again every REDELIVER_S until the command line meets it (:func:`sigint_met`). Python drops an
    exception raised inside a garbage collector's callback ("Exception ignored in ..."), and distributed's
    scheduler, which a local cluster runs in this process, hooks one into every collection: a Ctrl-C that
    landed there was lost, and the run went on (a CI flake of test_ctrl_c_while_a_local_cluster_starts).
    Python's report of such a dropped KeyboardInterrupt is not printed: it is raised again."""
    signal.signal(signal.SIGINT, _on_sigint)
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            previous(unraisable)

    sys.unraisablehook = hook


def sigint_met() -> None:
    """The command line has met the KeyboardInterrupt: no more redelivery."""
    _sigint["pending"] = False


def _on_sigint(signum: int, frame: Any) -> None:
    if not _sigint["pending"]:
        _sigint["pending"] = True
        threading.Thread(target=_redeliver, name="distsim-sigint", daemon=True).start()
    raise KeyboardInterrupt


def _redeliver() -> None:
    import _thread

    while True:
        time.sleep(REDELIVER_S)
        if not _sigint["pending"]:
            return
        _thread.interrupt_main(signal.SIGINT)  # runs _on_sigint in the main thread


def _start_local(args: argparse.Namespace) -> Any:
    """Start a local cluster in a helper thread while this (main) thread watches. The helper thread
    blocks SIGINT, and so do the threads and worker processes it starts (a signal mask is inherited
    through fork and exec): a Ctrl-C (sent to the terminal's whole process group) is handled by this
    thread alone, at any moment of the start, which kills the workers spawned so far and raises."""
    from ..cluster import connect, local_security

    gpus = not args.cpu and "auto"
    box: dict[str, Any] = {}
    security = local_security()  # its key, and the dashboard's modules (bokeh: a second), before the start
    with contextlib.suppress(ImportError):
        importlib.import_module("distributed.dashboard.scheduler")

    def start() -> None:
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            box["client"] = connect(gpus=gpus, n_workers=args.workers, security=security,
                                    silence_logs=logging.CRITICAL)
        except BaseException as e:  # noqa: BLE001 (raised in the calling thread)
            box["error"] = e

    if threading.current_thread() is not threading.main_thread():  # signal handlers are the main thread's
        start()
    else:
        helper = threading.Thread(target=start, name="distsim-cluster-start", daemon=True)
        try:
            helper.start()
            while helper.is_alive():
                helper.join(0.02)
        except KeyboardInterrupt:  # the start goes on in its thread; its workers are killed
            sigint_met()
            for child in multiprocessing.active_children():
                with contextlib.suppress(OSError, ValueError):
                    child.kill()
            raise
    if "error" in box:
        raise box["error"]
    return box["client"]


@contextlib.contextmanager
def client(args: argparse.Namespace) -> Iterator[Any]:
    """The Dask client of a command: None with --in-process, else one started on first use and shut
    down quietly at the end (also on errors and Ctrl-C)."""
    if args.in_process:
        yield None
        return
    lazy = LazyClient(args)
    try:
        yield lazy
    except KeyboardInterrupt:
        sigint_met()
        for name in ("asyncio", "distributed", "tornado"):  # the process is ending: no chatter of Dask's
            logging.getLogger(name).setLevel(logging.CRITICAL)  # cancelled tasks after the one line
        lazy.shutdown(interrupted=True)
        raise
    finally:
        lazy.shutdown()


def describe(client: Any) -> str:
    workers = client.scheduler_info(n_workers=-1)["workers"]
    gpus = sum(1 for w in workers.values() if w.get("resources", {}).get("GPU"))
    kind = f"{gpus} GPU worker(s)" if gpus else f"{len(workers)} CPU worker(s)"
    return f"{kind} at {client.scheduler.address}"


# ---- inputs and outputs ---------------------------------------------------------------------------

def parse_initial(text: str) -> Any:
    if text in ("random", "zeros", "ones"):
        return text
    out = {}
    for part in text.split(","):
        name, eq, value = part.partition("=")
        if not eq or value.strip() not in ("0", "1"):
            raise UsageError(f"--initial: expected random, zeros, ones or NODE=0|1,...; got {text!r}")
        out[name.strip()] = int(value)
    return out


def parse_pairs(items: list[str], option: str) -> dict[str, str]:
    """``NAME=TEXT`` items as {name: text}, each name once."""
    out: dict[str, str] = {}
    for item in items:
        name, eq, text = (s.strip() for s in item.partition("="))
        if not eq or not name or not text:
            raise UsageError(f"{option}: expected NAME=VALUE, got {item!r}")
        if name in out:
            raise UsageError(f"{option}: {name!r} is given twice")
        out[name] = text
    return out


def parse_assignments(items: list[str], option: str) -> dict[str, float]:
    """``NAME=VALUE`` items as {name: float}."""
    out = {}
    for item, (name, text) in zip(items, parse_pairs(items, option).items()):
        try:
            out[name] = float(text)
        except ValueError:
            raise UsageError(f"{option}: expected NAME=VALUE, got {item!r}") from None
    return out


def check_outputs(args: argparse.Namespace, data: list[str | os.PathLike | None] = (),
                  figures: list[str | None] = (), files: list[str | None] = ()) -> None:
    """Every output path is checked before any work: ``data`` (result Datasets: known formats),
    ``figures`` (.png) and other ``files``; existing, writable folders, nothing replaced without
    --overwrite, no path used twice."""
    from .. import results

    given = [Path(p) for p in [*data, *figures, *files] if p is not None]
    seen: set[Path] = set()
    for p in given:
        if p.resolve() in seen:
            raise UsageError(f"{p} is named for two outputs")
        seen.add(p.resolve())
    for p in data:
        if p is not None:
            results.check_output_path(p, overwrite=args.overwrite)
    for p in [*figures, *files]:
        if p is None:
            continue
        f = Path(p)
        if p in figures and f.suffix.lower() != ".png":
            raise UsageError(f"{f}: figures are written as .png")
        results.check_folder(f)
        if f.is_dir() or (f.exists() and not args.overwrite):
            raise UsageError(f"{f} exists; choose another path or allow replacing it (--overwrite)")


def finish(args: argparse.Namespace, ds: Any, output: str | os.PathLike | None, t0: float,
           figures: dict[str, tuple[str | None, Callable[[str], Any]]] | None = None) -> int:
    """End of a command: write the result first, then draw each figure (a figure that fails is
    reported, and the data are still written: exit status 1), then print the total time."""
    from .. import results

    status = 0
    if output:
        results.write(ds, output, overwrite=args.overwrite)
        print(f"written: {output}")
    for label, (path, draw) in (figures or {}).items():
        if not path:
            continue
        try:
            draw(path)
            print(f"{label}: {path}")
        except Exception as e:  # noqa: BLE001 -- a figure never costs the computed result
            print(f"distsim: error: the {label} figure {path} could not be drawn: {e}", file=sys.stderr)
            status = 1
    print(f"total {time.perf_counter() - t0:.2f} s")
    return status
