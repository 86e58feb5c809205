"""The API reference builds from the docstrings, offline, without warnings (Sphinx autodoc)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_api_reference_builds(tmp_path):
    pytest.importorskip("sphinx")
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(ROOT / "docs"), str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    page = (tmp_path / "api.html").read_text()
    for name in ("steady_state", "simulate", "infer_rates", "infer", "sweep", "connect"):
        assert name in page
