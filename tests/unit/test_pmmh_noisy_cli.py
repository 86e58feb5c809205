"""``distsim mcmc noisy``: a model + a noisy CSV through PMMH. The reference is ``pmmh.infer`` called in
Python with the same arguments and seed (identical draws); pmmh.infer is tested against exact
references in test_pmmh.py."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import distsim.pmmh as pmmh
from distsim.cli import main
from distsim.pmmh.csvdata import read_noisy
from distsim.ssa import load

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "tests" / "data" / "pmmh" / "immigration_death.rxn"
TIMES = [1.0, 2.0, 3.0, 3.0, 3.0, 5.0, 7.0]  # three replicates at t = 3


def _data(tmp_path: Path) -> tuple[Path, dict]:
    """A CSV of X ~ Poisson(5) counts and y = 2 X + N(0, 1) (seed 34), X blank at t = 5; and the
    Experiment data it stands for (the replicates of t = 3 as a list)."""
    rng = np.random.default_rng(34)
    x = rng.poisson(5.0, len(TIMES)).astype(float)
    y = np.round(2 * x + rng.normal(0.0, 1.0, len(TIMES)), 3)
    x[5] = math.nan
    rows = ["time,X,y"] + [f"{t:g},{'' if math.isnan(a) else f'{a:g}'},{float(b)!r}" for t, a, b in zip(TIMES, x, y)]
    path = tmp_path / "noisy.csv"
    path.write_text("\n".join(rows) + "\n")
    data = {"X": [x[0], x[1], list(x[2:5]), x[5], x[6]], "y": [y[0], y[1], list(y[2:5]), y[5], y[6]]}
    return path, data


def _cli(*args: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short run: the ConvergenceWarning is expected
        return main(["mcmc", "noisy", str(MODEL), *args, "--in-process", "--quiet"])


def test_read_noisy_groups_replicates_and_names_observables(tmp_path):
    csv, data = _data(tmp_path)
    p = read_noisy(load(MODEL), csv, noise={None: "poisson", "y": "normal:sigma"}, observables={"y": "2*X"},
                   prior={"k1": "gamma:2,1", "sigma": "gamma:2,2"}, initial={"X": 3, "sigma": 0.8})
    assert p["observables"] == [pmmh.Observable("X", "X", "poisson"), pmmh.Observable("y", "2*X", "normal", "sigma")]
    (ex,) = p["experiments"]
    assert list(ex.times) == [1.0, 2.0, 3.0, 5.0, 7.0]
    np.testing.assert_equal(ex.data["X"], data["X"])
    np.testing.assert_equal(ex.data["y"], data["y"])
    assert dict(ex.initial) == {"X": 3} and p["initial"] == {"sigma": 0.8}


def test_cli_posterior_is_pmmh_infer_with_the_same_arguments(tmp_path, capsys):
    csv, data = _data(tmp_path)
    out = tmp_path / "post.nc"
    rc = _cli("--data", str(csv), "--observable", "y=2*X", "--noise", "poisson", "--noise", "y=normal:sigma",
              "--prior", "k1=gamma:2,1", "--prior", "sigma=gamma:2,2", "--initial", "sigma=0.8",
              "--initial", "X=3", "--species-scale", "2", "--particles", "16", "--iterations", "30", "--burn-in", "10",
              "--chains", "2", "--seed", "7", "-o", str(out))
    assert rc == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    assert "particle marginal Metropolis-Hastings" in text and "X: poisson, y: normal" in text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = pmmh.infer(load(MODEL), [pmmh.Observable("X", "X", "poisson"),
                                       pmmh.Observable("y", "2*X", "normal", "sigma")],
                         pmmh.Experiment(times=[1, 2, 3, 5, 7], data=data, initial={"X": 3}),
                         prior={"k1": "gamma:2,1", "sigma": "gamma:2,2"}, initial={"sigma": 0.8}, particles=16,
                         iterations=30, burn_in=10, chains=2, seed=7, progress=False, species_scale=2)
    import xarray as xr

    with xr.open_dataset(out) as ds:
        for v in ("k1", "sigma", "log_likelihood", "accepted", "observed_value", "observation_replicate"):
            np.testing.assert_array_equal(ds[v].values, ref[v].values, err_msg=v)
        assert ds.attrs["data_file"] == str(csv)
    # the replicates of t = 3 are three observations, numbered 0, 1, 2
    assert list(ref.observation_replicate.values[ref.observation_time.values == 3.0]) == [0, 1, 2]


def _errors(tmp_path: Path, capsys, *args: str) -> str:
    out = tmp_path / "never.nc"
    assert _cli(*args, "--prior", "k1=gamma:2,1", "--iterations", "5", "--burn-in", "1", "--particles", "4",
                "-o", str(out)) != 0
    assert not out.exists()
    return capsys.readouterr().err


def test_bad_input_names_file_and_line(tmp_path, capsys):
    csv, _ = _data(tmp_path)
    f = str(csv)
    err = _errors(tmp_path, capsys, "--data", f, "--noise", "poisson")
    assert f"{f}:1:8: column 3 ('y') is neither a species of the model (X) nor an observable" in err
    err = _errors(tmp_path, capsys, "--data", f, "--observable", "y=X", "--noise", "poisson", "--noise", "z=normal:1")
    assert f"{f}:1: noise model given for 'z', which is not a column" in err
    err = _errors(tmp_path, capsys, "--data", f, "--observable", "y=X", "--noise", "poisson", "--noise",
                  "y=normal:sd")
    assert f"{f}:1:8: the noise parameter 'sd' of 'y' is neither a number nor a model parameter: give it a prior" in err
    err = _errors(tmp_path, capsys, "--data", f, "--observable", "y=X", "--noise", "poison")
    assert "unknown noise model 'poison'" in err and "did you mean 'poisson'" in err
    err = _errors(tmp_path, capsys, "--data", f, "--observable", "y=X", "--noise", "X=poisson")
    assert f"{f}:1:8: column 'y' has no noise model" in err
    err = _errors(tmp_path, capsys, "--data", f, "--observable", "q=X", "--noise", "poisson")
    assert f"{f}:1: observable 'q' has no column" in err
    err = _errors(tmp_path, capsys, "--data", f, "--observable", "y=X", "--noise", "normal")
    assert "normal noise needs a parameter" in err
    # y is not a count: Poisson noise refuses it, naming the file, the first such row and the column
    err = _errors(tmp_path, capsys, "--data", f, "--observable", "y=X", "--noise", "poisson")
    y1 = float(csv.read_text().split("\n")[1].split(",")[2])  # the first row's y, not a whole number
    assert f"{f}:2:8: column 'y': poisson noise needs counts (integers >= 0), got {y1:g}" in err
    csv.write_text("time,X\n1,3\n3,4\n2,5\n")
    err = _errors(tmp_path, capsys, "--data", f, "--noise", "poisson")
    assert f"{f}:4: times must increase (3 then 2)" in err
    csv.write_text("time,X\n1,3\n2,x\n")
    err = _errors(tmp_path, capsys, "--data", f, "--noise", "poisson")
    assert f"{f}:3: X = 'x' is not a number" in err


def test_bad_options(tmp_path, capsys):
    csv, _ = _data(tmp_path)
    err = _errors(tmp_path, capsys, "--data", str(csv), "--observable", "y=X", "--noise", "poisson",
                  "--initial", "Z=3")
    assert "initial value for 'Z': neither a species of the model nor an inferred parameter" in err
    err = _errors(tmp_path, capsys, "--data", str(csv), "--observable", "y=X", "--noise", "poisson",
                  "--initial", "X=2.5")
    assert "initial count of 'X' is 2.5, not a whole number" in err
    err = _errors(tmp_path, capsys, "--data", str(csv), "--observable", "y=X", "--noise", "poisson",
                  "--initial", "k1=fast")
    assert "starting value of 'k1' is 'fast', not a number" in err
    err = _errors(tmp_path, capsys, "--data", str(csv), "--observable", "y=X", "--noise", "poisson",
                  "--prior", "k2=gamma:2")
    assert "--prior k2=gamma:2" in err
    err = _errors(tmp_path, capsys, "--data", str(csv), "--noise", "poisson", "--noise", "normal:1")
    assert "the default is given twice" in err


def test_mcmc_rates_refuses_noise_and_names_mcmc_noisy(tmp_path, capsys):
    csv, _ = _data(tmp_path)
    assert main(["mcmc", "rates", str(MODEL), "--data", str(csv), "--noise", "poisson", "--in-process"]) != 0
    assert "distsim mcmc noisy" in capsys.readouterr().err


def test_help_lists_the_noise_models_and_a_runnable_example(capsys):
    with pytest.raises(SystemExit):
        main(["mcmc", "noisy", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "one of " + ", ".join(pmmh.NOISE_MODELS) + " " in text
    example = text[text.index("distsim mcmc noisy tests/"):]
    for word in example.split():
        if word.startswith(("tests/", "examples/")):
            assert (ROOT / word).is_file(), word


def test_the_example_csv_is_what_its_script_makes(tmp_path):
    import runpy

    make = runpy.run_path(str(ROOT / "examples" / "mcmc" / "make_noisy_csv.py"))["main"]
    make(tmp_path / "made.csv")
    shipped = ROOT / "examples" / "mcmc" / "noisy_immigration_death.csv"
    assert (tmp_path / "made.csv").read_text() == shipped.read_text()
