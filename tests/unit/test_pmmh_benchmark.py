"""benchmarks/pmmh.py --ess: one timed pmmh.infer on the LV problem, reported with ESS per parameter
(a tiny CPU run: the table's rows and numbers, not the goal)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ess_mode_reports_ess_per_parameter(tmp_path):
    out = tmp_path / "ess.md"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks/pmmh.py"), "--ess", "--backend", "cpu", "--chains",
                        "3", "--particles", "8", "--iterations", "12", "--burn-in", "4", "--out", str(out)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "3 chains x 8 particles, 12 iterations (4 burn-in; stopped by iterations)" in text
    assert re.search(r"\| kept draws \| 24 \|", text)  # 3 chains x (12 - 4) draws
    assert "| adaptation stages end at | 4 |" in text
    for p in ("c1", "c2", "c3"):
        row = re.search(rf"^\| {p} \| ([^|]+) \| ([^|]+) \| (\d+) \| (\d+) \| ([^|]+) \| ([^|]+) \|$", text, re.M)
        assert row and float(row.group(1)) > 0 and int(row.group(3)) > 0 and float(row.group(6)) > 0, text
    ess = float(re.search(r"\| min bulk ESS \| (\d+) \|", text).group(1))
    whole = float(re.search(r"\| whole call \| ([\d.]+) s \|", text).group(1))
    to400 = float(re.search(r"\| time to ESS 400 [^|]*\| ([\d.]+) s \|", text).group(1))
    # both figures are printed to 0.1 s: the wall time within 0.05 s, the time to ESS 400 within 0.05 s
    assert abs(to400 - whole * 400 / ess) <= 0.05 * 400 / ess + 0.05 + 1e-9


def test_scaling_mode_reports_sizes_and_equal_draws(tmp_path):
    """--scaling on 1 and 2 CPU workers (tiny): a row per size, speed-ups, and the same draws on both."""
    out = tmp_path / "scaling.md"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks/pmmh.py"), "--scaling", "--backend", "cpu", "--noise",
                        "lognormal", "--chains", "3", "--particles", "4", "--iterations", "4", "--burn-in", "1", "--out",
                        str(out)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "3 chains x 4 particles (12 per filter step), 4 iterations (1 burn-in), seed 0, lognormal noise" in text
    rows = re.findall(r"^\| (\d) \| (\d+) \| ([\d.]+) s \| ([\d.]+) s \| ([\d.]+) \| ([\d.]+)x \| ([\d.]+)x \| (\w+) \|$",
                      text, re.M)
    assert [(w[0], w[1], w[7]) for w in rows] == [("1", "12", "yes"), ("2", "8", "yes")], text
    assert rows[0][5] == "1.00" and float(rows[1][5]) > 0
    # where the rounds' time went: per size, rounds >= 2 (the check's and the sampling's), and the parts
    # add up: slowest tasks + overhead = the rounds' wall time, to the printed digits (two sums to 0.01 s:
    # 0.005 each, the overhead to 0.001 s: 0.0005) and the attrs' 4 decimals (0.00005 per round, twice)
    parts = re.findall(r"^\| (\d) \| (\d+) \| ([\d.]+) s \| ([\d.]+) s \| ([\d.]+) s \| ([\d.]+) s \| ([\d.]+) ms "
                       r"\| ([\d.]+) s \|$", text, re.M)
    assert [p[0] for p in parts] == ["1", "2"], text
    for p in parts:
        assert int(p[1]) >= 2 and abs(float(p[3]) + float(p[5]) - float(p[2])) <= 0.005 + 0.005 + 0.0005 + 1e-4 * int(p[1]) + 1e-9


def test_rhat_study_table(tmp_path):
    """benchmarks/pmmh_rhat.py (tiny): tau grows with the log-likelihood noise; one R-hat row per length."""
    out = tmp_path / "rhat.md"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks/pmmh_rhat.py"), "--chains", "8", "--kept", "100", "200",
                        "--repeats", "2", "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    tau = {float(m[0]): (float(m[1]), float(m[2])) for m in re.findall(r"^\| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$",
                                                                         text, re.M)}
    assert sorted(tau) == [0.0, 0.125, 0.5, 1.0]
    assert tau[1.0][1] > tau[0.0][1] > 1 and tau[1.0][0] < tau[0.0][0]  # noisier estimates: fewer acceptances
    rows = re.findall(r"^\| (\d+) \| ([\d.]+) s \|((?: [\d.]+ \[[\d.]+, [\d.]+\] \|){4})$", text, re.M)
    assert [(n, t) for n, t, _ in rows] == [("100", "13.4"), ("200", "20.1")], text  # (100 + kept) x 67 ms


def test_parts_mode_reports_what_a_second_device_does_not_halve(tmp_path):
    """--parts (tiny, CPU): a filter step of all chains and of half, its SSA advance, the reweighing alone,
    and the parts not halved = 2 x step(half) - step(all) (and the same of the advance), consistent with the
    printed rows."""
    out = tmp_path / "parts.md"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks/pmmh.py"), "--parts", "--backend", "cpu", "--chains",
                        "4", "--particles", "8", "--repeats", "1", "--out", str(out)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "8 particles per chain, 16 observation times, mean of 1" in text
    rows = {int(m[0]): tuple(map(float, m[1:])) for m in
            re.findall(r"^\| (\d+) \| ([\d.]+) ms \| ([\d.]+) ms \| ([\d.]+) ms \| ([\d.]+) ms \|$", text, re.M)}
    assert sorted(rows) == [2, 4], text
    for step, adv, one, total in rows.values():
        assert step > 0 and 0 < adv <= step + 0.1 and abs(total - 16 * one) <= 16 * 0.005 + 0.05 + 1e-9
    fixed, fixed_adv, rew = map(float, re.search(
        r"\(2 x step\(2\) - step\(4\)\): (-?[\d.]+) ms per iteration, of which the SSA advance \(2 x advance\(2\) - "
        r"advance\(4\)\): (-?[\d.]+) ms and the reweighing \(x 16 intervals at 2 chains\): ([\d.]+) ms", text).groups())
    assert abs(fixed_adv - (2 * rows[2][1] - rows[4][1])) <= 3 * 0.05 + 0.05 + 1e-9
    rows = {g: (v[0], v[2], v[3]) for g, v in rows.items()}
    assert abs(fixed - (2 * rows[2][0] - rows[4][0])) <= 3 * 0.05 + 0.05 + 1e-9 and rew == rows[2][2]
