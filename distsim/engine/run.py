"""One distributed run: what every workload driver used to rebuild by hand.

A :class:`Run` owns the executor, the run id, the progress report, the collected task metas, the
round counter and the device seconds, and releases the workers' cached state on exit (also on an
error or Ctrl-C). A driver then reads as: payloads, a shard function, a stopping rule and a
dataset builder::

    with engine.Run("ssa", client, backend, progress=progress, label="ssa simulate") as run:
        shards = run.split(realizations, align=64)
        out = run.round(simulate_block, [Block(...) for r in shards])
    ds.attrs = run.provenance(workload="ssa.simulate", seed=seed, ...)
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Iterator, Sequence

from .. import results
from .executor import OnDone, ShardFn, executor_for, new_run_id
from .progress import Progress
from .shards import split
from .stateful import Missing, ShardKind, StateTask, run_state_task, wire_step

REBUILD = 1 << 24  # round number of the rebuild of round r: REBUILD + r


class Run:
    """Executor, shards, run id, progress, metas and provenance of one run (a context manager)."""

    def __init__(self, name: str, client: Any = None, backend: str | None = None, *, progress: bool | None = None,
                 label: str | None = None):
        self.executor = executor_for(client, backend)
        self.run_id = new_run_id(name)
        self.progress = Progress(progress, label or name)
        self.metas: list[dict] = []  # one per task that ran (worker, backend, device, seconds)
        self.rounds = 0
        self.device_seconds = 0.0  # sum over rounds of the slowest task
        self.round_seconds = 0.0  # sum over rounds of the client's wall time
        self.last_round_seconds = 0.0
        self.round_log: list[tuple[float, list[float], list[str]]] = []  # wall s, task s and worker per shard
        self.t_start = time.perf_counter()
        self._cached = False  # stateful shards may have left state on the workers
        self._closed = False

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Release the run's cached state and close its progress report (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.executor.release(self.run_id, cached=self._cached)
        finally:
            self.progress.close()

    def n_workers(self) -> int:
        return self.executor.n_workers()

    def uses_gpu(self) -> bool:
        return self.executor.uses_gpu()

    def describe(self) -> str:
        return self.executor.describe()

    def elapsed(self) -> float:
        return time.perf_counter() - self.t_start

    def split(self, n_items: int, *, align: int = 1, shards: int | None = None) -> list[range]:
        """``n_items`` in contiguous ranges, one per worker unless ``shards`` is given."""
        return split(n_items, self.n_workers() if shards is None else shards, align)

    def round(self, fn: ShardFn, payloads: Sequence[Any], *, counts: Sequence[float] | None = None) -> list[Any]:
        """One task per payload; their results in order. ``counts``: how far each finished task
        moves the progress bar (e.g. its realizations), for rounds that are the whole run."""
        on_done = None
        if counts is not None:
            def on_done(s: int) -> None:
                self.progress.add(counts[s])
        out = self._run(fn, payloads, self.rounds, on_done)
        self.rounds += 1
        return out

    def rebuild(self, fn: ShardFn, payloads: Sequence[Any], round_no: int) -> list[Any]:
        """Rerun some shards of round ``round_no`` (``None`` payloads are no-ops; their metas are dropped)."""
        return self._run(fn, payloads, REBUILD + round_no, None)

    def stream(self, fn: ShardFn, payloads: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Independent tasks, yielded as ``(index, result)`` in completion order."""
        with contextlib.closing(self.executor.stream(fn, self.run_id, payloads, self.rounds)) as it:
            for index, result, meta in it:
                self.metas.append(meta)
                yield index, result
        self.rounds += 1

    def stateful(self, kind: ShardKind, setups: Sequence[Any]) -> StatefulShards:
        """Shards whose state stays on their workers between rounds (see :mod:`.stateful`)."""
        self._cached = True
        return StatefulShards(self, kind, setups)

    def timings(self) -> dict[str, Any]:
        """Where a run's wall time went, as Dataset attrs (lists as comma-separated text): each task's
        seconds (``task_seconds``, round by round; ``round_tasks`` per round) and worker
        (``task_workers``), each round's wall time on the client (``round_wall_s``). Summed over
        rounds: ``round_imbalance_s`` (slowest task minus the mean: uneven shards or a slower device),
        ``round_overhead_s`` (round wall time minus the slowest task: scheduling, transfers) and
        ``between_rounds_s`` (the client's own work between rounds)."""
        walls = [w for w, _, _ in self.round_log]
        tasks = [t for _, t, _ in self.round_log]
        return {
            "task_seconds": ",".join(f"{s:.4f}" for t in tasks for s in t),
            "round_tasks": ",".join(str(len(t)) for t in tasks), "round_wall_s": ",".join(f"{w:.4f}" for w in walls),
            "task_workers": ",".join(w for _, _, ws in self.round_log for w in ws),
            "round_imbalance_s": float(sum(max(t) - sum(t) / len(t) for t in tasks)),
            "round_overhead_s": float(sum(w - max(t) for w, t in zip(walls, tasks))),
            "between_rounds_s": float(max(0.0, self.elapsed() - sum(walls))),
        }

    def provenance(self, **fields: Any) -> dict[str, Any]:
        """The Dataset attrs: the run's backend, devices, executor and wall time, plus ``fields``."""
        return results.provenance(
            backend=",".join(sorted({m["backend"] for m in self.metas})) or None,
            devices=[m["device"] for m in self.metas], executor=self.describe(), wall_time_s=self.elapsed(),
            **fields)

    def _run(self, fn: ShardFn, payloads: Sequence[Any], round_no: int, on_done: OnDone | None) -> list[Any]:
        extra = {} if on_done is None else {"on_done": on_done}
        t0 = time.perf_counter()
        out = self.executor.run_round(fn, self.run_id, round_no, payloads, **extra)
        self.last_round_seconds = time.perf_counter() - t0
        self.round_seconds += self.last_round_seconds
        metas = [m for (_, m), p in zip(out, payloads) if p is not None]
        self.metas.extend(metas)
        if metas:
            self.device_seconds += max(m["seconds"] for m in metas)
            self.round_log.append((self.last_round_seconds, [m["seconds"] for m in metas],
                                   [m["worker"] for m in metas]))
        return [r for r, _ in out]


class StatefulShards:
    """The client side of a run's stateful shards: one step per shard per round, each shard's log
    of steps, and the rebuild of shards whose state was lost."""

    def __init__(self, run: Run, kind: ShardKind, setups: Sequence[Any]):
        self.run = run
        self.kind = kind
        self.setups = list(setups)
        self.log: list[list[Any]] = [[] for _ in self.setups]
        self.tags = [kind.tag(setup) for setup in self.setups]  # the states' cache keys, sent with later steps
        self.index = 0

    def __len__(self) -> int:
        return len(self.setups)

    def advance(self, steps: Sequence[Any] | None = None) -> list[Any]:
        """Apply one step to every shard (``None``: each shard's step is None); the results in shard order.
        The first round sends each shard's setup; later ones only the step (the worker keeps the setup:
        see :mod:`.stateful`), the setup again only to rebuild a shard that answered :class:`Missing`."""
        steps = [None] * len(self) if steps is None else list(steps)
        if self.index == 0:
            tasks = [StateTask(self.kind, setup, step, 0) for setup, step in zip(self.setups, steps)]
        else:
            tasks = [StateTask(self.kind, None, wire_step(setup, step), self.index, tag=tag)
                     for setup, step, tag in zip(self.setups, steps, self.tags)]
        round_no = self.run.rounds
        out = self.run.round(run_state_task, tasks)
        missing = [s for s, r in enumerate(out) if isinstance(r, Missing)]
        if missing:
            redo = [StateTask(self.kind, self.setups[s], steps[s], self.index, tuple(self.log[s])) if s in missing
                    else None for s in range(len(self))]  # None: nothing to redo (keeps the shard's placement)
            again = self.run.rebuild(run_state_task, redo, round_no)
            for s in missing:
                out[s] = again[s]
        if not self.kind.replays_itself:
            for log, step in zip(self.log, steps):
                log.append(step)
        self.index += 1
        return out
