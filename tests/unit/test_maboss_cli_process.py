"""``distsim maboss`` runs in its own process when a local cluster would hold a single device (one GPU, or
the CPU), and starts Dask otherwise: --scheduler/--scheduler-file, --workers, two or more local GPUs."""

from __future__ import annotations

from pathlib import Path

import pytest
import xarray as xr

from distsim.cli import build_parser, common, main
from distsim.cli.maboss import runs_in_process

DATA = Path(__file__).resolve().parents[1] / "data" / "maboss"
BND = DATA / "toggle_internal.bnd"


def _args(*extra: str):
    return build_parser().parse_args(["maboss", str(BND), *extra])


@pytest.mark.parametrize("extra, gpus, expected", [
    ((), 0, True),  # a CPU machine: one process uses every core
    ((), 1, True),  # one GPU
    ((), 2, False),  # one worker per GPU
    (("--cpu",), 4, True),
    (("--in-process",), 8, True),
    (("--workers", "1"), 0, False),  # asked for workers
    (("--workers", "3"), 1, False),
    (("--scheduler", "tcp://127.0.0.1:1"), 0, False),
    (("--scheduler-file", "s.json"), 1, False),
])
def test_which_runs_in_process(monkeypatch, extra, gpus, expected):
    monkeypatch.setattr("distsim.backends.count_gpus", lambda: gpus)
    assert runs_in_process(_args(*extra)) is expected


def test_default_run_starts_no_cluster(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr("distsim.backends.count_gpus", lambda: 0)

    def no_cluster(*a, **k):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(common, "_start", no_cluster)
    out = tmp_path / "a.nc"
    argv = ["-q", "maboss", str(BND), "--trajectories", "300", "--max-time", "2", "--seed", "3", "-o", str(out)]
    assert main(argv) == 0
    ref = tmp_path / "b.nc"
    assert main(["--in-process", *argv[:-1], str(ref)]) == 0
    with xr.open_dataset(out) as a, xr.open_dataset(ref) as b:
        assert a.attrs["executor"] == b.attrs["executor"] == "in-process"
        xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())
