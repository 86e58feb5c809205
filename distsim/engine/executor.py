"""Executors run one *round*: one task per shard, each a pure function of its payload.

* :class:`LocalExecutor` runs the shards in this process, one after the other.
* :class:`DaskExecutor` submits one task per shard to a ``distributed.Client``. A shard keeps
  returning to the worker that holds its cached state (``workers=[w]`` *with*
  ``allow_other_workers=True``, so a restarted worker never blocks it); tasks are retried on
  errors and recomputed by Dask when their worker dies, except deterministic errors
  (:mod:`.failures`), which come back once as values. Only the small results come back.

Both give identical results: shard tasks depend only on their payload (model, parameters, seed,
shard, round), never on where or how often they ran.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from .. import backends
from ..backends import compiles
from . import registry
from .failures import DETERMINISTIC, TaskError, raise_task_errors


@dataclass(frozen=True)
class ShardContext:
    """What a shard task knows about where it runs."""

    run_id: str
    shard: int
    round: int
    backend: str  # resolved: 'cpu' or 'gpu'


ShardFn = Callable[[ShardContext, Any], Any]
OnDone = Callable[[int], None]  # called with the shard index as each task of a round finishes


def _gpu_index() -> int:
    return int(getattr(backends.dask_worker(), "_distsim_gpu", 0) or 0)


def _worker_address() -> str:
    worker = backends.dask_worker()
    return "local" if worker is None else worker.address


COMPILE_TOPIC = "distsim-compile"  # Dask event topic: a worker started compiling kernels (client prints it)


def task_cancelled() -> bool:
    """True inside a Dask task that its client no longer wants (cancelled, its client interrupted or
    gone): a long task may look between slices of work and return early. False elsewhere."""
    worker = backends.dask_worker()
    if worker is None:
        return False
    try:
        from distributed.worker import thread_state

        state = worker.state.tasks.get(thread_state.key)
    except (ValueError, AttributeError, ImportError):  # not in a Dask task
        return False
    return state is None or state.state in ("cancelled", "released", "forgotten")


def _notice(kind: str, what: str) -> None:
    """Told at once by :mod:`distsim.backends.compiles` when a task starts compiling: printed here, or
    from a Dask worker sent to the client (event topic ``COMPILE_TOPIC``), whose executor prints it
    (a local cluster's workers share the client's terminal: one line, not two)."""
    worker = backends.dask_worker()
    if worker is not None:
        try:
            worker.log_event(COMPILE_TOPIC, {"worker": worker.address, "kind": kind, "what": what})
            return
        except Exception:  # noqa: BLE001 (a notice never fails a task: then it goes to the worker's log)
            pass
    print(compiles.message(kind, what), file=sys.stderr, flush=True)


def _client_notice(event: Any) -> None:
    _, msg = event
    print(compiles.message(msg.get("kind", ""), msg.get("what", ""), msg.get("worker")), file=sys.stderr,
          flush=True)


def execute_shard(fn: ShardFn, run_id: str, round_no: int, shard: int, payload: Any, backend: str) -> tuple[Any, dict]:
    """Run one shard task here (a Dask worker or this process) and time it; ``compile_s`` in its meta is
    the time it spent compiling kernels (0 when every kernel came from the disk caches)."""
    with compiles.announce(_notice):
        c0 = compiles.seconds()
        result, meta = _execute(fn, run_id, round_no, shard, payload, backend)
        meta["compile_s"] = compiles.seconds() - c0
    return result, meta


def _execute(fn: ShardFn, run_id: str, round_no: int, shard: int, payload: Any, backend: str) -> tuple[Any, dict]:
    b = backends.resolve(backend)
    ctx = ShardContext(run_id, shard, round_no, b)
    start = time.time()  # the meta's "start" (epoch seconds: a timeline across processes of one host)
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
            "pid": os.getpid(), "start": start}
    return result, meta


def execute_remote(fn: ShardFn, run_id: str, round_no: int, shard: int, payload: Any,
                   backend: str) -> tuple[Any, dict]:
    """:func:`execute_shard` as a Dask task: a deterministic error comes back as a value (no retry)."""
    try:
        return execute_shard(fn, run_id, round_no, shard, payload, backend)
    except DETERMINISTIC as err:
        return TaskError.of(err), {"worker": _worker_address(), "pid": os.getpid()}


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

    def run_round(self, fn: ShardFn, run_id: str, round_no: int, payloads: Sequence[Any],
                  on_done: OnDone | None = None) -> list[tuple[Any, dict]]:
        out = []
        for s, p in enumerate(payloads):
            out.append(execute_shard(fn, run_id, round_no, s, p, self.backend))
            if on_done is not None:
                on_done(s)
        return out

    def stream(self, fn: ShardFn, run_id: str, payloads: Sequence[Any], round_no: int = 0) -> Iterator[tuple[int, Any, dict]]:
        """Independent tasks, yielded as ``(index, result, meta)`` as each finishes (here: in order)."""
        for s, p in enumerate(payloads):
            yield (s, *execute_shard(fn, run_id, round_no, s, p, self.backend))

    def release(self, run_id: str, cached: bool = True) -> None:
        registry.release(run_id)

    def describe(self) -> str:
        return "in-process"


def _subscribe_compile_notices(client: Any) -> None:
    """Print the workers' compile notices on this client as they come (once per client)."""
    if client is None or getattr(client, "_distsim_compile_notices", False):
        return
    with contextlib.suppress(Exception):  # an older or mocked client: notices stay in the worker logs
        client.subscribe_topic(COMPILE_TOPIC, _client_notice)
        client._distsim_compile_notices = True


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
        self._placement: dict[str, dict[int, str]] = {}  # run id -> shard -> worker of its cached state
        self._round_resources: dict[str, dict | None] = {}  # run id -> the resources its rounds ask for
        # run id -> its last round's futures, released only once the next round is submitted: a release
        # is a message on the client's batched stream to the scheduler, which sends at most one batch
        # per 10 ms, so a release just before a submit would hold the submit back by up to 10 ms
        self._last_round: dict[str, list] = {}
        _subscribe_compile_notices(client)

    def _workers(self) -> dict[str, dict]:
        """The workers now, asked of the scheduler (the client's ``scheduler_info()`` is a cache that
        its periodic refresh may leave without workers)."""
        return self.client.sync(self.client.scheduler.identity, n_workers=-1).get("workers", {})

    def n_workers(self) -> int:
        return max(1, len(self._workers()))

    def uses_gpu(self) -> bool:
        """True when every worker has a GPU (resource ``GPU``) and the backend is not 'cpu'."""
        return self._resources(self._workers()) is not None

    def _resources(self, workers: dict[str, dict]) -> dict | None:
        if self.backend != "cpu" and workers and all(w.get("resources", {}).get("GPU") for w in workers.values()):
            return {"GPU": 1}
        return None

    def _submit(self, fn: ShardFn, run_id: str, round_no: int, s: int, payload: Any, resources: dict | None,
                worker: str | None) -> Any:
        # a preferred worker, never a required one: a shard must not wait for a worker that may be
        # gone; with no known worker, placement is left to Dask
        where = {"workers": [worker], "allow_other_workers": True} if worker else {}
        return self.client.submit(execute_remote, self.wrap(fn) if self.wrap else fn, run_id, round_no, s, payload,
                                  self.backend, key=f"distsim-{run_id}-s{s}-r{round_no}", retries=self.retries,
                                  resources=resources, pure=False, **where)

    def run_round(self, fn: ShardFn, run_id: str, round_no: int, payloads: Sequence[Any],
                  on_done: OnDone | None = None) -> list[tuple[Any, dict]]:
        placed = self._placement.setdefault(run_id, {})
        if run_id in self._round_resources and all(s in placed for s in range(len(payloads))):
            # every shard has its worker from an earlier round: no question to the scheduler (a worker
            # gone since is no obstacle: placement is a preference, and the result names the new one)
            addrs, resources = [], self._round_resources[run_id]
        else:
            workers = self._workers()
            addrs = sorted(workers)
            resources = self._round_resources[run_id] = self._resources(workers)
        previous = self._last_round.pop(run_id, None)
        futures = [self._submit(fn, run_id, round_no, s, p, resources,
                                placed.get(s) or (addrs[s % len(addrs)] if addrs else None))
                   for s, p in enumerate(payloads)]
        del previous  # released after this round's submit (see _last_round)
        try:
            if on_done is not None:
                from distributed import as_completed

                index = {f.key: s for s, f in enumerate(futures)}
                for fut in as_completed(futures, loop=self.client.loop):
                    on_done(index[fut.key])
            results = self.client.gather(futures)
        except BaseException:  # an error, or Ctrl-C: drop the rest of the round
            self.client.cancel(futures)
            raise
        raise_task_errors(results)
        for s, (_, meta) in enumerate(results):
            placed[s] = meta["worker"]
        self._last_round[run_id] = futures
        return results

    def stream(self, fn: ShardFn, run_id: str, payloads: Sequence[Any], round_no: int = 0) -> Iterator[tuple[int, Any, dict]]:
        """Independent tasks (no state, no placement: Dask balances them over all workers), yielded as
        ``(index, result, meta)`` in completion order. Closing the iterator early cancels the rest."""
        from distributed import as_completed

        resources = self._resources(self._workers())
        previous = self._last_round.pop(run_id, None)
        futures = {self._submit(fn, run_id, round_no, s, p, resources, None): s for s, p in enumerate(payloads)}
        del previous  # released after this round's submit (see _last_round)
        pending = set(futures)
        try:
            for fut, (result, meta) in as_completed(list(futures), loop=self.client.loop, with_results=True):
                pending.discard(fut)
                raise_task_errors([(result, meta)])
                yield futures[fut], result, meta
        finally:
            if pending:
                self.client.cancel(list(pending))

    def release(self, run_id: str, cached: bool = True) -> None:
        """Forget the run's placement and (``cached``) drop its state cached on the workers."""
        self._placement.pop(run_id, None)
        self._round_resources.pop(run_id, None)
        self._last_round.pop(run_id, None)
        if not cached:
            return
        try:
            self.client.run(registry.release_async, run_id, wait=False)  # never block on a busy worker
        except Exception:  # a worker may be gone; its cache went with it
            pass

    def describe(self) -> str:
        return f"dask ({self.n_workers()} workers at {self.client.scheduler.address})"


Executor = LocalExecutor | DaskExecutor


def configured_backend(backend: str | None) -> str:
    """``backend``, or when None the Dask config key ``distsim.backend`` ('auto' unless set)."""
    if backend is None:
        import dask

        backend = dask.config.get("distsim.backend", "auto")
    return backend


def executor_for(client: Any = None, backend: str | None = None) -> Executor:
    """``client``: a ``distributed.Client`` (run there), an executor (used as is), or None (the
    default Dask client if one is running, else in-process). ``backend`` None reads the Dask config key
    ``distsim.backend`` ('auto' unless set, e.g. by ``DASK_DISTSIM__BACKEND=cpu``)."""
    if isinstance(client, (LocalExecutor, DaskExecutor)):
        return client
    backend = configured_backend(backend)
    if client is None and "distributed" in sys.modules:  # no default client before distributed is imported
        try:
            from distributed import default_client

            client = default_client()
        except (ValueError, ImportError):
            client = None
        if client is not None and client.status != "running":  # a default client left closing or broken
            client = None
    if client is None:
        return LocalExecutor(backend)
    return DaskExecutor(client, backend)
