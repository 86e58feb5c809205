"""Backend x method conformance of the SSA: every method of ``distsim.ssa.methods.METHODS`` on every
backend against the same analytic moments, and CPU == GPU bit for bit where the method says so.

Moments. Immigration-death (X(t) ~ Poisson(10 (1 - exp(-0.1 t))), exact mean, variance and fourth
central moment) and birth-death (DSMTS 001-01: exact mean and variance; the fourth moment about the
mean is taken from the run's unit-width histogram). At each of P time points, with n realizations,
Z = sqrt(n) (mean - mu) / sigma and Y = (S^2 - sigma^2) / sqrt((m4 - sigma^4) / n), S^2 the mean
square about mu, are approximately standard normal. Every run must have all |Z|, |Y| below z*, the
two-sided Bonferroni bound for a family-wise confidence of 99.9% over its 2 P tests (for
P = 20 points with sigma > 0: z* = 4.21). Seeds are fixed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from distsim.backends import cuda
from distsim.ssa import load, simulate
from distsim.ssa.generators import cyclic_chain, random_network
from distsim.ssa.methods import METHODS

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]
BIT_IDENTICAL = [name for name, m in METHODS.items() if m.bit_identical]
N = 10_000
CONFIDENCE = 0.999


def z_star(tests: int) -> float:
    return float(norm.isf((1 - CONFIDENCE) / (2 * tests)))


def moment_stats(ds, mu, var, m4=None) -> tuple[np.ndarray, np.ndarray]:
    """Z of the mean and Y of the mean square about mu at the time points where var > 0; m4 (fourth
    central moment) defaults to the histogram's, about mu."""
    n = ds.attrs["realizations"]
    mean = ds["mean"].values[:, 0]
    ms = ds["variance"].values[:, 0] * (n - 1) / n + (mean - mu) ** 2  # (1/n) sum (x - mu)^2
    if m4 is None:
        assert int(ds.bin_width.values[0]) == 1, "fourth moments need unit-width histogram bins"
        values = ds.bin_start.values[0].astype(float)
        hist = ds.histogram.values[:, 0, :].astype(float)
        m4 = (hist * (values[None, :] - mu[:, None]) ** 4).sum(axis=1) / n
    ok = var > 0
    z = np.sqrt(n) * (mean[ok] - mu[ok]) / np.sqrt(var[ok])
    y = (ms[ok] - var[ok]) / np.sqrt((m4[ok] - var[ok] ** 2) / n)
    return z, y


def check(z: np.ndarray, y: np.ndarray) -> None:
    bound = z_star(len(z) + len(y))
    assert np.all(np.abs(z) < bound), f"Z beyond {bound:.2f}: {np.round(z, 2)}"
    assert np.all(np.abs(y) < bound), f"Y beyond {bound:.2f}: {np.round(y, 2)}"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", list(METHODS))
def test_immigration_death_moments(method, backend):
    net = load(ROOT / "examples/ssa/immigration_death.rxn")
    ds = simulate(net, t_end=40, points=21, realizations=N, seed=31, method=method, backend=backend,
                  quantiles=None)
    assert ds.attrs["method"] == method and ds.attrs["backend"] == backend
    lam = 10 * (1 - np.exp(-0.1 * ds.time.values))
    check(*moment_stats(ds, lam, lam, lam + 3 * lam**2))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", list(METHODS))
def test_birth_death_moments(method, backend):
    net = load(ROOT / "examples/ssa/birth_death.rxn")
    ds = simulate(net, t_end=40, points=21, realizations=N, seed=32, method=method, backend=backend,
                  max_bins=4096)
    t = ds.time.values
    lam, mu, x0 = 0.1, 0.11, 100
    m = x0 * np.exp((lam - mu) * t)
    v = x0 * (lam + mu) / (lam - mu) * np.exp((lam - mu) * t) * (np.exp((lam - mu) * t) - 1)
    check(*moment_stats(ds, m, v))


def test_warp_runs_the_tree_on_cpus():
    """'warp' is a GPU layout; CPU workers run the sum tree: the same realizations."""
    assert METHODS["warp"].cpu is METHODS["tree"].cpu
    net = random_network(40, seed=3)
    kw = dict(t_end=2.0, points=5, realizations=200, seed=4, backend="cpu", keep_trajectories=True, quantiles=None)
    a, b = simulate(net, method="warp", **kw), simulate(net, method="tree", **kw)
    assert np.array_equal(a["trajectory"].values, b["trajectory"].values)


SSA_CASES = {
    "mm": lambda: load(ROOT / "examples/ssa/michaelis_menten.rxn"),
    "schlogl": lambda: load(ROOT / "examples/ssa/schlogl.rxn"),
    "dsmts-00011-volume-laws": lambda: load(ROOT / "tests/data/dsmts/00011/00011-sbml-l3v1.xml"),
    "dimerisation-sbml-laws": lambda: load(ROOT / "tests/data/dsmts/00030/00030-sbml-l3v1.xml"),
    "chain-100": lambda: cyclic_chain(100),
    "random-80": lambda: random_network(80),
}


@pytest.mark.gpu
@pytest.mark.parametrize("case", SSA_CASES)
@pytest.mark.parametrize("method", BIT_IDENTICAL)
def test_ssa_cpu_equals_gpu(case, method):
    """Same seed, same realizations: the generated (small models) and generic GPU kernels reproduce the CPU."""
    net = SSA_CASES[case]()
    kw = dict(t_end=20.0, points=21, realizations=700, seed=13, method=method, keep_trajectories=True,
              keep_final=True)
    a = simulate(net, backend="cpu", **kw)
    b = simulate(net, backend="gpu", **kw)
    assert b.attrs["backend"] == "gpu"
    for v in ("trajectory", "final_state", "events", "firings", "mean", "variance", "histogram", "quantile_value"):
        assert np.array_equal(a[v].values, b[v].values), v


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["mm", "dimerisation-sbml-laws", "schlogl"])
def test_ssa_fused_reductions_equal_cpu(case):
    """The generated kernel with in-kernel (shared-memory) reductions gives the CPU's exact sums."""
    net = SSA_CASES[case]()
    kw = dict(t_end=30.0, points=31, realizations=5000, seed=21, method="direct", quantiles=None, keep_final=True)
    a = simulate(net, backend="cpu", **kw)
    b = simulate(net, backend="gpu", **kw)
    for v in ("mean", "variance", "final_state", "events", "firings"):
        assert np.array_equal(a[v].values, b[v].values), v


@pytest.mark.gpu
@pytest.mark.parametrize("mode", [0, 1])
def test_ar_selection_gpu_equals_cpu(mode):
    import cupy as cp

    from distsim.ssa import ar

    D = ar.gaussian_propensities(256)
    cpu_counts = ar.select_counts(D, instances=300, rounds=50, seed=8, mode=mode)
    mod = cuda.load_module(cuda.kernel_source("ssa_ar.cu"), ("--fmad=false",))
    counts = cp.zeros(len(D) + 1, dtype=cp.uint64)
    threads = 128
    mod.get_function("ar_select")((300,), (threads,), (cp.asarray(D), np.int32(len(D)), np.float64(D.max()),
                                                       np.int32(mode), np.uint32(8), np.int32(50), counts),
                                   shared_mem=threads * 12)
    assert np.array_equal(cp.asnumpy(counts).astype(np.int64), cpu_counts)
