# %% [markdown]
# # Tutorial: the steady state of a probabilistic Boolean network
#
# A probabilistic Boolean network (PBN) updates every node at each step with one of its Boolean
# functions, chosen at random with the node's selection probabilities; with perturbation probability
# p each node also flips on its own, so the chain has one stationary distribution. `distsim.pbn`
# estimates the steady-state probability of a set of states to a chosen precision, the method of
# Mizera et al. 2019 (two-state Markov chain + Gelman-Rubin). Run this file with
# `python docs/tutorials/pbn_steady_state.py` (a few seconds once compiled; the first run compiles
# distsim's CPU kernels, cached on disk afterwards).

# %%
import distsim
import distsim.pbn as pbn
from distsim.pbn import reference

# The 3-gene example PBN of Shmulevich et al. 2002 (BN/PBN toolbox format), perturbation p = 0.01.
path = distsim.examples_dir() / "pbn" / "bnmpy_shmulevich2002_examplePBN_3n.txt"
net = pbn.load(path, perturbation=0.01)
print(net)

# %% [markdown]
# ## The estimate
# `target` names a set of states; `precision` r and `confidence` s mean: the estimate is within +-r
# of the true probability with probability s. `client=None` runs in this process; pass
# `client=distsim.connect()` (or a Dask client) to use every core or GPU: the numbers are the same.

# %%
ds = pbn.steady_state(net, ["x1=1", "x1=1,x2=0"], precision=0.01, seed=1, mode="sync")
print(ds[["probability", "ci_low", "ci_high", "rhat", "sample_size"]].to_dataframe())

# %% [markdown]
# ## Checked against the exact answer
# A 3-node network has 8 states, so its stationary distribution is a small eigenvector problem
# (`distsim.pbn.reference`). Each estimate lies within its precision of the exact value (this holds
# with probability 0.95 each, and for this seed it does).

# %%
pi = reference.stationary_distribution(net, "sync")
i1, i2 = net.nodes.index("x1"), net.nodes.index("x2")
exact = [float(pi @ reference.target_mask(net, ((i1, 1),))),
         float(pi @ reference.target_mask(net, ((i1, 1), (i2, 0))))]
for k, want in enumerate(exact):
    got = float(ds.probability[k])
    print(f"target {k}: estimate {got:.4f}, exact {want:.4f}")
    assert abs(got - want) <= 0.01, (got, want)

# %% [markdown]
# ## A knockout
# `fixed={"x2": 0}` holds x2 at 0 (never updated, never perturbed). The command line does the same:
# `distsim pbn steady-state MODEL -p 0.01 --target x1=1 --fix x2=0`.

# %%
ko = pbn.steady_state(net, "x1=1", precision=0.01, seed=1, mode="sync", fixed={"x2": 0})
pi_ko = reference.stationary_distribution(net.with_fixed({"x2": 0}), "sync")
want = float(pi_ko @ reference.target_mask(net, ((i1, 1),)))
print(f"x2 knocked out: P(x1=1) = {float(ko.probability[0]):.4f} (exact {want:.4f})")
assert abs(float(ko.probability[0]) - want) <= 0.01
