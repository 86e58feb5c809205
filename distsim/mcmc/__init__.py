"""Bayesian inference of mass-action rate constants from exact discrete observations by
data-augmentation MCMC with massively parallel rejection-sampled bridges (Niemi and Wheeler, seed 003).

>>> import distsim.mcmc as mcmc, distsim.ssa as ssa
>>> net = ssa.load("examples/mcmc/michaelis_menten.rxn")
>>> ds = mcmc.infer_rates(net, "examples/mcmc/mm_observations.csv",
...                       prior={"k1": (1, 100), "k2": (1, 1), "k3": (1, 1)},
...                       iterations=2000, burn_in=500, chains=4, derived={"K_M": "(k2 + k3) / k1"})
>>> mcmc.summary(ds)                  # pandas DataFrame: mean, sd, 2.5%, 97.5%, rhat, ess_bulk, ess_tail
>>> idata = mcmc.to_inference_data(ds)  # arviz.InferenceData (pip install arviz)
"""

from .diagnostics import summary
from .inference_data import to_inference_data
from .observations import ObservationError, Observations, as_observations, conservation_laws
from .priors import IMPROPER, GammaPrior
from .sampler import infer_rates
from .trajectories import latent_trajectories

__all__ = ["IMPROPER", "GammaPrior", "ObservationError", "Observations", "as_observations", "conservation_laws",
           "infer_rates", "latent_trajectories", "summary", "to_inference_data"]
