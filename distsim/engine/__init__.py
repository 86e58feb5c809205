"""Shards and rounds: the scheduler layer every workload shares.

A *shard* is a block of independent work (chains, realizations, islands) whose state stays on one
worker's device between rounds; a *round* advances every shard and returns small statistics; the
workload's client-side driver decides the next round. Shard tasks are pure functions of their
payload, so Dask may recompute them anywhere and results never depend on the number of workers.
A :class:`Run` holds one run's executor, shards, progress and provenance; :class:`ShardKind`
describes state that stays on the workers (:mod:`.stateful`).
"""

from .executor import (
    DaskExecutor,
    Executor,
    LocalExecutor,
    ShardContext,
    execute_shard,
    executor_for,
    new_run_id,
    task_cancelled,
)
from .failures import DETERMINISTIC, NotRetryable, TaskError
from .progress import Progress
from .run import Run, StatefulShards
from .shards import split
from .slices import SLICE_SECONDS, Cancelled, Slices
from .stateful import Missing, ShardKind, StateTask, StepDelta, run_state_task, wire_step

__all__ = [
    "DETERMINISTIC",
    "SLICE_SECONDS",
    "Cancelled",
    "DaskExecutor",
    "Executor",
    "LocalExecutor",
    "Missing",
    "NotRetryable",
    "Progress",
    "Run",
    "ShardContext",
    "ShardKind",
    "Slices",
    "StateTask",
    "StatefulShards",
    "StepDelta",
    "TaskError",
    "execute_shard",
    "executor_for",
    "new_run_id",
    "run_state_task",
    "split",
    "task_cancelled",
    "wire_step",
]
