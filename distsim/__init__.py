"""distsim: stochastic systems-biology workloads on one CPU, one GPU or many GPUs through Dask.

Workloads (imported on first use, PEP 562): ``distsim.pbn`` (probabilistic Boolean networks),
``distsim.ssa`` (exact stochastic simulation), ``distsim.grn`` (GRN inference by genetic
algorithms), ``distsim.mcmc`` (Bayesian rate inference), ``distsim.maboss`` (MaBoSS time courses of
continuous-time Boolean models). ``distsim.sweep(analysis, model, points,
...)`` runs parameter sweeps; ``distsim.connect()`` gives a Dask client (local CPU cores, local
GPUs, or a scheduler address).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_SUBMODULES = ("pbn", "ssa", "grn", "mcmc", "maboss", "sweep", "models", "engine", "backends", "results", "rng", "cluster")

__all__ = ["__version__", "connect", *_SUBMODULES]


def __getattr__(name: str) -> Any:
    if name == "connect":  # distsim.cluster.connect, without importing Dask up front
        return importlib.import_module(".cluster", __name__).connect
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'distsim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"connect", *_SUBMODULES})
