"""PMMH's particles on the GPU: the same bits as on the CPU (advance, filter, chains). GPU only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import distsim.pmmh as pmmh
from distsim.models.compile_reactions import compile_network
from distsim.pmmh import sampler
from distsim.pmmh.filter import log_likelihood
from distsim.ssa import load
from distsim.ssa.advance import advance
from distsim.ssa.methods import METHODS

DATA = Path(__file__).resolve().parents[1] / "data" / "pmmh"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ssa"
pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("model", [DATA / "immigration_death.rxn", EXAMPLES / "michaelis_menten.rxn",
                                   EXAMPLES / "schlogl.rxn", EXAMPLES / "toggle_switch.rxn"])
@pytest.mark.parametrize("method", ["direct", "tree"])
def test_advance_gpu_equals_cpu(model, method):
    from distsim.ssa.gpu_advance import advance_gpu

    net = load(model)
    c = compile_network(net)
    X = np.repeat(np.asarray(c.x0, np.int64)[None, :], 3000, axis=0)
    X[::7] += 1  # particles in different states
    Xg = X.copy()
    ev, er = advance(c, METHODS[method].cpu, X, c.theta, c.law_arg, 2.5, key=77, e_hi=12)
    evg, erg = advance_gpu(c, METHODS[method], Xg, c.theta, c.law_arg, 2.5, key=77, e_hi=12)
    assert ev.sum() > 0
    assert np.array_equal(X, Xg) and np.array_equal(ev, evg) and np.array_equal(er, erg)
    # three groups (chains) with their own keys and constants
    th = np.stack([c.theta, c.theta * 0.5, c.theta * 2.0])
    la = np.stack([c.law_arg] * 3)
    Y = np.repeat(np.asarray(c.x0, np.int64)[None, :], 3 * 1000, axis=0)
    Yg = Y.copy()
    ev, er = advance(c, METHODS[method].cpu, Y, th, la, 1.5, key=np.array([5, 6, 7]), e_hi=1)
    evg, erg = advance_gpu(c, METHODS[method], Yg, th, la, 1.5, key=np.array([5, 6, 7]), e_hi=1)
    assert np.array_equal(Y, Yg) and np.array_equal(ev, evg) and np.array_equal(er, erg)


def test_filter_and_chains_gpu_equal_cpu():
    net = load(DATA / "immigration_death.rxn")
    obs = [pmmh.Observable("y", "X", "poisson")]
    ex = pmmh.Experiment(list(range(1, 13)), {"y": [2, 4, 3, 6, 5, 4, 7, 5, 3, 6, 4, 5]})
    pr = sampler.build_problem(net, obs, [ex], {"k1": "gamma:2,1", "k2": "gamma:2,10"})
    for key in range(5):
        assert log_likelihood(pr, np.array([1.1, 0.25]), 256, key, 3, "cpu") == \
            log_likelihood(pr, np.array([1.1, 0.25]), 256, key, 3, "gpu")
    kw = dict(prior={"k1": "gamma:2,1", "k2": "gamma:2,10"}, particles=128, iterations=40, burn_in=10, chains=2,
              seed=9, progress=False)
    with pytest.warns(Warning):
        a = pmmh.infer(net, obs, ex, backend="cpu", **kw)
    with pytest.warns(Warning):
        b = pmmh.infer(net, obs, ex, backend="gpu", **kw)
    for v in ("k1", "k2", "log_likelihood"):
        assert np.array_equal(a[v].values, b[v].values)


def test_one_gpu_equals_all_gpus():
    """The chains of a run on one GPU (in-process) and spread over every GPU of the machine (a local
    GPU cluster, chains as shards) are the same bits (on a 1-GPU machine: in-process vs a Dask worker)."""
    import warnings

    import distsim
    from distsim.errors import ConvergenceWarning

    net = load(DATA / "immigration_death.rxn")
    obs = [pmmh.Observable("y", "X", "poisson")]
    ex = pmmh.Experiment([1, 2, 4, 6], {"y": [1, 3, 2, 4]})
    kw = dict(prior={"k1": "gamma:2,1", "k2": "gamma:2,10"}, particles=256, iterations=30, burn_in=10, chains=8,
              seed=4, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = pmmh.infer(net, obs, ex, backend="gpu", **kw)
        with distsim.connect() as client:
            b = pmmh.infer(net, obs, ex, client=client, backend="gpu", **kw)
    for v in ("k1", "k2", "log_likelihood"):
        assert np.array_equal(a[v].values, b[v].values)


def test_device_filter_equals_cpu_normal_noise():
    """The filter that stays on the device (normal noise: log weights as CuPy operations, reweighting by
    kernels/pmmh_filter.cu) gives the CPU's estimates bit for bit, a dying chain (sigma 0) included."""
    import math

    from distsim.pmmh import filter as pf

    from test_pmmh_filter_host import lv_problem

    pr = lv_problem()
    assert pf.device_weights(pr.observables)
    keys = np.array([sampler.chain_key(3, c) for c in range(6)])
    thetas = np.array([[1.0, 0.005, 10.0], [0.9, 0.006, 12.0], [1.0, 0.005, 0.0], [1.1, 0.004, 8.0],
                       [1.05, 0.005, 9.0], [0.95, 0.0055, 11.0]])
    cpu, f_cpu = pf.log_likelihoods(pr, thetas, 200, keys, 5, "cpu")
    gpu, f_gpu = pf.log_likelihoods(pr, thetas, 200, keys, 5, "gpu")
    assert np.array_equal(cpu, gpu) and f_cpu == f_gpu > 0
    assert cpu[2] == -math.inf and np.isfinite(np.delete(cpu, 2)).all()
    # each chain's estimate is the one it gets alone
    assert pf.log_likelihoods(pr, thetas[4:5], 200, keys[4:5], 5, "gpu")[0][0] == gpu[4]


@pytest.mark.parametrize("noise", range(4))
def test_noise_kernel_gpu_equals_twin(noise):
    """kernels/pmmh_filter.cu's pmmh_noise on the device == its Numba twin, bit for bit, at edge values."""
    import cupy

    from distsim.pmmh.observation import add_log_density

    from test_pmmh_noise import edge_inputs

    h, s, ys = edge_inputs(noise)
    for y in ys:
        cpu, dev = np.full(h.shape, 0.25), cupy.full(h.shape, 0.25)
        add_log_density(np, noise, y, h, s, cpu)
        add_log_density(cupy, noise, y, cupy.asarray(h), s, dev)
        assert np.array_equal(cpu, cupy.asnumpy(dev), equal_nan=True) and np.isfinite(cpu).sum() > 40


@pytest.mark.parametrize("noise,formula", [("normal", "X"), ("lognormal", "X + 0.5"), ("poisson", "X / 2 + k1"),
                                           ("negbin", "X")])
def test_device_filter_equals_cpu_every_noise_model(noise, formula, monkeypatch):
    """Every noise model weighed on the device (no state copied to the host): the CPU's estimates bit for
    bit, and the host-weights path's (chain by chain) on the GPU too; a chain whose noise parameter is 0
    dies where the model has one."""
    import math

    from distsim.pmmh import filter as pf

    from test_pmmh_noise import noise_problem

    pr = noise_problem(noise, formula)
    assert pf.device_weights(pr.observables)
    d = len(pr.names)
    keys = np.array([sampler.chain_key(6, c) for c in range(5)])
    thetas = np.array([[1.1, 0.25, 0.8], [2.0, 0.5, 0.0], [0.9, 0.2, 2.0], [1.0, 0.2, 1.0], [1.3, 0.3, 0.5]])[:, :d]
    cpu, f_cpu = pf.log_likelihoods(pr, thetas, 300, keys, 4, "cpu")
    gpu, f_gpu = pf.log_likelihoods(pr, thetas, 300, keys, 4, "gpu")
    assert np.array_equal(cpu, gpu) and f_cpu == f_gpu > 0
    if d == 3:
        assert cpu[1] == -math.inf
    monkeypatch.setattr(pf, "device_weights", lambda obs: False)
    host, _ = pf.log_likelihoods(pr, thetas, 300, keys, 4, "gpu")
    assert np.array_equal(host, gpu)


def test_replicates_and_log10_gpu_equal_cpu():
    """Replicate measurements (the device noise kernel once per replicate) and PEtab's replicates (case
    0008) and log10 observable (case 0007): filter estimates and chains, the same bits on GPU and CPU."""
    import warnings

    from test_pmmh_petab_replicates import CASES, OMEGA, _problem

    net = load(DATA / "immigration_death.rxn")
    nan = float("nan")
    obs = [pmmh.Observable("y", "X", "poisson"), pmmh.Observable("l", "X + 1", "lognormal", 0.4)]
    ex = pmmh.Experiment([1, 2, 4], {"y": [[1, 2], 3, [2, 2, 4]], "l": [nan, [2.5, 4.0], 3.0]})
    own = sampler.build_problem(net, obs, [ex], {"k1": "gamma:2,1", "k2": "gamma:2,10"})
    for pr, theta in ((own, [1.1, 0.25]), (_problem("0008"), [1.2, 0.3, 0.5, 0.9]),
                      (_problem("0007"), [1.0, 0.0, 0.8, 0.6])):
        for key in range(4):
            assert log_likelihood(pr, np.array(theta), 256, key, 3, "cpu") == \
                log_likelihood(pr, np.array(theta), 256, key, 3, "gpu")
    kw = dict(system_size=OMEGA, particles=128, iterations=30, burn_in=10, chains=2, seed=9, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = pmmh.petab(CASES["0008"], backend="cpu", **kw)
        b = pmmh.petab(CASES["0008"], backend="gpu", **kw)
    for v in ("a0", "b0", "k1", "k2", "log_likelihood"):
        assert np.array_equal(a[v].values, b[v].values)


@pytest.mark.parametrize("N", [1, 255, 1000, 8192])
def test_reweigh_kernel_equals_twin(N):
    """kernels/pmmh_filter.cu's pmmh_reweigh (a block per chain: parallel maximum, exps and ancestors,
    the running sum in particle order) == reweigh_cpu bit for bit: ties, signed zeros, -inf weights,
    a NaN, an all -inf and an infinite chain, partial chunks."""
    import cupy

    from distsim.pmmh import filter as pf

    rng = np.random.default_rng(N)
    lw = np.round(rng.normal(size=(7, N)) * 4, 1)  # rounded: many equal weights
    lw[1, ::3] = -np.inf
    lw[2, -1] = np.nan
    lw[3] = -np.inf
    lw[4, N // 2] = np.inf
    lw[5] = 0.0
    lw[5, ::2] = -0.0
    lw[6] = -0.0
    u = rng.random(7)
    for resample in (True, False):
        cpu = pf.reweigh(np, lw, u, resample)
        dev = pf.reweigh(cupy, cupy.asarray(lw), u, resample)
        assert np.array_equal(cpu[0], dev[0]) and np.array_equal(np.signbit(cpu[0]), np.signbit(dev[0]))
        assert np.array_equal(cpu[1], dev[1]) and np.array_equal(cpu[2], cupy.asnumpy(dev[2]))
