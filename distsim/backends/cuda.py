"""CUDA sources and their compilation: the kernels folder, template filling, NVRTC modules (cached).

Kernels are CUDA C files in ``kernels/`` (shipped in the wheel as ``distsim/kernels``). Generated
kernels start from a template whose ``//@@ NAME`` ... ``//@@ end`` regions are replaced by code
(:func:`fill_template`); :func:`load_module` compiles once per machine: NVRTC's output is kept on disk
(:func:`cache_dir`), keyed by the source, every kernel file, the options, the device's compute capability
and the NVRTC/CUDA/CuPy versions.
Nothing here touches CUDA at import time.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any


def kernels_dir() -> Path:
    """Folder holding the CUDA sources: ``distsim/kernels`` in a wheel, ``kernels/`` in a checkout."""
    here = Path(__file__).resolve().parent.parent
    for cand in (here / "kernels", here.parent / "kernels"):
        if (cand / "philox.cuh").is_file():
            return cand
    raise FileNotFoundError("CUDA kernel sources not found (looked in distsim/kernels and ../kernels)")


def kernel_source(name: str) -> str:
    return (kernels_dir() / name).read_text()


_MODULES: dict[tuple, Any] = {}
_MODULES_LOCK = threading.Lock()
CACHE_FORMAT = 1  # bump when what a cache entry holds or how its key is formed changes


def cache_dir() -> Path:
    """Where compiled kernels are kept across processes: ``$DISTSIM_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/distsim`` (``~/.cache/distsim``). NVRTC output goes to its ``nvrtc/`` folder."""
    env = os.environ.get("DISTSIM_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "distsim"


@functools.lru_cache(maxsize=8)
def _kernels_digest(folder: Path, stamp: tuple) -> str:
    h = hashlib.sha256()
    for name, _, _ in stamp:
        h.update(name.encode() + b"\0" + (folder / name).read_bytes() + b"\0")
    return h.hexdigest()


def kernels_digest() -> str:
    """SHA-256 of every file in the kernels folder: a source may include any of them (also through a
    macro, ``#include DS_METHOD_HEADER``), so the cache key holds them all (CuPy's own cache key holds
    the source and options only, so an edited header would leave it a stale binary)."""
    folder = kernels_dir()
    stamp = tuple(sorted((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in folder.iterdir() if p.is_file()))
    return _kernels_digest(folder, stamp)


def module_key(code: str, options: tuple[str, ...], arch: str, toolchain: tuple) -> str:
    """The disk-cache key of a compile: source, options (the machine-specific ``-I`` folder replaced by
    the digest of what it holds), target architecture and toolchain versions (NVRTC, CUDA, CuPy)."""
    opts = [o for o in options if not o.startswith("-I")]
    text = json.dumps([CACHE_FORMAT, hashlib.sha256(code.encode()).hexdigest(), opts, kernels_digest(), arch,
                       [str(t) for t in toolchain]])
    return hashlib.sha256(text.encode()).hexdigest()


def _toolchain() -> tuple:
    import cupy
    from cupy_backends.cuda.libs import nvrtc

    return (nvrtc.getVersion(), cupy.cuda.runtime.runtimeGetVersion(), cupy.cuda.runtime.driverGetVersion(),
            cupy.__version__)


def _nvrtc(code: str, options: tuple[str, ...], cc: str) -> tuple[bytes, str]:
    """Compile with NVRTC as CuPy's RawModule does (its ``-ftz=true``, ``--device-as-default-execution-space``
    on NVRTC 12+ and ``-arch=sm_XY``, so the binary is the one CuPy built): (image, suffix).
    A cubin where this NVRTC returns one, else PTX (the driver then finishes it)."""
    from cupy_backends.cuda.libs import nvrtc

    opts = list(options) + ["-ftz=true"]  # CuPy's RawModule appends these: the same binary as before
    if nvrtc.getVersion()[0] >= 12:
        opts.append("--device-as-default-execution-space")
    cubin = hasattr(nvrtc, "getCUBIN")
    opts.append(f"-arch={'sm' if cubin else 'compute'}_{cc}")
    prog = nvrtc.createProgram(code, "distsim_kernel.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(prog, opts)
        except nvrtc.NVRTCError as e:
            log = nvrtc.getProgramLog(prog)
            raise RuntimeError(f"NVRTC could not compile a distsim kernel ({e}):\n{log}") from None
        return (nvrtc.getCUBIN(prog), ".cubin") if cubin else (nvrtc.getPTX(prog).encode(), ".ptx")
    finally:
        nvrtc.destroyProgram(prog)


def _store(path: Path, image: bytes) -> None:
    """Write a cache entry atomically (a reader never sees part of one; concurrent writers are fine)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(image)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load_module(code: str, options: tuple[str, ...] = ()) -> Any:
    """A CUDA source compiled by NVRTC into a ``cupy.RawModule`` for the current device: once per process,
    and once per machine through the disk cache (:func:`cache_dir`), keyed by :func:`module_key`.

    ``-I kernels/`` is added so sources can ``#include "philox.cuh"``. NVRTC only; jitify is never used.
    A compile (a cache miss) is announced by :func:`distsim.backends.compiles.compiling`; a cached load
    is not. Where this CuPy lacks the NVRTC calls used here, CuPy compiles (and caches) it instead.
    """
    import cupy

    from . import compiles

    opts = ("-std=c++17", f"-I{kernels_dir()}") + tuple(options)
    dev = cupy.cuda.Device()
    key = (hashlib.sha256(code.encode()).hexdigest(), opts, dev.id)
    with _MODULES_LOCK:
        mod = _MODULES.get(key)
        if mod is not None:
            return mod
        try:
            toolchain = _toolchain()
        except (ImportError, AttributeError):  # another CuPy layout: its RawModule and its own disk cache
            toolchain = None
        if toolchain is None:
            mod = cupy.RawModule(code=code, options=opts, backend="nvrtc")
        else:
            cc = str(dev.compute_capability)
            stem = cache_dir() / "nvrtc" / module_key(code, opts, cc, toolchain)
            found = [p for p in (stem.with_suffix(".cubin"), stem.with_suffix(".ptx")) if p.is_file()]
            if found:
                path = found[0]
            else:
                with compiles.compiling("gpu", "NVRTC"):
                    image, suffix = _nvrtc(code, opts, cc)
                path = stem.with_suffix(suffix)
                _store(path, image)
            mod = cupy.RawModule(path=str(path))
        _MODULES[key] = mod
    return mod


_REGION = re.compile(r"^([ \t]*)//@@ (\w+)\n.*?^[ \t]*//@@ end\n", re.S | re.M)


def fill_template(template: str, regions: dict[str, str]) -> str:
    """Replace each ``//@@ name`` ... ``//@@ end`` region with ``regions[name]`` (all must be given)."""
    seen = set()

    def sub(m: re.Match) -> str:
        name = m.group(2)
        seen.add(name)
        indent = m.group(1)
        body = regions[name]
        return "".join(indent + line + "\n" for line in body.splitlines()) if body else ""

    src = _REGION.sub(sub, template)
    missing = set(regions) - seen
    if missing:
        raise ValueError(f"template has no region(s) {sorted(missing)}")
    return src
