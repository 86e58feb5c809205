# %% [markdown]
# # Tutorial: parameter sweeps
#
# `distsim.sweep` runs one analysis (`ssa.simulate`, `pbn.steady_state`, `grn.infer`,
# `mcmc.infer_rates`, ...) at many parameter points, spread over every worker, optionally into a
# resumable zarr store. Run with `python docs/tutorials/sweep.py` (seconds once compiled; the first
# run compiles the CPU kernels).

# %%
import tempfile
from pathlib import Path

import numpy as np

import distsim
import distsim.ssa as ssa

net = ssa.load(distsim.examples_dir() / "ssa" / "immigration_death.rxn")  # 0 -> X (Alpha), X -> 0 (Mu X)
folder = Path(tempfile.mkdtemp())

# %% [markdown]
# ## A grid
# A dict of value lists is a grid (the Cartesian product, last parameter fastest). Arguments other
# than the points are the analysis's own, shared by every point. Point i gets the seed
# `derive_seeds(seed, i)`, so results never depend on workers or chunking. With `store=`, each
# chunk is written with its checksums as it finishes; a rerun computes only what is missing.

# %%
grid = {"Alpha": [0.5, 1.0, 2.0], "Mu": [0.1, 0.2]}
R = 2000
ds = distsim.sweep(ssa.simulate, net, grid, seed=1, store=folder / "id.zarr", t_end=30, points=4, realizations=R)
print(ds["mean"].sel(species="X").isel(time=-1).to_pandas())

# %% [markdown]
# The result has one dimension per swept parameter (`Alpha`, `Mu`), indexed by the values as given;
# `point` (the point's number) and `seed` are coordinates over them. `sel` picks a point.

# %%
assert ds["mean"].dims[:2] == ("Alpha", "Mu")
one = ds.sel(Alpha=2.0, Mu=0.1)
print(f"point {int(one.point)}, seed {int(one.seed)}")

# Each point against the exact mean (Alpha / Mu)(1 - exp(-Mu t)) of this Poisson process, within 4.5
# standard errors sqrt(mean / R) (a family-wise error below 1e-4 over these 6 points).
t = float(ds.time[-1])
for a in grid["Alpha"]:
    for mu in grid["Mu"]:
        m = a / mu * (1 - np.exp(-mu * t))
        got = float(ds["mean"].sel(Alpha=a, Mu=mu, species="X").isel(time=-1))
        assert abs(got - m) <= 4.5 * np.sqrt(m / R), (a, mu, got, m)

# %% [markdown]
# ## Rerun, grow, read back
# The same call again reads the finished store back (verified, nothing computed); a grid grown in its
# first parameter computes only the new points; `open_store` reads a store in the sweep's layout.

# %%
again = distsim.sweep(ssa.simulate, net, grid, seed=1, store=folder / "id.zarr", t_end=30, points=4, realizations=R)
assert again.attrs["points_computed"] == 0
grown = distsim.sweep(ssa.simulate, net, {"Alpha": [0.5, 1.0, 2.0, 4.0], "Mu": [0.1, 0.2]}, seed=1,
                      store=folder / "id.zarr", t_end=30, points=4, realizations=R)
print(f"grown: {grown.attrs['points_computed']} computed, {grown.attrs['points_resumed']} from the store")
assert grown.attrs["points_computed"] == 2
read = distsim.sweep.open_store(folder / "id.zarr")
assert np.array_equal(read["mean"].sel(Alpha=[0.5, 1.0, 2.0]).values, ds["mean"].values)

# %% [markdown]
# ## Tables of points
# A list of dicts (or a DataFrame) is a table: its result keeps a `point` dimension with the swept
# values as coordinates on it. `distsim.sweep.as_grid` reshapes a table whose points form a full grid.

# %%
rows = [{"Alpha": a, "Mu": mu} for a in grid["Alpha"] for mu in grid["Mu"]]
table = distsim.sweep(ssa.simulate, net, rows, seed=1, t_end=30, points=4, realizations=R)
print(table["mean"].dims, table.Alpha.values)
assert np.array_equal(distsim.sweep.as_grid(table)["mean"].values, ds["mean"].values)  # same seeds, same numbers

# %% [markdown]
# ## Getting numbers out
# `distsim.export` gives the summary as a tidy table, the swept parameters as columns; the command
# line runs YAML sweeps (`distsim sweep examples/sweeps/mm_grid.yaml`) and `distsim export`.

# %%
tidy = distsim.export(ds, ["mean"])
print(tidy.head())
assert {"Alpha", "Mu", "time", "species", "value"} <= set(tidy.columns) and len(tidy) == ds["mean"].size
