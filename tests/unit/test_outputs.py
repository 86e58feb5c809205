"""Output paths are checked before any work, with messages that name the user's path: a folder that
is a file, a folder that cannot be written (for data and for figures), and a write that fails."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
import xarray as xr

import distsim.ssa
from distsim import results
from distsim.cli import main
from distsim.errors import OutputError

ROOT = Path(__file__).resolve().parents[2]
MM = ROOT / "examples" / "ssa" / "michaelis_menten.rxn"
SSA = ["--in-process", "-q", "ssa", "simulate", str(MM), "--t-end", "5", "--points", "3", "-n", "16"]


def _unwritable_folder(tmp_path: Path) -> Path:
    """A folder this process cannot create files in (root ignores modes: then a sysfs folder)."""
    if os.geteuid() != 0:
        d = tmp_path / "ro"
        d.mkdir()
        d.chmod(0o555)
        return d
    try:
        os.close(tempfile.mkstemp(dir="/sys")[0])
    except OSError:
        return Path("/sys")
    pytest.skip("no folder here refuses writes")


@pytest.fixture
def no_work(monkeypatch):
    """Fails the test if the simulation starts."""
    def simulate(*a, **k):
        raise AssertionError("the work started before the outputs were checked")

    monkeypatch.setattr(distsim.ssa, "simulate", simulate)


@pytest.mark.parametrize("option", ["-o", "--plot"])
def test_a_file_named_as_folder(option, tmp_path, capsys, no_work):
    model = tmp_path / "model.rxn"
    model.write_text(MM.read_text())
    target = model / ("out.nc" if option == "-o" else "out.png")
    assert main([*SSA, option, str(target)]) == 2
    err = capsys.readouterr().err
    assert f"{target}: {model} is a file, not a folder" in err and "does not exist" not in err, err
    deep = model / "sub" / "out.nc"  # a file further up is found too
    assert main([*SSA, "-o", str(deep)]) == 2
    assert f"{model} is a file, not a folder" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.rxn"]


def test_a_missing_folder(tmp_path, capsys, no_work):
    target = tmp_path / "missing" / "out.nc"
    assert main([*SSA, "-o", str(target)]) == 2
    assert f"{target}: folder {target.parent} does not exist" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option, name", [("-o", "out.nc"), ("-o", "out.zarr"), ("--plot", "out.png")])
def test_an_unwritable_folder_is_found_before_the_work(option, name, tmp_path, capsys, no_work):
    folder = _unwritable_folder(tmp_path)
    target = folder / name
    assert main([*SSA, option, str(target)]) == 2  # usage error, before the work (no_work), not 1 after it
    err = capsys.readouterr().err
    assert f"{target}: folder {folder} cannot be written" in err, err
    assert ".probe" not in err and not target.exists()


def test_a_failing_write_names_the_users_path(tmp_path, monkeypatch):
    ds = xr.Dataset({"x": ("time", [1.0, 2.0])})

    def full(self, path, *a, **k):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(xr.Dataset, "to_netcdf", full)
    out = tmp_path / "r.nc"
    with pytest.raises(OutputError) as e:
        results.write(ds, out)
    assert str(e.value) == f"{out}: could not be written (No space left on device)"
    assert list(tmp_path.iterdir()) == []  # no temporary folder left behind


def test_check_folder_leaves_nothing(tmp_path):
    assert results.check_folder(tmp_path / "a.nc") == tmp_path
    assert list(tmp_path.iterdir()) == []
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        assert results.check_folder("a.nc") == Path(".")
    finally:
        os.chdir(cwd)
    assert list(tmp_path.iterdir()) == []
