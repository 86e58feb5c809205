"""The run lifecycle (engine.Run), stateful shards with replay, progress reports, deterministic
errors that are never retried, and concurrent runs on one client."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import distsim
import distsim.pbn as pbn
import distsim.ssa as ssa
from distsim import engine
from distsim.engine import DaskExecutor, LocalExecutor, registry
from distsim.engine.faults import RecordAttempts
from distsim.engine.failures import TaskError
from distsim.errors import ModelError

ROOT = Path(__file__).resolve().parents[2]
MM = ROOT / "examples" / "ssa" / "michaelis_menten.rxn"
BD = ROOT / "examples" / "ssa" / "birth_death.rxn"
FAURE = ROOT / "examples" / "pbn" / "bbm023_faure2006_mammalian_cell_cycle_10n.bnet"
SHMULEVICH = ROOT / "examples" / "pbn" / "bnmpy_shmulevich2002_examplePBN_3n.txt"


# ------------------------------------------------------------------------------------- stateful shards

class Summer(engine.ShardKind):
    """A toy stateful shard: its state is a running sum (from the setup) of its steps."""

    def build(self, ctx, setup):
        return {"sum": setup}

    def advance(self, ctx, state, step):
        state["sum"] += step
        return state["sum"]


class Forgetful(LocalExecutor):
    """Loses shard 1's cached state before the given rounds (as if its worker had died)."""

    def __init__(self, lose: set[int]):
        super().__init__("cpu")
        self.lose = lose
        self.rounds: list[int] = []

    def run_round(self, fn, run_id, round_no, payloads):
        self.rounds.append(round_no)
        if round_no in self.lose:
            registry.put(run_id, 1, None, "Summer")
        return super().run_round(fn, run_id, round_no, payloads)


def _sums(executor, steps):
    with engine.Run("toy", executor) as run:
        shards = run.stateful(Summer(), [10, 20, 30])
        out = [shards.advance([s, 2 * s, 3 * s]) for s in steps]
        run_id = run.run_id
    assert registry.get(run_id, 0, "Summer") is None, "the run's cached state was not released"
    return out, run


def test_lost_state_is_rebuilt_from_the_clients_log():
    steps = [1, 2, 3, 4, 5]
    ref, _ = _sums(LocalExecutor("cpu"), steps)
    forgetful = Forgetful({2, 4})
    out, run = _sums(forgetful, steps)
    assert out == ref
    assert ref[-1] == [10 + 15, 20 + 30, 30 + 45]
    # rounds 2 and 4 answered Missing for shard 1 and were redone with the shard's history
    assert forgetful.rounds == [0, 1, 2, engine.run.REBUILD + 2, 3, 4, engine.run.REBUILD + 4]
    assert run.rounds == 5


def test_missing_state_without_history_says_so():
    ctx = engine.ShardContext("toy-missing", 0, 3, "cpu")
    assert isinstance(engine.run_state_task(ctx, engine.StateTask(Summer(), 1, 5, index=3)), engine.Missing)
    rebuilt = engine.run_state_task(ctx, engine.StateTask(Summer(), 1, 5, index=3, history=(1, 1, 1)))
    registry.release("toy-missing")
    assert rebuilt == 1 + 3 + 5


def test_run_releases_on_error():
    with pytest.raises(ZeroDivisionError):
        with engine.Run("toy", LocalExecutor("cpu")) as run:
            run.stateful(Summer(), [1]).advance([1])
            1 / 0
    assert registry.get(run.run_id, 0, "Summer") is None


def test_pbn_rounds_do_not_change_the_result(monkeypatch):
    """pbn.simulate advances in rounds (for progress): any round sizes give the same counts."""
    sim = importlib.import_module("distsim.pbn.simulate")  # the module (distsim.pbn.simulate is the function)
    net = pbn.load(FAURE, perturbation=0.01)
    kw = dict(steps=300, trajectories=500, seed=5, targets=["v_CycE=1", "v_Rb=0"], client=LocalExecutor("cpu"))
    monkeypatch.setattr(sim, "FIRST_ROUND_STEPS", 10**6)
    one = pbn.simulate(net, **kw)
    monkeypatch.setattr(sim, "FIRST_ROUND_STEPS", 7)
    monkeypatch.setattr(sim, "ROUND_SECONDS", 1e-4)
    many = pbn.simulate(net, **kw)
    assert one.attrs["rounds"] == 1 and many.attrs["rounds"] > 3
    for v in one.data_vars:
        assert np.array_equal(one[v].values, many[v].values), v


def test_ssa_waves_do_not_change_the_result(monkeypatch):
    sim = importlib.import_module("distsim.ssa.simulate")
    kw = dict(t_end=5.0, points=4, realizations=2000, seed=3, client=LocalExecutor("cpu"))
    monkeypatch.setattr(sim, "WAVE_MIN", 64)
    n = sim.WAVES
    waves = ssa.simulate(BD, **kw)
    monkeypatch.setattr(sim, "WAVES", 1)
    one = ssa.simulate(BD, **kw)
    assert waves.attrs["shards"] == n > 1 and one.attrs["shards"] == 1
    for v in one.data_vars:
        assert np.array_equal(one[v].values, waves[v].values), v


# ------------------------------------------------------------------------------------------- progress

def test_progress_shows_percent_and_eta(capsys):
    ssa.simulate(BD, t_end=5.0, points=4, realizations=300, seed=1, client=LocalExecutor("cpu"), progress=True)
    err = capsys.readouterr().err
    assert "[ssa simulate] 300 realizations" in err
    assert "100%" in err and "300/300" in err and "<" in err  # tqdm: percent, count, elapsed<remaining


def test_progress_is_quiet_unless_asked(capsys):
    ssa.simulate(BD, t_end=5.0, points=4, realizations=100, seed=1, client=LocalExecutor("cpu"))  # not a TTY
    ssa.simulate(BD, t_end=5.0, points=4, realizations=100, seed=1, client=LocalExecutor("cpu"), progress=False)
    assert capsys.readouterr().err == ""


def test_steady_state_reports_every_round(capsys):
    ds = pbn.steady_state(pbn.load(SHMULEVICH, perturbation=0.01), "x1=1", precision=0.01, chains=256, seed=2,
                          client=LocalExecutor("cpu"), progress=True)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "Gelman-Rubin:" in ln or "two-state:" in ln]
    lengths = [int(ln.split("length ")[1].split(",")[0]) for ln in lines]  # a line per look at the chains
    assert list(dict.fromkeys(lengths)) == list(ds.history_length.values)  # an entry per chain length
    assert ds.sizes["round"] == ds.attrs["rounds"]


# ----------------------------------------------------------------------------------- errors on workers

def test_task_error_rebuilds_the_same_exception():
    err = ModelError("unknown species 'Q'", file="m.rxn", line=3)
    again = TaskError.of(err).error()
    assert type(again) is ModelError and str(again) == str(err) == "m.rxn:3: unknown species 'Q'"
    assert (again.file, again.line, again.message) == ("m.rxn", 3, "unknown species 'Q'")
    assert str(TaskError.of(KeyError("k1")).error()) == "'k1'"


def test_validation_error_on_a_worker_fails_once(dask_client, tmp_path, monkeypatch):
    """A bad value that only the analysis on the worker rejects: one attempt per task, no retry, the
    same one-line error at the client, and no worker traceback in the logs. (The sweep now checks
    options on the client first, ``Adapter.validate``; it is switched off here so the workers see it.)"""
    from distsim.sweep import adapters

    monkeypatch.setitem(adapters.ADAPTERS, "ssa.simulate",
                        dataclasses.replace(adapters.ADAPTERS["ssa.simulate"], validate=None))
    attempts = tmp_path / "attempts"
    attempts.mkdir()
    ex = DaskExecutor(dask_client, "cpu", retries=3, wrap=functools.partial(RecordAttempts, folder=str(attempts)))
    t0 = time.perf_counter()
    with pytest.raises(ValueError) as info:
        distsim.sweep(ssa.simulate, ssa.load(MM), {"k1": [1e-3, 3e-3]}, seed=1, client=ex, chunk_size=1,
                      t_end=5.0, points=1, realizations=64)
    assert str(info.value) == "points must be an integer >= 2, got 1"
    assert type(info.value) is ValueError
    assert time.perf_counter() - t0 < 30
    names = os.listdir(attempts)
    per_task: dict[str, int] = {}
    for name in names:
        task = name.rsplit("-", 2)[0]
        per_task[task] = per_task.get(task, 0) + 1
    assert names and all(n == 1 for n in per_task.values()), per_task
    logs = dask_client.get_worker_logs()
    assert not any("points must be an integer" in msg for entries in logs.values() for _, msg in entries)


def test_a_thousand_concurrent_calls_on_one_client():
    """Placement never depends on the client's scheduler-info cache (issue 21): 1,000 concurrent small
    simulations from threads on one client, zero failures."""
    from distributed import Client, LocalCluster

    net = ssa.load(BD)
    ref = ssa.simulate(net, t_end=1.0, points=2, realizations=64, quantiles=None, seed=0, client=LocalExecutor("cpu"))
    errors: list[BaseException] = []
    lock = threading.Lock()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        def call(i: int) -> None:
            try:
                ds = ssa.simulate(net, t_end=1.0, points=2, realizations=64, quantiles=None, seed=i % 4,
                                  client=client, backend="cpu", progress=False)
                if i % 4 == 0:
                    assert np.array_equal(ds["mean"].values, ref["mean"].values)
            except BaseException as e:  # noqa: BLE001 - every failure is counted
                with lock:
                    errors.append(e)

        with ThreadPoolExecutor(max_workers=32) as pool:
            list(pool.map(call, range(1000)))
    assert not errors, f"{len(errors)} of 1000 calls failed, first: {errors[0]!r}"


def _echo(ctx: engine.ShardContext, payload: int) -> int:
    return payload


def test_a_round_is_submitted_before_the_last_one_is_released(dask_client):
    """The client sends at most one batch of messages to the scheduler per 10 ms: releasing a round's
    futures just before the next submit held that submit back (issue 33). A run's last round is
    released only after its next round is submitted, and at the run's release."""
    ex = DaskExecutor(dask_client, "cpu")
    sent: list[tuple[str, set[str]]] = []
    original = dask_client._send_to_scheduler

    def spy(msg: dict) -> None:
        keys = msg.get("keys") or ()
        sent.append((msg.get("op"), {str(k) for k in keys}))
        original(msg)

    dask_client._send_to_scheduler = spy
    try:
        run_id = engine.executor.new_run_id("order")
        for r in range(3):
            assert [x for x, _ in ex.run_round(_echo, run_id, r, [r, r + 10])] == [r, r + 10]
        ex.release(run_id, cached=False)
        deadline = time.monotonic() + 10
        last = {f"distsim-{run_id}-s{s}-r2" for s in range(2)}
        while not any(op == "client-releases-keys" and keys & last for op, keys in sent) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        dask_client._send_to_scheduler = original

    def first(op: str, r: int) -> int:
        keys = {f"distsim-{run_id}-s{s}-r{r}" for s in range(2)}
        return next(i for i, (o, k) in enumerate(sent) if o == op and k & keys)

    for r in range(2):
        assert first("update-graph", r + 1) < first("client-releases-keys", r)
    assert first("client-releases-keys", 2) > first("update-graph", 2)  # released at the run's release
