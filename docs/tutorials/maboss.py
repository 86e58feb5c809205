# %% [markdown]
# # Tutorial: MaBoSS time courses (continuous-time Boolean models)
#
# `distsim.maboss` reads a MaBoSS `.bnd` + `.cfg` pair and answers MaBoSS's questions with its
# semantics (Stoll et al. 2012): each node flips at its `rate_up` / `rate_down`, trajectories are
# Gillespie runs, and the result holds state probabilities per time window, the distribution at
# `max_time` and the fixed points. Run with `python docs/tutorials/maboss.py` (seconds once
# compiled; the first run compiles the CPU kernels).

# %%
import tempfile
from pathlib import Path

import numpy as np

from distsim.maboss import exact, load, maboss

folder = Path(tempfile.mkdtemp())
# A signal S that decays; X latches on while S is on; Y follows X. Fixed points: S = 0, X = Y.
(folder / "latch.bnd").write_text("""\
Node S { rate_up = 0; rate_down = 0.7; }
Node X { logic = S | X; rate_up = @logic ? 1.2 : 0; rate_down = 0; }
Node Y { logic = X; rate_up = @logic ? 0.8 : 0; rate_down = @logic ? 0 : 2; }
""")
(folder / "latch.cfg").write_text("""\
S.istate = 1;
X.istate = 0;
Y.istate = 0;
max_time = 6; time_tick = 0.75; sample_count = 20000;
""")

# %% [markdown]
# ## A time course
# `trajectories` and `seed` override the .cfg's `sample_count` and seed; `client=` spreads the
# trajectories over Dask workers (or GPUs) with the same numbers.

# %%
ds = maboss(folder / "latch.bnd", trajectories=20000, seed=1)
print(ds.probability.to_pandas().round(3))


def show(labels, values):
    return ", ".join(f"{label}: {v:.3f}" for label, v in zip(labels, values))


print("at max_time:", show(ds.state.values, ds.final_probability.values))
print("fixed points:", show(ds.fixed_point.values, ds.fixed_point_probability.values))

# %% [markdown]
# ## Checked against the exact answer
# A 3-node model has 8 states: its time course is a matrix exponential (`distsim.maboss.exact`).
# Each estimate is an average of N per-trajectory values in [0, 1], so its standard deviation is at
# most sqrt(p (1 - p) / N); every window of every state is within 4.6 of those (a family-wise error of
# about 1e-4 over these 48 comparisons, Bonferroni) of the exact value.

# %%
model = load(folder / "latch.bnd")
ref = exact.time_course(model)
want = exact.by_label(model, ref["states"], ref["window"])
n = int(ds.attrs["trajectories"])
for state in ds.state.values:
    got = ds.probability.sel(state=state).values
    p = want[str(state)]
    assert np.all(np.abs(got - p) <= 4.6 * np.sqrt(p * (1 - p) / n) + 4 / 2**30), state
print("every window within its error bound of the exact time course")

# %% [markdown]
# ## Mutants and the command line
# `mutants={"X": 0}` knocks X out (`distsim.maboss.knockout_screen` does every node in turn). The
# command line: `distsim maboss latch.bnd --trajectories 20000 -o latch.nc --csv latch --plot latch.png`
# (the `--csv` files are MaBoSS's own `_probtraj.csv` and `_fp.csv` layouts).

# %%
ko = maboss(folder / "latch.bnd", trajectories=5000, seed=1, mutants={"X": 0})
print("X knocked out, at max_time:", show(ko.state.values, ko.final_probability.values))
assert not any("X" in str(s).split(" -- ") for s in ko.state.values[ko.final_probability.values > 0])
