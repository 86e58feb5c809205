"""Run a distsim CUDA kernel on the host, for tests without a GPU: the source is compiled by g++ with
``cuda_host.h`` (CUDA's keywords and intrinsics for one thread at a time), and :func:`fake_cupy`
stands NumPy in for CuPy, so the launch code of ``distsim.ssa`` runs unchanged. Bits equal the
device's where the kernel's arithmetic is IEEE double with no contraction (``-ffp-contract=off``
here, ``--fmad=false`` there); scheduling, atomics and memory limits are not exercised."""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import types
from pathlib import Path

import numpy as np

from distsim.backends import cuda

HERE = Path(__file__).resolve().parent
GXX = shutil.which("g++")

_C_TYPES = {np.int32: ctypes.c_int32, np.uint32: ctypes.c_uint32, np.int64: ctypes.c_int64,
            np.uint64: ctypes.c_uint64, np.float64: ctypes.c_double}


class HostFunction:
    """A kernel entry point: called as CuPy calls a RawKernel, it runs threads 0 .. args[0]-1 in turn."""

    def __init__(self, lib: ctypes.CDLL, name: str):
        self.fn = getattr(lib, name)
        self.set_thread = lib.ds_host_set_thread

    def __call__(self, grid, block, args) -> None:
        cargs = [ctypes.c_void_p(a.ctypes.data) if isinstance(a, np.ndarray) else _C_TYPES[type(a)](a) for a in args]
        for r in range(int(args[0])):
            self.set_thread(r)
            self.fn(*cargs)


class HostModule:
    def __init__(self, source: str, workdir: Path):
        key = hashlib.sha256(source.encode()).hexdigest()[:16]
        src, lib = workdir / f"k{key}.cpp", workdir / f"k{key}.so"
        if not lib.exists():
            src.write_text('#include "cuda_host.h"\n' + source)
            subprocess.run([GXX, "-std=c++17", "-O1", "-ffp-contract=off", "-fPIC", "-shared", "-w", f"-I{HERE}",
                            f"-I{cuda.kernels_dir()}", "-o", str(lib), str(src)], check=True, capture_output=True,
                           text=True)
        self.lib = ctypes.CDLL(str(lib))

    def get_function(self, name: str) -> HostFunction:
        return HostFunction(self.lib, name)


def fake_cupy() -> types.ModuleType:
    """NumPy under CuPy's name, with the few CuPy-only functions the launch code uses."""
    cp = types.ModuleType("cupy")
    cp.__dict__.update({k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    cp.asnumpy = np.asarray
    return cp
