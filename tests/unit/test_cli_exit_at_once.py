"""A console-script ``distsim maboss`` run in this process ends at once after its atexit functions
(``cli._exit_now``, issue 31): its files, stdout, stderr and exit status are those of an ordinary exit,
and the ordinary exit is kept where something still needs it (a thread, Dask, a profiler,
DISTSIM_NORMAL_EXIT, ``main(argv)`` called by a program)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

ROOT = Path(__file__).resolve().parents[2]
MODEL = str(ROOT / "tests" / "data" / "maboss" / "toggle_internal.bnd")

# the process as the console script runs it (argv None), with witnesses: an atexit function (runs on either
# exit), os._exit (the fast exit only) and a line after main returned (the ordinary exit only)
PROBE = """
import atexit, os, sys
atexit.register(lambda: os.write(1, b"ATEXIT\\n"))
_exit = os._exit
def fast(rc):
    os.write(1, b"FAST\\n")
    _exit(rc)
os._exit = fast
{before}
sys.argv = ["distsim", *{argv!r}]
from distsim.cli import main
rc = main()
os.write(1, b"RETURNED\\n")
sys.exit(rc)
"""


# a thread that runs on until the exit is being decided, then writes a line
THREAD = """
import threading, time
import distsim.cli as cli
decided, decide = threading.Event(), cli._may_exit_now
def watched(*a):
    try:
        return decide(*a)
    finally:
        decided.set()
cli._may_exit_now = watched
threading.Thread(target=lambda: (decided.wait(), time.sleep(0.3), os.write(1, b"THREAD\\n"))).start()
"""


def _run(argv: list[str], before: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    code = PROBE.format(argv=argv, before=before)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def _args(tmp_path: Path, tag: str) -> list[str]:
    return ["maboss", MODEL, "--cpu", "-n", "300", "--seed", "4", "-o", str(tmp_path / f"{tag}.nc"),
            "--csv", str(tmp_path / tag)]


def test_outputs_and_status_as_the_ordinary_exit(tmp_path):
    fast = _run(_args(tmp_path, "fast"))
    slow = _run(_args(tmp_path, "slow"), env={"DISTSIM_NORMAL_EXIT": "1"})
    assert fast.returncode == 0 and slow.returncode == 0, (fast.stderr[-2000:], slow.stderr[-2000:])
    assert "ATEXIT" in fast.stdout and "FAST" in fast.stdout and "RETURNED" not in fast.stdout
    assert "ATEXIT" in slow.stdout and "FAST" not in slow.stdout and "RETURNED" in slow.stdout
    # stdout complete: the summary, every file named, the total; the same lines but the paths and the time
    f_lines = [ln for ln in fast.stdout.splitlines() if ln not in ("ATEXIT", "FAST")]
    s_lines = [ln for ln in slow.stdout.splitlines() if ln not in ("ATEXIT", "RETURNED")]
    assert f_lines[-1].startswith("total ") and s_lines[-1].startswith("total ")
    assert [ln.replace("fast", "X") for ln in f_lines[:-1]] == [ln.replace("slow", "X") for ln in s_lines[:-1]]
    assert fast.stderr == slow.stderr == ""
    for suffix in ("_probtraj.csv", "_fp.csv"):
        assert (tmp_path / f"fast{suffix}").read_bytes() == (tmp_path / f"slow{suffix}").read_bytes()
    with xr.open_dataset(tmp_path / "fast.nc", engine="h5netcdf") as a, \
            xr.open_dataset(tmp_path / "slow.nc", engine="h5netcdf") as b:
        assert set(a.variables) == set(b.variables) and a.sizes == b.sizes
        for k in a.variables:
            np.testing.assert_array_equal(a[k].values, b[k].values)
    assert not list(tmp_path.glob(".*"))  # no temporary file left


def test_error_status_and_message(tmp_path):
    r = _run(["maboss", MODEL, "--cpu", "--mutant", "A=2"])
    assert r.returncode == 2
    assert r.stderr == "distsim: error: --mutant A=2: the value is 0 (knock-out) or 1 (over-expression)\n"
    assert "ATEXIT" in r.stdout and "FAST" in r.stdout


@pytest.mark.parametrize("before, env", [
    (THREAD, None),  # a thread still running when the command ends: waited for, as by any exit
    ("import distributed", None),  # Dask's client side imported: a cluster may need its orderly close
    ("sys.setprofile(lambda *a: None)", None),  # a profiler writes its report after the run
    ("", {"DISTSIM_NORMAL_EXIT": "1"}),
])
def test_ordinary_exit_where_needed(tmp_path, before, env):
    r = _run(_args(tmp_path, "t"), before=before, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "RETURNED" in r.stdout and "FAST" not in r.stdout and "ATEXIT" in r.stdout
    if before is THREAD:
        assert "THREAD" in r.stdout


def test_main_with_argv_returns(tmp_path):
    code = (f"import sys; from distsim.cli import main; rc = main({_args(tmp_path, 'a')!r}); "
            "print('RETURNED', rc); sys.exit(7)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 7 and "RETURNED 0" in r.stdout, r.stderr[-2000:]
    assert (tmp_path / "a.nc").stat().st_size > 0


def test_cprofile_writes_its_report(tmp_path):
    out = tmp_path / "run.prof"
    r = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "distsim", *_args(tmp_path, "p")],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert out.stat().st_size > 0 and (tmp_path / "p.nc").stat().st_size > 0
