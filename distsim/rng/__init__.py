"""Counter-based random numbers shared by every workload (Philox4x32-10, CPU == GPU bit for bit).

The Philox functions are Numba kernels; they are imported on first use (PEP 562), so that code that only
checks a seed (a GPU process) does not import Numba."""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

from .seeds import MAX_SEED, check_seed, check_seeds

_LAZY = {"derive_seeds": "derive", **{k: "philox" for k in ("below", "philox", "philox4x32_10", "u01_f32", "u01_f64",
                                                             "uniform_f32", "uniform_f64")}}

__all__ = ["MAX_SEED", "below", "derive_seeds", "check_seed", "check_seeds", "philox", "philox4x32_10", "u01_f32",
           "u01_f64", "uniform_f32", "uniform_f64"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'distsim.rng' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Package(types.ModuleType):
    """``distsim.rng.philox`` is the vectorised function (as when this package imported its module eagerly):
    the first import of the module ``.philox`` does not replace it."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "philox" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
