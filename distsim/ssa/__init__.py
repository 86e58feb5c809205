"""Exact stochastic simulation (Gillespie SSA) of reaction networks: load, simulate, reduce.

>>> import distsim.ssa as ssa
>>> net = ssa.load("examples/ssa/michaelis_menten.rxn")
>>> ds = ssa.simulate(net, t_end=100, points=101, realizations=10_000, seed=1)
"""

from ..models.reactions import Reaction, ReactionNetwork
from .methods import choose_method
from .simulate import load, simulate

__all__ = ["Reaction", "ReactionNetwork", "choose_method", "load", "simulate"]
