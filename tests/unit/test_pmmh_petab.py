"""PEtab v1 import for PMMH (PEtab test suite case 0001, tests/data/pmmh/petab_0001) and the CLI."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import distsim.pmmh as pmmh
from distsim.cli import main
from distsim.errors import ConvergenceWarning, DataError
from distsim.pmmh.priors import Prior

CASE = Path(__file__).resolve().parents[1] / "data" / "pmmh" / "petab_0001"


def test_read_problem_maps_the_tables():
    p = pmmh.read_problem(CASE / "_0001.yaml", system_size=10)
    net = p["net"]
    assert net.initial == (10, 0)  # a0 = 1, b0 = 0 (the PEtab nominal values, not the SBML's b0 = 1) x 10
    assert p["prior"] == {k: Prior("uniform", 0, 10) for k in ("a0", "b0", "k1", "k2")}
    # the initial amounts A = a0, B = b0 (SBML initial assignments) are estimated; b0's nominal 0 is off the
    # log scale: its chains start at the prior's center
    assert p["initial"] == {"a0": 1.0, "b0": 5.0, "k1": 0.8, "k2": 0.6}
    (ob,) = p["observables"]
    assert (ob.name, ob.formula, ob.noise, ob.noise_parameter) == ("obs_a", "A", "normal", "0.5")
    (ex,) = p["experiments"]
    assert list(ex.times) == [0.0, 10.0] and ex.data == {"obs_a": [0.7, 0.1]}
    assert dict(ex.initial) == {"A": "a0", "B": "b0"}


def test_condition_table_sets_or_estimates_initial_amounts(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(CASE, case)
    (case / "_conditions.tsv").write_text("conditionId\tA\tB\nc0\tk1\t0.3\n")
    # B: a number in the condition (3 molecules); A: the condition names the estimated k1 as its initial
    # amount. So the initial assignments A = a0, B = b0 do not apply: a0, b0 are fixed, with a warning
    with pytest.warns(UserWarning) as rec:
        p = pmmh.read_problem(case / "_0001.yaml", system_size=10)
    assert sorted(str(w.message).split("'")[1] for w in rec) == ["a0", "b0"]
    (ex,) = p["experiments"]
    assert dict(ex.initial) == {"A": "k1", "B": 3} and set(p["prior"]) == {"k1", "k2"}
    pr = pmmh.sampler.build_problem(p["net"], p["observables"], p["experiments"], p["prior"], p["initial"],
                                    species_scale=10)
    (cx,) = pr.experiments
    assert list(cx.x0_of(pr.values(np.array([0.84, 0.6]), cx))) == [8, 3]  # A = round(0.84 x 10)


def test_petab_runs_and_names_the_parameters():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = pmmh.petab(CASE / "_0001.yaml", system_size=10, particles=32, iterations=30, burn_in=10, chains=2,
                        seed=1, progress=False)
    assert set(ds.data_vars) == {"a0", "b0", "k1", "k2"}
    assert np.all((ds["k1"].values > 0) & (ds["k1"].values <= 10))
    assert ds.attrs["petab_scales"] == "a0=lin,b0=lin,k1=lin,k2=lin"
    assert list(ds["observed_value"].values[:, 0]) == [0.7, 0.1]


def test_petab_errors_name_file_and_line(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(CASE, case)
    obs = case / "_observables.tsv"
    obs.write_text("observableId\tobservableFormula\tnoiseFormula\nobs_a\tA\tnoiseParameter1_obs_a\n")
    with pytest.raises(DataError, match="noiseParameter1_obs_a needs 1 value.* gives 0") as e:
        pmmh.read_problem(case / "_0001.yaml", system_size=10)
    assert e.value.line == 2 and e.value.file.endswith("_measurements.tsv")
    obs.write_text("observableId\tobservableFormula\tnoiseFormula\nobs_a\tA\tsigma\n")
    with pytest.raises(DataError, match="noiseFormula 'sigma' must be a number or a parameter id") as e:
        pmmh.read_problem(case / "_0001.yaml", system_size=10)
    assert e.value.line == 2 and e.value.file.endswith("_observables.tsv")
    obs.write_text("observableId\tobservableFormula\tnoiseFormula\nobs_a\tA\t0.5\n")
    par = case / "_parameters.tsv"
    par.write_text(par.read_text().replace("k1\tlin\t0\t10\t0.8\t1", "k1\tlin\t0\t10\t0.8\t1\tnormal\t1;1")
                   .replace("estimate\n", "estimate\tobjectivePriorType\tobjectivePriorParameters\n"))
    with pytest.raises(DataError, match="objectivePriorType 'normal' of k1"):
        pmmh.read_problem(case / "_0001.yaml", system_size=10)


def test_cli_petab(tmp_path, capsys):
    out = tmp_path / "post.nc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(["mcmc", "petab", str(CASE / "_0001.yaml"), "--system-size", "10", "--iterations", "20",
                   "--burn-in", "5", "--chains", "1", "--particles", "16", "-o", str(out), "--in-process"])
    assert rc == 0 and out.exists()
    text = capsys.readouterr().out
    assert "particle marginal Metropolis-Hastings" in text and "k1" in text


def test_cli_petab_refuses_bad_particles(capsys):
    assert main(["mcmc", "petab", str(CASE / "_0001.yaml"), "--particles", "many", "--in-process"]) != 0
    assert "--particles 'many'" in capsys.readouterr().err


def test_same_chains_on_one_and_two_workers(dask_client):
    from distsim.ssa import load

    m = load(Path(__file__).resolve().parents[1] / "data" / "pmmh" / "immigration_death.rxn")
    kw = dict(prior={"k1": "gamma:2,1", "k2": "gamma:2,10"}, particles=16, iterations=12, burn_in=4, chains=3,
              seed=2, progress=False)
    args = ([pmmh.Observable("y", "X", "poisson")], pmmh.Experiment([1, 2, 4], {"y": [1, 3, 2]}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = pmmh.infer(m, *args, **kw)
        b = pmmh.infer(m, *args, client=dask_client, **kw)
    for v in ("k1", "k2", "log_likelihood"):
        assert np.array_equal(a[v].values, b[v].values)


def test_observable_and_noise_placeholders(tmp_path):
    """observableParameter/noiseParameter placeholders take each measurement's overrides (numbers, an
    estimated id, a fixed id's nominal value); two override sets of one observable: two observables. The
    filter gives the same bits as the observables written out by hand."""
    from distsim.pmmh import sampler
    from distsim.pmmh.filter import log_likelihoods

    case = tmp_path / "case"
    shutil.copytree(CASE, case)
    (case / "_observables.tsv").write_text(
        "observableId\tobservableFormula\tnoiseFormula\n"
        "obs_a\tobservableParameter1_obs_a * A + observableParameter2_obs_a\tnoiseParameter1_obs_a\n")
    (case / "_measurements.tsv").write_text(
        "observableId\tsimulationConditionId\ttime\tmeasurement\tobservableParameters\tnoiseParameters\n"
        "obs_a\tc0\t0\t0.7\tscale;0.1\t0.5\n"
        "obs_a\tc0\t10\t0.1\tscale;0.1\tsd\n")
    par = case / "_parameters.tsv"
    par.write_text(par.read_text() + "scale\tlin\t0\t10\t1.0\t1\nsd\tlin\t0\t10\t0.3\t0\n")
    p = pmmh.read_problem(case / "_0001.yaml", system_size=10)
    got = [(o.name, o.formula, o.noise_parameter) for o in p["observables"]]
    assert got == [("obs_a", "scale * A + (0.1)", "(0.5)"), ("obs_a__2", "scale * A + (0.1)", "(0.3)")]
    assert "scale" in p["prior"] and "sd" not in p["prior"]
    (ex,) = p["experiments"]
    assert ex.data["obs_a"][0] == 0.7 and np.isnan(ex.data["obs_a"][1])
    assert np.isnan(ex.data["obs_a__2"][0]) and ex.data["obs_a__2"][1] == 0.1
    by_hand = [pmmh.Observable("obs_a", "scale * A + 0.1", "normal", 0.5),
               pmmh.Observable("obs_a__2", "scale * A + 0.1", "normal", 0.3)]
    a = sampler.build_problem(p["net"], p["observables"], p["experiments"], p["prior"], p["initial"],
                              species_scale=10)
    b = sampler.build_problem(p["net"], by_hand, p["experiments"], p["prior"], p["initial"], species_scale=10)
    theta = np.tile(a.initial, (2, 1))
    theta[1, list(a.names).index("scale")] = 1.3
    la, _ = log_likelihoods(a, theta, 64, np.array([1, 2]), 0)
    lb, _ = log_likelihoods(b, theta, 64, np.array([1, 2]), 0)
    assert np.array_equal(la, lb) and np.isfinite(la).all() and la[0] != la[1]
