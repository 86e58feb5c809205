"""PMMH with hybrid particles (time-dependent propensities, rate rules; CPU): the filter's likelihood
estimate is unbiased against the exact CME likelihood of immigration-death with the birth rate
k(t) = a + b sin(t) (:func:`distsim.pmmh.exact.log_likelihood_varying`: p' = p Q(t) integrated), and of
births driven by a decaying rate-rule input (k x(t), x = x0 e^{-ct}); chains together give what each
gives alone; an end-to-end run; a GPU filter refuses triggers on rate-rule variables (GPU == CPU:
test_advance_hybrid_host.py, test_advance_hybrid_gpu.py). Tolerances: 4 standard errors of the mean of
exp(ll - ll_exact) over independent filters (fixed seeds)."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest

import distsim.pmmh as pmmh
from distsim.errors import ConvergenceWarning, ModelError
from distsim.models.arith import BinOp, Num, Param, Species
from distsim.models.events import Assignment, Compare, Event, RateRule
from distsim.models.reactions import Reaction, ReactionNetwork
from distsim.pmmh import exact, sampler
from distsim.pmmh.filter import log_likelihood, log_likelihoods

from test_advance_hybrid import D, sine_immigration_death
from test_pmmh_events import _exact_with_a_state_event
from test_ssa_hybrid import C as DECAY_C, X0 as DECAY_X0, decay

Z = 4.0
TIMES, Y = [1, 2, 3, 4, 5, 6], [2, 5, 6, 6, 4, 5]


def plain(death: str | None = "d") -> ReactionNetwork:
    """The reference's network: 0 -> X at rate k1 (varying in time), X -> 0 at rate d."""
    rx = [Reaction((), ((0, 1),), rate="k1")] + ([Reaction(((0, 1),), (), rate=death)] if death else [])
    return ReactionNetwork.create(["X"], [0], rx, {"k1": 0.0, **({death: D} if death else {})})


def _problem(net, prior, times=TIMES, y=Y):
    return sampler.build_problem(net, [pmmh.Observable("y", "X", "poisson")], [pmmh.Experiment(times, {"y": y})],
                                 prior)


def _sine(t, v):
    return v["a"] + v["b"] * math.sin(t)


def _unbiased(pr, theta, ll_exact, repeats=400, particles=16):
    ll = np.array([log_likelihood(pr, np.array(theta), particles, key, 0)[0] for key in range(repeats)])
    r = np.exp(ll - ll_exact)
    se = r.std(ddof=1) / math.sqrt(repeats)
    assert abs(r.mean() - 1.0) < Z * se, (r.mean(), se)
    assert se < 0.05  # power: a bias of 20% would show


def test_varying_reference_is_the_constant_one_when_nothing_varies():
    pr = _problem(plain().with_parameters(k1=1.7), {"d": "gamma:2,1"})
    ref = exact.log_likelihood(pr, [0.4], 40)
    got = exact.log_likelihood_varying(pr, [0.4], 40, plain(), {"k1": lambda t, v: 1.7})
    assert abs(got - ref) < 1e-7, (got, ref)
    with pytest.raises(ValueError, match="not linear in 'd'"):
        exact.log_likelihood_varying(pr, [0.4], 40, ReactionNetwork.create(
            ["X"], [0], [Reaction((), ((0, 1),), law=BinOp("*", Param("d"), Param("d")))], {"d": 0.3}),
            {"d": lambda t, v: 0.3})


def test_filter_likelihood_is_unbiased_with_a_sine_birth_rate():
    pr = _problem(sine_immigration_death(), {"a": "gamma:2,1"})
    theta = [2.0]
    ll_exact = exact.log_likelihood_varying(pr, theta, 40, plain(), {"k1": _sine})
    # the reference sees the time dependence: a constant rate a differs by far more than the test's error
    assert abs(exact.log_likelihood_varying(pr, theta, 40, plain(), {"k1": lambda t, v: v["a"]}) - ll_exact) > 0.5
    _unbiased(pr, theta, ll_exact)


def test_filter_likelihood_is_unbiased_with_a_rate_rule_input():
    # births of A at rate k x(t), x' = -c x from x0: the particles carry x (their work rows, resampled with
    # the counts)
    net = decay()
    pr = sampler.build_problem(net, [pmmh.Observable("y", "A", "poisson")],
                               [pmmh.Experiment([0.5, 1.0, 2.0, 3.0], {"y": [5, 9, 13, 15]})], {"k": "gamma:2,1"})
    theta = [3.0]
    births = ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), rate="k1")], {"k1": 0.0})
    ll_exact = exact.log_likelihood_varying(pr, theta, 60, births,
                                            {"k1": lambda t, v: v["k"] * DECAY_X0 * math.exp(-DECAY_C * t)})
    _unbiased(pr, theta, ll_exact)


def test_chains_together_give_what_each_gives_alone():
    pr = _problem(sine_immigration_death(), {"d": "gamma:2,1"})  # (any d > 0 keeps the rates positive)
    thetas = np.array([[0.1], [0.3], [0.8]])
    keys = np.array([3, 9, 4])
    ll, _ = log_likelihoods(pr, thetas, 32, keys, 2)
    alone = [log_likelihood(pr, thetas[g], 32, int(keys[g]), 2)[0] for g in range(3)]
    assert np.array_equal(ll, np.array(alone)) and np.all(np.isfinite(ll))


def test_a_run_of_a_hybrid_network():
    net = sine_immigration_death()
    obs, exps, prior = [pmmh.Observable("y", "X", "poisson")], pmmh.Experiment([1, 2, 3], {"y": [2, 5, 6]}), \
        {"d": "gamma:2,1"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ds = pmmh.infer(net, obs, exps, prior=prior, iterations=30, burn_in=5, chains=2, particles=16, seed=2,
                        progress=False, backend="cpu")
        again = pmmh.infer(net, obs, exps, prior=prior, iterations=30, burn_in=5, chains=2, particles=16, seed=2,
                           progress=False, backend="cpu")
    d = ds["d"].values
    assert d.shape == (2, 25) and np.all(d > 0) and np.all(np.isfinite(ds["log_likelihood"].values))
    assert np.unique(d).size > 2  # the chains moved
    assert np.array_equal(d, again["d"].values)  # the seed fixes the draws


def test_a_gpu_filter_is_accepted_but_for_located_triggers():
    # hybrid particles run on GPUs (test_advance_hybrid_host.py: the GPU filter == the CPU's on the host); a
    # trigger on a rate-rule variable (located on CPUs) is refused before anything runs, naming the CPU backend
    net = sine_immigration_death()
    sampler.check_backend(net, gpu=False)
    sampler.check_backend(net, gpu=True)
    low = decay(events=[Event("low", Compare("<", Param("X"), Num(2.0)), (Assignment("X", -1, Param("x0")),))])
    sampler.check_backend(low, gpu=False)
    with pytest.raises(ModelError, match=r"cannot locate event triggers on rate-rule variables yet; the CPU backend "
                                         r"does \(backend='cpu'\)"):
        sampler.check_backend(low, gpu=True)
    pr = sampler.build_problem(low, [pmmh.Observable("y", "A", "poisson")], [pmmh.Experiment([1, 2], {"y": [2, 4]})],
                               {"k": "gamma:2,1"})
    with pytest.raises(ModelError, match=r"backend='cpu'"):  # (no GPU needed to see it)
        log_likelihood(pr, np.array([2.0]), 8, 1, 0, backend="gpu")


def test_filter_likelihood_is_unbiased_with_a_state_event_on_a_rate_rule_variable():
    # immigration at rate k1, a rate-rule variable (k1' = 0) that 'X >= 4' sets to 0.3: each particle's k1
    # is its own (the value in its work row, resampled with its counts); the forward algorithm on (X, fired)
    net = ReactionNetwork.create(["X"], [0], [Reaction((), ((0, 1),), law=Param("k1"), name="immigration"),
                                              Reaction(((0, 1),), (), rate="k2", name="death")],
                                 {"k1": 1.0, "k2": 0.2}, rate_rules=[RateRule("r", "k1", -1, Num(0.0))],
                                 events=[Event("slow", Compare(">=", Species(0), Num(4.0)),
                                               (Assignment("k1", -1, Num(0.3)),))])
    assert net.hybrid
    pr = _problem(net, {"k1": "gamma:2,1"}, times=[1, 2, 3, 4, 5, 6], y=[2, 4, 3, 2, 2, 1])
    theta = [2.0]
    ll_exact = _exact_with_a_state_event(dataclasses.replace(pr, net=dataclasses.replace(pr.net, rate_rules=())),
                                         theta[0], 0.3, 4, 40)
    assert abs(exact.log_likelihood(pr, theta, 40) - ll_exact) > 0.5  # (without the event)
    _unbiased(pr, theta, ll_exact)
