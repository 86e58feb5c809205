"""``distsim info``: versions, backend, GPUs seen, and the cluster ``distsim.connect()`` would start."""

from __future__ import annotations

import argparse
from typing import Any

from .. import __version__, examples_dir
from .common import subparser

GPU_INSTALL = ("pip install 'distsim-bio[gpu]' (CUDA 13 drivers) or 'distsim-bio[gpu-cu12]' (CUDA 12): "
               "CuPy and dask-cuda")


def register(subparsers: Any) -> None:
    subparser(subparsers, "info", help="versions, backend, GPUs seen, and the cluster a run would start")


def run(args: argparse.Namespace) -> int:
    import platform

    import dask
    import distributed
    import numba
    import numpy
    import xarray

    from .. import backends
    from ..backends import cuda
    from ..cluster import count_gpus, describe_default, gpu_inventory

    print(f"distsim {__version__} (python {platform.python_version()}, {platform.platform()})")
    versions = {"numpy": numpy.__version__, "numba": numba.__version__, "xarray": xarray.__version__,
                "dask": dask.__version__, "distributed": distributed.__version__}
    for mod in ("cupy", "dask_cuda"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception as e:  # noqa: BLE001
            versions[mod] = f"not available ({type(e).__name__})"
    for k, v in versions.items():
        print(f"  {k:12s} {v}")
    backend = "cpu" if args.cpu else backends.resolve("auto")
    print(f"backend here: {backend}")
    n = count_gpus()
    print(f"GPUs seen (NVML): {n}")
    gpus = gpu_inventory() if n else []
    if gpus:
        print(f"  driver {gpus[0]['driver']}, CUDA {gpus[0]['cuda']} (the newest the driver runs)")
    for g in gpus:
        print(f"  GPU {g['index']}: {g['name']}, {g['memory_gib']:.1f} GiB, compute capability "
              f"{g['compute_capability']}, PCI {g['pci_bus_id']}")
    if backend == "gpu":
        print(f"  this process runs on: {backends.device_description('gpu')}")
    elif "not available" in versions["cupy"] or "not available" in versions["dask_cuda"]:
        print(f"  for GPUs: {GPU_INSTALL}")
    print(f"cluster `distsim.connect()` would start: {describe_default() if not args.cpu else 'LocalCluster (CPU)'}")
    print(f"CUDA kernel sources: {cuda.kernels_dir()}")
    print(f"example models and sweeps: {examples_dir()}")
    return 0
