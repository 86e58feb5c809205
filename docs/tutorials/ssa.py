# %% [markdown]
# # Tutorial: exact stochastic simulation (SSA) ensembles
#
# `distsim.ssa` runs Gillespie's exact SSA for many realizations of a reaction network and reduces
# them on the workers (mean, variance, quantiles per time point), so the realizations never travel.
# Run with `python docs/tutorials/ssa.py` (seconds once compiled; the first run compiles the CPU
# kernels, cached on disk afterwards).

# %%
import math

import numpy as np

import distsim
import distsim.ssa as ssa

# Immigration-death (DSMTS 002-01): 0 -> X at rate Alpha = 1, X -> 0 at rate Mu * X, Mu = 0.1.
path = distsim.examples_dir() / "ssa" / "immigration_death.rxn"
print(path.read_text())
net = ssa.load(path)
print(net.summary())

# %% [markdown]
# ## An ensemble
# `points` time points from 0 to `t_end`; `realizations` independent runs. Realization r draws its
# random numbers from its own Philox stream (seed, r), so the result is the same on a laptop, on a
# GPU and on any number of Dask workers.

# %%
R = 4000
ds = ssa.simulate(net, t_end=50, points=11, realizations=R, seed=1)
print(ds["mean"].sel(species="X").to_pandas().round(3))

# %% [markdown]
# ## Checked against the exact answer
# Starting from X = 0, X(t) is Poisson with mean m(t) = (Alpha / Mu)(1 - exp(-Mu t)), so its variance
# is m(t) too. The ensemble mean is within 4.5 standard errors sqrt(m / R) of m(t) at every time
# point (a family-wise error below 1e-4 for these 10 points), and the variance within 4.5 of its
# standard errors, sqrt((mu4 - m^2) / R) = sqrt((m + 2 m^2) / R) for a Poisson variable.

# %%
t = ds.time.values
m = 10.0 * (1.0 - np.exp(-0.1 * t))
mean = ds["mean"].sel(species="X").values
var = ds["variance"].sel(species="X").values
se = np.sqrt(np.maximum(m, 1e-12) / R)
for ti, got, want, s in zip(t, mean, m, se):
    print(f"t = {ti:4.0f}: mean {got:7.3f}   exact {want:7.3f}   (+- {4.5 * s:.3f})")
assert np.all(np.abs(mean - m) <= 4.5 * se + 1e-12)
assert np.all(np.abs(var - m) <= 4.5 * np.sqrt((m + 2 * m**2) / R) + 1e-12)

# %% [markdown]
# ## Parameters and initial counts
# Networks are immutable: `with_parameters` and `with_initial` return changed copies. Doubling the
# immigration rate doubles the stationary mean (Alpha / Mu = 20).

# %%
fast = ssa.simulate(net.with_parameters(Alpha=2.0), t_end=100, points=2, realizations=R, seed=2)
end = float(fast["mean"].sel(species="X").isel(time=-1))
want = 20.0 * (1.0 - math.exp(-10.0))
print(f"Alpha = 2: mean X(100) = {end:.3f} (exact {want:.3f})")
assert abs(end - want) <= 4.5 * math.sqrt(want / R)

# %% [markdown]
# ## From the command line, and getting numbers out
# `distsim ssa simulate examples/ssa/immigration_death.rxn --t-end 50 --points 11 -n 4000 -o id.nc`
# writes the same Dataset; `distsim export id.nc -o id.csv` (or `distsim.export(ds)`) gives its
# summary as a tidy table.

# %%
table = distsim.export(ds, ["mean"])
print(table.head())
assert set(table.columns) >= {"name", "time", "species", "value"}
