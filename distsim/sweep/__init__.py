"""Parameter sweeps: one analysis over many parameter points, on every worker, resumable in zarr.

>>> import distsim
>>> import distsim.ssa as ssa
>>> ds = distsim.sweep(ssa.simulate, "examples/ssa/michaelis_menten.rxn", {"k1": [1e-3, 2e-3], "S": [100, 300]},
...                    seed=1, t_end=50, points=11, realizations=200, store="mm.zarr")

``distsim.sweep`` is this module, and calling it calls :func:`sweep`.
"""

from __future__ import annotations

import sys
import types

from .adapters import ADAPTERS, Adapter, adapter_for, register
from .core import default_chunk_size, sweep
from .layout import as_grid
from .points import Points, as_points, one_at_a_time
from .screens import knockouts
from .sensitivity import coefficients, plot_sensitivity, sensitivity
from .store import StoreDamaged, StoreLocked, StoreMismatch, StoreRepaired, open_store

__all__ = ["ADAPTERS", "Adapter", "Points", "StoreDamaged", "StoreLocked", "StoreMismatch", "StoreRepaired",
           "adapter_for", "as_grid", "as_points", "coefficients", "default_chunk_size", "knockouts",
           "one_at_a_time", "open_store", "plot_sensitivity", "register", "sensitivity", "sweep"]


class _CallableModule(types.ModuleType):
    """``distsim.sweep(...)`` is ``distsim.sweep.sweep(...)``."""

    def __call__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
