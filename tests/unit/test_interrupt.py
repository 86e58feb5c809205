"""Issue 29, stops that stop in process: long CPU kernel calls of SSA and PBN run in bounded slices
(Ctrl-C, the time limit and a cancelled task are seen between them) and give the bits of one uncut
call; PBN steady states and GRN searches stop within about a slice of their time limit."""

from __future__ import annotations

import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import distsim.grn as grn
import distsim.pbn as pbn
import distsim.ssa as ssa
from distsim.engine import LocalExecutor, ShardContext, Slices, slices
from distsim.pbn import cpu as pbn_cpu
from distsim.pbn import shard as pbn_shard
from distsim.pbn.compile import compile_pbn
from distsim.pbn.inputs import check_mode, initial_state, parse_targets
from distsim.ssa import cpu as ssa_cpu
from test_ssa_time_dependent import sine_birth  # a birth process with rate a + b sin(w t)

ROOT = Path(__file__).resolve().parents[2]
CPU = LocalExecutor("cpu")
GRACE_S = 5.0  # a time limit is honoured within this long
FAURE = ROOT / "examples" / "pbn" / "bbm023_faure2006_mammalian_cell_cycle_10n.bnet"


@pytest.fixture
def uncut(monkeypatch):
    """Slices as large as the work: one kernel call."""
    def set_uncut():
        monkeypatch.setattr(slices, "SLICE_SECONDS", 1e12)
        monkeypatch.setattr(slices, "GROWTH", 2**62)

    def set_tiny():
        monkeypatch.setattr(slices, "SLICE_SECONDS", 0.0)  # every slice after the first: one unit (align)
        monkeypatch.setattr(slices, "GROWTH", 8)
    return set_uncut, set_tiny


def _counted(monkeypatch, module, name: str) -> list:
    calls: list = []
    real = getattr(module, name)

    def counted(*args, **kw):
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_slices_cover_the_work_in_order():
    seen = []
    s = Slices(1000, first=3, seconds=0.0, align=4)
    for lo, hi in s:
        seen.append((lo, hi))
    assert seen[0] == (0, 3) and all(b[0] == a[1] for a, b in zip(seen, seen[1:])) and seen[-1][1] == 1000
    assert all(hi - lo == 4 for lo, hi in seen[1:-1]) and s.done == 1000 and s.stopped is None
    s = Slices(10**9, first=1, time_left=0.05)
    for lo, hi in s:
        time.sleep(0.03)
    assert s.stopped == "time_limit" and 0 < s.done < 10**9


SSA_MODELS = {  # a network of each realization loop: plain, with SBML rules, hybrid (time in a kinetic law)
    "plain": ("_simulate", lambda: ssa.load(ROOT / "examples" / "ssa" / "michaelis_menten.rxn")),
    "rules": ("_simulate_events", lambda: ssa.load(ROOT / "tests" / "data" / "dsmts" / "00019" / "00019-sbml-l3v1.xml")),
    "hybrid": ("_simulate_hybrid", sine_birth),
}


@pytest.mark.parametrize("loop", list(SSA_MODELS))
def test_ssa_slices_give_the_same_bits(loop, uncut, monkeypatch):
    set_uncut, set_tiny = uncut
    kernel, make = SSA_MODELS[loop]
    net = make()
    kw = dict(t_end=5, points=6, realizations=300, seed=7, keep_final=True, client=CPU)
    set_uncut()
    whole = ssa.simulate(net, **kw)
    calls = _counted(monkeypatch, ssa_cpu, kernel)
    set_tiny()
    cut = ssa.simulate(net, **kw)
    assert len(calls) > 100  # the pilot and the ensemble, realization by realization
    assert set(whole.data_vars) == set(cut.data_vars)
    for v in whole.data_vars:
        np.testing.assert_array_equal(whole[v].values, cut[v].values)


def test_pbn_simulate_slices_give_the_same_bits(uncut, monkeypatch):
    set_uncut, set_tiny = uncut
    net = pbn.load(FAURE, perturbation=0.01)
    kw = dict(steps=300, trajectories=200, seed=3, targets=["v_CycE=1"], client=CPU)
    set_uncut()
    whole = pbn.simulate(net, **kw)
    calls = _counted(monkeypatch, pbn_cpu, "advance_sliced")
    set_tiny()
    cut = pbn.simulate(net, **kw)
    assert len(calls) > 250  # step by step
    for v in whole.data_vars:
        np.testing.assert_array_equal(whole[v].values, cut[v].values)


def test_pbn_steady_state_slices_give_the_same_bits(uncut, monkeypatch):
    set_uncut, set_tiny = uncut
    net = pbn.load(FAURE, perturbation=0.01)
    kw = dict(precision=3e-2, chains=128, seed=5, client=CPU)
    set_uncut()
    whole = pbn.steady_state(net, ["v_CycE=1", "v_Rb=0"], **kw)
    calls = _counted(monkeypatch, pbn_cpu, "advance_sliced")
    set_tiny()
    cut = pbn.steady_state(net, ["v_CycE=1", "v_Rb=0"], **kw)
    assert len(calls) > whole.attrs["chain_length"] // 2  # a first slice of 8 steps per segment, then step by step
    for v in whole.data_vars:
        np.testing.assert_array_equal(whole[v].values, cut[v].values)
    assert whole.attrs["chain_length"] == cut.attrs["chain_length"]


def test_pbn_block_stops_at_its_time_limit():
    """A CPU block asked for 10^9 steps with 0.3 s left stops between slices, says where, and its
    state there is that of a block asked for exactly those steps."""
    net = pbn.load(FAURE, perturbation=0.01)
    c = compile_pbn(net)
    fix_mask, fix_val = initial_state("random", net)
    tgts = tuple(parse_targets("v_CycE=1", net))
    ctx = ShardContext("interrupt", 0, 0, "cpu")
    b = pbn_shard.Block(c, check_mode("sync"), tgts, 9, 0, 1000, fix_mask, fix_val, 0, (0, 10**9), time_left=0.3)
    state = pbn_shard.CHAINS.build(ctx, b)
    t0 = time.perf_counter()
    out = pbn_shard.CHAINS.advance(ctx, state, b)
    assert time.perf_counter() - t0 < 0.3 + GRACE_S
    assert out == {"cut": True, "step": state.step} and 0 < state.step < 10**9
    again = pbn_shard.CHAINS.build(ctx, b)
    pbn_shard.CHAINS.advance(ctx, again, replace(b, segments=(0, state.step), time_left=None))
    np.testing.assert_array_equal(state.S, again.S)


def test_pbn_steady_state_time_limit_inside_a_round():
    """A precision needing ~1e10 steps: the run stops within a slice of its limit (inside a round,
    or between two); the answer is that of the rounds that ended, flagged as not converged."""
    net = pbn.load(FAURE, perturbation=0.01)
    pbn.steady_state(net, "v_CycE=1", precision=1e-2, chains=256, seed=1, client=CPU)  # kernels compiled
    t0 = time.perf_counter()
    ds = pbn.steady_state(net, "v_CycE=1", precision=1e-5, chains=2**16, max_length=2**40, seed=1, time_limit=2.0,
                          client=CPU)
    assert time.perf_counter() - t0 < 2.0 + GRACE_S
    assert ds.attrs["converged"] == 0 and "time_limit=2 s reached" in ds.attrs["note"]
    assert np.isnan(ds.half_width.values).all() and 0 <= float(ds.probability[0]) <= 1


def test_grn_time_limit_inside_a_round():
    """One shard runs 64 generations a round; the limit stops it between generations."""
    problem = ROOT / "examples" / "grn" / "mouse_eye.toml"
    grn.infer(problem, model="island", islands=2, population=64, generations=2, seed=1, client=CPU)  # compiled
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = grn.infer(problem, model="island", islands=8, population=4096, generations=10**6, round_generations=10**6,
                       target_fitness=0.0, seed=1, time_limit=1.0, client=CPU)
    elapsed = time.perf_counter() - t0
    assert ds.attrs["stop_reason"] == "time_limit" and elapsed < 1.0 + GRACE_S, (ds.attrs["stop_reason"], elapsed)
    assert ds.attrs["generations"] < 10**6 and ds.best_fitness.shape[1] == ds.attrs["generations"] + 1
