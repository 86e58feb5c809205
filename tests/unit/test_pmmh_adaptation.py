"""PMMH's staged burn-in adaptation (issue 34): after each stage of fixed length every chain proposes
with 2.562^2 / d x the covariance pooled over all chains' draws of the stage (Sherlock et al. 2015), so
the same seed gives the same chains on any number of workers, shards or rounds, and the adapted
proposal has the PMMH-optimal scale of the posterior. Immigration-death with the exact (CME) likelihood
as the reference; tolerances are 4 standard errors (fixed seeds)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import distsim.pmmh as pmmh
from distsim import engine
from distsim.engine.executor import LocalExecutor
from distsim.errors import ConvergenceWarning
from distsim.mcmc import diagnostics
from distsim.pmmh import exact, sampler
from distsim.ssa import load

DATA = Path(__file__).resolve().parents[1] / "data" / "pmmh"
Z = 4.0
TIMES = list(range(1, 13))
Y = [2, 4, 3, 6, 5, 4, 7, 5, 3, 6, 4, 5]  # as in test_pmmh.py: any counts would do
PRIOR = {"k1": "gamma:2,1", "k2": "gamma:2,10"}
OBS = [pmmh.Observable("y", "X", "poisson")]


@pytest.fixture(scope="module")
def net():
    return load(DATA / "immigration_death.rxn")


def test_stage_ends():
    assert sampler.stage_ends(0) == []
    assert sampler.stage_ends(5) == [5]
    assert sampler.stage_ends(2 * sampler.FIRST_STAGE - 1) == [2 * sampler.FIRST_STAGE - 1]
    assert sampler.stage_ends(200) == [25, 50, 100, 200]
    assert sampler.stage_ends(300) == [37, 75, 150, 300]


def test_pooled_proposal():
    rng = np.random.default_rng(0)
    phi = rng.normal(size=(4, 50, 2)) * [1.0, 3.0]
    acc = np.ones((4, 50), bool)
    L = sampler.pooled_proposal(phi, acc, np.eye(2))
    ref = sampler.PMMH_SCALE / 2 * (np.cov(phi.reshape(-1, 2).T) + 1e-8 * np.eye(2))
    assert np.allclose(L @ L.T, ref, rtol=1e-12, atol=0) and L[0, 1] == 0
    # too few accepted moves: the previous proposal halved
    acc[:] = False
    assert np.array_equal(sampler.pooled_proposal(phi, acc, 3 * np.eye(2)), 1.5 * np.eye(2))


def _infer(net, client=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return pmmh.infer(net, OBS, pmmh.Experiment(TIMES, {"y": Y}), prior=PRIOR, particles=16, iterations=70,
                          burn_in=45, chains=3, seed=7, progress=False, client=client, **kw)


def test_same_seed_same_chains_on_one_and_two_workers_and_any_rounds(net, monkeypatch, dask_client):
    one = _infer(net)
    assert one.attrs["adaptation_stage_ends"] == "22,45"
    # the proposal was adapted twice (not the starting INITIAL_STEP I) and is the same for every chain
    assert not np.allclose(one["proposal_sd"].values, sampler.INITIAL_STEP)
    two = _infer(net, client=dask_client, backend="cpu")
    monkeypatch.setattr(sampler, "ROUND_SECONDS", 1e-9)  # rounds of one iteration
    small = _infer(net)
    for other in (two, small):
        for v in ("k1", "k2", "log_likelihood", "accepted", "proposal_sd"):
            assert np.array_equal(one[v].values, other[v].values), v
    # each chain alone in its own shard: the same draws again
    with engine.Run("pmmh", LocalExecutor("cpu"), progress=False) as run:
        pr = sampler.build_problem(net, OBS, [pmmh.Experiment(TIMES, {"y": Y})], PRIOR)
        out = sampler._sample(run, pr, 7, 3, 71, 16, 45, None, shards=3)
    assert np.array_equal(np.exp(out["phi"][:, 46:, 0]), one["k1"].values)


def _exact_log_posterior_sd(pr, n=40):
    """Posterior sd of (log k1, log k2) by quadrature on a log grid (exact likelihood)."""
    g1, g2 = np.linspace(math.log(0.1), math.log(6), n), np.linspace(math.log(0.01), math.log(1.5), n)
    lp = np.array([[exact.log_likelihood(pr, [math.exp(a), math.exp(b)], 40) + pr.priors[0].log_density_phi(a)
                    + pr.priors[1].log_density_phi(b) for b in g2] for a in g1])
    w = np.exp(lp - lp.max())
    w /= w.sum()
    sds = []
    for g, m in ((g1, w.sum(1)), (g2, w.sum(0))):
        mean = (m * g).sum()
        sds.append(math.sqrt((m * (g - mean) ** 2).sum()))
    return np.array(sds)


def test_adapted_proposal_has_the_pmmh_optimal_scale(net):
    """The kept draws' proposal sd of log k_i is 2.562 / sqrt(d) x its posterior sd, within 4 standard
    errors of the sd estimated from the last stage's draws (relative se 1 / sqrt(2 ESS))."""
    pr = sampler.build_problem(net, OBS, [pmmh.Experiment(TIMES, {"y": Y})], PRIOR)
    sd = _exact_log_posterior_sd(pr)
    burn_in = 300
    with engine.Run("pmmh", LocalExecutor("cpu"), progress=False) as run:
        out = sampler._sample(run, pr, 11, 16, burn_in + 1, 16, burn_in, None)
    ends = sampler.stage_ends(burn_in)
    last = out["phi"][:, ends[-2] + 1:ends[-1] + 1]
    L = out["proposal_chol"]
    ratio = np.sqrt(np.diag(L @ L.T)) / (math.sqrt(sampler.PMMH_SCALE / 2) * sd)
    for i in range(2):
        ess = diagnostics.convergence(__import__("xarray").Dataset({"x": (("chain", "draw"), last[..., i])}))
        tol = Z / math.sqrt(2 * float(ess["ess_bulk"].iloc[0]))
        assert abs(ratio[i] - 1) < tol, (i, ratio, tol, ess)
