"""distsim's particle filter against smfsb's (Wilkinson) on smfsb's noisy Lotka-Volterra data.

Both filters estimate the likelihood without bias (their log-likelihood estimates differ in bias:
systematic vs multinomial resampling), so the means of exp(loglik - c) must agree within Monte
Carlo error (4 standard errors). The first four observations keep smfsb's pure-Python filter fast.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

smfsb = pytest.importorskip("smfsb")

import distsim.pmmh as pmmh  # noqa: E402
from distsim.pmmh import sampler  # noqa: E402
from distsim.pmmh.filter import log_likelihood  # noqa: E402
from distsim.ssa import load  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TH = np.array([1.0, 0.005, 0.6])
N, T = 100, 4


def test_loglik_matches_smfsb():
    from scipy import stats

    data = smfsb.data.lv_noise_10[:T]
    net = load(EXAMPLES / "pmmh" / "lotka_volterra.rxn")
    obs = [pmmh.Observable("prey", "Y1", "normal", 10), pmmh.Observable("predator", "Y2", "normal", 10)]
    ex = pmmh.Experiment(data[:, 0], {"prey": data[:, 1], "predator": data[:, 2]})
    pr = sampler.build_problem(net, obs, [ex], {"c1": "lognormal:0,1", "c2": "lognormal:-5,1", "c3": "lognormal:0,1"})
    ours = np.array([log_likelihood(pr, TH, N, k, 0)[0] for k in range(200)])

    def obsll(x, t, y, th):
        return np.sum(stats.norm.logpdf(y - x, scale=10))

    def sim_x0(rng, t0, th):
        return np.array([50, 100])

    def step(rng, x, t, dt, th):
        return smfsb.models.lv(th).step_gillespie()(rng, x, t, dt)

    mll = smfsb.pf_marginal_ll(N, sim_x0, 0, step, obsll, data)
    rng = np.random.default_rng(12345)
    theirs = np.array([mll(rng, TH) for _ in range(12)])
    c = float(np.mean(ours))
    a, b = np.exp(ours - c), np.exp(theirs - c)
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) < 4 * se, (a.mean(), b.mean(), se)
    assert se < 0.25 * a.mean()  # the comparison can see a 100% error in the likelihood
