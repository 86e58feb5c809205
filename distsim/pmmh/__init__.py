"""Rate inference from noisy, partial measurements: particle marginal Metropolis-Hastings (PMMH) with a
bootstrap particle filter whose particles are exact SSA realizations (any kinetic law the SSA supports).

>>> import distsim.pmmh as pmmh, distsim.ssa as ssa
>>> net = ssa.load("tests/data/pmmh/immigration_death.rxn")
>>> ex = pmmh.Experiment(times=[1, 2, 3], data={"y": [4, 6, 5]})
>>> ds = pmmh.infer(net, [pmmh.Observable("y", "X", "poisson")], ex, prior={"k1": "gamma:2,0.5"},
...                 particles=64, iterations=500, burn_in=100, chains=2)
"""

from .csvdata import read_noisy
from .inference_data import to_inference_data
from .observation import NOISE_MODELS, Experiment, Observable
from .petab import petab, read_problem
from .priors import Prior
from .sampler import infer

__all__ = ["NOISE_MODELS", "Experiment", "Observable", "Prior", "infer", "petab", "read_noisy", "read_problem",
           "to_inference_data"]
