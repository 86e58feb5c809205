"""Data-augmentation MCMC (seed 003): observations, priors, bridge hit rates, Gamma draws,
complete-data conjugacy, simulation-based calibration, sharding and fault tolerance (CPU)."""

from __future__ import annotations

import functools
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import distsim.mcmc as mcmc
from distsim.engine import DaskExecutor, LocalExecutor
from distsim.engine.faults import KillWorkerOnce
from distsim.errors import ConvergenceWarning, ModelError
from distsim.mcmc import cpu
from distsim.mcmc.priors import rate_model
from distsim.mcmc.sampler import build_problem
from distsim.mcmc.block import MCMCBlock
from distsim.mcmc.shard import run_block_cpu
from distsim.models.formats.reaction_text import parse_reactions
from distsim.ssa import load

ROOT = Path(__file__).resolve().parents[2]
MM = ROOT / "examples" / "mcmc" / "michaelis_menten.rxn"
MM_DATA = ROOT / "examples" / "mcmc" / "mm_observations.csv"
MM_PRIOR = {"k1": (2.0, 1000.0), "k2": (2.0, 10.0), "k3": (2.0, 10.0)}
# exact P(forward path from y_{i-1} ends at y_i) at theta = (0.001, 0.2, 0.1), from the CME (issue 7)
CME_HIT = [7.31e-4, 3.93e-3, 2.17e-3, 2.26e-3, 7.31e-3, 2.21e-3, 9.17e-3, 1.02e-2, 1.76e-2, 1.14e-2]
BD = "0 -> X ; kb = 2.0\nX -> 0 ; kd = 0.5\ninit: X = 5\n"
DEATH = "X -> 0 ; kd = 0.5\ninit: X = 20\n"  # one rate; mixes fast (R-hat < 1.01, ESS > 1000 in 300 iterations)

# short runs on purpose: their ConvergenceWarning is expected (it is tested in test_convergence_warning)
pytestmark = pytest.mark.filterwarnings("ignore::distsim.errors.ConvergenceWarning")


@pytest.fixture(scope="module")
def mm():
    return load(MM)


def _bd_obs(xs, dt=1.0):
    import pandas as pd

    return pd.DataFrame({"time": np.arange(len(xs)) * dt, "X": xs})


# ---- observations and conservation ---------------------------------------------------------------

def test_conservation_laws_and_states(mm):
    C = mcmc.conservation_laws(mm)
    assert C.shape == (2, 4)
    assert not np.any(mm.stoichiometry() @ C.T)
    obs = mcmc.as_observations(mm, MM_DATA)
    E, S, ES, P = obs.states.T
    assert np.array_equal(ES, 120 - E) and np.array_equal(P, 301 - S - ES)
    assert obs.observed[0].all() and not obs.observed[1:, 2:].any()


def test_unidentified_species_named(mm, tmp_path):
    f = tmp_path / "obs.csv"
    f.write_text("time,E,S,ES,P\n0,120,301,0,0\n10,71,,,\n")
    with pytest.raises(mcmc.ObservationError, match=r"not identified: .*S.*") as e:
        mcmc.as_observations(mm, f)
    assert "E + ES" in str(e.value) or "ES" in str(e.value)


def test_bad_csv_names_file_and_line(mm, tmp_path):
    f = tmp_path / "obs.csv"
    f.write_text("time,E,S,ES,P\n0,120,301,0,0\n10,71,2.5,,\n")
    with pytest.raises(mcmc.ObservationError, match=r"obs.csv:3: S = '2.5'"):
        mcmc.as_observations(mm, f)
    f.write_text("time,E,S,ES,P\n0,120,301,0,0\n10,71,219,50,0\n")
    with pytest.raises(mcmc.ObservationError, match=r"obs.csv:3: .*conservation law"):
        mcmc.as_observations(mm, f)


def test_priors_and_mass_action_checks(mm):
    with pytest.raises(ValueError, match="no prior for rate parameter 'k2'"):
        rate_model(mm, {"k1": (1, 1), "k3": (1, 1)})
    with pytest.raises(ValueError, match="'kx', which is not a rate parameter"):
        rate_model(mm, {**MM_PRIOR, "kx": (1, 1)})
    with pytest.raises(ValueError, match="shape and rate must be finite and > 0"):
        rate_model(mm, {**MM_PRIOR, "k1": (0.0, 1.0)})
    law = parse_reactions("0 -> X ; law: 2 * X / (1 + X)\nX -> 0 ; kd = 1\ninit: X = 1\n", file="m.rxn")
    with pytest.raises(ModelError, match="mass-action"):
        rate_model(law, {"kd": (1, 1)})


def test_improper_posterior_stops_naming_the_reaction():
    # births are almost impossible at kb = 1e-9: the first accepted path has r_kb = 0, and under the 1/theta
    # prior Gamma(0 + 0, .) is undefined -- this must stop, never draw Gamma(0).
    net = parse_reactions("0 -> X ; kb = 1e-9\nX -> 0 ; kd = 0.5\ninit: X = 8\n", file="bd.rxn")
    with pytest.raises(RuntimeError, match=r"improper posterior: reaction 1 '0 -> X' \(kb\) fired 0 times"):
        mcmc.infer_rates(net, _bd_obs([8, 6, 5, 3]), improper_prior=True, iterations=5, burn_in=0, chains=1,
                         client=LocalExecutor("cpu"))


# ---- the bridge sampler --------------------------------------------------------------------------

def test_hit_rates_match_cme(mm):
    """Attempt kernel at the true theta vs the exact CME probabilities. N = 30,000 attempts per interval;
    each count must lie within 4 binomial standard errors (two-sided 99.994% per interval, 99.94% for all 10)."""
    obs = mcmc.as_observations(mm, MM_DATA)
    rm = rate_model(mm, MM_PRIOR)
    pr = build_problem(mm, obs, rm)
    N = 30_000
    hits = np.zeros(10, np.int64)
    cpu.hit_counts(np.uint64(7), np.uint64(0), 0, N, pr.starts, pr.targets, pr.dts, rm.theta_reactions(rm.initial),
                   pr.rct_start, pr.rct_species, pr.rct_stoich, pr.chg_start, pr.chg_species, pr.chg_delta,
                   pr.dep_start, pr.dep_list, pr.can_inc, pr.can_dec, pr.max_events, hits)
    p = np.array(CME_HIT)
    z = (hits - N * p) / np.sqrt(N * p * (1 - p))
    assert np.all(np.abs(z) < 4.0), (hits, z)


def test_draws_do_not_depend_on_threads_and_one_core_wastes_no_attempt(mm):
    """The attempt loop claims indices in order and stops past the lowest success: 1 or 2 threads give
    the same draws, and on one thread the attempts simulated are exactly sum(accepted index + 1)."""
    import numba

    obs = mcmc.as_observations(mm, MM_DATA)
    rm = rate_model(mm, MM_PRIOR)
    blk = MCMCBlock(build_problem(mm, obs, rm), 3, np.arange(2), np.tile(rm.initial, (2, 1)), 0, 4, np.ones((2, 10)))
    before = numba.get_num_threads()
    runs = []
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            runs.append(run_block_cpu(blk))
    finally:
        numba.set_num_threads(before)
    one, two = runs
    assert np.array_equal(one["draws"], two["draws"]) and np.array_equal(one["best"], two["best"])
    assert not one["err"].any() and one["simulated"] == int((one["best"] + 1).sum())


def test_attempts_running_out_stop_naming_the_interval(mm):
    with pytest.raises(RuntimeError, match=r"interval 1 \(t=0 to 10\): no forward path hit the observation in 40 "
                                           r"attempts \(chain 0, iteration 0"):
        mcmc.infer_rates(mm, MM_DATA, prior=MM_PRIOR, max_attempts=40, iterations=5, burn_in=0, chains=2,
                         client=LocalExecutor("cpu"))


def test_gamma_draws_are_exact():
    """Marsaglia-Tsang on Philox vs scipy's Gamma: KS test at level 1e-3, shapes below and above 1."""
    for shape in (0.3, 2.5, 180.0):
        g = np.array([cpu.gamma_draw(shape, np.uint64(3), np.uint64(1), it, 0) for it in range(4000)])
        assert stats.kstest(g, stats.gamma(shape).cdf).pvalue > 1e-3, shape


def test_complete_data_conjugacy():
    """With the path fully known, theta | X ~ Gamma(alpha + r, beta + b) exactly: the statistics replayed
    by the kernel equal an independent event-by-event computation, and the theta step's draws pass a KS test
    against that Gamma at level 1e-3."""
    net = parse_reactions(BD, file="bd.rxn")
    rm = rate_model(net, {"kb": (2.0, 1.0), "kd": (3.0, 4.0)})
    pr = build_problem(net, mcmc.as_observations(net, _bd_obs([5, 5])), rm)
    theta_rx = rm.theta_reactions(rm.initial)
    x, h, a = np.empty(1, np.int64), np.empty(2), np.empty(2)
    r, b = np.zeros(2, np.int64), np.zeros(2)
    ok, _ = cpu.run_attempt(np.uint64(11), np.uint64(0), 0, 0, 0, pr.starts[0], pr.targets[0], 10.0, theta_rx,
                            pr.rct_start, pr.rct_species, pr.rct_stoich, pr.chg_start, pr.chg_species, pr.chg_delta,
                            pr.dep_start, pr.dep_list, np.ones(1, np.int8), np.ones(1, np.int8), 10**6, x, h, a, True,
                            r, b, np.empty(0), np.empty((0, 1), np.int64))
    # independent replay: Philox words -> waiting times and reactions, accumulate r and b by hand
    from distsim.rng import philox, uniform_f64
    from distsim.backends.dsmath import ds_log

    X, t, e, r2, b2 = 5, 0.0, 0, [0, 0], [0.0, 0.0]
    while True:
        w = philox([e, 0, 0, 0], [11, 0])
        props = [2.0 * 1.0, 0.5 * X]
        a0 = props[0] + props[1]
        t_new = t - ds_log(uniform_f64(w[0], w[1])) / a0
        hs = [1.0, float(X)]
        if t_new > 10.0:
            b2 = [b2[k] + hs[k] * (10.0 - t) for k in range(2)]
            break
        b2 = [b2[k] + hs[k] * (t_new - t) for k in range(2)]
        j = 0 if uniform_f64(w[2], w[3]) * a0 < props[0] else 1
        r2[j] += 1
        X += 1 if j == 0 else -1
        t, e = t_new, e + 1
    assert list(r) == r2 and np.allclose(b, b2, rtol=1e-12) and ok == (X == 5)
    out = np.zeros(2)
    draws = []
    for it in range(3000):
        cpu.gibbs_theta(np.uint64(5), np.uint64(0), it, r[None, :], b[None, :], rm.param_of, rm.shape, rm.rate, out)
        draws.append(out.copy())
    draws = np.array(draws)
    for p in range(2):
        ref = stats.gamma(rm.shape[p] + r[p], scale=1.0 / (rm.rate[p] + b[p]))
        assert stats.kstest(draws[:, p], ref.cdf).pvalue > 1e-3


def test_simulation_based_calibration():
    """SBC (Talts et al. 2018) on birth-death: theta ~ prior, data simulated from theta, 9 thinned posterior
    draws; the rank of the true theta among them is uniform on 0..9. Chi-square test per parameter at level
    1e-3 over L = 100 replications."""
    from distsim.models.compile_reactions import compile_network
    from distsim.ssa.cpu import simulate_block
    from distsim.ssa.methods import METHODS

    net = parse_reactions(BD, file="bd.rxn")
    prior = {"kb": (4.0, 2.0), "kd": (4.0, 8.0)}
    rm = rate_model(net, prior)
    rng = np.random.default_rng(2026)
    L, keep, thin, burn = 100, 9, 15, 15
    ranks = np.zeros((L, 2), np.int64)
    grid = np.arange(5.0)
    for rep in range(L):
        th = rng.gamma(rm.shape, 1.0 / rm.rate)
        data = net.with_parameters(kb=th[0], kd=th[1])
        traj = simulate_block(compile_network(data), method=METHODS["direct"].cpu, real0=rep, realizations=1,
                              seed=99, grid=grid, keep_trajectories=True)["trajectories"][0, :, 0]
        pr = build_problem(net, mcmc.as_observations(net, _bd_obs(traj)), rm)
        n_it = burn + keep * thin
        res = run_block_cpu(MCMCBlock(pr, rep, np.zeros(1, np.int64), th[None, :], 0, n_it,
                                      np.ones((1, 4))))
        assert not res["err"].any()
        post = res["draws"][0, burn + thin - 1::thin][:keep]
        ranks[rep] = (post < th[None, :]).sum(axis=0)
    for p in range(2):
        counts = np.bincount(ranks[:, p], minlength=keep + 1)
        assert stats.chisquare(counts).pvalue > 1e-3, counts


# ---- the driver: Dataset, sharding, faults -------------------------------------------------------

def _bd_run(client, **kw):
    net = parse_reactions(BD, file="bd.rxn")
    args = dict(prior={"kb": (2.0, 1.0), "kd": (2.0, 4.0)}, iterations=120, burn_in=20, chains=3, seed=4,
                derived={"ratio": "kb / kd"})
    args.update(kw)
    return mcmc.infer_rates(net, _bd_obs([5, 6, 4, 4, 7, 5]), client=client, **args)


def _same(a, b):
    for v in ("kb", "kd", "ratio", "attempts"):
        assert np.array_equal(a[v].values, b[v].values), v


def test_dataset_layout_and_arviz(tmp_path):
    """The data variables are exactly the posterior (chain, draw); sample stats, observations and
    diagnostics are coordinates, so az.summary reads the whole Dataset (also after a netCDF round trip)."""
    ds = _bd_run(LocalExecutor("cpu"))
    assert list(ds.data_vars) == ["kb", "kd", "ratio"]
    assert all(ds[v].dims == ("chain", "draw") for v in ds.data_vars)
    assert ds.sizes["draw"] == 100 and ds.sizes["chain"] == 3
    assert np.allclose(ds.ratio.values, ds.kb.values / ds.kd.values)
    assert ds.attempts.dims == ("chain", "draw", "interval") and (ds.attempts.values >= 1).all()
    assert ds.acceptance_rate.dims == ("chain", "interval")
    assert np.allclose(ds.acceptance_rate.values, 100 / ds.attempts.values.sum(axis=1))
    assert np.array_equal(ds.observed_state.values[:, 0], [5, 6, 4, 4, 7, 5]) and ds.observed.values.all()
    assert ds.attrs["initial_from_model"] == ""
    assert ds.kb.attrs["prior_shape"] == 2.0 and ds.kd.attrs["prior_rate"] == 4.0
    az = pytest.importorskip("arviz")
    ds.to_netcdf(tmp_path / "post.nc")
    with __import__("xarray").open_dataset(tmp_path / "post.nc") as back:
        assert list(back.data_vars) == ["kb", "kd", "ratio"] and np.array_equal(back.attempts, ds.attempts)
        for d in (ds, back):
            s = az.summary(d, round_to="none")
            assert list(s.index) == ["kb", "kd", "ratio"]
            for k in ("rhat", "ess_bulk", "ess_tail"):
                assert np.allclose(d[k].values, s[k.replace("rhat", "r_hat")].to_numpy(), rtol=1e-12, atol=0), k


def _posterior(x: dict) -> "xr.Dataset":
    import xarray as xr

    return xr.Dataset({k: (("chain", "draw"), v) for k, v in x.items()})


def test_rhat_and_ess_equal_arviz():
    """R-hat, bulk and tail ESS (arviz-stats) equal ArviZ's az.rhat / az.ess to 1e-12 on fixed arrays:
    independent draws, random walks (R-hat ~2), shifted chains, ties (Poisson draws), two chains."""
    az = pytest.importorskip("arviz")
    rng = np.random.default_rng(1)
    x = {"iid": rng.normal(size=(4, 200)), "walk": np.cumsum(rng.normal(size=(3, 150)), axis=1),
         "shifted": rng.gamma(2.0, size=(4, 100)) + np.arange(4)[:, None],
         "ties": rng.poisson(2.0, size=(2, 57)).astype(float)}
    got = {k: mcmc.summary(_posterior({k: v})).loc[k] for k, v in x.items()}
    for k, v in x.items():
        ref = (az.rhat(v), az.ess(v, method="bulk"), az.ess(v, method="tail"))
        assert np.allclose(got[k][["rhat", "ess_bulk", "ess_tail"]].to_numpy(np.float64),
                           np.array(ref, np.float64), rtol=1e-12, atol=0), k
    assert got["walk"]["rhat"] > 1.5 and got["iid"]["rhat"] < 1.05


def test_summary_is_a_dataframe_of_hand_computed_statistics():
    rng = np.random.default_rng(7)
    a, b = rng.gamma(3.0, size=(3, 80)), rng.normal(size=(3, 80))
    b[1, 5] = np.inf  # a derived quantity can be infinite: summarised over the finite draws
    s = mcmc.summary(_posterior({"a": a, "b": b}))
    assert list(s.columns) == ["mean", "sd", "2.5%", "97.5%", "rhat", "ess_bulk", "ess_tail"]
    assert list(s.index) == ["a", "b"] and s.index.name == "variable"
    for k, v in (("a", a.ravel()), ("b", b[np.isfinite(b)])):
        assert s.loc[k, "mean"] == v.mean() and s.loc[k, "sd"] == v.std(ddof=1)
        assert s.loc[k, ["2.5%", "97.5%"]].tolist() == pytest.approx(np.quantile(v, [0.025, 0.975]), rel=1e-12)
    s90 = mcmc.summary(_posterior({"a": a}), prob=0.9)
    assert list(s90.columns[2:4]) == ["5%", "95%"] and s90.loc["a", "95%"] == pytest.approx(np.quantile(a, 0.95), rel=1e-12)
    with pytest.raises(ValueError, match="prob"):
        mcmc.summary(_posterior({"a": a}), prob=1.5)


def test_to_inference_data():
    az = pytest.importorskip("arviz")
    ds = _bd_run(LocalExecutor("cpu"))
    idata = mcmc.to_inference_data(ds)
    assert isinstance(idata, az.InferenceData)
    assert set(idata.groups()) == {"posterior", "sample_stats", "observed_data", "constant_data"}
    post = idata.posterior
    assert list(post.data_vars) == ["kb", "kd", "ratio"] and post.kb.dims == ("chain", "draw")
    assert np.array_equal(post.kd.values, ds.kd.values) and post.attrs["seed"] == ds.attrs["seed"]
    st = idata.sample_stats
    assert st.attempts.dims == ("chain", "draw", "interval") and np.array_equal(st.attempts, ds.attempts)
    assert np.array_equal(st.acceptance_rate, ds.acceptance_rate)
    ob = idata.observed_data
    assert ob.observed_state.dims == ("time", "species") and np.array_equal(ob.time, [0, 1, 2, 3, 4, 5])
    assert ob.attrs["initial_from_model"] == "" and ob.observed.values.all()
    c = idata.constant_data
    assert list(c.parameter.values) == ["kb", "kd"]
    assert list(c.prior_shape.values) == [2.0, 2.0] and list(c.prior_rate.values) == [1.0, 4.0]
    s = az.summary(idata, round_to="none")
    assert np.allclose(s["r_hat"].to_numpy(), mcmc.summary(ds)["rhat"].to_numpy(), rtol=1e-12, atol=0)


def test_to_inference_data_without_arviz(monkeypatch):
    ds = _bd_run(LocalExecutor("cpu"), iterations=10, burn_in=0)
    monkeypatch.setitem(sys.modules, "arviz", None)
    with pytest.raises(ImportError, match=r"pip install arviz"):
        mcmc.to_inference_data(ds)
    monkeypatch.setitem(sys.modules, "arviz", types.SimpleNamespace(__version__="1.3.0"))  # ArviZ 1.x: DataTree
    with pytest.raises(ImportError, match=r"pip install 'arviz<1'"):
        mcmc.to_inference_data(ds)


def test_convergence_warning():
    """A 20-iteration run warns, naming the variable and suggesting more iterations; a 300-iteration
    run of the same one-rate model (R-hat < 1.01, bulk ESS > 400) does not."""
    net = parse_reactions(DEATH, file="death.rxn")
    kw = dict(prior={"kd": (2.0, 4.0)}, chains=4, seed=4, client=LocalExecutor("cpu"))
    data = _bd_obs([20, 12, 7, 4])
    with pytest.warns(ConvergenceWarning, match=r"not converged: R-hat > 1.01 for kd .*bulk ESS < 400 for kd"
                                                r".*more iterations"):
        mcmc.infer_rates(net, data, iterations=20, burn_in=3, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ds = mcmc.infer_rates(net, data, iterations=300, burn_in=50, **kw)
    assert float(ds.rhat[0]) < 1.01 and float(ds.ess_bulk[0]) >= 400


def test_same_draws_for_one_and_two_workers(dask_client):
    a = _bd_run(LocalExecutor("cpu"))
    b = _bd_run(dask_client, backend="cpu")
    _same(a, b)


def test_killed_worker_gives_the_same_draws(dask_client, tmp_path):
    ref = _bd_run(LocalExecutor("cpu"), iterations=200)
    marker = tmp_path / "killed"
    ex = DaskExecutor(dask_client, "cpu", wrap=functools.partial(KillWorkerOnce, marker=str(marker), round=1))
    ds = _bd_run(ex, iterations=200)
    assert marker.exists(), "the fault was not injected"
    _same(ds, ref)
    dask_client.wait_for_workers(2, timeout=60)


def test_mm_short_run_and_latent_paths(mm, tmp_path):
    ds = mcmc.infer_rates(mm, MM_DATA, prior=MM_PRIOR, iterations=40, burn_in=10, chains=2, seed=3,
                          client=LocalExecutor("cpu"), derived={"K_M": "(k2 + k3) / k1"})
    assert np.all(np.isfinite(ds.K_M.values)) and 50 < float(ds.K_M.mean()) < 1000
    tr = mcmc.latent_trajectories(ds, mm, MM_DATA, draws=6, points_per_interval=5, plot=str(tmp_path / "b.png"))
    at_obs = tr.path.values[:, ::4]  # grid points that are observation times
    assert np.array_equal(at_obs, np.broadcast_to(tr.observed_state.values, at_obs.shape))
    assert (tr.lower <= tr.upper).all() and (tmp_path / "b.png").stat().st_size > 0
    from distsim.mcmc.plots import plot_posterior

    plot_posterior(ds, str(tmp_path / "p.png"))
    assert (tmp_path / "p.png").stat().st_size > 0


def test_cli(tmp_path, capsys):
    from distsim.cli import main

    out = tmp_path / "post.nc"
    assert main(["--in-process", "--quiet", "--cpu", "mcmc", "rates", str(MM), "--data", str(MM_DATA), "--iterations",
                 "12", "--burn-in", "2", "--chains", "2", "--prior", "k1=gamma:2,1000", "--prior", "k2=gamma:2,10",
                 "--prior", "k3=gamma:2,10", "--derived", "K_M=(k2+k3)/k1", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "K_M" in text and "R-hat" in text and "97.5%" in text and out.exists()
    row = next(line.split() for line in text.splitlines() if line.startswith("K_M "))
    s = mcmc.summary(__import__("xarray").open_dataset(out)).loc["K_M"]
    assert [float(v) for v in row[1:5]] == pytest.approx(s[["mean", "sd", "2.5%", "97.5%"]].tolist(), rel=1e-3)
    assert main(["--in-process", "--quiet", "mcmc", "rates", str(MM), "--data", str(MM_DATA), "--prior",
                 "k1=gamma:1"]) == 2
    assert "SHAPE and RATE" in capsys.readouterr().err
