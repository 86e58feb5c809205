"""CUDA sources and their compilation: the kernels folder, template filling, NVRTC modules (cached).

Kernels are CUDA C files in ``kernels/`` (shipped in the wheel as ``distsim/kernels``). Generated
kernels start from a template whose ``//@@ NAME`` ... ``//@@ end`` regions are replaced by code
(:func:`fill_template`); :func:`load_module` compiles once per process (CuPy also caches on disk).
Nothing here touches CUDA at import time.
"""

from __future__ import annotations

import hashlib
import re
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


_MODULES: dict[tuple[str, tuple[str, ...]], Any] = {}
_MODULES_LOCK = threading.Lock()


def load_module(code: str, options: tuple[str, ...] = ()) -> Any:
    """Compile (once per process; CuPy also caches on disk) a CUDA source into a ``cupy.RawModule``.

    ``-I kernels/`` is added so sources can ``#include "philox.cuh"``. NVRTC only; jitify is never used.
    """
    import cupy

    opts = ("-std=c++17", f"-I{kernels_dir()}") + tuple(options)
    key = (hashlib.sha256(code.encode()).hexdigest(), opts)
    with _MODULES_LOCK:
        mod = _MODULES.get(key)
        if mod is None:
            mod = cupy.RawModule(code=code, options=opts, backend="nvrtc")  # NVRTC; jitify stays off (default)
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
