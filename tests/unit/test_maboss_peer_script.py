"""benchmarks/maboss_gpu_peer.{sh,py}'s own logic, without a GPU or MaBoSS.GPU: the .cfg copies with a new
sample_count (read back by distsim), the comparison of two probtraj CSVs, the patches failing loudly
where MaBoSS.GPU's source differs, and the shell script's syntax."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from distsim.maboss import load, maboss, write_csv

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "maboss"


def _peer():
    spec = importlib.util.spec_from_file_location("maboss_gpu_peer", ROOT / "benchmarks" / "maboss_gpu_peer.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("maboss_gpu_peer", mod)
    spec.loader.exec_module(mod)
    return mod


peer = _peer()


def test_cfg_copy_sets_sample_count(tmp_path):
    cfg = DATA / "Montagud2022_Prostate_Cancer.cfg"  # a commented and an uncommented sample_count line
    out = peer.with_samples(cfg, 1234, tmp_path)
    text = out.read_text()
    assert "// sample_count = 500000;" in text and "sample_count = 1000000;" not in text
    m = load(DATA / "Montagud2022_Prostate_Cancer.bnd", out)
    assert m.settings.sample_count == 1234


def test_compare_probtraj_files(tmp_path):
    kw = dict(trajectories=400, max_time=3.0, backend="cpu", progress=False)
    a = maboss(DATA / "toggle_internal.bnd", seed=1, **kw)
    b = maboss(DATA / "toggle_internal.bnd", seed=2, **kw)
    write_csv(a, tmp_path / "a")
    write_csv(b, tmp_path / "b")
    same = peer.compare(tmp_path / "a_probtraj.csv", tmp_path / "a_probtraj.csv")
    assert same == "0 (z 0.0)"
    worst, z = peer.compare(tmp_path / "a_probtraj.csv", tmp_path / "b_probtraj.csv").replace(")", "").split(" (z ")
    assert 0 < float(worst) < 0.2 and 0 < float(z) < 6  # two seeds: a Monte Carlo difference
    assert peer._label("B -- A") == peer._label("A -- B") == "A -- B" and peer._label("<nil>") == "<nil>"


def test_patch_fails_loudly_on_other_source(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text("project(x)\n")
    with pytest.raises(SystemExit, match="CMakeLists.txt"):
        peer.patch(tmp_path)


def test_shell_script_syntax():
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    r = subprocess.run([bash, "-n", str(ROOT / "benchmarks" / "maboss_gpu_peer.sh")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
