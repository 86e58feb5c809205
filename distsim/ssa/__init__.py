"""Exact stochastic simulation (Gillespie SSA) of reaction networks: load, simulate, reduce.

>>> import distsim.ssa as ssa
>>> net = ssa.load("examples/ssa/michaelis_menten.rxn")
>>> ds = ssa.simulate(net, t_end=100, points=101, realizations=10_000, seed=1)
>>> many = ssa.simulate_batch(net, [{"k1": 1e-3}, {"k1": 2e-3}], seeds=[1, 2], t_end=100)  # one launch

Networks also come from memory: ``ssa.load(sbml_text)``, ``ssa.load(text, format="antimony")``,
``ssa.from_gillespy2(model)`` and ``ssa.Builder`` (reactions written in code).
"""

from ..models.builder import Builder
from ..models.formats.sbml import read_sbml_string
from ..models.gillespy2 import from_gillespy2
from ..models.reactions import Reaction, ReactionNetwork
from .batch import simulate_batch
from .methods import choose_method
from .simulate import load, simulate

__all__ = ["Builder", "Reaction", "ReactionNetwork", "choose_method", "from_gillespy2", "load", "read_sbml_string",
           "simulate", "simulate_batch"]
