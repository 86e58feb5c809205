"""distsim: stochastic systems-biology workloads on one CPU, one GPU or many GPUs through Dask.

Workloads: ``distsim.pbn`` (probabilistic Boolean networks: simulation and steady state).
``distsim.sweep(analysis, model, points, ...)`` runs parameter sweeps; ``distsim.connect()`` gives a
Dask client (local CPU cores, local GPUs, or a scheduler address).
"""

__version__ = "0.1.0"

from .cluster import connect  # noqa: E402

__all__ = ["__version__", "connect", "sweep"]


def __getattr__(name: str):  # noqa: ANN202 -- lazy: ``distsim.sweep(...)`` without importing it up front
    if name == "sweep":
        import importlib

        return importlib.import_module(".sweep", __name__)
    raise AttributeError(f"module 'distsim' has no attribute {name!r}")
