"""Bounded slices of a long CPU kernel call.

Numba's nopython code never sees a signal: a Ctrl-C during one long call is raised only when the
call returns. A shard cuts such a call into slices of about :data:`SLICE_SECONDS` (realizations,
steps, generations), sized by the rate it measures; between two slices Python runs, so a pending
Ctrl-C raises ``KeyboardInterrupt`` there (in-process runs), and :class:`Slices` looks at the run's
time left and at :func:`~distsim.engine.executor.task_cancelled` (a Dask task its client dropped).
The slices are cut only where the work's random numbers do not care (their addresses never depend
on the slicing), and their results are exact integer sums: the same bits as one call.
"""

from __future__ import annotations

import time
from typing import Iterator

from .executor import task_cancelled

SLICE_SECONDS = 0.5  # work between two looks (Ctrl-C, time left, cancellation)
GROWTH = 8  # a slice is at most this many times the one before


class Cancelled(Exception):
    """Raised in a Dask task whose client no longer wants it (its result would be dropped)."""


class Slices:
    """``range(total)`` in consecutive ``(lo, hi)`` slices of about ``seconds`` each: the first of
    ``first`` units, each later one sized by the rate of the one before (a multiple of ``align``,
    at most :data:`GROWTH` times larger; ``seconds`` None: :data:`SLICE_SECONDS`). Iteration stops early when ``time_left`` (seconds from now)
    has passed (``stopped`` = 'time_limit') or the Dask task was cancelled ('cancelled'); ``done``
    is the units the slices handed out cover."""

    def __init__(self, total: int, *, first: int, seconds: float | None = None, time_left: float | None = None,
                 align: int = 1):
        self.total = int(total)
        self.first = max(1, int(first))
        self.seconds = SLICE_SECONDS if seconds is None else seconds
        self.deadline = None if time_left is None else time.monotonic() + time_left
        self.align = max(1, int(align))
        self.done = 0
        self.stopped: str | None = None

    def expired(self) -> str | None:
        """Why the work must stop now ('time_limit', 'cancelled'), or None."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            return "time_limit"
        return "cancelled" if task_cancelled() else None

    def __iter__(self) -> Iterator[tuple[int, int]]:
        size = self.first
        while self.done < self.total:
            hi = min(self.total, self.done + size)
            t0 = time.perf_counter()
            yield self.done, hi
            seconds = time.perf_counter() - t0
            n, self.done = hi - self.done, hi
            if self.done >= self.total:
                return
            self.stopped = self.expired()
            if self.stopped:
                return
            want = int(n * self.seconds / max(seconds, 1e-6))
            size = max(self.align, min(GROWTH * n, want) // self.align * self.align)

    def raise_if_cancelled(self) -> None:
        """For work whose partial result means nothing: a cancelled task raises :class:`Cancelled`."""
        if self.stopped == "cancelled":
            raise Cancelled("the task's client no longer wants its result")
