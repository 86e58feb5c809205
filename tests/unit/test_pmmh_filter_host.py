"""PMMH's device filter without a GPU: kernels/ssa_advance.cu and kernels/pmmh_filter.cu compiled for
the host by g++ (``cuda_host.h``: IEEE doubles, no contraction), NumPy standing in for CuPy
(``cuda_on_host.py``), run by the unchanged ``backend="gpu"`` code of ``distsim.pmmh.filter``: the
same log-likelihood estimates as the CPU filter bit for bit, for every noise model (all weighed on the
device by kernels/pmmh_filter.cu's pmmh_noise) and the host-weights path (a formula with a function),
with chains that die (-inf) on the way. The device itself is
checked by tests/unit/test_pmmh_gpu.py. Skipped where g++ is not installed."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import distsim.pmmh as pmmh
from distsim.pmmh import filter as pf
from distsim.pmmh import sampler
from distsim.ssa import gpu, gpu_advance, load

from cuda_on_host import GXX, HostModule, fake_cupy

pytestmark = pytest.mark.skipif(GXX is None, reason="g++ not on PATH")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def host_kernel_dir(tmp_path_factory):
    """One build directory for the session: each kernel source is compiled once (HostModule keys by its hash)."""
    return tmp_path_factory.mktemp("host_kernels")


@pytest.fixture
def host_gpu(monkeypatch, host_kernel_dir):
    """distsim.ssa's GPU launches with kernels compiled for the host and NumPy for CuPy."""
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    monkeypatch.setattr(gpu, "_module", lambda key, source, options=(): HostModule(source(), host_kernel_dir))
    monkeypatch.setattr(gpu_advance, "_tables", gpu._tables)


def lv_problem():
    import csv

    with open(ROOT / "examples/pmmh/lv_noise_10.csv", newline="") as f:
        rows = list(csv.DictReader(f))[:6]
    ex = pmmh.Experiment([float(r["time"]) for r in rows], {"prey": [float(r["Y1"]) for r in rows],
                                                           "predator": [float(r["Y2"]) for r in rows]})
    # a formula with every device operation; the predator's sigma is inferred (a chain with sigma 0 dies)
    obs = [pmmh.Observable("prey", "-(-Y1) * 2 / 2 + 0.5 - 0.5", "normal", 10),
           pmmh.Observable("predator", "Y2", "normal", "sd")]
    net = load(ROOT / "examples/pmmh/lotka_volterra.rxn")
    return sampler.build_problem(net, obs, [ex], {"c1": "lognormal:0,1", "c2": "lognormal:-5,1",
                                                  "sd": "uniform:0,50"}, initial={"sd": 10.0})


def test_device_weights_cover_arithmetic_of_any_noise_model():
    pr = lv_problem()
    assert pf.device_weights(pr.observables)
    net = load(ROOT / "tests/data/pmmh/immigration_death.rxn")
    for ob in (pmmh.Observable("y", "X", "poisson"), pmmh.Observable("y", "X + 1", "lognormal", 0.5),
               pmmh.Observable("y", "X * k1", "negbin", 3)):
        obs = sampler.build_problem(net, [ob], [pmmh.Experiment([1], {"y": [1]})], {"k1": "gamma:2,1"}).observables
        assert pf.device_weights(obs)
    obs = sampler.build_problem(net, [pmmh.Observable("y", "exp(X)", "poisson")], [pmmh.Experiment([1], {"y": [1]})],
                                {"k1": "gamma:2,1"}).observables
    assert not pf.device_weights(obs)


@pytest.mark.parametrize("noise", range(4))
def test_noise_kernel_equals_its_twin(host_gpu, noise):
    """kernels/pmmh_filter.cu's pmmh_noise (g++) == add_log_density_cpu bit for bit, at 0, subnormal,
    huge, infinite, NaN and negative observable values, per-chain noise parameters (0 and NaN among them)."""
    import cupy

    from distsim.pmmh.observation import add_log_density

    from test_pmmh_noise import edge_inputs

    h, s, ys = edge_inputs(noise)
    for y in ys:
        cpu, dev = np.full(h.shape, 0.25), cupy.full(h.shape, 0.25)
        add_log_density(np, noise, y, h, s, cpu)
        add_log_density(cupy, noise, y, h, s, dev)
        assert np.array_equal(cpu, dev, equal_nan=True) and np.isfinite(cpu).sum() > 40


def test_batched_weights_equal_chain_by_chain():
    """log_weights_batched (every chain at once) == log_weights of each chain alone, bit for bit, with a
    missing measurement, per-chain noise parameters and a chain whose sigma is 0."""
    from distsim.pmmh.observation import log_weights, log_weights_batched, noise_values

    pr = lv_problem()
    ex = pr.experiments[0]
    rng = np.random.default_rng(1)
    X = rng.integers(0, 400, size=(4, 50, 2)).astype(np.int64)
    values = [pr.values(th, ex) for th in ([1.0, 0.005, 10.0], [1.0, 0.005, 3.5], [1.0, 0.005, 0.0],
                                           [1.0, 0.005, 1e-3])]
    noise = np.array([noise_values(pr.observables, v) for v in values])
    for row in (ex.data[2], np.array([np.nan, ex.data[3][1]])):
        got = log_weights_batched(np, pr.observables, row, X, values, noise)
        ref = np.stack([log_weights(pr.observables, row, X[g], values[g], noise[g]) for g in range(4)])
        assert np.array_equal(got, ref) and np.isneginf(got[2]).all() and np.isfinite(got[[0, 1, 3]]).all()


def test_filter_on_the_device_equals_cpu_normal_noise(host_gpu):
    pr = lv_problem()
    keys = np.array([sampler.chain_key(3, c) for c in range(4)])
    thetas = np.array([[1.0, 0.005, 10.0], [0.9, 0.006, 12.0], [1.0, 0.005, 0.0], [1.1, 0.004, 8.0]])
    cpu, f_cpu = pf.log_likelihoods(pr, thetas, 64, keys, 5, "cpu")
    dev, f_dev = pf.log_likelihoods(pr, thetas, 64, keys, 5, "gpu")
    assert np.array_equal(cpu, dev) and f_cpu == f_dev > 0
    assert cpu[2] == -math.inf and np.isfinite(cpu[[0, 1, 3]]).all()


def test_filter_on_the_device_equals_cpu_poisson(host_gpu):
    net = load(ROOT / "tests/data/pmmh/immigration_death.rxn")
    obs = [pmmh.Observable("y", "X", "poisson")]
    exps = [pmmh.Experiment([1, 2, 4, 6], {"y": [1, 3, 2, 4]}), pmmh.Experiment([0.5, 3], {"y": [0, 5]})]
    pr = sampler.build_problem(net, obs, exps, {"k1": "gamma:2,1", "k2": "gamma:2,10"})
    keys = np.array([sampler.chain_key(1, c) for c in range(3)])
    thetas = np.array([[1.1, 0.25], [1e-9, 0.25], [2.0, 0.5]])  # chain 1 makes no X: y = 3 is impossible
    cpu, _ = pf.log_likelihoods(pr, thetas, 32, keys, 2, "cpu")
    dev, _ = pf.log_likelihoods(pr, thetas, 32, keys, 2, "gpu")
    assert np.array_equal(cpu, dev)
    assert cpu[1] == -math.inf and np.isfinite(cpu[[0, 2]]).all()


@pytest.mark.parametrize("noise,formula", [("lognormal", "X + 0.5"), ("negbin", "X")])
def test_filter_on_the_device_equals_cpu_other_noise(host_gpu, noise, formula):
    from test_pmmh_noise import noise_problem

    pr = noise_problem(noise, formula)
    keys = np.array([sampler.chain_key(5, c) for c in range(3)])
    thetas = np.array([[1.1, 0.25, 0.8], [2.0, 0.5, 0.0], [0.9, 0.2, 2.0]])  # chain 1: noise parameter 0
    cpu, f_cpu = pf.log_likelihoods(pr, thetas, 32, keys, 2, "cpu")
    dev, f_dev = pf.log_likelihoods(pr, thetas, 32, keys, 2, "gpu")
    assert np.array_equal(cpu, dev) and f_cpu == f_dev > 0
    assert cpu[1] == -math.inf and np.isfinite(cpu[[0, 2]]).all()


def test_filter_on_the_device_equals_cpu_host_weights(host_gpu):
    """A formula with a function (exp) is weighed chain by chain on the host; the same bits."""
    net = load(ROOT / "tests/data/pmmh/immigration_death.rxn")
    obs = [pmmh.Observable("y", "log(exp(X))", "poisson")]
    pr = sampler.build_problem(net, obs, [pmmh.Experiment([1, 2, 4], {"y": [1, 3, 2]})],
                               {"k1": "gamma:2,1", "k2": "gamma:2,10"})
    assert not pf.device_weights(pr.observables)
    keys = np.array([sampler.chain_key(1, c) for c in range(2)])
    thetas = np.array([[1.1, 0.25], [2.0, 0.5]])
    cpu, _ = pf.log_likelihoods(pr, thetas, 32, keys, 2, "cpu")
    dev, _ = pf.log_likelihoods(pr, thetas, 32, keys, 2, "gpu")
    assert np.array_equal(cpu, dev) and np.isfinite(cpu).all()


def test_reweigh_is_systematic_resampling():
    """reweigh_cpu against the textbook formulas in NumPy (cumsum, searchsorted) with the same weights."""
    from distsim.backends.dsmath import ds_exp

    rng = np.random.default_rng(0)
    lw = rng.normal(size=(3, 50)) * 3
    lw[1, :10] = -np.inf
    u = rng.random(3)
    m, s, anc = pf.reweigh(np, lw, u, True)
    for g in range(3):
        w = np.array([ds_exp(v - lw[g].max()) for v in lw[g]])
        cum = np.cumsum(w)
        ref = np.minimum(np.searchsorted(cum, (u[g] + np.arange(50)) * (cum[-1] / 50), side="right"), 49)
        assert m[g] == lw[g].max() and s[g] == cum[-1]
        assert np.array_equal(anc[g * 50:(g + 1) * 50], g * 50 + ref)
    assert not np.isin(np.arange(50, 60), anc).any()  # zero weight: never an ancestor
    m, s, _ = pf.reweigh(np, np.array([[0.0, np.nan], [-np.inf, -np.inf]]), np.zeros(2), False)
    assert list(m) == [-np.inf, -np.inf] and list(s) == [0.0, 0.0]


def test_initial_amounts_from_parameters_on_the_device(host_gpu):
    net = load(ROOT / "tests/data/pmmh/immigration_death.rxn")
    ex = pmmh.Experiment([0, 1, 3], {"y": [0.2, 0.5, 0.4]}, initial={"X": "x0"})
    pr = sampler.build_problem(net, [pmmh.Observable("y", "X", "normal", 0.3)], [ex],
                               {"k1": "gamma:2,1", "x0": "uniform:0,10"}, initial={"x0": 0.5}, species_scale=10)
    thetas = np.array([[1.0, 0.2], [1.0, 0.71], [1.0, -1.0]])  # 2 and 7 molecules; no count: -inf
    keys = np.array([4, 5, 6])
    cpu, _ = pf.log_likelihoods(pr, thetas, 32, keys, 1, "cpu")
    dev, _ = pf.log_likelihoods(pr, thetas, 32, keys, 1, "gpu")
    assert np.array_equal(cpu, dev) and np.isfinite(cpu[:2]).all() and cpu[2] == -math.inf


def test_too_many_events_and_errors_on_the_device(host_gpu):
    """Particles that reach max_events weigh 0 (the same estimates on CPU and device, a chain losing all of
    its particles dies); a negative propensity stops the filter with the same message on both."""
    net = load(ROOT / "tests/data/pmmh/immigration_death.rxn")
    obs = [pmmh.Observable("y", "X", "negbin", 2.0)]
    pr = sampler.build_problem(net, obs, [pmmh.Experiment([1, 2, 4], {"y": [1, 3, 2]})],
                               {"k1": "gamma:2,1", "k2": "gamma:2,10"}, max_events=4)
    keys = np.array([sampler.chain_key(8, c) for c in range(3)])
    thetas = np.array([[1.0, 0.25], [40.0, 0.25], [2.0, 0.5]])  # chain 1: every particle fires > 4 events
    cpu, f_cpu = pf.log_likelihoods(pr, thetas, 64, keys, 1, "cpu")
    dev, f_dev = pf.log_likelihoods(pr, thetas, 64, keys, 1, "gpu")
    assert np.array_equal(cpu, dev) and f_cpu == f_dev > 0
    assert cpu[1] == -math.inf and np.isfinite(cpu[[0, 2]]).all()
    bad = np.array([[1.0, 0.25], [-1.0, 0.25]])
    msgs = []
    for backend in ("cpu", "gpu"):
        with pytest.raises(RuntimeError, match="propensity") as e:
            pf.log_likelihoods(pr, bad, 16, keys[:2], 1, backend)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_filter_on_the_device_equals_cpu_replicates_and_log10(host_gpu):
    """Replicates (the device noise kernel once per replicate) and PEtab's replicates (case 0008) and log10
    observable (case 0007, lognormal with sigma ln 10): the same estimates as the CPU filter, bit for bit."""
    from test_pmmh_petab_replicates import _problem

    net = load(ROOT / "tests/data/pmmh/immigration_death.rxn")
    nan = float("nan")
    obs = [pmmh.Observable("y", "X", "poisson"), pmmh.Observable("l", "X + 1", "lognormal", 0.4)]
    ex = pmmh.Experiment([1, 2, 4], {"y": [[1, 2], 3, [2, 2, 4]], "l": [nan, [2.5, 4.0], 3.0]})
    own = sampler.build_problem(net, obs, [ex], {"k1": "gamma:2,1", "k2": "gamma:2,10"})
    cases = [(own, np.array([[1.1, 0.25], [2.0, 0.5], [0.7, 0.2]]))]
    cases += [(_problem(c), np.array([[1.0, 0.0, 0.8, 0.6], [1.2, 0.3, 0.5, 0.9], [0.9, 0.1, 1.1, 0.4]]))
              for c in ("0008", "0007")]
    for pr, thetas in cases:
        keys = np.array([sampler.chain_key(6, c) for c in range(3)])
        cpu, f_cpu = pf.log_likelihoods(pr, thetas, 32, keys, 3, "cpu")
        dev, f_dev = pf.log_likelihoods(pr, thetas, 32, keys, 3, "gpu")
        assert np.array_equal(cpu, dev) and f_cpu == f_dev > 0 and np.isfinite(cpu).all()
