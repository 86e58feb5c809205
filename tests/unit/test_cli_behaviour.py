"""How the command line behaves around the work: fast help, options anywhere, errors before any
cluster starts, one-line errors, quiet Dask, and outputs that are never lost or clobbered."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from distsim.cli import main
from distsim.results import open_result

ROOT = Path(__file__).resolve().parents[2]
SHM = ROOT / "examples" / "pbn" / "bnmpy_shmulevich2002_examplePBN_3n.txt"
MM = ROOT / "examples" / "ssa" / "michaelis_menten.rxn"
SSA = ["ssa", "simulate", str(MM), "--t-end", "5", "--points", "3", "-n", "64"]


def _cpu_seconds(args: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    """CPU time (user + system) of a child process: independent of how busy the machine is."""
    before = os.times()
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system), done


def test_help_is_fast_and_lists_every_command():
    seconds, done = _cpu_seconds([sys.executable, "-m", "distsim", "--help"])
    assert done.returncode == 0
    for command in ("info", "pbn", "ssa", "grn", "mcmc", "sweep"):
        assert f"distsim {command}" in done.stdout
    assert seconds < 1.0, f"--help took {seconds:.2f} s of CPU"


@pytest.mark.parametrize("command", [["pbn", "simulate"], ["pbn", "steady-state"], ["pbn", "influence"],
                                     ["pbn", "convert"], ["ssa", "simulate"], ["grn", "infer"], ["mcmc", "rates"],
                                     ["mcmc", "noisy"], ["sweep"], ["info"]])
def test_every_option_has_help(command, capsys):
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    from distsim.cli import build_parser

    parser = build_parser()
    for name in command:
        parser = next(a for a in parser._actions if a.dest.endswith("command")).choices[name]  # noqa: SLF001
    missing = [a.option_strings or a.dest for a in parser._actions if not a.help]  # noqa: SLF001
    assert not missing, f"options without help: {missing}"


def test_global_options_after_the_subcommand(tmp_path):
    out = tmp_path / "sim.nc"
    assert main([*SSA, "-o", str(out), "--in-process", "--cpu", "-q"]) == 0
    assert open_result(out).attrs["executor"] == "in-process"


def test_argument_errors_come_before_any_cluster(monkeypatch, capsys):
    import distsim.cluster

    def no_cluster(*a, **k):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(distsim.cluster, "connect", no_cluster)
    assert main(["pbn", "steady-state", str(SHM), "--target", "zz=1", "-q"]) == 2
    assert "unknown node 'zz'" in capsys.readouterr().err
    assert main([*SSA, "--param", "nope=1", "-q"]) == 2
    assert "nope" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*SSA, "--max-events", "-1"])
    with pytest.raises(SystemExit):
        main(["pbn", "simulate", str(SHM), "--steps", "0", "--trajectories", "10"])


def test_unreachable_scheduler_is_one_line(monkeypatch, capsys):
    from distsim.cli import common

    monkeypatch.setattr(common, "CONNECT_TIMEOUT_S", 1)
    assert main(["--scheduler", "tcp://127.0.0.1:9", "-q", *SSA]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err


def test_a_run_on_a_local_cluster_prints_no_traceback(tmp_path):
    done = subprocess.run([sys.executable, "-m", "distsim", "--cpu", "--workers", "2", *SSA, "-o",
                           str(tmp_path / "r.nc")], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "ERROR" not in done.stderr, done.stderr
    assert "dashboard http://127.0.0.1" in done.stderr


def test_existing_outputs_are_never_clobbered(tmp_path, capsys):
    folder = tmp_path / "adir.nc"
    folder.mkdir()
    (folder / "keep.txt").write_text("precious")
    store = tmp_path / "adir.zarr"
    store.mkdir()
    (store / "keep.txt").write_text("precious")
    for target in (folder, store):
        for extra in ([], ["--overwrite"]):
            assert main(["--in-process", "-q", *SSA, "-o", str(target), *extra]) == 2
            assert (target / "keep.txt").read_text() == "precious"
    out = tmp_path / "r.nc"
    out.write_text("old")
    assert main(["--in-process", "-q", *SSA, "-o", str(out)]) == 2
    assert out.read_text() == "old" and "exists" in capsys.readouterr().err
    assert main(["--in-process", "-q", *SSA, "-o", str(out), "--overwrite"]) == 0
    assert open_result(out).attrs["workload"] == "ssa.simulate"
    z = tmp_path / "r.zarr"  # a store distsim wrote may be replaced, with --overwrite
    assert main(["--in-process", "-q", *SSA, "-o", str(z)]) == 0
    assert main(["--in-process", "-q", *SSA, "-o", str(z), "--seed", "5", "--overwrite"]) == 0
    assert open_result(z).attrs["seed"] == 5


def test_output_paths_are_checked_before_the_work(tmp_path, capsys):
    assert main(["--in-process", "-q", *SSA, "--plot", str(tmp_path / "missing" / "p.png")]) == 2
    assert main(["--in-process", "-q", *SSA, "--plot", str(tmp_path / "p.jpg")]) == 2
    assert main(["--in-process", "-q", *SSA, "-o", str(tmp_path / "x.nc"), "--plot", str(tmp_path / "x.nc")]) == 2
    assert list(tmp_path.iterdir()) == []


def test_a_failing_figure_keeps_the_data(tmp_path, monkeypatch, capsys):
    import distsim.ssa.plots

    def broken(ds, path):
        raise RuntimeError("no ink")

    monkeypatch.setattr(distsim.ssa.plots, "plot_ensemble", broken)
    out = tmp_path / "r.nc"
    assert main(["--in-process", "-q", *SSA, "-o", str(out), "--plot", str(tmp_path / "p.png")]) == 1
    assert open_result(out).attrs["workload"] == "ssa.simulate"
    assert "no ink" in capsys.readouterr().err
