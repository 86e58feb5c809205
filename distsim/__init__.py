"""distsim: stochastic systems-biology workloads on one CPU, one GPU or many GPUs through Dask.

Workloads (imported on first use, PEP 562): ``distsim.pbn`` (probabilistic Boolean networks),
``distsim.ssa`` (exact stochastic simulation), ``distsim.grn`` (GRN inference by genetic
algorithms), ``distsim.mcmc`` (Bayesian rate inference), ``distsim.maboss`` (MaBoSS time courses of
continuous-time Boolean models), ``distsim.pmmh`` (particle MCMC from noisy data). ``distsim.sweep(analysis, model, points,
...)`` runs parameter sweeps; ``distsim.connect()`` gives a Dask client (local CPU cores, local
GPUs, or a scheduler address). ``distsim.export(ds)`` is any result's summary as a tidy table;
``distsim.examples_dir()`` is the folder of the example models (shipped in the wheel).

The distribution is ``distsim-bio`` (``pip install distsim-bio``); this is the one place its version
is written (pyproject.toml reads it).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

__version__ = "0.2.0"

_SUBMODULES = ("pbn", "ssa", "grn", "mcmc", "maboss", "sweep", "pmmh", "models", "engine", "backends", "results", "rng", "cluster")

__all__ = ["__version__", "connect", "export", "examples_dir", *_SUBMODULES]


def examples_dir() -> Path:
    """Folder of the example models, problems and sweeps: ``distsim/examples`` in a wheel,
    ``examples/`` in a checkout."""
    here = Path(__file__).resolve().parent
    for cand in (here / "examples", here.parent / "examples"):
        if (cand / "sweeps").is_dir():
            return cand
    raise FileNotFoundError("example models not found (looked in distsim/examples and ../examples)")


def __getattr__(name: str) -> Any:
    if name == "connect":  # distsim.cluster.connect, without importing Dask up front
        return importlib.import_module(".cluster", __name__).connect
    if name == "export":  # distsim.results.to_table, without importing xarray up front
        return importlib.import_module(".results", __name__).to_table
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'distsim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"connect", "export", *_SUBMODULES})
