"""Progress reports: outside a terminal, plain lines on a timer (also during one long round) and none
for a short automatic run; one report per run whose percentage never falls back; an ETA from the
average rate since the start."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import distsim.engine.progress as progress
from distsim import pbn
from distsim.engine.executor import LocalExecutor
from distsim.engine.progress import Progress

SHMULEVICH = Path(__file__).resolve().parents[2] / "examples" / "pbn" / "bnmpy_shmulevich2002_examplePBN_3n.txt"


@pytest.fixture
def fast_lines(monkeypatch):
    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 0.05)
    monkeypatch.setattr(progress, "interactive", lambda: False)


def test_lines_on_a_timer_during_a_long_round(fast_lines, capsys):
    p = Progress(None, "job")  # automatic: quiet at first, then lines
    p.start("10 blocks on 2 workers", total=10, unit="block")
    p.log("round 1")
    time.sleep(0.3)  # one long round: no update arrives, the timer reports anyway
    p.add(5)
    p.update(message="half way")
    time.sleep(0.2)
    p.add(5)
    p.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "[job] 10 blocks on 2 workers"  # the header, printed when lines start
    assert "round 1" not in "".join(lines)  # logged while still quiet
    assert sum(ln.startswith("[job]   0% 0/10 block [") for ln in lines) >= 2
    assert any(ln.startswith("[job]  50% 5/10 block [") and ln.endswith(", half way]") for ln in lines)
    assert lines[-1].startswith("[job] 100% 10/10 block [")
    assert not any("\r" in ln for ln in lines)


def test_a_short_automatic_run_prints_nothing(monkeypatch, capsys):
    monkeypatch.setattr(progress, "interactive", lambda: False)
    p = Progress(None, "job")
    p.start("quick", total=3)
    p.log("a round")
    p.add(3)
    p.close()
    assert capsys.readouterr().err == ""


def test_eta_is_the_average_rate_since_the_start(fast_lines, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(progress, "_now", lambda: clock[0])
    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 3600)
    p = Progress(True, "job")
    p.start("go", total=1000, unit="step")
    clock[0] += 10
    p.update(250)  # 25 steps/s on average: 750 left take 30 s
    assert p._bar._line() == "[job]  25% 250/1000 step [00:10<00:30, 25.00step/s]"  # noqa: SLF001
    p.update(250, total=500)  # a better estimate of the total
    assert p._bar._line().startswith("[job]  50% 250/500 step [00:10<00:10,")  # noqa: SLF001
    p.close()


def test_steady_state_percentage_never_falls_back(monkeypatch, capsys):
    """One report per run: no total while Gelman-Rubin doubles the chains (it used to read 100%, then
    50%), then the two-state sample size's."""
    seen: list[tuple[float, float | None]] = []
    starts = []
    update, start = Progress.update, Progress.start

    def spy_update(self, done=None, *, total=None, message=None):
        update(self, done, total=total, message=message)
        seen.append((self._bar.n, self._bar.total))

    def spy_start(self, *a, **k):
        starts.append(a)
        start(self, *a, **k)

    monkeypatch.setattr(Progress, "update", spy_update)
    monkeypatch.setattr(Progress, "start", spy_start)
    ds = pbn.steady_state(pbn.load(SHMULEVICH, perturbation=0.01), "x1=1", precision=0.003, chains=256, seed=2,
                          client=LocalExecutor("cpu"), progress=True)
    assert len(starts) == 1
    fractions = [n / total for n, total in seen if total]
    assert fractions and fractions[-1] == 1.0
    assert all(b >= a for a, b in zip(fractions, fractions[1:])), seen
    first_total = next(i for i, (_, t) in enumerate(seen) if t)
    assert all(t for _, t in seen[first_total:])  # once known, the total stays
    assert int(ds.history_length.values[-1]) == seen[-1][0]
