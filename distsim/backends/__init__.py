"""Backends: 'cpu' (NumPy + Numba) and 'gpu' (CuPy RawModules compiled by NVRTC from ``kernels/``).

Every workload implements its algorithm twice -- a Numba CPU kernel and a CUDA kernel -- with the
same random-number layout, so both give the same answer bit for bit. ``resolve()`` picks the
backend for the process it runs in (a Dask worker, or the client for in-process runs); nothing
here touches CUDA at import time.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from typing import Any

BACKENDS = ("auto", "cpu", "gpu")


@functools.cache
def gpu_available() -> bool:
    """True when CuPy imports and sees a usable CUDA device in this process."""
    if os.environ.get("DISTSIM_DISABLE_GPU"):
        return False
    try:
        import cupy

        return bool(cupy.cuda.is_available())
    except Exception:
        return False


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


def resolve(backend: str = "auto") -> str:
    """Turn 'auto' | 'cpu' | 'gpu' into the backend this process will run ('cpu' or 'gpu')."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "gpu":
        if not gpu_available():
            raise RuntimeError("backend='gpu' was requested but no usable CUDA GPU (with CuPy) is visible here")
        return "gpu"
    if backend == "cpu":
        return "cpu"
    return "gpu" if gpu_available() else "cpu"


def device_description(backend: str) -> str:
    """Human-readable name of the device a backend runs on in this process."""
    if backend == "gpu":  # which physical GPU: a worker of dask-cuda sees its own GPU as device 0
        import cupy

        return _gpu_description(cupy.cuda.Device().id, os.environ.get("CUDA_VISIBLE_DEVICES", ""))
    return _cpu_description()


@functools.cache
def _gpu_description(dev_id: int, visible_devices: str) -> str:
    """Asked once per device (and CUDA_VISIBLE_DEVICES) in a process: every shard task records it, and
    the driver's properties query is slow."""
    import platform

    import cupy

    dev = cupy.cuda.Device()  # the current device: dev_id
    props = cupy.cuda.runtime.getDeviceProperties(dev_id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    visible = [v.strip() for v in visible_devices.split(",") if v.strip()]
    index = visible[dev_id] if dev_id < len(visible) else str(dev_id)
    return f"{name} (GPU {index}, PCI {dev.pci_bus_id}, {platform.node()})"


@functools.cache
def _cpu_description() -> str:
    import platform

    return f"CPU {platform.processor() or platform.machine()} x{os.cpu_count()}"


def dask_worker() -> Any:
    """The Dask worker running this code, or None (distributed is not imported for the question: a
    process where it is not imported runs no worker; importing it costs a first in-process call ~1 s)."""
    if "distributed" not in sys.modules:
        return None
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):
        return None


def cpu_threads() -> int:
    """Threads a CPU kernel may use here: the worker's thread count inside a Dask worker, else all cores."""
    worker = dask_worker()
    if worker is not None:
        with contextlib.suppress(Exception):
            return max(1, int(worker.state.nthreads))
    import numba

    return int(numba.config.NUMBA_NUM_THREADS)
