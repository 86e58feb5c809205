"""Every tutorial in docs/tutorials/ runs as written, from a scratch folder, against this checkout:
each checks its own numbers against an exact answer (assertions inside), so exit 0 means they held.
Every tutorial is listed in docs/tutorials.rst and linked from the README."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.py"))
WORKLOADS = {"pbn_steady_state", "ssa", "grn", "mcmc", "maboss", "sweep"}


def test_one_tutorial_per_workload():
    assert {p.stem for p in TUTORIALS} == WORKLOADS
    index = (ROOT / "docs" / "tutorials.rst").read_text()
    readme = (ROOT / "README.md").read_text()
    for p in TUTORIALS:
        assert f"literalinclude:: tutorials/{p.name}" in index, p.name
        assert f"docs/tutorials/{p.name}" in readme, p.name
        assert p.read_text().startswith("# %% [markdown]\n# # Tutorial: "), p.name


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs(path, tmp_path):
    path_ = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")  # this checkout's distsim
    env = dict(os.environ, DISTSIM_DISABLE_GPU="1", PYTHONPATH=path_)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    print(f"{path.name}: {time.perf_counter() - t0:.1f} s")
