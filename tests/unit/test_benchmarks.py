"""The benchmark scripts' own logic: benchmarks/headline.py (figures, verdicts, its baseline file, a CPU run
that writes a record) and benchmarks/scaling.py's recording executor (it must accept what engine.Run passes)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, mod)
    spec.loader.exec_module(mod)
    return mod


hl = _module("headline")


def test_verdicts_follow_the_noise_band_in_the_better_direction():
    rec = {"value": 100.0}
    assert hl.verdict(95.0, rec, True, 0.10) == (0.95, "ok")
    assert hl.verdict(89.0, rec, True, 0.10) == (0.89, "REGRESSION")
    assert hl.verdict(111.0, rec, True, 0.10) == (1.11, "faster")
    # seconds: lower is better, so 1.2x the recorded time is a regression and 0.8x is faster
    assert hl.verdict(120.0, rec, False, 0.10)[1] == "REGRESSION"
    assert hl.verdict(80.0, rec, False, 0.10)[1] == "faster"
    assert hl.verdict(105.0, rec, False, 0.10)[1] == "ok"
    assert hl.verdict(1.0, None, True, 0.10) == (None, "new")


def test_records_are_found_per_device_and_updated_in_place():
    base = {"noise": 0.1, "records": [
        dict(id="a", device="NVIDIA H200", date="2026-11-21", value=1.0),
        dict(id="a", device="NVIDIA H200", date="2026-11-26", value=2.0),
        dict(id="a", device="NVIDIA H100 80GB HBM3", date="2026-11-27", value=3.0)]}
    assert hl.find_record(base, "a", "NVIDIA H200")["value"] == 2.0
    assert hl.find_record(base, "a", "CPU x86_64 x2") is None
    fig = next(f for f in hl.FIGURES if f.id == "ssa.mm")
    row = dict(figure=fig, device="NVIDIA H200", value=123456.0, command="c")
    new = hl.update_records(base, [row, dict(row, value=None)], "2026-11-28")
    h200 = [r for r in new["records"] if r["device"] == "NVIDIA H200"]
    assert len([r for r in h200 if r["id"] == "ssa.mm"]) == 1 and len(new["records"]) == 4
    assert hl.find_record(new, "ssa.mm", "NVIDIA H200")["value"] == 123500.0  # 4 significant digits
    assert base["records"][0]["value"] == 1.0  # the input is not changed


def test_the_baseline_holds_a_recorded_h200_value_for_every_figure():
    base = json.loads(hl.BASELINE.read_text())
    fields = {"id", "figure", "unit", "higher_is_better", "value", "device", "date", "command", "source"}
    ids = [f.id for f in hl.FIGURES]
    assert len(set(ids)) == len(ids)
    for r in base["records"]:
        assert fields <= set(r), r
        assert r["id"] in ids, r["id"]
        assert r["value"] > 0
        script = r["command"].split()[1]
        assert (ROOT / script).is_file(), script
    for f in hl.FIGURES:
        device = "NVIDIA H200" if f.gpus == 1 else f"{f.gpus} x NVIDIA H200"
        rec = hl.find_record(base, f.id, device)
        assert rec is not None, f.id
        assert (rec["unit"], rec["higher_is_better"]) == (f.unit, f.higher_is_better), f.id
        assert set(f.sizes) <= {"gpu", "cpu"} and "gpu" in f.sizes


def test_a_cpu_run_prints_the_table_and_writes_its_record(tmp_path):
    out = tmp_path / "baseline.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "headline.py"), "--backend", "cpu", "--quick", "--only",
           "pbn.e2e", "--update", "--baseline-out", str(out)]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    h200 = hl.find_record(json.loads(hl.BASELINE.read_text()), "pbn.e2e", "NVIDIA H200")
    assert f"| pbn.e2e: PBN simulate(), Montagud, in-process | steps/s | {hl._fmt(h200['value'])} | NVIDIA H200" in p.stdout
    assert "(other device) |" in p.stdout and "| new |" in p.stdout
    new = json.loads(out.read_text())
    cpu = [r for r in new["records"] if r["id"] == "pbn.e2e" and r["device"].startswith("CPU ")]
    assert len(cpu) == 1 and cpu[0]["value"] > 0
    assert len(new["records"]) == len(json.loads(hl.BASELINE.read_text())["records"]) + 1
    # against that record, the same run is within a (wide, for a shared 2-core VM) noise band
    p2 = subprocess.run(cmd[:-2] + ["--baseline", str(out), "--noise", "0.9"], cwd=ROOT, capture_output=True,
                        text=True, timeout=600)
    assert p2.returncode == 0, p2.stdout + p2.stderr
    assert "| ok |" in p2.stdout


def test_scaling_recording_passes_on_done_through():
    """engine.Run passes on_done to run_round (progress per finished task); scaling.py's Recording
    executor once dropped it: `--workloads ssa` crashed with an unexpected keyword argument."""
    pytest.importorskip("distributed")
    scaling = _module("scaling")
    from distsim.engine import DaskExecutor

    calls = []

    def fake_round(self, fn, run_id, round_no, payloads, on_done=None):
        for s in range(len(payloads)):
            on_done(s)
        return [(p, {"seconds": 0.0, "device": "d", "worker": "w"}) for p in payloads]

    mp = pytest.MonkeyPatch()
    mp.setattr(DaskExecutor, "run_round", fake_round)
    try:
        ex = scaling.Recording(client=None, backend="cpu")
        out = ex.run_round(None, "run", 0, ["a", "b"], on_done=calls.append)
    finally:
        mp.undo()
    assert [r for r, _ in out] == ["a", "b"] and calls == [0, 1] and len(ex.metas) == 2
