"""PEtab problems users bring (PEtab test suite cases 0007 log10, 0008 replicates, 0016 log; copied under
tests/data/pmmh/): replicate measurements and log10 observables in the observation model, the filter and
the result, against exact references: SciPy's densities, the suite's own log-likelihoods at its reference
simulations, and the CME forward algorithm (the filter's estimate of the likelihood is unbiased)."""

from __future__ import annotations

import math
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

import distsim.pmmh as pmmh
from distsim.errors import DataError
from distsim.pmmh import exact, sampler
from distsim.pmmh.filter import log_likelihoods
from distsim.pmmh.observation import NOISE_MODELS, log_density, log_weights, log_weights_batched, noise_values
from distsim.ssa import load

from test_pmmh import Z, _unbiased

DATA = Path(__file__).resolve().parents[1] / "data" / "pmmh"
CASES = {c: DATA / f"petab_{c}" / f"_{c}.yaml" for c in ("0007", "0008", "0016")}
OMEGA = 10  # molecules per PEtab amount: a0 = 1 is 10 molecules of A, and A + B = 10 stays in the CME's box
NOMINAL = {"a0": 1.0, "b0": 0.0, "k1": 0.8, "k2": 0.6}  # the cases' parameter tables


def _problem(case: str) -> sampler.Problem:
    p = pmmh.read_problem(CASES[case], system_size=OMEGA)
    return sampler.build_problem(p["net"], p["observables"], p["experiments"], p["prior"], p["initial"],
                                 species_scale=OMEGA)


def _theta(pr: sampler.Problem) -> np.ndarray:
    return np.array([NOMINAL[n] for n in pr.names])


def test_replicates_in_the_experiment_and_the_problem():
    p = pmmh.read_problem(CASES["0008"], system_size=OMEGA)
    (ex,) = p["experiments"]
    assert list(ex.times) == [0.0, 10.0] and ex.data == {"obs_a": [0.7, [0.1, 0.2]]}  # the table's order
    (cx,) = _problem("0008").experiments
    assert cx.data[:, 0].tolist() == [0.7, 0.1, 0.2] and cx.row_times.tolist() == [0, 1, 1]
    assert cx.row_replicates.tolist() == [0, 0, 1] and cx.at(1)[:, 0].tolist() == [0.1, 0.2]
    # Python API: a number or a sequence per time; NaN inside a sequence is not measured; without
    # replicates the layout is one row per time, as before
    net = load(DATA / "immigration_death.rxn")
    obs = [pmmh.Observable("y", "X", "poisson"), pmmh.Observable("z", "X", "normal", 1.0)]
    pr = sampler.build_problem(net, obs, [pmmh.Experiment([1, 2], {"y": [[3, np.nan, 4, 5], 2], "z": [1.5, [2, 3]]}),
                                          pmmh.Experiment([1, 2], {"y": [3, np.nan]})], {"k1": "gamma:2,1"})
    a, b = pr.experiments
    nan = np.nan
    assert np.array_equal(a.data, [[3, 1.5], [4, nan], [5, nan], [2, 2], [nan, 3]], equal_nan=True)
    assert a.starts.tolist() == [0, 3, 5] and b.starts is None and b.at(1).shape == (1, 2)


def test_bad_replicates_are_refused():
    net = load(DATA / "immigration_death.rxn")
    obs = [pmmh.Observable("y", "X", "poisson")]
    for data, msg in (({"y": [1, [[1, 2]]]}, "value 2 has 2 dimensions"),
                      ({"y": [1, [1, "a"]]}, "value 2 .* neither a number nor a sequence"),
                      ({"y": [1, [1, 2.5]]}, "poisson noise needs counts"),
                      ({"y": [1]}, "has 1 values for 2 times")):
        with pytest.raises(DataError, match=msg) as e:
            sampler.build_problem(net, obs, [pmmh.Experiment([1, 2], data, source="my.csv")], {"k1": "gamma:2,1"})
        assert e.value.file == "my.csv"


@pytest.mark.parametrize("noise", NOISE_MODELS)
def test_replicates_add_their_log_densities(noise):
    """log_weights of a time with replicates (rows [R, K]) == the sum of SciPy's densities of every
    measurement; the batched path (every chain at once: the device's) gives log_weights' bits."""
    net = load(DATA / "immigration_death.rxn")
    s = {"normal": 1.5, "lognormal": 0.4, "poisson": None, "negbin": 2.5}[noise]
    obs = [pmmh.Observable("y", "X + 1", noise, s), pmmh.Observable("w", "2 * X", "normal", 3.0)]
    ys = {"normal": [2.5, 4.0, -1.0], "lognormal": [2.5, 4.0, 0.3]}.get(noise, [2, 4, 0])
    pr = sampler.build_problem(net, obs, [pmmh.Experiment([1, 2], {"y": [ys, 3], "w": [[5.0, 7.5], 1.0]})],
                               {"k1": "gamma:2,1"})
    (ex,) = pr.experiments
    X = np.array([[0], [1], [3], [6], [20]], np.int64)
    values = pr.values(np.array([1.0]), ex)
    nv = noise_values(pr.observables, values)
    got = log_weights(pr.observables, ex.at(0), X, values, nv)
    h = X[:, 0] + 1.0
    dist = {"normal": lambda y: stats.norm.logpdf(y, h, s), "lognormal": lambda y: stats.lognorm.logpdf(y, s, scale=h),
            "poisson": lambda y: stats.poisson.logpmf(y, h),
            "negbin": lambda y: stats.nbinom.logpmf(y, s, s / (s + h))}[noise]
    ref = sum(dist(y) for y in ys) + sum(stats.norm.logpdf(w, 2.0 * X[:, 0], 3.0) for w in (5.0, 7.5))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    Xg = np.stack([X, X + 2])
    vals = [values, values]
    batched = log_weights_batched(np, pr.observables, ex.at(0), Xg, vals, np.stack([nv, nv]))
    assert np.array_equal(batched, np.stack([log_weights(pr.observables, ex.at(0), Xg[g], values, nv)
                                             for g in range(2)]))


def test_log10_observable_is_lognormal_with_ln10_sigma():
    """log10 y ~ N(log10 h, sigma^2) (case 0007's obs_b, sigma 0.6): the density of y, Jacobian 1 / (y ln 10)
    included (PEtab's), is exactly the lognormal of sigma ln 10; against SciPy at several points."""
    pr = _problem("0007")
    ob = pr.observables[1]
    assert ob.name == "obs_b" and NOISE_MODELS[ob.noise] == "lognormal"
    s = noise_values(pr.observables, pr.values(_theta(pr)))[1]
    assert s == 0.6 * math.log(10)
    h = np.array([0.05, 0.3, 1.0, 2.5, 40.0])
    for y in (0.01, 0.8, 1.0, 3.7, 120.0):
        ref = stats.norm.logpdf(math.log10(y), np.log10(h), 0.6) - math.log(y * math.log(10))
        np.testing.assert_allclose(log_density(ob.noise, y, h, s), ref, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_suites_log_likelihood_at_its_simulations(case):
    """The suite's reference log-likelihood (its _solution.yaml, to its tol_llh) is the sum, over the
    measurements as distsim reads them (replicates, log, log10), of distsim's log densities at the
    suite's simulated observable values (its _simulations.tsv, in the measurement table's order)."""
    import csv

    folder = CASES[case].parent
    sol = yaml.safe_load((folder / f"_{case}_solution.yaml").read_text())
    with open(folder / "_simulations.tsv", newline="") as f:
        sims: dict[tuple[str, str, float], list[float]] = {}
        for r in csv.DictReader(f, delimiter="\t"):
            sims.setdefault((r["observableId"], r["simulationConditionId"], float(r["time"])), []).append(
                float(r["simulation"]))
    pr = _problem(case)
    total, n = 0.0, 0
    for ex in pr.experiments:
        nv = noise_values(pr.observables, pr.values(_theta(pr), ex))
        for j, (i, r) in enumerate(zip(ex.row_times, ex.row_replicates)):
            for k, ob in enumerate(pr.observables):
                y = ex.data[j, k]
                if not math.isnan(y):
                    h = sims[(ob.name, ex.name, float(ex.times[i]))][r]
                    total += float(log_density(ob.noise, float(y), np.array([h]), float(nv[k]))[0])
                    n += 1
    assert n == sum(len(v) for v in sims.values())
    assert abs(total - sol["llh"]) < sol["tol_llh"], (total, sol["llh"])


@pytest.mark.parametrize("case", ["0008", "0007"])
def test_filter_is_unbiased_on_petab_cases(case):
    """The particle filter's likelihood estimate on the PEtab problem (10 molecules of A at the nominal
    values; replicates, log10) is unbiased: its mean over independent filters / the exact likelihood
    (CME forward algorithm; A + B = 10 stays in the box, so exact) is 1 within 4 standard errors."""
    pr = _problem(case)
    _unbiased(pr, _theta(pr), particles=32, repeats=400, max_count=OMEGA)


def test_filter_is_unbiased_with_replicates_python_api():
    """Immigration-death, Poisson counts with replicates at some times and a Gaussian observable with
    replicates where the Poisson one is not measured; two conditions."""
    net = load(DATA / "immigration_death.rxn")
    obs = [pmmh.Observable("y", "X", "poisson"), pmmh.Observable("g", "2*X + 1", "normal", "sigma")]
    nan = float("nan")
    exps = [pmmh.Experiment([1, 2, 4, 6], {"y": [[2, 1, 3], 4, [5, 3], nan], "g": [nan, [9.0, 7.5], 11.0, [8, 9, 12]]}),
            pmmh.Experiment([0.5, 2], {"y": [[12, 15], [9, 10, 8]]}, initial={"X": 14}, parameters={"k2": 0.3})]
    pr = sampler.build_problem(net, obs, exps, {"k1": "gamma:2,1", "sigma": "lognormal:0,1"})
    assert [e.data.shape[0] for e in pr.experiments] == [3 + 2 + 2 + 3, 2 + 3]
    _unbiased(pr, [1.3, 1.5], particles=32, repeats=500, max_count=50)


def test_exact_likelihood_of_replicates_is_the_product_of_their_likelihoods():
    """One time with two replicates: the forward algorithm's exact likelihood is sum_x p(x) p(y1|x) p(y2|x)
    (p(x) Poisson from an empty start: X(t) ~ Poisson(k1/k2 (1 - e^{-k2 t})))."""
    net = load(DATA / "immigration_death.rxn")
    pr = sampler.build_problem(net, [pmmh.Observable("y", "X", "poisson")], [pmmh.Experiment([2.0], {"y": [[3, 6]]})],
                               {"k1": "gamma:2,1"})
    lam = 1.3 / 0.2 * (1 - math.exp(-0.2 * 2.0))
    x = np.arange(0, 80)
    ref = math.log(np.sum(stats.poisson.pmf(x, lam) * stats.poisson.pmf(3, x) * stats.poisson.pmf(6, x)))
    assert abs(exact.log_likelihood(pr, [1.3], 79) - ref) < 1e-9


def test_petab_replicates_and_log10_run():
    """A short chain of each case: the PEtab parameter ids are the posterior variables; every replicate is
    an observation of observed_value (and of ArviZ's observed_data), numbered by observation_replicate."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = pmmh.petab(CASES["0008"], system_size=OMEGA, particles=16, iterations=12, burn_in=4, chains=2, seed=3,
                        progress=False)
        d7 = pmmh.petab(CASES["0007"], system_size=OMEGA, particles=16, iterations=12, burn_in=4, chains=1, seed=3,
                        progress=False)
    for d in (ds, d7):
        assert set(d.data_vars) == {"a0", "b0", "k1", "k2"} and d.attrs["posterior_variables"] == "a0,b0,k1,k2"
        assert np.isfinite(d["log_likelihood"].values).all()
    assert ds["observed_value"].shape == (3, 1)
    assert ds["observed_value"].values[:, 0].tolist() == [0.7, 0.1, 0.2]
    assert ds["observation_time"].values.tolist() == [0.0, 10.0, 10.0]
    assert ds["observation_replicate"].values.tolist() == [0, 0, 1]
    assert d7.attrs["observables"] == "obs_a~normal;obs_b~lognormal"
    assert d7["observed_value"].values.tolist() == [[0.2, 0.8]]
    az = pytest.importorskip("arviz")
    if hasattr(az, "InferenceData"):
        od = pmmh.to_inference_data(ds).observed_data["observed_value"]
        assert od.shape == (3, 1) and od["observation_replicate"].values.tolist() == [0, 0, 1]


def test_laplace_and_preequilibration_are_refused(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(CASES["0007"].parent, case)
    obs = case / "_observables.tsv"
    obs.write_text(obs.read_text().replace("log10", "lin").replace("noiseFormula", "noiseFormula\tnoiseDistribution")
                   .replace("0.6", "0.6\tlaplace"))
    with pytest.raises(DataError, match="'laplace' .* not supported .*Laplace noise has no device noise kernel") as e:
        pmmh.read_problem(case / "_0007.yaml", system_size=OMEGA)
    assert e.value.file.endswith("_observables.tsv") and e.value.line == 3
    shutil.copy(CASES["0007"].parent / "_observables.tsv", obs)
    meas = case / "_measurements.tsv"
    meas.write_text("observableId\tpreequilibrationConditionId\tsimulationConditionId\ttime\tmeasurement\n"
                    "obs_a\t\tc0\t10\t0.2\nobs_b\tc0\tc0\t10\t0.8\n")
    with pytest.raises(DataError, match="pre-equilibration is not supported") as e:
        pmmh.read_problem(case / "_0007.yaml", system_size=OMEGA)
    assert e.value.file.endswith("_measurements.tsv") and e.value.line == 3
    # a log10 measurement <= 0 has no density
    meas.write_text("observableId\tsimulationConditionId\ttime\tmeasurement\nobs_b\tc0\t10\t0\n")
    with pytest.raises(DataError, match="lognormal noise needs measurements > 0"):
        sampler.build_problem(**_args(pmmh.read_problem(case / "_0007.yaml", system_size=OMEGA)))


def _args(p: dict) -> dict:
    return dict(net=p["net"], observables=p["observables"], experiments=p["experiments"], prior=p["prior"],
                initial=p["initial"], species_scale=OMEGA)


def test_replicates_same_chains_on_one_and_two_workers(dask_client):
    kw = dict(system_size=OMEGA, particles=16, iterations=8, burn_in=2, chains=3, seed=5, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = pmmh.petab(CASES["0008"], **kw)
        b = pmmh.petab(CASES["0008"], client=dask_client, **kw)
    for v in ("k1", "k2", "a0", "log_likelihood"):
        assert np.array_equal(a[v].values, b[v].values)
    pr = _problem("0008")
    ll, _ = log_likelihoods(pr, np.tile(_theta(pr), (2, 1)), 16, np.array([1, 2]), 0)
    assert np.isfinite(ll).all() and ll[0] != ll[1]


def test_cli_petab_replicates_written(tmp_path):
    import xarray as xr

    from distsim.cli import main

    out = tmp_path / "post.nc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(["mcmc", "petab", str(CASES["0008"]), "--system-size", str(OMEGA), "--iterations", "10",
                   "--burn-in", "3", "--chains", "1", "--particles", "16", "-o", str(out), "--in-process"])
    assert rc == 0
    with xr.open_dataset(out) as ds:
        assert ds["observed_value"].values[:, 0].tolist() == [0.7, 0.1, 0.2]
        assert ds["observation_replicate"].values.tolist() == [0, 0, 1]


PERELSON = DATA / "perelson_science1996" / "Perelson_Science1996.yaml"


def _perelson_v(net, t: np.ndarray, omega: float) -> np.ndarray:
    """V(t) in substance units of the benchmark's linear model (Perelson et al. 1996, Eqs. 3-5) in closed form
    from the network's initial counts and parameters: Vin = V0 e^{-ct}; T*' = kappa Vin - delta T*
    (kappa = K0 T0); Vni' = N delta T* - c Vni, Vni(0) = 0. By linearity this is also E[V(t)] of the SSA."""
    p = net.params
    c, d, n, kappa = p["c"], p["delta"], p["NN"], p["K0"] * p["T0"]
    ts0, v0 = net.initial[net.index("Tstar")] / omega, net.initial[net.index("Vin")] / omega
    e_c, e_d = np.exp(-c * t), np.exp(-d * t)
    vni = n * d * (ts0 * (e_d - e_c) / (c - d) + kappa * v0 / (c - d) * ((e_d - e_c) / (c - d) - t * e_c))
    return v0 * e_c + vni


def test_benchmark_perelson_reads_and_its_particles_have_the_model_mean():
    """Benchmark-Models-PEtab's Perelson_Science1996 (HIV dynamics, a log10 observable, a noise parameter and
    rates on log10 scales): the mapping, and the SSA particles' mean of the observable V at the measurement
    times (1,000 realizations at 0.001 molecules per copy/ml, Tstar rounded to 15) against the model's
    closed form, within 4 standard errors."""
    from distsim.models.compile_reactions import compile_network
    from distsim.ssa.advance import advance
    from distsim.ssa.methods import METHODS

    omega = 1e-3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SBML's reversible flags on positive laws
        p = pmmh.read_problem(PERELSON, system_size=omega, rounding="nearest")
        with pytest.raises(Exception, match="not a whole number; pass rounding='nearest'"):
            pmmh.read_problem(PERELSON, system_size=omega)
    net = p["net"]
    assert dict(net.metadata)["rounded"] == "species 'Tstar': 15.061320750000002 -> 15"
    assert net.initial == (15, 1860, 1860, 0)
    sd = "sd_task0_model0_perelson1_V"
    assert set(p["prior"]) == {"c", "delta", sd} and p["scales"] == {"c": "log10", "delta": "log10", sd: "log10"}
    assert p["prior"][sd] == pmmh.Prior("loguniform", 1e-10, 1e10)
    (ob,) = p["observables"]
    assert (ob.formula, ob.noise, ob.noise_parameter) == ("V", "lognormal", f"({math.log(10)!r}) * ({sd})")
    (ex,) = p["experiments"]
    t = np.asarray(ex.times)
    assert t.size == 16 and t[-1] == 6.973
    cn = compile_network(net)
    N = 1000
    X = np.repeat(np.asarray(net.initial, np.int64)[None, :], N, axis=0)
    means, ses, prev = [], [], 0.0
    for i, ti in enumerate(t):
        _, err = advance(cn, METHODS["direct"].cpu, X, cn.theta, cn.law_arg, float(ti) - prev, key=7, e_hi=i)
        assert not err.any()
        v = X[:, net.index("V")] / omega
        means.append(v.mean())
        ses.append(v.std(ddof=1) / math.sqrt(N))
        prev = float(ti)
    ref = _perelson_v(net, t, omega)
    assert means[0] == ref[0] == 1.86e6  # t = 0: the initial amount exactly
    assert np.all(np.abs(np.array(means) - ref)[1:] < Z * np.array(ses)[1:]), (means, ref, ses)


def test_benchmark_perelson_short_chain():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = pmmh.petab(PERELSON, system_size=1e-3, rounding="nearest", particles=8, iterations=6, burn_in=2,
                        chains=1, seed=2, progress=False)
    sd = "sd_task0_model0_perelson1_V"
    assert set(ds.data_vars) == {"c", "delta", sd}
    assert ds.attrs["petab_scales"] == f"c=log10,delta=log10,{sd}=log10"
    assert ds.attrs["model_rounded"] == "species 'Tstar': 15.061320750000002 -> 15"
    assert ds["observed_value"].shape == (16, 1) and ds["observed_value"].values[0, 0] == 1029000
    assert np.isfinite(ds["log_likelihood"].values).all()
