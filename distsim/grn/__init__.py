"""GRN inference by parallel genetic algorithms (seed 002: García-Calvo et al. 2018, cuEVOGENET).

``load(path)`` reads a problem (reference network, initial and target states); ``infer(problem, ...)``
runs a master-slave, island, cellular or hybrid GA on CPU or GPU workers and returns an
``xarray.Dataset``; ``planted(n, ...)`` makes a synthetic problem with a known solution.
"""

from .generators import planted
from .infer import infer
from .problem import RULE_NAMES, Problem, load

__all__ = ["Problem", "RULE_NAMES", "infer", "load", "planted"]
