"""Batched PBN sweeps (distsim.pbn.batch): the points of a chunk run together and give exactly the
numbers of one steady_state / simulate call per point (CPU here; tests/gpu/test_pbn_gpu.py runs the
shared-kernel GPU path against the same per-point calls)."""

from dataclasses import replace

import numpy as np
import pytest

import distsim
from distsim.models.formats import load
from distsim.models.pbn import random_pbn
from distsim.pbn import batch, simulate, steady_state
from distsim.sweep.adapters import PBN_SIMULATE, PBN_STEADY_STATE, _pbn_apply

FAURE = "examples/pbn/bbm023_faure2006_mammalian_cell_cycle_10n.bnet"
SS_ATTRS = ("chains", "chain_length", "steps_simulated", "rounds", "converged", "note", "nodes_simulated",
            "nodes_removed", "perturbation", "seed")


def _same_steady(a, b):
    for v in a.data_vars:
        assert np.array_equal(a[v].values, b[v].values, equal_nan=True), v
    for k in SS_ATTRS:
        assert a.attrs[k] == b.attrs[k], k


def test_knockouts_classify_point_networks():
    net = load(FAURE).with_perturbation(0.01)
    i = net.index("v_Rb")
    assert batch.knockouts(net, net.with_perturbation(0.05), "sync") == {}
    assert batch.knockouts(net, net.with_fixed({"v_Rb": 1}), "sync") == {i: 1}
    pbn = random_pbn(12, seed=3, multi_fraction=0.5, perturbation=0.01)
    multi = next(k for k in range(pbn.n) if len(pbn.predictors[k]) > 1)
    single = next(k for k in range(pbn.n) if len(pbn.predictors[k]) == 1)
    assert batch.knockouts(pbn, pbn.with_fixed({multi: 0}), "sync") is None  # shifts the step words
    assert batch.knockouts(pbn, pbn.with_fixed({multi: 0}), "async") == {multi: 0}
    assert batch.knockouts(pbn, pbn.with_fixed({single: 1}), "sync") == {single: 1}
    assert batch.knockouts(pbn, pbn.with_selection(pbn.nodes[multi], 0, 0.9), "sync") is None
    dep = random_pbn(10, seed=4, multi_fraction=0.5, perturbation=0.01, contexts=3)
    assert batch.knockouts(dep, dep.with_perturbation(0.02), "sync") == {}
    assert batch.knockouts(dep, dep.with_fixed({0: 1}), "sync") is None  # contexts merge


def _points_and_nets(net, points):
    return [_pbn_apply(net, p)[0] for p in points]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_batched_steady_states_equal_one_call_per_point(mode):
    net = load(FAURE).with_perturbation(0.01)
    points = [{"p": 0.01}, {"p": 0.03}, {"fix.v_Rb": 0}, {"fix.v_CycA": 0},  # CycA: CycD is no ancestor then
              {"fix.v_p27": 1, "p": 0.02}, {"fix.v_CycE": 0}]  # CycE: a target node itself
    nets = _points_and_nets(net, points)
    seeds = [11, 12, 13, 14, 15, 16]
    kw = dict(target=["v_CycE=1", "v_Rb=0,v_p27=1"], precision=5e-3, chains=512, mode=mode)
    got = batch.steady_states(net, nets, seeds, "cpu", **kw)
    assert got is not None and len(got) == len(points)
    for g, m, s in zip(got, nets, seeds):
        ref = steady_state(m, seed=s, backend="cpu", **kw)
        _same_steady(g, ref)
    assert len({g.attrs["chain_length"] for g in got}) > 1  # the points stopped at different rounds
    # the point's own reduction is reported (9 nodes), the batch simulated all 10: the same answer
    assert got[3].attrs["nodes_simulated"] == 9 and got[0].attrs["nodes_simulated"] == 10


def test_batched_steady_states_of_a_pbn_with_several_functions_per_node():
    net = random_pbn(16, seed=21, multi_fraction=0.5, perturbation=0.02)
    single = [net.nodes[k] for k in range(net.n) if len(net.predictors[k]) == 1][:2]
    points = [{"p": 0.02}, {"p": 0.05}] + [{f"fix.{x}": 1} for x in single]
    nets = _points_and_nets(net, points)
    kw = dict(target="x0=1", precision=1e-2, chains=256, mode="sync", max_steps=2e6)
    got = batch.steady_states(net, nets, [1, 2, 3, 4], "cpu", **kw)
    assert got is not None
    for g, m, s in zip(got, nets, [1, 2, 3, 4]):
        _same_steady(g, steady_state(m, seed=s, backend="cpu", **kw))


def test_unbatchable_chunks_say_so():
    net = random_pbn(12, seed=3, multi_fraction=0.5, perturbation=0.01)
    multi = next(net.nodes[k] for k in range(net.n) if len(net.predictors[k]) > 1)
    nets = _points_and_nets(net, [{f"select.{multi}.0": 0.7}])
    assert batch.steady_states(net, nets, [1], "cpu", target="x0=1", precision=1e-2, chains=256) is None
    assert batch.steady_states(net, [net], [1], "cpu", target="x0=1", plot="x.png") is None
    assert batch.simulations(net, nets, [1], "cpu", steps=10, trajectories=64) is None


def test_batched_simulations_equal_one_call_per_point():
    net = load(FAURE).with_perturbation(0.02)
    points = [{"p": 0.02}, {"fix.v_Rb": 1}, {"fix.v_CycD": 0, "p": 0.05}]
    nets = _points_and_nets(net, points)
    kw = dict(steps=300, trajectories=700, targets=["v_CycE=1", "v_Rb=0"], keep_states=True)
    got = batch.simulations(net, nets, [5, 6, 7], "cpu", **kw)
    for g, m, s in zip(got, nets, [5, 6, 7]):
        ref = simulate(m, seed=s, backend="cpu", **kw)
        for v in ref.data_vars:
            assert np.array_equal(g[v].values, ref[v].values), v
        assert g.attrs["steps_simulated"] == ref.attrs["steps_simulated"]


@pytest.mark.parametrize("adapter, kw", [
    (PBN_STEADY_STATE, dict(target="v_CycE=1", precision=5e-3, chains=512)),
    (PBN_SIMULATE, dict(steps=200, trajectories=300, targets="v_CycE=1")),
])
def test_sweep_batched_by_default_equals_the_point_loop(adapter, kw):
    net = load(FAURE).with_perturbation(0.01)
    points = {"p": [0.01, 0.04], "fix.v_Rb": [None, 0, 1]}
    fast = distsim.sweep(adapter, net, points, seed=3, backend="cpu", chunk_size=6, **kw)
    loop = distsim.sweep(replace(adapter, run_chunk=None), net, points, seed=3, backend="cpu", **kw)
    assert adapter.run_chunk is not None and fast.attrs["tasks"] == 1  # the six points in one batch
    for v in loop.data_vars:
        if v != "wall_time_s":
            assert np.array_equal(fast[v].values, loop[v].values, equal_nan=True), v
