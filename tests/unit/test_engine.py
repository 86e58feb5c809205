"""Engine: shards and rounds give the same answer in-process, on 1 and 2 Dask workers, and after a
worker dies mid-run (its shard is recomputed by replaying from step 0)."""

import functools
import numpy as np
import pytest

from distsim import engine
from distsim.engine import registry
from distsim.engine.executor import DaskExecutor, LocalExecutor, ShardContext
from distsim.engine.faults import KillWorkerOnce, SlowShard
from distsim.pbn import load, simulate, steady_state

FAURE = "examples/pbn/bbm023_faure2006_mammalian_cell_cycle_10n.bnet"
SS = dict(target=["v_CycE=1", "v_Rb=0,v_p27=1"], precision=3e-3, seed=11, chains=640)


@pytest.fixture(scope="module")
def net(examples):
    return load(examples / FAURE.split("/")[-1], perturbation=0.01)


def fields(ds):
    return {v: ds[v].values for v in ("probability", "rhat", "burn_in", "sample_size", "alpha", "beta")}


def assert_same(a, b):
    fa, fb = fields(a), fields(b)
    for k in fa:
        assert np.array_equal(fa[k], fb[k]), k
    assert a.attrs["chain_length"] == b.attrs["chain_length"]


@pytest.mark.parametrize("n,k,align", [(0, 3, 1), (10, 3, 1), (1000, 7, 64), (100, 8, 64), (64, 2, 64)])
def test_split_covers_range(n, k, align):
    parts = engine.split(n, k, align)
    assert sum(len(p) for p in parts) == n
    assert all(p.start % align == 0 for p in parts)
    if n:
        assert parts[0].start == 0 and parts[-1].stop == n and all(len(p) for p in parts)
        assert all(a.stop == b.start for a, b in zip(parts, parts[1:]))


@pytest.fixture(scope="module")
def local_result(net):
    return steady_state(net, client=LocalExecutor("cpu"), **SS)


def test_two_workers_equal_in_process(net, dask_client, local_result):
    ex = DaskExecutor(dask_client, "cpu")
    assert ex.n_workers() == 2
    ds = steady_state(net, client=ex, **SS)
    assert_same(ds, local_result)
    assert len(set(ds.attrs["devices"].split(", "))) >= 1


def test_one_worker_equals_two(net, local_result):
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        ds = steady_state(net, client=client, backend="cpu", **SS)
    assert_same(ds, local_result)


def test_worker_killed_mid_run_is_recomputed(net, dask_client, local_result, tmp_path):
    marker = tmp_path / "killed"
    ex = DaskExecutor(dask_client, "cpu", wrap=functools.partial(KillWorkerOnce, marker=str(marker), round=2))
    ds = steady_state(net, client=ex, **SS)
    assert marker.exists(), "the fault was not injected"
    assert_same(ds, local_result)
    dask_client.wait_for_workers(2, timeout=60)


def test_timings_show_a_slow_worker_and_change_nothing(net, dask_client, local_result):
    """Per-task timings in the steady-state attrs: with shard 1 slowed by 0.2 s a round (on 2 CPU
    workers), the round imbalance (slowest task - mean) grows by about 0.1 s a round, shard 1's tasks
    are the slow ones, and the answer is the same."""
    delay = 0.2
    ex = DaskExecutor(dask_client, "cpu", wrap=functools.partial(SlowShard, shard=1, seconds=delay))
    ds = steady_state(net, client=ex, **SS)
    assert_same(ds, local_result)
    a = ds.attrs
    n = [int(x) for x in a["round_tasks"].split(",")]
    secs = np.array([float(x) for x in a["task_seconds"].split(",")]).reshape(len(n), 2)
    assert n == [2] * a["rounds"] and len(set(a["task_workers"].split(","))) == 2
    # (a worker's first task also loads its kernels, so round 0 may be slow on either worker)
    assert (secs[:, 1] >= delay).all() and (secs[1:, 1] > secs[1:, 0]).all()
    assert a["round_imbalance_s"] >= 0.9 * (a["rounds"] - 1) * delay / 2
    walls = [float(x) for x in a["round_wall_s"].split(",")]
    assert all(w >= s for w, s in zip(walls, secs.max(axis=1))) and a["round_overhead_s"] >= 0
    assert 0 <= a["between_rounds_s"] < a["wall_time_s"]


def test_simulate_same_on_cluster_and_in_process(net, dask_client):
    kw = dict(steps=200, trajectories=1000, seed=5, targets="v_CycE=1", keep_states=True)
    a = simulate(net, client=dask_client, backend="cpu", **kw)
    b = simulate(net, client=LocalExecutor("cpu"), **kw)
    for v in ("final_state", "final_frequency", "frequency", "target_frequency", "transitions_01", "transitions_10"):
        assert np.array_equal(a[v].values, b[v].values), v


def test_cache_loss_replays_from_scratch(net):
    """A shard whose cached state is gone replays from step 0 and returns the same counts."""
    from distsim.pbn.compile import compile_pbn
    from distsim.pbn.shard import Block, advance_block

    c = compile_pbn(net)
    zero = (np.zeros(net.n, bool), np.zeros(net.n, np.uint8))
    blk = Block(c, 0, (((0, 1),),), 3, 0, 300, *zero, 0, (0, 100))
    nxt = Block(c, 0, (((0, 1),),), 3, 0, 300, *zero, 100, (100, 250), want_chain=True, want_states=True)
    ctx = ShardContext("replay-test", 0, 0, "cpu")
    advance_block(ctx, blk)
    warm = advance_block(ShardContext("replay-test", 0, 1, "cpu"), nxt)
    registry.release("replay-test")
    cold = advance_block(ShardContext("replay-test", 0, 1, "cpu"), nxt)  # cache gone: replay 0..100
    registry.release("replay-test")
    assert np.array_equal(warm["pooled"], cold["pooled"])
    assert warm["chain_sums"] == cold["chain_sums"]
    assert np.array_equal(warm["states"], cold["states"])


def test_executor_for_defaults():
    assert isinstance(engine.executor_for(None), LocalExecutor)
    ex = LocalExecutor("cpu")
    assert engine.executor_for(ex) is ex


def test_later_rounds_do_not_ask_the_scheduler_for_its_workers(net, dask_client, monkeypatch):
    """Issue 33 (steady state through Dask): a round whose shards all have their worker from an
    earlier round submits at once; the answer is the one of a run that asked every round."""
    calls = []
    real = DaskExecutor._workers

    def counted(self):
        calls.append(1)
        return real(self)

    kw = dict(precision=5e-3, seed=4, chains=512, backend="cpu")
    ref = steady_state(net, "v_CycE=1", client=LocalExecutor("cpu"), **kw)
    monkeypatch.setattr(DaskExecutor, "_workers", counted)
    ds = steady_state(net, "v_CycE=1", client=DaskExecutor(dask_client, "cpu"), **kw)
    assert ds.attrs["rounds"] >= 3
    # split and describe before the rounds, the first round, describe for the provenance: no more
    # (asking every round made it 3 + rounds)
    assert len(calls) == 4
    for v in ("probability", "rhat", "burn_in", "sample_size", "alpha", "beta"):
        assert np.array_equal(ds[v].values, ref[v].values), v


def test_a_default_client_that_is_not_running_is_not_used(monkeypatch):
    """A default client left closing or broken (another test's, a notebook's) is ignored: the run is
    in-process, not a TLS or connection error from a dead cluster."""
    import distributed

    from distsim.engine.executor import LocalExecutor, executor_for

    class Stale:
        status = "closing"

    monkeypatch.setattr(distributed, "default_client", lambda: Stale())
    assert isinstance(executor_for(None, "cpu"), LocalExecutor)


class _Recording(LocalExecutor):
    """In-process, keeping every round's payloads; ``lose``: drop the cached states before those rounds
    (as if the worker had died)."""

    def __init__(self, lose=()):
        super().__init__("cpu")
        self.lose = set(lose)
        self.rounds = []

    def run_round(self, fn, run_id, round_no, payloads, on_done=None):
        self.rounds.append((round_no, list(payloads)))
        if round_no in self.lose:
            registry.release(run_id)
        return super().run_round(fn, run_id, round_no, payloads, on_done)


def test_setup_travels_once(net, local_result):
    """A stateful shard's setup (the compiled PBN) goes with its first task only; later tasks carry the
    step's changed fields and the state's tag: a later round's payload is smaller than the model alone."""
    import pickle

    rec = _Recording()
    ds = steady_state(net, client=rec, **SS)
    assert_same(ds, local_result)
    (r0, first), *later = rec.rounds
    assert r0 == 0 and len(later) == ds.attrs["rounds"] - 1 >= 2
    assert all(t.setup is not None and t.index == 0 for t in first)
    for round_no, tasks in later:
        for t, t0 in zip(tasks, first):
            assert t.tag == t0.kind.tag(t0.setup)
            assert t.setup is None and isinstance(t.step, engine.StepDelta) and t.index == round_no
            assert "compiled" not in t.step.fields and "step_from" in t.step.fields
    model = len(pickle.dumps(first[0].setup.compiled, protocol=5))
    assert max(len(pickle.dumps(tasks, protocol=5)) for _, tasks in later) < model / 4


def test_lost_state_without_setup_is_rebuilt(net, local_result):
    """A task that finds no state (its worker died; here: dropped before round 2) has no setup to
    rebuild it from: it answers Missing, and the client resends it with the setup (a PBN shard then
    replays from step 0): the same answer."""
    rec = _Recording(lose={2})
    ds = steady_state(net, client=rec, **SS)
    assert_same(ds, local_result)
    numbers = [n for n, _ in rec.rounds]
    assert numbers[:4] == [0, 1, 2, engine.run.REBUILD + 2] and numbers.count(engine.run.REBUILD + 2) == 1
    redo = rec.rounds[3][1]
    assert all(t.setup is not None and t.step.step_from > 0 for t in redo)


def test_wire_step_keeps_other_steps_whole():
    from dataclasses import dataclass, replace

    @dataclass(frozen=True)
    class Setup:
        model: tuple
        at: int

    s = Setup(tuple(range(100)), 0)
    assert engine.wire_step(s, replace(s, at=5)) == engine.StepDelta({"at": 5})
    assert engine.wire_step(s, {"at": 5}) == {"at": 5}  # another type: sent as it is
    assert engine.wire_step(s, Setup(tuple(range(100)), 5)).fields.keys() == {"model", "at"}  # an equal copy is sent
