# %% [markdown]
# # Tutorial: inferring a gene regulatory network with a parallel genetic algorithm
#
# `distsim.grn` follows García-Calvo et al. 2018 (cuEVOGENET): find a signed network and one rule per
# gene that drive the initial state to the target state in a fixed number of synchronous updates,
# changing as few links of a literature network as it can. Fitness = lambda x (genes that miss the
# target) + (1 - lambda) x (links changed), normalised; lower is better. Run with
# `python docs/tutorials/grn.py` (about 10 s on 2 CPU cores once compiled; the first run compiles).

# %%
import numpy as np

import distsim
import distsim.grn as grn

# The mouse-eye problem of García-Calvo et al. 2018 (32 genes, E9 -> E10.5).
problem = grn.load(distsim.examples_dir() / "grn" / "mouse_eye.toml")
print(problem.summary())

# %% [markdown]
# ## The search
# An island GA (4 islands of 256, migration every 16 generations) until the known optimum of this
# problem (6 link changes, every gene on target: fitness 0.0005859375) or 1,000 generations. Island i
# draws from Philox stream (seed, i): the same seed gives the same network on any hardware.

# %%
OPTIMUM = 0.0005859375
ds = grn.infer(problem, model="island", target_fitness=OPTIMUM, seed=1)
a = ds.attrs
print(f"fitness {a['fitness']:.10g} after {a['generations']} generations ({a['stop_reason']}); "
      f"{a['link_changes']} links changed, {a['node_mismatches']} genes off target")

# %% [markdown]
# ## Checking the answer
# The result holds the best links and rules; replaying them with the problem's own simulator must
# reach the target state and give the reported fitness.

# %%
assert a["stop_reason"] == "target" and a["fitness"] == OPTIMUM
links, rules = ds.best_links.values, ds.best_rules.values
assert problem.fitness(links, rules) == a["fitness"]
final = problem.simulate(links, rules)[-1]
assert np.array_equal(final, ds.target_state.values)
changed = [(str(ds.gene.values[i]), str(ds.source.values[j]), int(ds.reference_links.values[i, j]), int(links[i, j]))
           for i, j in np.argwhere(ds.changed_links.values != 0)]
print("changed links (target gene, source gene, literature sign, inferred sign):")
for row in changed:
    print("  ", row)
assert len(changed) == a["link_changes"]

# %% [markdown]
# The convergence curve is `ds.best_so_far` (one value per generation); `distsim grn infer
# examples/grn/mouse_eye.toml --target-fitness 0.0005859375 --seed 1 --plot mouse.png` draws it.

# %%
curve = ds.best_so_far.values
assert np.all(np.diff(curve) <= 0) and curve[-1] == OPTIMUM  # elitist: never worse
print(f"best fitness at generation 0: {curve[0]:.4f}, at the end: {curve[-1]:.6f}")
