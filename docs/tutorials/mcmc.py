# %% [markdown]
# # Tutorial: Bayesian rate inference from exact observations (DA-MCMC)
#
# `distsim.mcmc` is the data-augmentation Gibbs sampler of Niemi and Wheeler 2011: the latent path
# between two observations is drawn by rejection (forward SSA runs until one ends at the next
# observation), and each rate given the paths is Gamma(shape + firings, rate + integral of h). Here a
# pure death process, whose posterior is also computable exactly, so the sampler can be checked.
# Run with `python docs/tutorials/mcmc.py` (seconds once compiled; the first run compiles).

# %%
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

import distsim.mcmc as mcmc
import distsim.ssa as ssa

folder = Path(tempfile.mkdtemp())
(folder / "death.rxn").write_text("Death: X -> 0 ; mu = 0.1\ninit: X = 60\n")
net = ssa.load(folder / "death.rxn")

# Observations every 2 time units. In a pure death process each molecule survives an interval of
# length dt with probability exp(-mu dt) on its own, so the counts are binomial thinnings.
rng = np.random.default_rng(7)
times, counts = np.arange(0.0, 12.0, 2.0), [60]
for _ in times[1:]:
    counts.append(int(rng.binomial(counts[-1], np.exp(-0.1 * 2.0))))
data = pd.DataFrame({"time": times, "X": counts})
print(data.to_string(index=False))

# %% [markdown]
# ## The sampler
# A gamma prior per rate (`shape`, `rate`); chains start at the model file's values; chain c draws
# from Philox stream (seed, c), so CPU and GPU give the same draws. Observations may be a CSV path
# (`time,<species>...`, blank = unobserved), a DataFrame or an xarray object.

# %%
ds = mcmc.infer_rates(net, data, prior={"mu": (2.0, 10.0)}, iterations=3000, burn_in=500, chains=2, seed=1)
table = mcmc.summary(ds)
print(table)

# %% [markdown]
# ## Checked against the exact posterior
# With prior Gamma(2, 10), the posterior density of mu is proportional to the prior times
# prod_i Binomial(x_{i+1} | x_i, exp(-mu dt)), a one-dimensional integral. The sampler's posterior
# mean is within 4.5 Monte Carlo standard errors (sd / sqrt(bulk ESS)) of the exact one.

# %%
mu = np.linspace(1e-4, 0.6, 20001)
logp = stats.gamma.logpdf(mu, 2.0, scale=1 / 10.0)
for x0, x1 in zip(counts[:-1], counts[1:]):
    logp += stats.binom.logpmf(x1, x0, np.exp(-mu * 2.0))
w = np.exp(logp - logp.max())
exact_mean = float((mu * w).sum() / w.sum())
row = table.loc["mu"]
mc_se = row["sd"] / np.sqrt(row["ess_bulk"])
print(f"posterior mean of mu: sampler {row['mean']:.5f} +- {mc_se:.5f} (MC s.e.), exact {exact_mean:.5f}")
assert abs(row["mean"] - exact_mean) <= 4.5 * mc_se
assert row["rhat"] < 1.01 and row["ess_bulk"] > 400  # distsim's own convergence check passes here

# %% [markdown]
# ## When it does not converge
# distsim warns (`ConvergenceWarning`) when a variable has R-hat > 1.01 or bulk ESS < 400: too few
# iterations give that warning, which is the signal to run longer, not to report the numbers. On the
# command line: `distsim mcmc rates MODEL --data DATA.csv --prior mu=gamma:2,10 --iterations 3000`.

# %%
import warnings

from distsim.errors import ConvergenceWarning

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    mcmc.infer_rates(net, data, prior={"mu": (2.0, 10.0)}, iterations=60, burn_in=10, chains=2, seed=1)
assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
print("60 iterations:", [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)][0])
