"""Time-dependent propensities (kinetic laws reading ``time``, sin, cos) in the SSA's hybrid loop
(distsim.ssa.cpu.run_realization_hybrid): exact references.

* a birth process 0 -> A with k(t) = a + b sin(w t): A(t) is Poisson with mean
  Lambda(t) = a t + b (1 - cos(w t)) / w (moments within z = 5 standard errors);
* the integrator itself: the time t2 of the second crossing satisfies Lambda(t2) = E0 + E1, the two
  exponential targets of Philox draws 0 and 1, within the stated tolerance;
* a time-triggered event on top (the hazard integrated so far is kept across the stop);
* piecewise laws: of time (a jump at a known time, where the loop stops) and of the state;
* the SBML reader's sin and piecewise in kinetic laws.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from distsim.backends.dsmath import ds_cos, ds_sin, neglog_u01
from distsim.errors import ModelError
from distsim.models.arith import BinOp, Call, Num, Param, Piecewise, Relation, Species, Time, evaluate
from distsim.models.compile_reactions import compile_network
from distsim.models.events import Assignment, Compare, Event
from distsim.models.formats.sbml import read_sbml_string
from distsim.models.kinetics import event_uniforms
from distsim.models.reactions import Reaction, ReactionNetwork
from distsim.ssa import cpu, gpu_events, simulate
from distsim.ssa.errors import ERR_MAX_EVENTS, SimulationError
from distsim.ssa.methods import METHODS

Z = 5.0  # standard errors allowed for a Monte Carlo moment (two-sided p ~ 6e-7 per check)
A_, B_, W_ = 2.0, 1.5, 3.0


def sine_birth() -> ReactionNetwork:
    law = BinOp("+", Param("a"), BinOp("*", Param("b"), Call("sin", (BinOp("*", Param("w"), Time()),))))
    return ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), law=law, name="birth")],
                                  {"a": A_, "b": B_, "w": W_})


def sine_mean(t):
    return A_ * t + B_ * (1.0 - np.cos(W_ * t)) / W_


def poisson_checks(mean, var, mu, R):
    """Sample mean and variance (n-1) of R Poisson(mu) values, each within Z standard errors."""
    for m, v, u in zip(mean, var, mu):
        assert abs(m - u) <= Z * math.sqrt(max(u, 1e-300) / R), (m, u)
        assert abs(v - u) <= Z * math.sqrt(max(u + 2 * u * u, 1e-300) / R), (v, u)


def targets(seed: int, rid: int, n: int) -> float:
    """E0 + ... + E(n-1): the exponential targets of firings 0 .. n-1 of realization rid."""
    return sum(neglog_u01(event_uniforms(np.uint64(e), np.uint64(seed), np.uint64(rid))[0]) for e in range(n))


def test_ds_sin_cos_match_libm():
    x = np.concatenate([np.linspace(-200.0, 200.0, 20001), [0.0, 1e-300, math.pi, -math.pi / 2, 1e6 + 0.5]])
    for f, ref in ((ds_sin, math.sin), (ds_cos, math.cos)):
        err = max(abs(f(v) - ref(v)) for v in x)
        assert err <= 4e-16, (f, err)
        assert math.isnan(f(math.inf)) and math.isnan(f(math.nan)) and math.isnan(f(2e9))
    assert ds_sin(0.0) == 0.0 and ds_cos(0.0) == 1.0


def test_sine_birth_is_poisson_with_the_integrated_mean():
    R = 4000
    ds = simulate(sine_birth(), t_end=6.0, points=7, realizations=R, seed=5, backend="cpu", quantiles=None)
    t = ds["time"].values
    poisson_checks(ds["mean"].values[:, 0], ds["variance"].values[:, 0], sine_mean(t), R)
    assert int(ds["firings"].values.sum()) == int(round(float(ds["mean"].values[-1, 0]) * R))


def test_integrated_hazard_reaches_the_drawn_targets():
    c = compile_network(sine_birth())
    assert c.events.hybrid and (c.events.hz_of >= 0).tolist() == [True]
    for rid in range(12):
        word, t2, x, _ = cpu.replay(c, METHODS["direct"].cpu, rid, seed=9, grid=np.array([0.0, 1e4]), max_events=1)
        assert word == ERR_MAX_EVENTS and x.tolist() == [1]
        target = targets(9, rid, 2)
        assert abs(sine_mean(t2) - target) <= 1e-8 * (1.0 + target), (rid, t2)


def test_same_realizations_on_any_split():
    c = compile_network(sine_birth())
    kw = dict(method=METHODS["tree"].cpu, seed=3, grid=np.linspace(0.0, 4.0, 5), keep_final=True)
    whole = cpu.simulate_block(c, real0=0, realizations=60, **kw)
    parts = [cpu.simulate_block(c, real0=r0, realizations=n, **kw) for r0, n in ((0, 17), (17, 43))]
    assert np.array_equal(whole["final"], np.concatenate([p["final"] for p in parts]))
    assert np.array_equal(whole["events"], np.concatenate([p["events"] for p in parts]))


def test_time_law_with_a_time_triggered_event():
    """0 -> A at rate a t; at t = 2 an event empties A: A(T) ~ Poisson(a (T^2 - 4) / 2) for T >= 2."""
    a = 1.3
    reset = Event("reset", Compare(">=", Time(), Num(2.0)), (Assignment("A", 0, Num(0.0)),))
    net = ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), law=BinOp("*", Param("a"), Time()))],
                                 {"a": a}, events=[reset])
    R = 4000
    ds = simulate(net, t_end=4.0, points=5, realizations=R, seed=21, backend="cpu", quantiles=None)
    t = ds["time"].values
    mu = np.where(t < 2.0, a * t * t / 2, a * (t * t - 4.0) / 2)
    poisson_checks(ds["mean"].values[:, 0], ds["variance"].values[:, 0], mu, R)


def test_a_law_that_turns_negative_is_an_error_naming_the_reaction():
    net = ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), law=BinOp("-", Num(0.2), Time()),
                                                       name="fading")])
    with pytest.raises(SimulationError, match="propensity of reaction 0 'fading'.*negative"):
        simulate(net, t_end=3.0, points=4, realizations=20, seed=1, backend="cpu", quantiles=None)


def test_gpu_switch_refuses_hybrid_networks_before_running(monkeypatch):
    net = sine_birth()
    gpu_events.check_gpu(net, compile_network(net))  # the hybrid kernel runs them
    monkeypatch.setattr(gpu_events, "GPU_HYBRID", False)
    with pytest.raises(ModelError, match="GPU backend cannot simulate this network yet"):
        gpu_events.check_gpu(net, compile_network(net))
    with pytest.raises(ModelError, match="time-dependent propensities or rate rules"):
        net.require_plain("rate inference")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_hybrid_kernel_source_compiles(tmp_path):
    """kernels/ssa_hybrid.cu as distsim.ssa.gpu_events builds it (its GPU twin: tests/gpu/test_ssa_hybrid_gpu.py)."""
    from distsim.backends import cuda

    f = tmp_path / "k.cu"
    f.write_text(gpu_events.hybrid_source())
    r = subprocess.run([shutil.which("nvcc"), "-std=c++17", "-arch=sm_90", "--ptx", "--fmad=false", "-I",
                        str(cuda.kernels_dir()), "-o", str(tmp_path / "k.ptx"), str(f)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr


# ---- piecewise laws: jumps at known times (the loop stops there) and on the state -----------------

A1, A2, T_SWITCH = 3.0, 0.5, 2.0


def switched() -> ReactionNetwork:
    law = Piecewise(((Param("a1"), Relation("<", (Time(), Num(T_SWITCH)))),), Param("a2"))
    return ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), law=law)], {"a1": A1, "a2": A2})


def switched_mean(t):
    return A1 * np.minimum(t, T_SWITCH) + A2 * np.maximum(t - T_SWITCH, 0.0)


def test_piecewise_of_time_is_poisson_with_the_integrated_mean():
    R = 4000
    ds = simulate(switched(), t_end=4.0, points=9, realizations=R, seed=13, backend="cpu", quantiles=None)
    poisson_checks(ds["mean"].values[:, 0], ds["variance"].values[:, 0], switched_mean(ds["time"].values), R)


def test_piecewise_switch_is_a_stop_and_crossings_are_exact():
    c = compile_network(switched())
    assert len(c.events.tc_op) == 1  # 'time < 2' changes at t = 2: the loop stops there
    for rid in range(12):
        word, t2, _, _ = cpu.replay(c, METHODS["direct"].cpu, rid, seed=9, grid=np.array([0.0, 1e4]), max_events=1)
        target = targets(9, rid, 2)
        assert word == ERR_MAX_EVENTS and abs(switched_mean(t2) - target) <= 1e-8 * (1.0 + target), (rid, t2)


def test_piecewise_of_the_state():
    """Births at rate k while A < 5, then none: A(T) = min(N, 5), N ~ Poisson(k T)."""
    k, T = 1.7, 3.0
    law = Piecewise(((Param("k"), Relation("<", (Species(0), Num(5.0)))),), Num(0.0))
    net = ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), law=law)], {"k": k})
    R = 4000
    ds = simulate(net, t_end=T, points=2, realizations=R, seed=3, backend="cpu", quantiles=None, keep_final=True)
    lam = k * T
    p = np.array([math.exp(-lam) * lam ** n / math.factorial(n) for n in range(5)])
    probs = np.append(p, 1.0 - p.sum())
    counts = np.bincount(ds["final_state"].values[:, 0], minlength=6)
    assert counts.size == 6
    for n in range(6):  # each frequency within Z binomial standard errors
        assert abs(counts[n] / R - probs[n]) <= Z * math.sqrt(probs[n] * (1 - probs[n]) / R), (n, counts)


def test_sbml_sin_and_piecewise_laws():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_sbml_semantics import model, par, rx, sp

    body = model(sp("A", 0), par("a", A_) + par("b", B_) + par("w", W_) + par("a1", A1) + par("a2", A2),
                 rx("S", {}, {"A": 1}, "a + b * sin(w * time)") + rx("P", {}, {"A": 1}, "piecewise(a1, time < 2, a2)"))
    net = read_sbml_string(body)
    assert net.hybrid
    t = np.array([0.3, 1.9, 2.0, 3.7])
    for r, ref in zip(net.reactions, (A_ + B_ * np.sin(W_ * t), np.where(t < 2, A1, A2))):
        got = np.array([evaluate(r.law, np.zeros((1, 1)), net.params, tt)[0] for tt in t])
        assert np.allclose(got, ref, rtol=1e-15, atol=0)
    c = compile_network(net)
    assert (c.events.hz_of >= 0).all() and len(c.events.tc_op) == 1
    bad = model(sp("A", 0), par("a1", A1), rx("P", {}, {"A": 1}, "piecewise(a1, 2 * time < 4, 0)"))
    with pytest.raises(ModelError, match="compares time in a kinetic law only alone"):
        compile_network(read_sbml_string(bad))
