"""Bad PEtab problems and noisy CSVs (findings of the "PEtab" and "noisy CSV" fuzz formats, tests/fuzzing.py):
each is a distsim error naming the file and the line of the problem, raised before any sampling."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

import distsim.pmmh as pmmh
from distsim.errors import ConfigError, DataError, DistsimError
from distsim.pmmh.sampler import build_problem
from distsim.ssa import load

DATA = Path(__file__).resolve().parents[1] / "data" / "pmmh"
CASE = DATA / "petab_0001"  # _0001.yaml: A -> B (k1), B -> A (k2); estimated a0, b0, k1, k2 (bounds 0, 10)
HEAD = {"_measurements.tsv": "observableId\tsimulationConditionId\ttime\tmeasurement\n",
        "_observables.tsv": "observableId\tobservableFormula\tnoiseFormula\n",
        "_parameters.tsv": "parameterId\tparameterScale\tlowerBound\tupperBound\tnominalValue\testimate\n"}
PARAMS = HEAD["_parameters.tsv"] + "a0\tlin\t0\t10\t1.0\t1\nb0\tlin\t0\t10\t0.0\t1\nk1\tlin\t0\t10\t0.8\t1\n"
YAML = (CASE / "_0001.yaml").read_text()


def _load(problem: Path) -> None:
    """What `distsim mcmc petab` does before the chains start."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = pmmh.read_problem(problem, system_size=10)
        build_problem(p["net"], p["observables"], p["experiments"], p["prior"], p["initial"], species_scale=10)


@pytest.mark.parametrize("name, text, error, line, phrase", [
    # reading the files
    ("_0001.yaml", YAML.encode().replace(b"problems", b"probl\xffems"), ConfigError, 3, "not UTF-8"),
    ("_measurements.tsv", HEAD["_measurements.tsv"].encode() + b"obs_a\tc0\t0\t0.\xe77\n", DataError, 2, "not UTF-8"),
    ("_measurements.tsv", HEAD["_measurements.tsv"] + "obs_a\tc0\t0\t0.7\nobs_a\tc0\t1\t\"" + "7" * 200_000 + "\n",
     DataError, 3, "field larger than field limit"),
    ("_observables.tsv", "", DataError, 1, "empty table"),
    ("_0001.yaml", YAML.replace("  sbml_files:", "  sbml_files: ["), ConfigError, 11, "not valid YAML"),
    ("_0001.yaml", YAML.replace("format_version: 1", "format_version: " + "9" * 5000), ConfigError, 1,
     "not valid YAML: integer of 5000 digits is too large"),
    ("_0001.yaml", YAML.replace("format_version: 1", "format_version: 2"), ConfigError, 1, "PEtab v1"),
    ("_0001.yaml", YAML.replace("- _conditions.tsv", "- " + "[" * 5000 + "]" * 5000), ConfigError, 5,
     "collections nest more than 32 deep"),
    ("_0001.yaml", "\n".join(["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [
        f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 10)}]" for k in range(1, 13)]) + "\n"
     + YAML.replace("parameter_file: _parameters.tsv", "parameter_file: *a12"), ConfigError, 6,
     "the document has more than 1,000,000 values (aliases expanded)"),  # an alias bomb (10^13 values)
    ("_0001.yaml", YAML.replace("- _model.xml", "  x: _model.xml"), ConfigError, 10, "'sbml_files' must be a list"),
    ("_0001.yaml", YAML.replace("_observables.tsv", "_obs" + "x" * 5000 + ".tsv"), ConfigError, 8,
     "'observable_files': '_obsxxx"),
    ("_0001.yaml", YAML.replace("parameter_file: _parameters.tsv", "parameter_file: [1]"), ConfigError, 2,
     "'parameter_file': a list is not a file"),
    # the tables' contents
    ("_measurements.tsv", HEAD["_measurements.tsv"], DataError, 1, "no measurement (the table has no rows)"),
    ("_measurements.tsv", HEAD["_measurements.tsv"] + "obs_a\tc0\t0\t0.7\nobs_a\tc0\t10\tinf\n", DataError, 3,
     "observable obs_a: infinite measurement"),
    ("_observables.tsv", HEAD["_observables.tsv"] + "obs_a\tA +\t0.5\n", DataError, 2, "observable obs_a: "),
    ("_observables.tsv", HEAD["_observables.tsv"] + "obs_a\tA\t0.5\nobs_a\tB\t0.5\n", DataError, 3,
     "observableId 'obs_a' must be a unique identifier"),
    ("_observables.tsv", HEAD["_observables.tsv"].replace("\n", "\tobservableTransformation\n")
     + "obs_a\tA\t0.5\tlog\n",
     DataError, 3, "observable obs_a: lognormal noise needs measurements > 0"),  # with a measurement 0: see below
    ("_observables.tsv", HEAD["_observables.tsv"] + "obs_a\tA\tnoiseParameter" + "9" * 5000 + "_obs_a\n", DataError, 2,
     "noiseParameter" + "9" * 26 + "..." + "9" * 14 + "_obs_a needs 999999999999... value(s) in noiseParameters, "
     "the measurement gives 0"),
    ("_parameters.tsv", PARAMS + "k2\tlin\t0\t10\t20\t1\n", DataError, 5, "k2: the chains start at 20"),
    ("_parameters.tsv", PARAMS + "k2\tlin\t0\t10\t-1\t0\n", DataError, 5, "k2 = -1 (its nominalValue) in the SBML"),
    ("_parameters.tsv", HEAD["_parameters.tsv"] + "k9\tlin\t0\t10\t1\t1\n", ConfigError, 1,
     "no estimated parameter that the model's reactions or the observables read"),
])
def test_petab(tmp_path, name, text, error, line, phrase):
    case = tmp_path / "case"
    shutil.copytree(CASE, case)
    (case / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    if "lognormal" in phrase:  # a measurement <= 0 of a log observable, on line 3
        (case / "_measurements.tsv").write_text(HEAD["_measurements.tsv"] + "obs_a\tc0\t0\t0.7\nobs_a\tc0\t10\t0\n")
        name = "_measurements.tsv"
    if "noiseParameter" in phrase:  # a placeholder of the observable, filled from each measurement's line
        name = "_measurements.tsv"
    with pytest.raises(error) as e:
        _load(case / "_0001.yaml")
    assert phrase in e.value.message, e.value
    assert e.value.file == str(case / name) and e.value.line == line, e.value


MODEL = DATA / "immigration_death.rxn"


@pytest.mark.parametrize("text, line, column, phrase", [
    ("time,y\n", 1, None, "no measurements: the header is the only row"),
    ("# comment\ntime,y\n1,2\n-1,3\n", 4, None, "time -1 is negative"),
    ("time,y\n1,2\n2,2.5\n", 3, 6, "column 'y': poisson noise needs counts (integers >= 0), got 2.5"),
    ("time,y\n1,2\n2,-3\n", 3, 6, "column 'y': poisson noise needs counts (integers >= 0), got -3"),
])
def test_noisy_csv(tmp_path, text, line, column, phrase):
    """The fuzz format's options: `distsim mcmc noisy MODEL --data CSV --observable y=X --noise poisson`."""
    f = tmp_path / "data.csv"
    f.write_text(text)
    net, prior = load(MODEL), {"k1": "gamma:2,1"}
    with pytest.raises(DataError) as e:
        p = pmmh.read_noisy(net, f, noise={None: "poisson"}, observables={"y": "X"}, prior=prior)
        build_problem(net, p["observables"], p["experiments"], prior, p["initial"])
    assert phrase in e.value.message, e.value
    assert (e.value.file, e.value.line, e.value.column) == (str(f), line, column), e.value
    assert isinstance(e.value, DistsimError)
