"""Progress reports of long runs."""

from __future__ import annotations

import sys
import time


class Progress:
    """A one-line progress report on stderr for long runs (rate-limited; silent when disabled)."""

    def __init__(self, enabled: bool | None = None, label: str = "distsim", every: float = 0.5):
        self.enabled = sys.stderr.isatty() if enabled is None else bool(enabled)
        self.label = label
        self.every = every
        self._last = 0.0
        self._shown = False

    def update(self, message: str, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if force or now - self._last >= self.every:
            self._last = now
            end = "\r" if sys.stderr.isatty() else "\n"
            print(f"[{self.label}] {message}".ljust(78), end=end, file=sys.stderr, flush=True)
            self._shown = True

    def close(self) -> None:
        if self.enabled and self._shown and sys.stderr.isatty():
            print(file=sys.stderr, flush=True)
