"""PMMH with SSA particles against exact references (CME forward algorithm, quadrature posterior).

Immigration-death (0 -> X at k1, X -> 0 at k2 X): the filter's likelihood estimate is unbiased, the
PMMH posterior of k1 is the exact-likelihood posterior, and the draws do not depend on how the chains
are split into shards and rounds. Tolerances are 4 standard errors (fixed seeds).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import distsim.pmmh as pmmh
from distsim.errors import ConvergenceWarning, DataError, ModelError
from distsim.pmmh import exact, sampler
from distsim.pmmh.filter import log_likelihood, log_likelihoods
from distsim.ssa import load
from distsim.ssa.advance import advance
from distsim.ssa.methods import METHODS
from distsim.models.compile_reactions import compile_network

DATA = Path(__file__).resolve().parents[1] / "data" / "pmmh"
Z = 4.0

# measurements of X (Poisson noise) at t = 1..12, an input of the tests (any counts would do)
TIMES = list(range(1, 13))
Y = [2, 4, 3, 6, 5, 4, 7, 5, 3, 6, 4, 5]


@pytest.fixture(scope="module")
def net():
    return load(DATA / "immigration_death.rxn")


def _problem(net, observables=None, experiments=None, prior=None):
    observables = observables or [pmmh.Observable("y", "X", "poisson")]
    experiments = experiments or [pmmh.Experiment(TIMES, {"y": Y})]
    return sampler.build_problem(net, observables, experiments, prior or {"k1": "gamma:2,1"})


def test_advance_matches_the_transition_law(net):
    # X(dt) | X(0) = x0 ~ Binomial(x0, e^{-k2 dt}) + Poisson(k1 / k2 (1 - e^{-k2 dt}))
    c = compile_network(net)
    N, x0, dt = 20_000, 12, 1.5
    X = np.full((N, 1), x0, dtype=np.int64)
    ev, err = advance(c, METHODS["direct"].cpu, X, c.theta, c.law_arg, dt, key=11, e_hi=3)
    assert not err.any()
    k1, k2 = net.params["k1"], net.params["k2"]
    q = math.exp(-k2 * dt)
    mean = x0 * q + k1 / k2 * (1 - q)
    var = x0 * q * (1 - q) + k1 / k2 * (1 - q)
    x = X[:, 0].astype(float)
    assert abs(x.mean() - mean) < Z * math.sqrt(var / N)
    # Var of the sample variance ~ (mu4 - var^2) / N; bounded here by 2 var^2 / N + mu4 excess, use the sample's
    m4 = np.mean((x - x.mean()) ** 4)
    assert abs(x.var(ddof=1) - var) < Z * math.sqrt((m4 - var**2) / N)
    # the same key and word give the same bits; another word other draws
    Y1 = np.full((N, 1), x0, dtype=np.int64)
    advance(c, METHODS["direct"].cpu, Y1, c.theta, c.law_arg, dt, key=11, e_hi=3)
    assert np.array_equal(X, Y1)
    Y2 = np.full((N, 1), x0, dtype=np.int64)
    advance(c, METHODS["direct"].cpu, Y2, c.theta, c.law_arg, dt, key=11, e_hi=4)
    assert not np.array_equal(X, Y2)


def _unbiased(pr, theta, particles, repeats, max_count):
    ll_exact = exact.log_likelihood(pr, theta, max_count)
    ll = np.array([log_likelihood(pr, np.array(theta), particles, key, 0)[0] for key in range(repeats)])
    r = np.exp(ll - ll_exact)
    se = r.std(ddof=1) / math.sqrt(repeats)
    assert abs(r.mean() - 1.0) < Z * se, (r.mean(), se)
    assert se < 0.05  # the check has power: the estimate's spread is small enough to see a bias of 20%


def test_filter_likelihood_is_unbiased_poisson(net):
    _unbiased(_problem(net), [1.0], particles=16, repeats=600, max_count=40)


def test_filter_likelihood_is_unbiased_several_experiments_and_noise_models(net):
    # two conditions (initial counts 0 and 15, k2 fixed per condition), Gaussian noise on 2 X + 1,
    # each observable measured at some times only
    # with an inferred sigma, negative-binomial counts and log-normal X + 1
    obs = [pmmh.Observable("g", "2*X + 1", "normal", "sigma"), pmmh.Observable("n", "X", "negbin", 8),
           pmmh.Observable("l", "X + 1", "lognormal", 0.4)]
    nan = float("nan")
    exps = [pmmh.Experiment([0.5, 1.5, 3.0, 4.0], {"g": [3.1, nan, 9.5, 10.2], "n": [nan, 2, 4, nan]}),
            pmmh.Experiment([1.0, 2.5], {"g": [25.0, 18.3], "n": [11, 9], "l": [9.0, nan]}, initial={"X": 15},
                            parameters={"k2": 0.3})]
    pr = _problem(net, obs, exps, {"k1": "gamma:2,1", "sigma": "lognormal:0,1"})
    _unbiased(pr, [1.3, 1.5], particles=32, repeats=600, max_count=50)


def _exact_posterior(pr, grid, max_count):
    logp = np.array([exact.log_likelihood(pr, [k], max_count) + pr.priors[0].log_density_phi(math.log(k))
                     - math.log(k) for k in grid])
    w = np.exp(logp - logp.max())
    w /= np.trapezoid(w, grid)
    mean = np.trapezoid(grid * w, grid)
    sd = math.sqrt(np.trapezoid((grid - mean) ** 2 * w, grid))
    return mean, sd


def test_pmmh_posterior_matches_the_exact_posterior(net):
    pr = _problem(net)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # ESS is checked below, as the tolerance
        ds = pmmh.infer(net, [pmmh.Observable("y", "X", "poisson")], pmmh.Experiment(TIMES, {"y": Y}),
                        prior={"k1": "gamma:2,1"}, particles=32, iterations=2500, burn_in=300, chains=2, seed=3,
                        progress=False)
    mean, sd = _exact_posterior(pr, np.linspace(0.05, 3.0, 300), 40)
    x = ds["k1"].values.ravel()
    ess = float(ds["ess_bulk"].sel(variable="k1"))
    assert ess > 200
    assert abs(x.mean() - mean) < Z * sd / math.sqrt(ess), (x.mean(), mean, sd, ess)
    assert abs(x.std() / sd - 1) < Z / math.sqrt(2 * ess) + 0.02, (x.std(), sd)
    assert ds.attrs["particles"] == 32 and 0.1 < float(ds["acceptance_rate"].mean()) < 0.9
    assert set(ds.data_vars) == {"k1"} and ds["log_likelihood"].dims == ("chain", "draw")
    assert np.isfinite(ds["rhat"].values).all()
    az = pytest.importorskip("arviz")
    if hasattr(az, "InferenceData"):
        idata = pmmh.to_inference_data(ds)
        assert np.array_equal(idata.posterior["k1"].values, ds["k1"].values)
        assert idata.sample_stats["log_likelihood"].shape == (2, ds.sizes["draw"])


def test_state_rebuilt_on_the_client_is_the_workers(net):
    """A block ships back each chain's last state only; the client's :func:`state_at` rebuilds the state
    after any earlier iteration (a shard that went further than the others) with the worker's bits."""
    pr = _problem(net, prior={"k1": "gamma:2,1", "k2": "gamma:2,10"})
    for before, it0 in ((None, 0), ("mid", 4)):
        start = [None, None]
        if before:
            start = sampler.run_block(None, sampler.PMMHBlock(pr, 5, np.array([0, 1]), start, 0, it0, 16))["states"]
            start = [dataclasses.replace(st, chol=0.3 * st.chol) for st in start]  # a stage end's new proposal
        long = sampler.run_block(None, sampler.PMMHBlock(pr, 5, np.array([0, 1]), start, it0, 6, 16))
        assert len(long["states"]) == 2 and long["done"] == 6
        for k in range(1, 6):
            short = sampler.run_block(None, sampler.PMMHBlock(pr, 5, np.array([0, 1]), start, it0, k, 16))
            for c in range(2):
                got = sampler.state_at(pr, long["phi"][c, k - 1], long["loglik"][c, k - 1], start[c])
                want = short["states"][c]
                assert np.array_equal(got.phi, want.phi) and np.array_equal(got.chol, want.chol)
                assert (got.loglik, got.logprior) == (want.loglik, want.logprior)


def test_draws_do_not_depend_on_shards_or_rounds(net):
    pr = _problem(net, prior={"k1": "gamma:2,1", "k2": "gamma:2,10"})
    both = sampler.run_block(None, sampler.PMMHBlock(pr, 5, np.array([0, 1]), [None, None], 0, 8, 16))
    first = sampler.run_block(None, sampler.PMMHBlock(pr, 5, np.array([1]), [None], 0, 3, 16))
    rest = sampler.run_block(None, sampler.PMMHBlock(pr, 5, np.array([1]), [first["states"][0]], 3, 5, 16))
    alone = np.concatenate([first["phi"][0], rest["phi"][0]])
    assert np.array_equal(both["phi"][1], alone)
    assert np.array_equal(both["loglik"][1], np.concatenate([first["loglik"][0], rest["loglik"][0]]))
    assert not np.array_equal(both["phi"][0], both["phi"][1])
    # filters run together give each one's estimate alone
    keys = np.array([sampler.chain_key(5, c) for c in range(3)])
    thetas = np.array([[1.0, 0.2], [0.5, 0.1], [2.0, 0.4]])
    together, _ = log_likelihoods(pr, thetas, 16, keys, 7)
    assert list(together) == [log_likelihood(pr, thetas[g], 16, int(keys[g]), 7)[0] for g in range(3)]


def test_particle_number_check(net):
    # one particle: the estimate's variance is far above 2 -> a warning naming the variance
    with pytest.warns(ConvergenceWarning, match="Var\\(log-likelihood estimate\\)"):
        pmmh.infer(net, [pmmh.Observable("y", "X", "poisson")], pmmh.Experiment(TIMES, {"y": Y}),
                   prior={"k1": "gamma:2,1"}, particles=1, iterations=3, burn_in=1, chains=1, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ds = pmmh.infer(net, [pmmh.Observable("y", "X", "poisson")], pmmh.Experiment(TIMES, {"y": Y}),
                        prior={"k1": "gamma:2,1"}, particles="auto", iterations=3, burn_in=1, chains=1,
                        progress=False)
    assert ds.attrs["loglik_variance_at_start"] < sampler.VAR_AUTO
    assert ds.attrs["particles"] >= sampler.AUTO_START


def test_bad_inputs_are_refused(net):
    with pytest.raises(ModelError, match="unknown name 'Z'"):
        _problem(net, [pmmh.Observable("y", "Z + 1", "poisson")])
    with pytest.raises(ModelError, match="noise model 'gauss'"):
        _problem(net, [pmmh.Observable("y", "X", "gauss", 1)])
    with pytest.raises(ModelError, match="needs a noise parameter"):
        _problem(net, [pmmh.Observable("y", "X", "normal")])
    with pytest.raises(DataError, match="counts"):
        _problem(net, experiments=[pmmh.Experiment([1, 2], {"y": [1.5, 2]})])
    with pytest.raises(DataError, match="strictly increasing"):
        _problem(net, experiments=[pmmh.Experiment([2, 1], {"y": [1, 2]})])
    with pytest.raises(DataError, match="unknown observable 'q'"):
        _problem(net, experiments=[pmmh.Experiment([1, 2], {"q": [1, 2]})])
    with pytest.raises(ValueError, match="neither a model parameter nor used"):
        _problem(net, prior={"k1": "gamma:2,1", "zz": "gamma:1,1"})
    with pytest.raises(ValueError, match="not a proper prior"):
        _problem(net, prior={"k1": "uniform:3,1"})


def test_parameters_reach_kinetic_laws():
    # a chain's values of law constants (Hill laws of the toggle switch) are those compile_network folds in
    net = load(Path(__file__).resolve().parents[2] / "examples" / "ssa" / "toggle_switch.rxn")
    pr = sampler.build_problem(net, [pmmh.Observable("u", "U", "negbin", "r")],
                               [pmmh.Experiment([1, 2], {"u": [300, 250]})],
                               {"a1": "lognormal:4,1", "K": "gamma:2,0.02", "mu": "gamma:2,20", "r": "gamma:2,0.2"})
    values = pr.values(np.array([42.0, 90.0, 0.2, 10.0]))
    th, la = pr.tables(values)
    ref = compile_network(net.with_parameters(a1=42.0, K=90.0, mu=0.2))
    assert np.array_equal(th, ref.theta) and np.array_equal(la, ref.law_arg)
    ll, fired = log_likelihood(pr, np.array([42.0, 90.0, 0.2, 10.0]), 64, 1, 0)
    assert math.isfinite(ll) and fired > 0


def test_sbml_events_are_accepted():
    # DSMTS 00028 (events): the particles carry them on either backend (test_pmmh_events.py)
    net = load(Path(__file__).resolve().parents[1] / "data" / "dsmts" / "00028" / "00028-sbml-l2v4.xml")
    assert net.has_hooks and not net.hybrid
    sampler.check_backend(net, gpu=False)
    sampler.check_backend(net, gpu=True)


@pytest.mark.skipif(__import__("shutil").which("nvcc") is None, reason="nvcc not on PATH")
def test_advance_kernel_compiles_for_every_method(tmp_path):
    import subprocess

    from distsim.backends import cuda
    from distsim.ssa.gpu_advance import advance_source

    for m in METHODS.values():
        if m.cuda_header is None:
            continue
        f = tmp_path / "k.cu"
        f.write_text(advance_source(m))
        r = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90", "--ptx", "-I", str(cuda.kernels_dir()), "-o",
                            str(tmp_path / "k.ptx"), str(f)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, (m.name, r.stderr)


def test_time_limit_stops_between_rounds(net):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ds = pmmh.infer(net, [pmmh.Observable("y", "X", "poisson")], pmmh.Experiment(TIMES, {"y": Y}),
                        prior={"k1": "gamma:2,1"}, particles=16, iterations=100_000, burn_in=5, chains=1, seed=1,
                        progress=False, time_limit=1.0)
    assert ds.attrs["stopped_by"] == "time_limit" and 5 < ds.attrs["iterations"] < 100_000
    assert ds.sizes["draw"] == ds.attrs["iterations"] - 5


def test_initial_amounts_set_by_parameters(net):
    """An initial value named by a parameter: round(value x species_scale) molecules, the same filter
    bits as that count given as a number; inferable (a prior on it); no count (< 0) -> estimate -inf."""
    obs = [pmmh.Observable("y", "X", "normal", 0.4)]
    data = {"y": [0.3, 0.5, 0.2, 0.6]}
    by_param = sampler.build_problem(net, obs, [pmmh.Experiment([0, 1, 2, 4], data, initial={"X": "x0"})],
                                     {"k1": "gamma:2,1", "x0": "uniform:0,10"}, initial={"x0": 0.5},
                                     species_scale=10)
    by_count = sampler.build_problem(net, obs, [pmmh.Experiment([0, 1, 2, 4], data, initial={"X": 3})],
                                     {"k1": "gamma:2,1"}, species_scale=10)
    keys = np.array([11, 12])
    a, _ = log_likelihoods(by_param, np.array([[1.0, 0.26], [1.0, 0.34]]), 64, keys, 3)  # both: 3 molecules
    b, _ = log_likelihoods(by_count, np.array([[1.0], [1.0]]), 64, keys, 3)
    assert np.array_equal(a, b) and np.isfinite(a).all()
    c, _ = log_likelihoods(by_param, np.array([[1.0, 0.74], [1.0, -0.2]]), 64, keys, 3)
    assert np.isfinite(c[0]) and c[0] != a[0] and c[1] == -math.inf
    with pytest.raises(DataError, match="'X' is 'z0', neither a number nor a parameter"):
        sampler.build_problem(net, obs, [pmmh.Experiment([1], {"y": [1]}, initial={"X": "z0"})], {"k1": "gamma:2,1"})


def test_all_chains_of_a_run_advance_in_one_call_per_interval(net, monkeypatch):
    """In one process (one GPU) the chains are one shard: each observation interval of each iteration is
    one advance of every live chain's particles (chains x particles rows), not one per chain."""
    from distsim.pmmh import filter as pf

    calls = []
    real = pf.advance

    def counting(c, method, X, *a, **k):
        calls.append(X.shape[0])
        return real(c, method, X, *a, **k)

    monkeypatch.setattr(pf, "advance", counting)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ds = pmmh.infer(net, [pmmh.Observable("y", "X", "normal", 3.0)], pmmh.Experiment([1, 2, 3], {"y": [2, 3, 4]}),
                        prior={"k1": "gamma:2,1"}, particles=16, iterations=4, burn_in=1, chains=6, progress=False)
    n_check = sampler.CHECK_REPEATS
    # the particle-number check (20 filters together), then iterations 0..4: 3 intervals each, all 6 chains
    # (every proposal is inside the gamma prior's support; normal noise: no chain dies)
    assert calls == [n_check * 16] * 3 + [6 * 16] * (3 * 5)
    assert ds.sizes["chain"] == 6
