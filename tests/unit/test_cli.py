"""The command line: main jobs write results; bad input gives a clear error and writes nothing."""

import numpy as np
import pytest

from distsim.cli import main
from distsim.results import open_result

SHM = "bnmpy_shmulevich2002_examplePBN_3n.txt"


def test_info(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "distsim" in out and "backend here" in out and "would start" in out


def test_simulate_writes_netcdf(examples, tmp_path, capsys):
    out = tmp_path / "sim.nc"
    rc = main(["--in-process", "-q", "pbn", "simulate", str(examples / SHM), "-p", "0.01", "--steps", "100",
               "--trajectories", "300", "--target", "x1=1", "--keep-states", "-o", str(out)])
    assert rc == 0
    ds = open_result(out)
    assert ds.final_state.shape == (300, 3) and ds.attrs["workload"] == "pbn.simulate"
    assert np.array_equal(ds.final_frequency.values, ds.final_state.values.sum(axis=0) / 300)
    assert 0 < float(ds.target_frequency[0]) < 1
    assert "fraction of steps" in capsys.readouterr().out


def test_steady_state_on_local_cluster_writes_zarr_and_png(examples, tmp_path, capsys):
    out, png = tmp_path / "ss.zarr", tmp_path / "conv.png"
    rc = main(["--cpu", "--workers", "2", "-q", "pbn", "steady-state", str(examples / SHM), "-p", "0.01",
               "--target", "x1=1", "--target", "x2=0,x3=1", "-r", "5e-3", "-o", str(out), "--plot", str(png)])
    assert rc == 0
    ds = open_result(out)
    for v in ("probability", "ci_low", "ci_high", "rhat", "burn_in", "sample_size", "alpha", "beta"):
        assert v in ds and ds[v].shape == (2,)
    assert ds.attrs["chains"] > 0 and ds.attrs["steps_simulated"] > 0 and ds.attrs["wall_time_s"] > 0
    assert ds.attrs["model_sha256"] and ds.attrs["distsim_version"]
    assert png.exists()
    text = capsys.readouterr().out
    assert "x1=1" in text and "95% interval" in text


def test_influence_cli(examples, capsys):
    assert main(["--in-process", "-q", "pbn", "influence", str(examples / SHM), "-p", "0.01", "--node", "x1",
                 "-r", "5e-3"]) == 0
    assert "long-run influence on x1" in capsys.readouterr().out


def test_convert_round_trip(examples, tmp_path):
    out = tmp_path / "faure.pbn"
    assert main(["pbn", "convert", str(examples / "bbm023_faure2006_mammalian_cell_cycle_10n.bnet"), "-p", "0.01",
                 "-o", str(out)]) == 0
    from distsim.pbn import load

    a = load(examples / "bbm023_faure2006_mammalian_cell_cycle_10n.bnet", perturbation=0.01)
    b = load(out)
    assert a.nodes == b.nodes and b.perturbation == 0.01


@pytest.mark.parametrize("args,phrase", [
    (["pbn", "steady-state", "missing.bnet", "--target", "a=1"], "missing.bnet"),
    (["pbn", "steady-state", "{ex}/" + SHM, "--target", "zz=1"], "unknown node"),
    (["pbn", "steady-state", "{bad}/missing_endnode.pbn", "--target", "x0=1"], "missing_endnode.pbn:"),
    (["pbn", "steady-state", "{ex}/" + SHM, "--target", "x1=1", "-o", "{tmp}/out.csv"], "unknown output format"),
    (["pbn", "steady-state", "{ex}/" + SHM, "--target", "x1=1", "-r", "2"], "precision"),
])
def test_bad_input_clear_error_nothing_written(examples, tmp_path, capsys, args, phrase):
    bad = examples.parents[1] / "tests" / "data" / "bad"
    args = [a.format(ex=examples, bad=bad, tmp=tmp_path) for a in args]
    out = tmp_path / "result.nc"
    if "-o" not in args:
        args += ["-o", str(out)]
    assert main(["--in-process", "-q"] + args) == 2
    err = capsys.readouterr().err
    assert "error" in err and phrase in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("model", ["dsmts/00020/00020-sbml-l3v1.xml", "text"])
def test_ssa_simulate_sbml_and_text_models(model, tmp_path, capsys):
    """`distsim ssa simulate` on an SBML file (a DSMTS case) and on the reaction text format: both write a
    Dataset and print a summary."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    path = root / "examples" / "ssa" / "immigration_death.rxn" if model == "text" else root / "tests" / "data" / model
    out = tmp_path / "ssa.nc"
    rc = main(["--in-process", "-q", "ssa", "simulate", str(path), "--t-end", "5", "--points", "6", "-n", "400",
               "--seed", "4", "-o", str(out)])
    assert rc == 0
    ds = open_result(out)
    assert ds.attrs["workload"] == "ssa.simulate" and ds["mean"].shape == (6, ds.sizes["species"])
    assert float(ds["mean"].isel(time=-1).max()) > 0 and int(ds.attrs["firings_total"]) > 0
    assert "firings" in capsys.readouterr().out
