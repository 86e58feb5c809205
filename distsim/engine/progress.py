"""Progress reports of long runs: one report per run, with percent and ETA where the total is known.

In a terminal or a Jupyter kernel the report is a ``tqdm.auto`` bar (a widget in Jupyter when
ipywidgets is installed: ``pip install "distsim-bio[notebook]"``). Elsewhere (logs of batch jobs,
``nohup``, pipes) it is a plain line every :data:`LINE_INTERVAL_S` seconds, so a log shows a long
run's progress without a carriage-return bar. The ETA is the remaining count at the average rate
since the start (rounds arrive in bursts: a recent rate swings).

A run has a known total (realizations, steps, generations, iterations, points) or none: then the
report shows the count and the driver's message only. A total given later (a steady state once it
knows its sample size) replaces the earlier estimate; drivers give none until they know it, so the
percentage never falls back. ``log`` prints a plain line (e.g. one per steady-state round).

``enabled``: ``None`` (the default of every workload's ``progress=``) shows a bar in a terminal or a
notebook, and elsewhere stays quiet for the first :data:`LINE_INTERVAL_S` seconds (a short run prints
nothing), then prints its lines; ``True`` prints from the start; ``False`` nothing.
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from typing import Any

LINE_INTERVAL_S = 30.0  # seconds between two plain lines (not a terminal)
_now = time.monotonic  # the clock of the plain lines (tests set it)
_LINE_FORMAT = "{percentage:3.0f}% {n_fmt}/{total_fmt} {unit} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"
_LINE_FORMAT_NO_TOTAL = "{n_fmt} {unit} [{elapsed}, {rate_fmt}{postfix}]"


def _in_jupyter() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    try:
        return type(shell.get_ipython()).__name__ == "ZMQInteractiveShell"
    except Exception:
        return False


def _is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def interactive() -> bool:
    """True in a terminal (stderr is a TTY) or a Jupyter kernel."""
    return _is_tty() or _in_jupyter()


_HINTED = False


def _tqdm() -> Any:
    """``tqdm.auto.tqdm``: a widget in Jupyter with ipywidgets, else text (then a hint, once)."""
    global _HINTED
    with warnings.catch_warnings():  # tqdm's own warning names a Jupyter upgrade: say what to install instead
        warnings.simplefilter("ignore")
        from tqdm.auto import tqdm
    if _in_jupyter() and not _HINTED:
        _HINTED = True
        try:
            import ipywidgets  # noqa: F401
        except ImportError:
            print('[distsim] progress bars as text: pip install ipywidgets (or "distsim-bio[notebook]") for '
                  "widgets", file=sys.stderr)
    return tqdm


class _Lines:
    """Plain progress lines for logs: a line every LINE_INTERVAL_S from a timer thread (so a long round
    is reported too), and one at the end; the part of tqdm's API that Progress uses."""

    def __init__(self, label: str, total: float | None, unit: str, unit_scale: bool, wait: bool):
        self.label, self.total, self.unit, self.unit_scale = label, total, unit, unit_scale
        self.n: float = 0
        self.postfix = ""
        self.t0 = _now()
        self.printing = not wait  # wait: nothing until the run has lasted LINE_INTERVAL_S
        self.header: str | None = None  # the first line logged while waiting (the run's start message)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, args=(LINE_INTERVAL_S,), daemon=True,
                                        name="distsim-progress")
        self._ticker.start()

    def _line(self) -> str:
        from tqdm import tqdm

        total = self.total if self.total else None
        meter = tqdm.format_meter(min(self.n, total) if total else self.n, total, _now() - self.t0,
                                  unit=self.unit, unit_scale=self.unit_scale, postfix=self.postfix or None,
                                  bar_format=_LINE_FORMAT if total else _LINE_FORMAT_NO_TOTAL)
        return f"[{self.label}] {meter}"

    def _tick(self, interval: float) -> None:
        while not self._stop.wait(interval):
            with self._lock:
                if not self.printing:
                    self.printing = True
                    if self.header is not None:
                        print(self.header, file=sys.stderr, flush=True)
                print(self._line(), file=sys.stderr, flush=True)

    def update(self, amount: float) -> None:
        with self._lock:
            self.n += amount

    def set_postfix_str(self, text: str, refresh: bool = False) -> None:
        with self._lock:
            self.postfix = text

    def write(self, line: str, file: Any = None) -> None:
        with self._lock:
            if self.printing:
                print(line, file=sys.stderr, flush=True)
            elif self.header is None:
                self.header = line

    def close(self) -> None:
        self._stop.set()
        self._ticker.join()
        if self.printing:
            print(self._line(), file=sys.stderr, flush=True)


class Progress:
    """Percent and ETA of one run (silent when disabled; every method is then a no-op)."""

    def __init__(self, enabled: bool | None = None, label: str = "distsim"):
        self.enabled = True if enabled is None else bool(enabled)
        self._wait = enabled is None  # automatic: quiet outside a terminal unless the run is long
        self.label = label
        self._bar: Any = None

    def start(self, message: str, total: float | None = None, unit: str = "it") -> None:
        """Print ``message`` as a line, then show a bar counting ``unit`` up to ``total`` (None: unknown)."""
        if not self.enabled:
            return
        self.close()
        unit_scale = total is None or total >= 10_000
        if interactive():
            self._bar = _tqdm()(total=total, desc=self.label, unit=unit, file=sys.stderr, dynamic_ncols=True,
                                mininterval=0.5, smoothing=0, unit_scale=unit_scale, leave=True)
        else:
            self._bar = _Lines(self.label, total, unit, unit_scale, wait=self._wait)
        self.log(message)

    def update(self, done: float | None = None, *, total: float | None = None, message: str | None = None) -> None:
        """Set the count reached (absolute), the total once known (or a better estimate) and the status text."""
        bar = self._bar
        if bar is None:
            return
        if total is not None and total != bar.total:
            bar.total = max(total, bar.n if done is None else done)
            if getattr(bar, "container", None) is not None:  # a Jupyter widget: its own maximum
                bar.container.children[1].max = bar.total
        if message is not None:
            bar.set_postfix_str(message, refresh=False)
        bar.update(0 if done is None else done - bar.n)  # redraws at most every mininterval

    def add(self, amount: float) -> None:
        """Move the count on by ``amount``."""
        if self._bar is not None:
            self._bar.update(amount)

    def log(self, message: str) -> None:
        """One plain line, printed above the bar (outside a terminal: once lines are printed)."""
        if not self.enabled:
            return
        line = f"[{self.label}] {message}"
        if self._bar is not None:
            self._bar.write(line, file=sys.stderr)
        elif not self._wait or interactive():
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
