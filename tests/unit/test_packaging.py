"""Packaging: the distribution name, one version, one dask pin in every profile, and a wheel that
ships the CUDA sources (distsim/kernels) and the example models (distsim/examples) and finds them."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import distsim

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                        str(out), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return next(out.glob("distsim_bio-*.whl"))


def test_wheel_contains_kernels_and_examples_and_finds_them(wheel, tmp_path):
    names = zipfile.ZipFile(wheel).namelist()
    sources = sorted(p.name for p in (ROOT / "kernels").iterdir() if p.suffix in (".cu", ".cuh"))
    for name in sources:
        assert f"distsim/kernels/{name}" in names
    examples = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").rglob("*") if p.is_file()
                      and "__pycache__" not in p.parts)
    assert "examples/sweeps/mm_grid.yaml" in examples
    for name in examples:
        assert f"distsim/{name}" in names
    assert any(n.endswith("entry_points.txt") for n in names)
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = "import distsim, distsim.backends.cuda as b; print(b.kernels_dir()); print(distsim.examples_dir())"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                       env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert [Path(line) for line in r.stdout.split()] == [site / "distsim" / "kernels", site / "distsim" / "examples"]


def test_distribution_name_version_and_dask_pins(wheel):
    meta_name = next(n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".dist-info/METADATA"))
    meta = Parser().parsestr(zipfile.ZipFile(wheel).read(meta_name).decode())
    # "distsim" on PyPI is another project; the import package and the command keep the name
    assert meta["Name"] == "distsim-bio"
    assert meta["Version"] == distsim.__version__
    entry = next(n for n in zipfile.ZipFile(wheel).namelist() if n.endswith("entry_points.txt"))
    assert "distsim = distsim.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
    # the newest CHANGELOG section is this version
    first = re.search(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert first and first.group(1) == distsim.__version__
    # dask and distributed: one exact version, in the base dependencies only, so every profile agrees
    requires = meta.get_all("Requires-Dist")
    assert "dask[distributed]==2026.7.1" in requires and "distributed==2026.7.1" in requires, requires
    for extra_req in PYPROJECT["project"]["optional-dependencies"].values():
        for req in extra_req:
            assert re.split(r"[\[=<>!~ ]", req)[0] not in ("dask", "distributed"), req


def test_pyproject_reads_the_one_version():
    assert "version" in PYPROJECT["project"]["dynamic"] and "version" not in PYPROJECT["project"]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "distsim/__init__.py"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_reinstalls_only_when_pyproject_changes(tmp_path):
    """`make run` twice: the second does not reinstall (its stamp is newer than pyproject.toml) and
    replaces its own results; `make run` installs no test extra, `make test` does, once."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    newer = (ROOT / "pyproject.toml").stat().st_mtime + 10

    def dry_run(target: str) -> tuple[str, list[Path]]:
        r = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True,
                           timeout=60, env={**os.environ, "PATH": "/usr/bin:/bin"})
        assert r.returncode == 0, r.stderr
        stamps = [Path(p) for line in r.stdout.splitlines() if line.startswith("touch ") for p in line.split()[1:]]
        return r.stdout, stamps

    def install(stamps: list[Path]) -> None:  # what the recipe's touch does
        for stamp in stamps:
            stamp.touch()
            os.utime(stamp, (newer, newer))

    first, stamps = dry_run("run")
    assert "pip install -q -e" in first and ",test]" not in first and "--overwrite" in first
    install(stamps)
    second, _ = dry_run("run")
    assert "pip install" not in second and "distsim pbn steady-state" in second and "--overwrite" in second
    test, stamps = dry_run("test")
    assert "pip install -q -e" in test and ",test]" in test and "pytest" in test
    install(stamps)
    assert "pip install" not in dry_run("test")[0] and "pip install" not in dry_run("run")[0]
    os.utime(stamps[0], (newer - 20, newer - 20))  # pyproject.toml changed since: install again
    assert "pip install" in dry_run("test")[0]
