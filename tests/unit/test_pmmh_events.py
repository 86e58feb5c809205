"""PMMH with SBML events in the particles (CPU): the filter's likelihood estimate is unbiased against
the exact CME likelihood of immigration-death whose k1 a time event doubles at t = 1.5
(:func:`distsim.pmmh.exact.log_likelihood` with that change), the event inside an interval and at an
observation time, and of a state event setting k1 the first time X reaches 4 (each particle's k1 its
own: the forward algorithm on (X, fired); fails if the work rows are not resampled with the counts);
hybrid networks run on either backend, a trigger on a rate-rule variable on the CPU only. Tolerances: 4
standard errors (fixed seeds). GPU == CPU: test_advance_events_host.py (g++) and test_advance_events_gpu.py."""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import expm

import distsim.pmmh as pmmh
from distsim.errors import ConvergenceWarning, ModelError
from distsim.models.arith import Num
from distsim.models.compile_reactions import compile_network
from distsim.models.events import RateRule
from distsim.pmmh import exact, sampler
from distsim.pmmh.filter import log_likelihood, log_likelihoods
from distsim.pmmh.observation import log_weights, noise_values
from distsim.ssa import load

from test_ssa_events import event, with_events

DATA = Path(__file__).resolve().parents[1] / "data" / "pmmh"
Z = 4.0


@pytest.fixture(scope="module")
def net():
    plain = load(DATA / "immigration_death.rxn")
    return with_events(plain, [event(plain, "double", "time >= 1.5", {"k1": "2 * k1"})])


def _problem(net, times, y):
    return sampler.build_problem(net, [pmmh.Observable("y", "X", "poisson")], [pmmh.Experiment(times, {"y": y})],
                                 {"k1": "gamma:2,1"})


@pytest.mark.parametrize("times,y", [([1, 2, 3, 4, 5, 6], [1, 3, 6, 7, 9, 10]),
                                     ([0.5, 1.5, 2.5, 4.0], [0, 2, 4, 7])])
def test_filter_likelihood_is_unbiased_with_a_time_event(net, times, y):
    pr = _problem(net, times, y)
    theta = [1.2]
    ll_exact = exact.log_likelihood(pr, theta, 40, changes=[(1.5, {"k1": 2 * theta[0]})])
    # the reference sees the event: without it the likelihood differs by far more than the test's error
    assert abs(exact.log_likelihood(pr, theta, 40) - ll_exact) > 0.5
    repeats = 400
    ll = np.array([log_likelihood(pr, np.array(theta), 16, key, 0)[0] for key in range(repeats)])
    r = np.exp(ll - ll_exact)
    se = r.std(ddof=1) / math.sqrt(repeats)
    assert abs(r.mean() - 1.0) < Z * se, (r.mean(), se)
    assert se < 0.05  # power: a bias of 20% would show


def test_chains_together_give_what_each_gives_alone(net):
    pr = _problem(net, [1, 2, 3, 4], [1, 3, 5, 4])
    thetas = np.array([[0.8], [1.5], [2.5]])
    keys = np.array([3, 9, 4])
    ll, _ = log_likelihoods(pr, thetas, 32, keys, 2)
    alone = [log_likelihood(pr, thetas[g], 32, int(keys[g]), 2)[0] for g in range(3)]
    assert np.array_equal(ll, np.array(alone))


def test_particles_backend_of_hybrid_networks(net):
    # hybrid particles run on either backend (test_pmmh_hybrid.py, test_advance_hybrid_host.py); a trigger on a
    # rate-rule variable only on the CPU: an automatic choice takes it, a GPU asked for by name is refused
    hybrid = dataclasses.replace(net, parameters=net.parameters + (("z", 1.0),),
                                 rate_rules=(RateRule("z", "z", -1, Num(-0.1)),))
    assert hybrid.hybrid
    sampler.check_backend(hybrid, gpu=False)
    sampler.check_backend(hybrid, gpu=True)
    assert [sampler.particles_backend(hybrid, b) for b in (None, "auto", "gpu", "cpu")] == [None, "auto", "gpu", "cpu"]
    assert [sampler.particles_backend(net, b) for b in (None, "auto", "gpu")] == [None, "auto", "gpu"]
    located = with_events(hybrid, [event(hybrid, "low", "z < 0.5", {"z": "1"})])
    assert len(compile_network(located).events.loc_ev)
    sampler.check_backend(located, gpu=False)
    with pytest.raises(ModelError, match=r"cannot locate event triggers on rate-rule variables.*backend='cpu'"):
        sampler.check_backend(located, gpu=True)
    assert [sampler.particles_backend(located, b) for b in (None, "auto", "gpu", "cpu")] == ["cpu", "cpu", "gpu",
                                                                                             "cpu"]
    import dask

    with dask.config.set({"distsim.backend": "gpu"}):  # a GPU named in the config is asked for by name
        assert sampler.particles_backend(located, None) == "gpu"


def test_a_run_of_a_network_with_events(net):
    obs, exps, prior = [pmmh.Observable("y", "X", "poisson")], pmmh.Experiment([1, 2, 3], {"y": [1, 3, 6]}), \
        {"k1": "gamma:2,1"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ds = pmmh.infer(net, obs, exps, prior=prior, iterations=30, burn_in=5, chains=2, particles=16, seed=2,
                      progress=False)
        again = pmmh.infer(net, obs, exps, prior=prior, iterations=30, burn_in=5, chains=2, particles=16, seed=2,
                         progress=False)
    k1 = ds["k1"].values
    assert k1.shape == (2, 25) and np.all(k1 > 0)
    assert np.array_equal(k1, again["k1"].values)  # the seed fixes the draws


def _exact_with_a_state_event(pr, k1, k1_after, level, max_count):
    """The forward algorithm on (X, fired): 'X >= level' sets k1 := k1_after the first time X reaches
    level (constant after that: later firings assign the same value)."""
    ex = pr.experiments[0]
    values = pr.values(np.array([k1]), ex)
    plain = dataclasses.replace(pr.net, events=())
    states, Q0 = exact.generator(plain.with_parameters(k1=k1), max_count)
    _, Q1 = exact.generator(plain.with_parameters(k1=k1_after), max_count)
    n = len(states)
    at = {int(x): i for i, x in enumerate(states[:, 0])}
    Q = np.zeros((2 * n, 2 * n))
    Q[:n, :n], Q[n:, n:] = Q0, Q1
    i, j = at[level - 1], at[level]  # the only way into X = level before the event: immigration from level - 1
    Q[i, n + j], Q[i, j] = Q0[i, j], 0.0
    xs = np.concatenate([states, states])
    noise = noise_values(pr.observables, values)
    p = np.zeros(2 * n)
    p[at[0]] = 1.0
    total, t_prev = 0.0, 0.0
    for k, t in enumerate(ex.times):
        p = np.maximum(p @ expm(Q * (t - t_prev)), 0.0)
        lik = np.exp(log_weights(pr.observables, ex.at(k), xs, values, noise)) * p
        total += math.log(lik.sum())
        p, t_prev = lik / lik.sum(), float(t)
    return total


def test_filter_likelihood_is_unbiased_with_a_state_event_per_particle():
    # 'X >= 4: k1 := 0.3': each particle's k1 depends on its own past (its event work row, resampled
    # with its counts); k1 is inferred and assigned by the event (its initial value is the chain's)
    plain = load(DATA / "immigration_death.rxn")
    net = with_events(plain, [event(plain, "slow", "X >= 4", {"k1": "0.3"})])
    pr = _problem(net, [1, 2, 3, 4, 5, 6], [2, 4, 3, 2, 2, 1])
    theta = [2.0]
    ll_exact = _exact_with_a_state_event(pr, theta[0], 0.3, 4, 40)
    no_event = exact.log_likelihood(pr, theta, 40)
    assert abs(no_event - ll_exact) > 0.5
    repeats = 400
    ll = np.array([log_likelihood(pr, np.array(theta), 16, key, 0)[0] for key in range(repeats)])
    r = np.exp(ll - ll_exact)
    se = r.std(ddof=1) / math.sqrt(repeats)
    assert abs(r.mean() - 1.0) < Z * se, (r.mean(), se)
    assert se < 0.05
