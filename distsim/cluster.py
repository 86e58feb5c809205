"""``distsim.connect()``: a Dask client for an existing scheduler, local GPUs, or local CPU cores.

* ``address`` (or ``scheduler_file``) given: connect to that scheduler.
* otherwise, GPUs present (and ``gpus`` not False): a ``dask_cuda.LocalCUDACluster`` with one
  worker per GPU, each advertising the resource ``GPU=1``; if dask-cuda is not installed, a
  ``LocalCluster`` with one worker per GPU, each pinned to its device by a worker plugin.
* otherwise: a ``LocalCluster`` with one single-threaded worker per usable CPU (resource ``CPU=1``;
  :func:`usable_cpus`: the process's CPU affinity and its cgroup's CPU quota, not the machine's cores).

Local clusters are the owner's alone: every Dask connection (client, scheduler, nannies, workers)
is mutual TLS with a temporary key and self-signed certificate made for that cluster, held in
memory and handed to the worker processes (``distributed.security.Security.temporary()``), so
another account on the same machine that reaches the ports cannot submit work (code runs as the
owner). ``connect(security=False)`` gives the old open cluster; to share one on purpose, start a
scheduler with certificates the others hold (``deployments/tls``). They listen on 127.0.0.1 only:
the scheduler, the workers and their dashboards (plain HTTP without authentication; read-only
pages; ``dashboard_link(client)`` gives the scheduler's; from another machine, reach it through an
SSH tunnel). Dask configuration (YAML in ``~/.config/dask``, ``DASK_*``
environment variables) applies as usual; ``distsim.*`` keys are read from ``dask.config``
(e.g. ``DASK_DISTSIM__BACKEND=cpu``).
GPU counting uses NVML so the client process never creates a CUDA context. A client of a local
cluster closes that cluster when it is closed (``with distsim.connect() as client:`` leaves nothing
running), quietly: Dask's shutdown chatter stays off stderr.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from pathlib import Path
from typing import Any, Iterator

import dask
from distributed import Client, LocalCluster
from distributed.core import Status
from distributed.diagnostics.plugin import WorkerPlugin
from distributed.security import Security

from .backends import count_gpus  # noqa: F401 -- its home is backends (no Dask import); used here and by callers

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


def _not_a_cancelled_gather(record: logging.LogRecord) -> bool:
    """Drops asyncio's "Task exception was never retrieved" for a ``Client.gather`` left by Ctrl-C
    (Dask's internal ``AllExit``): a traceback after the one line of an interrupted run."""
    exc = record.exc_info[1] if record.exc_info else None
    return type(exc).__name__ != "AllExit"


logging.getLogger("asyncio").addFilter(_not_a_cancelled_gather)


def _quiet_worker() -> None:
    """Run in each worker process just before its cluster closes: a heartbeat caught mid-flight by
    the closing scheduler is logged there, with a traceback, as an ERROR (seen on a loaded 2-core CI
    host); the logger levels of the client's process do not reach the workers."""
    for name in DASK_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)


class _LocalClient(Client):
    """A client that closes, quietly, the local cluster :func:`connect` started for it (``Client(cluster)``
    leaves the cluster running until the interpreter exits, when its workers may log heartbeat errors).
    Left by Ctrl-C (``with connect() as client:``), or through :meth:`abort`, it stops the cluster at
    once: its worker processes are killed, not asked to finish their tasks."""

    def close(self, *args: Any, **kwargs: Any) -> Any:
        cluster = getattr(self, "cluster", None)
        if self.status in ("closed", "newly-created") and getattr(cluster, "status", None) in (None, Status.closed):
            # done. Client.__del__ calls this from the garbage collector, which may interrupt a thread that
            # holds distributed's class-wide LoopRunner lock (collect_failed_clients): a second
            # cluster.close() would wait on it
            return super().close(*args, **kwargs)  # returns at once (no lock)
        if cluster is not None and self.status == "running":
            with contextlib.suppress(Exception):  # bounded: a worker whose task holds the GIL answers late
                self.sync(self._run, _quiet_worker, on_error="ignore", callback_timeout=5)
        with quiet_dask_logs():
            out = super().close(*args, **kwargs)
            if cluster is not None:
                with contextlib.suppress(Exception):
                    cluster.close()
        return out

    def abort(self) -> None:
        """Stop the local cluster now (an interrupted run): kill its worker processes, then close."""
        cluster = getattr(self, "cluster", None)
        with quiet_dask_logs():
            if cluster is not None:
                kill_workers(cluster)
            with contextlib.suppress(Exception):
                super().close(timeout=2)
            if cluster is not None:
                with contextlib.suppress(Exception):
                    cluster.close(timeout=2)

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            self.abort()
        else:
            super().__exit__(exc_type, *rest)


def kill_workers(cluster: Any) -> None:
    """SIGKILL the worker processes a local cluster started (by their process ids; threads: nothing)."""
    import signal

    from distributed.core import Status

    for nanny in list(getattr(cluster, "workers", {}).values()):
        pid = getattr(nanny, "pid", None)
        if pid:
            nanny.status = Status.closing_gracefully  # its nanny then closes instead of restarting it
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


CONNECT_TIMEOUT_S = 10  # an address or scheduler file that does not answer fails after this long


def local_security() -> Security:
    """A temporary key and self-signed certificate for one local cluster (mutual TLS, in memory)."""
    try:
        return Security.temporary()
    except ImportError as e:  # cryptography is a dependency; a broken install says so
        raise ImportError("distsim's local clusters use TLS with a temporary certificate, which needs the "
                          "'cryptography' package (pip install cryptography)") from e


def usable_cpus() -> int:
    """CPUs this process may use: its affinity mask (taskset, SLURM, cpusets), capped by the CPU quota
    of its cgroup (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``/``cpu.cfs_period_us``; containers,
    Kubernetes limits), rounded up; at least 1."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    if quota is not None:
        n = min(n, max(1, math.ceil(quota)))
    return max(1, n)


CGROUP_ROOT = Path("/sys/fs/cgroup")


def _cgroup_cpu_quota(root: Path = CGROUP_ROOT, membership: Path = Path("/proc/self/cgroup")) -> float | None:
    """The CPU quota (in CPUs) of this process's cgroup, or None if unlimited or unknown."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        lines = []
    fields = [ln.split(":", 2) for ln in lines if ln.count(":") >= 2]
    v2 = [f[2] for f in fields if f[0] == "0" and f[1] == ""]
    v1 = [f[2] for f in fields if "cpu" in f[1].split(",")]
    for rel in v2 + [""]:  # v2: the process's own group, then the mount's root (a container's view)
        q = _read_quota_v2(root / rel.lstrip("/") / "cpu.max")
        if q is not None:
            return q
    for base in (root / "cpu", root / "cpu,cpuacct"):
        for rel in v1 + [""]:
            q = _read_quota_v1(base / rel.lstrip("/"))
            if q is not None:
                return q
    return None


def _read_quota_v2(path: Path) -> float | None:
    try:
        quota, period = path.read_text().split()[:2]
    except (OSError, ValueError):
        return None
    return None if quota == "max" or int(period) <= 0 else int(quota) / int(period)


def _read_quota_v1(folder: Path) -> float | None:
    try:
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota <= 0 or period <= 0 else quota / period


def gpu_inventory() -> list[dict[str, Any]]:
    """Every visible NVIDIA GPU, from NVML (no CUDA context): index (NVML's, i.e. physical), name,
    memory (GiB), compute capability, PCI bus id, and the driver and the CUDA version it supports.
    Empty without GPUs or NVML (``pynvml``, from ``nvidia-ml-py``: the gpu extra)."""
    if not count_gpus():
        return []
    import pynvml

    def text(v: Any) -> str:
        return v.decode() if isinstance(v, bytes) else str(v)

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    pynvml.nvmlInit()
    try:
        n = int(pynvml.nvmlDeviceGetCount())
        indices = list(range(n))
        if visible and all(v.strip().isdigit() for v in visible.split(",") if v.strip()):
            indices = [int(v) for v in visible.split(",") if v.strip() and int(v) < n]
        driver = text(pynvml.nvmlSystemGetDriverVersion())
        cuda = int(pynvml.nvmlSystemGetCudaDriverVersion())
        out = []
        for i in indices[:count_gpus()]:
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
            out.append({"index": i, "name": text(pynvml.nvmlDeviceGetName(h)),
                        "memory_gib": pynvml.nvmlDeviceGetMemoryInfo(h).total / 2**30,
                        "compute_capability": f"{major}.{minor}",
                        "pci_bus_id": text(pynvml.nvmlDeviceGetPciInfo(h).busId),
                        "driver": driver, "cuda": f"{cuda // 1000}.{cuda % 1000 // 10}"})
        return out
    finally:
        pynvml.nvmlShutdown()


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


TRIM_KEY, DASK_TRIM_DEFAULT = "MALLOC_TRIM_THRESHOLD_", "65536"


@contextlib.contextmanager
def glibc_malloc_defaults() -> Iterator[None]:
    """Nannies made inside leave distributed's default ``MALLOC_TRIM_THRESHOLD_=65536`` out of their
    workers' environment (``distributed.nanny.pre-spawn-environ``, where None unsets a variable; a value
    other than that default is the user's and is kept). Setting it turns off glibc's dynamic mmap
    threshold: every host array over 128 KiB is then mapped and unmapped afresh, and a GPU worker's host
    side of a steady-state run (Sizek, r = 1e-4: copies back, counts) took 0.39 s where the same run in a
    plain process took 0.22 s (benchmarks/RESULTS.md, fourteenth session)."""
    key = "distributed.nanny.pre-spawn-environ." + TRIM_KEY
    dasks_own = str(dask.config.get(key, None)) == DASK_TRIM_DEFAULT
    with dask.config.set({key: None}) if dasks_own else contextlib.nullcontext():
        yield


def connect(
    address: str | None = None,
    *,
    gpus: bool | int | str = "auto",
    n_workers: int | None = None,
    threads_per_worker: int = 1,
    scheduler_file: str | os.PathLike | None = None,
    dashboard_address: str | None = "127.0.0.1:0",
    processes: bool = True,
    security: Security | bool | None = None,
    timeout: float = CONNECT_TIMEOUT_S,
    **cluster_kwargs: Any,
) -> Client:
    """Return a ``distributed.Client`` (see the module docstring for what it starts).

    ``address`` or ``scheduler_file`` (the JSON file ``dask scheduler --scheduler-file`` writes):
    connect to that scheduler, failing with a ``ConnectionError`` after ``timeout`` seconds;
    ``security``: its TLS certificates (a ``Security``; None: Dask's configuration).
    Otherwise a local cluster: ``gpus``: "auto" (use GPUs when present), False (CPU workers only),
    or a number of GPUs. ``n_workers``: CPU workers (default: one per usable CPU) or GPU workers
    (default: one per GPU). ``security``: None or True: TLS with a temporary certificate (the
    owner's alone); a ``Security``: those certificates (a cluster shared on purpose); False: no TLS
    (any local account may run code on it). ``dashboard_address``: where the scheduler's dashboard
    listens (default: loopback, a free port; ``"127.0.0.1:8787"`` for a fixed port; a bare
    ``":8787"`` listens on every interface). Extra keyword arguments go to the cluster class.
    """
    if address is not None or scheduler_file is not None:
        return _remote_client(address, scheduler_file, security, timeout)

    sec = local_security() if security is None or security is True else (security or None)
    if sec is not None:
        cluster_kwargs["security"] = sec
    n_gpu = _gpus_to_use(gpus, n_workers)
    with glibc_malloc_defaults():
        if n_gpu and _gpu_stack_usable():
            return _gpu_client(n_gpu, threads_per_worker, processes, dashboard_address, cluster_kwargs)
        cluster = LocalCluster(
            n_workers=planned_workers(False, n_workers, threads_per_worker),
            threads_per_worker=threads_per_worker,
            processes=processes,
            resources={"CPU": threads_per_worker},
            dashboard_address=dashboard_address,
            **cluster_kwargs,
        )
    return _LocalClient(cluster)


def planned_workers(gpus: bool | int | str = "auto", n_workers: int | None = None, threads_per_worker: int = 1) -> int:
    """The worker processes :func:`connect` starts for a local cluster with these arguments."""
    n_gpu = _gpus_to_use(gpus, n_workers)
    if n_gpu and _gpu_stack_usable():
        return n_gpu
    return n_workers or max(1, usable_cpus() // max(1, threads_per_worker))


def _remote_client(address: str | None, scheduler_file: str | os.PathLike | None, security: Security | bool | None,
                   timeout: float) -> Client:
    """A client of an existing scheduler; one that does not answer within ``timeout`` s is an error."""
    if scheduler_file is not None and not Path(scheduler_file).is_file():
        raise FileNotFoundError(f"scheduler file {scheduler_file} does not exist (a running scheduler writes it: "
                                "dask scheduler --scheduler-file PATH)")
    kw: dict[str, Any] = {"timeout": timeout}
    if isinstance(security, Security):
        kw["security"] = security
    where = address if scheduler_file is None else f"the scheduler of {scheduler_file}"
    try:
        with dask.config.set({"distributed.comm.timeouts.connect": f"{timeout}s"}):
            if scheduler_file is not None:
                return Client(scheduler_file=str(scheduler_file), **kw)
            return Client(address, **kw)
    except TypeError as e:  # Dask's words for a tls:// address without certificates
        if "TLS" not in str(e):
            raise
        error: Exception = ValueError(
            f"the Dask scheduler at {where} speaks TLS: give its certificates (security=Security(...), "
            "or the distributed.comm.tls keys of the Dask configuration; deployments/tls)")
    except (OSError, TimeoutError) as e:
        reason = str(e).splitlines()[0] if str(e) else "no answer"
        error = ConnectionError(f"cannot reach the Dask scheduler at {where} within {timeout:g} s "
                                f"({type(e).__name__}: {reason})")
    collect_failed_clients()
    raise error


def collect_failed_clients() -> None:
    """Finalize now the Client objects whose construction failed (they are garbage in reference cycles).
    Left to the garbage collector, ``Client.__del__`` closes one at any later allocation, in any
    thread: one starting another client or cluster holds distributed's class-wide LoopRunner lock,
    which that close waits on (a deadlock, or "IO loop did not start within 10 s")."""
    import gc

    gc.collect()


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

            return f"LocalCUDACluster with {n_gpu} worker(s), one per GPU (resource GPU=1), TLS (owner only)"
        except Exception:
            return (f"LocalCluster with {n_gpu} GPU worker(s) pinned by plugin (dask-cuda not installed), "
                    "TLS (owner only)")
    return f"LocalCluster with {usable_cpus()} single-threaded CPU worker(s) (resource CPU=1), TLS (owner only)"
