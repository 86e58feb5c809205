"""Progress reports of long runs: a ``tqdm.auto`` bar (terminal or Jupyter) with percent and ETA.

A run has a known total (realizations, steps, generations, iterations, points) or none: then the
bar shows the count and the driver's message only. ``log`` prints a plain line that is never
skipped (e.g. one per steady-state round). ``enabled=None`` (the default of every workload's
``progress=``) shows progress in a terminal or a Jupyter kernel and stays quiet otherwise (logs,
pipes, batch jobs); ``True`` forces it on, ``False`` off.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any


def _in_jupyter() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    try:
        return type(shell.get_ipython()).__name__ == "ZMQInteractiveShell"
    except Exception:
        return False


def interactive() -> bool:
    """True in a terminal (stderr is a TTY) or a Jupyter kernel."""
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):
        tty = False
    return tty or _in_jupyter()


def _tqdm() -> Any:
    with warnings.catch_warnings():  # no ipywidgets in Jupyter: tqdm.auto falls back to text and says so
        warnings.simplefilter("ignore")
        from tqdm.auto import tqdm
    return tqdm


class Progress:
    """Percent and ETA of one run (silent when disabled; every method is then a no-op)."""

    def __init__(self, enabled: bool | None = None, label: str = "distsim"):
        self.enabled = interactive() if enabled is None else bool(enabled)
        self.label = label
        self._bar: Any = None

    def start(self, message: str, total: float | None = None, unit: str = "it") -> None:
        """Print ``message`` as a line, then show a bar counting ``unit`` up to ``total`` (None: unknown)."""
        if not self.enabled:
            return
        self.log(message)
        self.close()
        tty = interactive()
        self._bar = _tqdm()(total=total, desc=self.label, unit=unit, file=sys.stderr, dynamic_ncols=True,
                            mininterval=0.5 if tty else 10.0, unit_scale=total is None or total >= 10_000,
                            leave=True)

    def update(self, done: float | None = None, *, total: float | None = None, message: str | None = None) -> None:
        """Set the count reached (absolute), a new best-known ``total`` and the status text."""
        bar = self._bar
        if bar is None:
            return
        if total is not None and total != bar.total:
            bar.total = total
            if getattr(bar, "container", None) is not None:  # a Jupyter widget: its own maximum
                bar.container.children[1].max = total
        if message is not None:
            bar.set_postfix_str(message, refresh=False)
        bar.update(0 if done is None else done - bar.n)  # redraws at most every mininterval

    def add(self, amount: float) -> None:
        """Move the count on by ``amount``."""
        if self._bar is not None:
            self._bar.update(amount)

    def log(self, message: str) -> None:
        """One plain line, printed above the bar."""
        if not self.enabled:
            return
        line = f"[{self.label}] {message}"
        if self._bar is not None:
            self._bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
