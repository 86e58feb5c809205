"""Shards and rounds: the scheduler layer every workload shares.

A *shard* is a block of independent work (chains, realizations, islands) whose state stays on one
worker's device between rounds; a *round* advances every shard and returns small statistics; the
workload's client-side driver decides the next round. Shard tasks are pure functions of their
payload, so Dask may recompute them anywhere and results never depend on the number of workers.
"""

from .executor import (
    DaskExecutor,
    Executor,
    LocalExecutor,
    ShardContext,
    execute_shard,
    executor_for,
    new_run_id,
)
from .progress import Progress
from .shards import split

__all__ = [
    "DaskExecutor",
    "Executor",
    "LocalExecutor",
    "Progress",
    "ShardContext",
    "execute_shard",
    "executor_for",
    "new_run_id",
    "split",
]
