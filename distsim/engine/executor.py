"""Executors run one *round*: one task per shard, each a pure function of its payload.

* :class:`LocalExecutor` runs the shards in this process, one after the other.
* :class:`DaskExecutor` submits one task per shard to a ``distributed.Client``. A shard keeps
  returning to the worker that holds its cached state (``workers=[w]`` *with*
  ``allow_other_workers=True``, so a restarted worker never blocks it); tasks are retried on
  errors and recomputed by Dask when their worker dies. Only the small results come back.

Both give identical results: shard tasks depend only on their payload (model, parameters, seed,
shard, round), never on where or how often they ran.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from .. import backends
from . import registry


@dataclass(frozen=True)
class ShardContext:
    """What a shard task knows about where it runs."""

    run_id: str
    shard: int
    round: int
    backend: str  # resolved: 'cpu' or 'gpu'

    def cached(self, tag: str = "") -> Any:
        return registry.get(self.run_id, self.shard, tag)

    def cache(self, value: Any, tag: str = "") -> None:
        registry.put(self.run_id, self.shard, value, tag)


ShardFn = Callable[[ShardContext, Any], Any]


def _gpu_index() -> int:
    try:
        from distributed import get_worker

        return int(getattr(get_worker(), "_distsim_gpu", 0))
    except Exception:
        return 0


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except Exception:
        return "local"


def execute_shard(fn: ShardFn, run_id: str, round_no: int, shard: int, payload: Any, backend: str) -> tuple[Any, dict]:
    """Run one shard task here (a Dask worker or this process) and time it."""
    b = backends.resolve(backend)
    ctx = ShardContext(run_id, shard, round_no, b)
    t0 = time.perf_counter()
    if b == "gpu":
        import cupy

        with cupy.cuda.Device(_gpu_index()):
            result = fn(ctx, payload)
            cupy.cuda.get_current_stream().synchronize()
            device = backends.device_description("gpu")
    else:
        import numba

        numba.set_num_threads(min(backends.cpu_threads(), numba.config.NUMBA_NUM_THREADS))
        result = fn(ctx, payload)
        device = backends.device_description("cpu")
    meta = {"worker": _worker_address(), "backend": b, "device": device, "seconds": time.perf_counter() - t0,
            "pid": os.getpid()}
    return result, meta


def new_run_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


class LocalExecutor:
    """Runs every shard in this process (no cluster)."""

    kind = "local"

    def __init__(self, backend: str = "auto"):
        self.backend = backend

    def n_workers(self) -> int:
        return 1

    def uses_gpu(self) -> bool:
        return backends.resolve(self.backend) == "gpu"

    def run_round(self, fn: ShardFn, run_id: str, round_no: int, payloads: Sequence[Any]) -> list[tuple[Any, dict]]:
        return [execute_shard(fn, run_id, round_no, s, p, self.backend) for s, p in enumerate(payloads)]

    def stream(self, fn: ShardFn, run_id: str, payloads: Sequence[Any], round_no: int = 0) -> Iterator[tuple[int, Any, dict]]:
        """Independent tasks, yielded as ``(index, result, meta)`` as each finishes (here: in order)."""
        for s, p in enumerate(payloads):
            yield (s, *execute_shard(fn, run_id, round_no, s, p, self.backend))

    def release(self, run_id: str) -> None:
        registry.release(run_id)

    def describe(self) -> str:
        return "in-process"


class DaskExecutor:
    """Runs shards as Dask tasks on a ``distributed.Client``."""

    kind = "dask"

    def __init__(self, client: Any, backend: str = "auto", retries: int | None = None,
                 wrap: Callable[[ShardFn], ShardFn] | None = None):
        import dask

        self.client = client
        self.backend = backend
        self.wrap = wrap  # e.g. fault injection (distsim.engine.faults)
        self.retries = int(dask.config.get("distsim.retries", 3) if retries is None else retries)
        self._placement: dict[tuple[str, int], str] = {}

    def _workers(self) -> dict[str, dict]:
        return self.client.scheduler_info(n_workers=-1)["workers"]

    def n_workers(self) -> int:
        return max(1, len(self._workers()))

    def uses_gpu(self) -> bool:
        """True when every worker has a GPU (resource ``GPU``) and the backend is not 'cpu'."""
        return self._resources() is not None

    def _resources(self) -> dict | None:
        workers = self._workers()
        if self.backend != "cpu" and workers and all(w.get("resources", {}).get("GPU") for w in workers.values()):
            return {"GPU": 1}
        return None

    def run_round(self, fn: ShardFn, run_id: str, round_no: int, payloads: Sequence[Any]) -> list[tuple[Any, dict]]:
        addrs = sorted(self._workers())
        resources = self._resources()
        futures = []
        for s, payload in enumerate(payloads):
            pref = self._placement.get((run_id, s)) or (addrs[s % len(addrs)] if addrs else None)
            futures.append(self.client.submit(
                execute_shard, self.wrap(fn) if self.wrap else fn, run_id, round_no, s, payload, self.backend,
                key=f"distsim-{run_id}-s{s}-r{round_no}",
                workers=[pref] if pref else None,
                allow_other_workers=True,  # never wait for a worker that may be gone
                retries=self.retries,
                resources=resources,
                pure=False,
            ))
        results = self.client.gather(futures)
        for s, (_, meta) in enumerate(results):
            self._placement[(run_id, s)] = meta["worker"]
        return results

    def stream(self, fn: ShardFn, run_id: str, payloads: Sequence[Any], round_no: int = 0) -> Iterator[tuple[int, Any, dict]]:
        """Independent tasks (no state, no placement: Dask balances them over all workers), yielded as
        ``(index, result, meta)`` in completion order. Closing the iterator early cancels the rest."""
        from distributed import as_completed

        resources = self._resources()
        task = self.wrap(fn) if self.wrap else fn
        futures = {self.client.submit(execute_shard, task, run_id, round_no, s, payload, self.backend,
                                      key=f"distsim-{run_id}-s{s}-r{round_no}", retries=self.retries,
                                      resources=resources, pure=False): s for s, payload in enumerate(payloads)}
        pending = set(futures)
        try:
            for fut, (result, meta) in as_completed(list(futures), loop=self.client.loop, with_results=True):
                pending.discard(fut)
                yield futures[fut], result, meta
        finally:
            if pending:
                self.client.cancel(list(pending))

    def release(self, run_id: str) -> None:
        for key in [k for k in self._placement if k[0] == run_id]:
            del self._placement[key]
        try:
            self.client.run(registry.release_async, run_id, wait=False)  # never block on a busy worker
        except Exception:  # a worker may be gone; its cache went with it
            pass

    def describe(self) -> str:
        return f"dask ({self.n_workers()} workers at {self.client.scheduler.address})"


Executor = LocalExecutor | DaskExecutor


def executor_for(client: Any = None, backend: str | None = None) -> Executor:
    """``client``: a ``distributed.Client`` (run there), an executor (used as is), or None (the
    default Dask client if one exists, else in-process). ``backend`` None reads the Dask config key
    ``distsim.backend`` ('auto' unless set, e.g. by ``DASK_DISTSIM__BACKEND=cpu``)."""
    if isinstance(client, (LocalExecutor, DaskExecutor)):
        return client
    if backend is None:
        import dask

        backend = dask.config.get("distsim.backend", "auto")
    if client is None:
        try:
            from distributed import default_client

            client = default_client()
        except (ValueError, ImportError):
            client = None
    if client is None:
        return LocalExecutor(backend)
    return DaskExecutor(client, backend)
