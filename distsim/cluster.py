"""``distsim.connect()``: a Dask client for an existing scheduler, local GPUs, or local CPU cores.

* ``address`` (or ``scheduler_file``) given: connect to that scheduler.
* otherwise, GPUs present (and ``gpus`` not False): a ``dask_cuda.LocalCUDACluster`` with one
  worker per GPU, each advertising the resource ``GPU=1``; if dask-cuda is not installed, a
  ``LocalCluster`` with one worker per GPU, each pinned to its device by a worker plugin.
* otherwise: a ``LocalCluster`` with one single-threaded worker per core (resource ``CPU=1``).

Local clusters listen on 127.0.0.1 only: the scheduler, the workers and their dashboards (plain
HTTP without authentication; ``dashboard_link(client)`` gives the scheduler's; from another machine,
reach it through an SSH tunnel). Dask configuration (YAML in ``~/.config/dask``, ``DASK_*``
environment variables) applies as usual; ``distsim.*`` keys are read from ``dask.config``
(e.g. ``DASK_DISTSIM__BACKEND=cpu``).
GPU counting uses NVML so the client process never creates a CUDA context. A client of a local
cluster closes that cluster when it is closed (``with distsim.connect() as client:`` leaves nothing
running), quietly: Dask's shutdown chatter stays off stderr.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Any, Iterator

import dask
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import WorkerPlugin

dask.config.update_defaults({"distsim": {"backend": "auto", "retries": 3}})


DASK_LOGGERS = ("distributed", "tornado", "asyncio")  # where Dask's shutdown chatter is logged


@contextlib.contextmanager
def quiet_dask_logs() -> Iterator[None]:
    """Dask's shutdown chatter (heartbeats to a closing scheduler, cancelled tasks) stays off stderr."""
    loggers = [logging.getLogger(n) for n in DASK_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _quiet_worker() -> None:
    """Run in each worker process just before its cluster closes: a heartbeat caught mid-flight by
    the closing scheduler is logged there, with a traceback, as an ERROR (seen on a loaded 2-core CI
    host); the logger levels of the client's process do not reach the workers."""
    for name in DASK_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)


class _LocalClient(Client):
    """A client that closes, quietly, the local cluster :func:`connect` started for it (``Client(cluster)``
    leaves the cluster running until the interpreter exits, when its workers may log heartbeat errors)."""

    def close(self, *args: Any, **kwargs: Any) -> Any:
        cluster = getattr(self, "cluster", None)
        if cluster is not None and self.status == "running":
            with contextlib.suppress(Exception):  # bounded: a worker whose task holds the GIL answers late
                self.sync(self._run, _quiet_worker, on_error="ignore", callback_timeout=5)
        with quiet_dask_logs():
            out = super().close(*args, **kwargs)
            if cluster is not None:
                with contextlib.suppress(Exception):
                    cluster.close()
        return out


def count_gpus() -> int:
    """Number of visible NVIDIA GPUs (via NVML; honours CUDA_VISIBLE_DEVICES). 0 when none or no NVML."""
    if os.environ.get("DISTSIM_DISABLE_GPU"):
        return 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return 0
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            n = int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return 0
    if visible:
        n = min(n, len([v for v in visible.split(",") if v.strip()]))
    return n


def _gpu_stack_usable() -> bool:
    try:
        import cupy  # noqa: F401

        return True
    except Exception:
        return False


class _PinGPU(WorkerPlugin):
    """Worker plugin (used without dask-cuda): worker k uses GPU k mod n."""

    name = "distsim-pin-gpu"

    def __init__(self, n_gpus: int):
        self.n_gpus = n_gpus

    def setup(self, worker: Any) -> None:
        try:
            k = int(str(worker.name).split("-")[-1])
        except ValueError:
            k = abs(hash(worker.name))
        worker._distsim_gpu = k % self.n_gpus


def connect(
    address: str | None = None,
    *,
    gpus: bool | int | str = "auto",
    n_workers: int | None = None,
    threads_per_worker: int = 1,
    scheduler_file: str | None = None,
    dashboard_address: str | None = "127.0.0.1:0",
    processes: bool = True,
    **cluster_kwargs: Any,
) -> Client:
    """Return a ``distributed.Client`` (see the module docstring for what it starts).

    ``gpus``: "auto" (use GPUs when present), False (CPU workers only), or a number of GPUs.
    ``n_workers``: CPU workers (default: one per core) or GPU workers (default: one per GPU).
    ``dashboard_address``: where the scheduler's dashboard listens (default: loopback, a free port;
    ``"127.0.0.1:8787"`` for a fixed port; a bare ``":8787"`` listens on every interface).
    Extra keyword arguments go to the cluster class.
    """
    if address is not None or scheduler_file is not None:
        return Client(address, scheduler_file=scheduler_file) if scheduler_file else Client(address)

    n_gpu = _gpus_to_use(gpus, n_workers)
    if n_gpu and _gpu_stack_usable():
        return _gpu_client(n_gpu, threads_per_worker, processes, dashboard_address, cluster_kwargs)
    cores = os.cpu_count() or 1
    cluster = LocalCluster(
        n_workers=n_workers or max(1, cores // max(1, threads_per_worker)),
        threads_per_worker=threads_per_worker,
        processes=processes,
        resources={"CPU": threads_per_worker},
        dashboard_address=dashboard_address,
        **cluster_kwargs,
    )
    return _LocalClient(cluster)


def _gpus_to_use(gpus: bool | int | str, n_workers: int | None) -> int:
    """How many GPU workers ``connect(gpus=, n_workers=)`` asks for (0: CPU workers)."""
    want_gpu = gpus not in (False, 0, "0", "no", "false", "cpu")
    n_gpu = count_gpus() if want_gpu else 0
    if isinstance(gpus, int) and not isinstance(gpus, bool) and gpus > 0:
        if n_gpu < gpus:
            raise RuntimeError(f"{gpus} GPUs requested but {n_gpu} visible")
        n_gpu = gpus
    return min(n_gpu, n_workers) if n_gpu and n_workers else n_gpu


def _gpu_client(n_gpu: int, threads_per_worker: int, processes: bool, dashboard_address: str | None,
                cluster_kwargs: dict) -> Client:
    """One worker per GPU: a LocalCUDACluster, or (without dask-cuda) a LocalCluster whose workers
    are pinned to one GPU each by a plugin."""
    try:
        from dask_cuda import LocalCUDACluster
    except Exception:
        LocalCUDACluster = None
    if LocalCUDACluster is not None:
        cluster = LocalCUDACluster(
            n_workers=n_gpu,
            threads_per_worker=threads_per_worker,
            resources={"GPU": 1},
            device_memory_limit=0,  # state lives in distsim's worker registry, not in Dask's spill
            dashboard_address=dashboard_address,
            **cluster_kwargs,
        )
        return _LocalClient(cluster)
    cluster = LocalCluster(
        n_workers=n_gpu,
        threads_per_worker=threads_per_worker,
        processes=processes,
        resources={"GPU": 1},
        dashboard_address=dashboard_address,
        **cluster_kwargs,
    )
    client = _LocalClient(cluster)
    client.register_plugin(_PinGPU(n_gpu))
    return client


def dashboard_link(client: Any) -> str | None:
    """URL of the scheduler's dashboard for a ``distributed.Client``; None for anything else.

    The host is the scheduler's, or what the Dask key ``distributed.dashboard.link`` makes of it
    (e.g. ``"http://localhost:{port}/status"`` behind an SSH tunnel).
    """
    if not isinstance(client, Client):
        return None
    try:
        return client.dashboard_link or None
    except (KeyError, AttributeError):  # a scheduler without an HTTP server
        return None


def describe_default() -> str:
    """What ``connect()`` would start on this machine (for ``distsim info``)."""
    n_gpu = count_gpus()
    if n_gpu and _gpu_stack_usable():
        try:
            import dask_cuda  # noqa: F401

            return f"LocalCUDACluster with {n_gpu} worker(s), one per GPU (resource GPU=1)"
        except Exception:
            return f"LocalCluster with {n_gpu} GPU worker(s) pinned by plugin (dask-cuda not installed)"
    cores = os.cpu_count() or 1
    return f"LocalCluster with {cores} single-threaded CPU worker(s) (resource CPU=1)"
