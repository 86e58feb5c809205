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
    same = peer.compare(tmp_path / "a_probtraj.csv", tmp_path / "a_probtraj.csv", 400, 400)
    assert same["dp"] == same["z"] == same["z_se"] == 0 and same["text"].startswith("0 (z 0.0 <= ")
    r = peer.compare(tmp_path / "a_probtraj.csv", tmp_path / "b_probtraj.csv", 400, 400)
    pa, pb = peer.probtraj(tmp_path / "a_probtraj.csv"), peer.probtraj(tmp_path / "b_probtraj.csv")
    assert r["cells"] == sum(len(set(pa[t]) | set(pb[t])) for t in pa)
    assert 0 < r["dp"] < 0.2 and 0 < r["z"] < r["crit"]  # two seeds: a Monte Carlo difference
    w = r["worst_z"]
    assert {"time", "state", "p_ds", "p_peer", "err_ds", "err_peer"} <= set(w) and w["state"] in peer.describe_cell(w)
    assert peer._label("B -- A") == peer._label("A -- B") == "A -- B" and peer._label("<nil>") == "<nil>"


def _csv(path, rows):
    head = "Time\tTH\tErrorTH\tH\tHD=0" + "\tState\tProba\tErrorProba" * max(len(r) for r in rows.values())
    lines = [head] + ["\t".join([f"{t:g}", "0", "0", "0", "0"] + [f"{x}" for s, (p, e) in r.items() for x in (s, p, e)])
                      for t, r in rows.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_compare_z_bound_and_rare_states(tmp_path):
    n = 10000
    # a common state: z = |dp| / sqrt(p (1 - p) (2 / n)), p pooled
    ds = _csv(tmp_path / "ds.csv", {0.0: {"A": (0.5, 0.005), "B -- A": (0.5, 0.005)}})
    pe = _csv(tmp_path / "pe.csv", {0.0: {"A": (0.52, 0.0), "A -- B": (0.48, 0.0)}})
    r = peer.compare(ds, pe, n, n)
    assert r["cells"] == 2 and r["dp"] == pytest.approx(0.02)
    assert r["z"] == pytest.approx(0.02 / (0.51 * 0.49 * 2 / n) ** 0.5)
    assert r["z_se"] == pytest.approx(0.02 / (0.005 * 2 ** 0.5))  # the peer writes no error: distsim's, twice
    # a rare state one distsim trajectory visited for 1/1000 of a window: its error is its probability, so
    # the error-based z is huge for a difference the bound calls noise (issue 31's "z 231" on metastasis)
    ds = _csv(tmp_path / "ds2.csv", {0.0: {"A": (1 - 1e-7, 1e-7), "B": (1e-7, 1e-7)}})
    pe = _csv(tmp_path / "pe2.csv", {0.0: {"A": (1 - 3e-5, 0.0), "B": (3e-5, 0.0)}})
    r = peer.compare(ds, pe, n, n)
    assert r["z_se"] > 100 and r["z"] < 1 < r["crit"]
    assert r["worst_z_se"]["state"] in ("A", "B")


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


def test_process_phases(tmp_path):
    spec = importlib.util.spec_from_file_location("maboss_process", ROOT / "benchmarks" / "maboss_process.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows, wall = mod.phases(["maboss", str(DATA / "toggle_internal.bnd"), "-n", "200", "--max-time", "2", "--cpu",
                             "-q", "--csv", str(tmp_path / "t")])
    names = [r[0] for r in rows]
    for want in ("import distsim.maboss", "distsim.cli.main", "read .bnd/.cfg", "build the Dataset", "write the CSV",
                 "exit"):
        assert any(want in n for n in names), (want, names)
    assert not any("start the Dask cluster" in n for n in names)  # one device: in this process
    top = [w for n, w, _ in rows if not n.startswith("  ")]
    assert all(w >= 0 for w in top) and sum(top) == pytest.approx(wall, rel=1e-6)
    assert (tmp_path / "t_probtraj.csv").exists() and (tmp_path / "t_fp.csv").exists()


def test_reference_script_row(tmp_path):
    pytest.importorskip("cmaboss")
    spec = importlib.util.spec_from_file_location("maboss_reference", ROOT / "benchmarks" / "maboss_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    row = mod.run(DATA / "absorbing.bnd", DATA / "absorbing.cfg", 4000, 1, 5, tmp_path).strip("| ").split(" | ")
    assert row[0] == "absorbing" and len(row) == 12
    z, bound = float(row[6].split()[0]), float(row[8])
    assert 0 < z < bound and 0.9 < float(row[9]) < 1.1  # the same error estimate on both sides
    for cell in row[10:]:
        zf, bf = float(cell.split()[0]), float(cell.split(" / ")[1])
        assert zf < bf


def test_gpu_emulation_agrees_with_distsim():
    spec = importlib.util.spec_from_file_location("maboss_gpu_emulate", ROOT / "benchmarks" / "maboss_gpu_emulate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from scipy import stats

    n = 4000
    e = mod.emulate(DATA / "absorbing.bnd", DATA / "absorbing.cfg", n, seed=3)
    assert e["refills"] == 0  # a few transitions per trajectory: the 100-record buffer never fills
    ds = maboss(DATA / "absorbing.bnd", trajectories=n, seed=3, backend="cpu", progress=False)
    a = {lab: e["p"][:, k] for k, lab in enumerate(e["labels"]) if e["p"][:, k].any()}
    b = {peer._label(str(s)): ds.probability.values[:, j] for j, s in enumerate(ds.state.values)}
    assert set(a) <= set(b) | {"<nil>"}
    z, dp, _, _ = mod.max_z(a, n, b, n)
    cells = sum(len(v) for v in b.values())
    assert 0 < z < stats.norm.isf(1e-4 / (2 * cells)) and dp < 0.1


@pytest.mark.parametrize("p, n, tick", [(0.3, 20000, 0.1), (0.9, 50000, 0.1), (0.7, 30000, 0.2), (0.5, 40000, 0.5)])
def test_float32_bias_is_the_sequential_float32_sum(p, n, tick):
    import numpy as np

    s, x = np.float32(0.0), np.float32(tick)
    for _ in range(int(round(p * n))):
        s = np.float32(s + x)
    assert peer.float32_bias(p, n, tick) == pytest.approx(float(s / (np.float32(n) * x)) - p, abs=1e-6)


def test_float32_bias_of_a_tenth_at_a_million():
    # issue 31's Montagud run: time_tick 0.1, 1e6 trajectories; a binary fraction adds exactly
    assert peer.float32_bias(0.5, 10**6, 0.1) == pytest.approx(0.00177, abs=2e-5)
    assert peer.float32_bias(0.8, 10**6, 0.1) == pytest.approx(0.00646, abs=2e-5)
    assert peer.float32_bias(0.8, 10**6, 0.5) == pytest.approx(0.0, abs=1e-7)  # the last float32 division only
