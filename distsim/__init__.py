"""distsim: stochastic systems-biology workloads on one CPU, one GPU or many GPUs through Dask.

Workloads: ``distsim.pbn`` (probabilistic Boolean networks: simulation and steady state).
``distsim.connect()`` gives a Dask client (local CPU cores, local GPUs, or a scheduler address).
"""

__version__ = "0.1.0"

from .cluster import connect  # noqa: E402

__all__ = ["__version__", "connect"]
