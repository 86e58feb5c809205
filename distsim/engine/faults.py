"""Fault injection for tests and drills: a shard task that kills its own worker process once, one
that records its attempts, and one that is always slower (a slow device)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from .executor import ShardContext, ShardFn


@dataclass(frozen=True)
class KillWorkerOnce:
    """Wraps a shard function; the first time (``round``, ``shard``) runs, the worker process exits.

    ``marker`` is a file created just before the kill, so the kill happens once per marker even
    though Dask reruns the task elsewhere.
    """

    fn: ShardFn
    marker: str
    round: int = 1
    shard: int = 0

    def __call__(self, ctx: ShardContext, payload: Any) -> Any:
        if ctx.round == self.round and ctx.shard == self.shard and not os.path.exists(self.marker):
            with open(self.marker, "w") as f:
                f.write(f"killed pid {os.getpid()}\n")
            os._exit(1)
        return self.fn(ctx, payload)


@dataclass(frozen=True)
class RecordAttempts:
    """Wraps a shard function; every attempt of a task leaves a file ``r{round}-s{shard}-{n}`` in
    ``folder``, so a drill can count how often Dask ran (or retried) each task."""

    fn: ShardFn
    folder: str

    def __call__(self, ctx: ShardContext, payload: Any) -> Any:
        n = sum(name.startswith(f"r{ctx.round}-s{ctx.shard}-") for name in os.listdir(self.folder))
        open(os.path.join(self.folder, f"r{ctx.round}-s{ctx.shard}-{n}-{os.getpid()}"), "w").close()
        return self.fn(ctx, payload)


@dataclass(frozen=True)
class SlowShard:
    """Wraps a shard function; shard ``shard`` takes ``seconds`` longer every round (a slower device)."""

    fn: ShardFn
    shard: int = 0
    seconds: float = 0.1

    def __call__(self, ctx: ShardContext, payload: Any) -> Any:
        if ctx.shard == self.shard:
            time.sleep(self.seconds)
        return self.fn(ctx, payload)
