"""Every example script runs as written (at its --small size) on a local Dask cluster, from a script
file with its `if __name__ == "__main__":` guard, and prints no traceback."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("script", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_example_runs(script, tmp_path):
    done = subprocess.run([sys.executable, str(EXAMPLES / script), "--small"], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path, env={"DISTSIM_DISABLE_GPU": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and " ERROR " not in done.stderr, done.stderr[-3000:]
    assert done.stdout.strip()
