"""The noise models' log densities (distsim.pmmh.observation): the one formula per model
(``log_density_at``, twin of kernels/pmmh_filter.cu) against closed forms, exact where the value is
exact, and the batched path (all chains, the device's path) equal to the host's chain-by-chain path."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.special import gammaln, xlogy

import distsim.pmmh as pmmh
from distsim.backends.dsmath import ds_log
from distsim.pmmh import filter as pf
from distsim.pmmh import sampler
from distsim.pmmh.observation import NOISE_MODELS, log_density, log_weights, log_weights_batched, noise_values
from distsim.ssa import load

DATA = Path(__file__).resolve().parents[1] / "data" / "pmmh"
L2PI = math.log(2.0 * math.pi)
H = np.array([0.0, 5e-324, 1e-300, 0.5, 1.0, 3.0, 7.25, 40.0, 1e6, 1e300, np.inf, np.nan, -1.0, -np.inf])


def reference(noise: str, y: float, h: np.ndarray, s: float) -> np.ndarray:
    """The closed forms with SciPy's gammaln/xlogy and NumPy's log (the host formulas before the device path)."""
    with np.errstate(all="ignore"):
        if noise == "normal":
            return -0.5 * L2PI - math.log(s) - 0.5 * ((y - h) / s) ** 2
        if noise == "lognormal":
            return np.where(h > 0, -0.5 * L2PI - math.log(s) - math.log(y) - 0.5 * ((math.log(y) - np.log(h)) / s) ** 2,
                            -np.inf)
        if noise == "poisson":
            return np.where(h >= 0, xlogy(y, h) - h - gammaln(y + 1.0), -np.inf)
        return np.where(h >= 0, gammaln(y + s) - gammaln(s) - gammaln(y + 1.0) + s * (math.log(s) - np.log(s + h))
                        + xlogy(y, h) - xlogy(y, s + h), -np.inf)


def bound(noise: str, y: float, h: np.ndarray, s: float) -> np.ndarray:
    """Rounding bound: 16 ulp of the sum of the absolute terms (each log within a few ulp: dsmath's
    stated accuracy; lgamma, libm's, within a few ulp; at most 8 roundings per formula)."""
    with np.errstate(all="ignore"):
        lh = np.abs(np.log(np.abs(h)))
        if noise == "normal":
            mag = 0.5 * L2PI + abs(math.log(s)) + 0.5 * ((y - h) / s) ** 2
        elif noise == "lognormal":
            mag = 0.5 * L2PI + abs(math.log(s)) + abs(math.log(y)) + 0.5 * ((abs(math.log(y)) + lh) / s) ** 2
        elif noise == "poisson":
            mag = (y * lh if y else 0.0) + np.abs(h) + gammaln(y + 1.0)
        else:
            mag = (abs(gammaln(y + s)) + abs(gammaln(s)) + gammaln(y + 1.0) + s * (abs(math.log(s)) + np.log(s + h))
                   + (y * (lh + np.log(s + h)) if y else 0.0))
    return 16 * np.finfo(float).eps * mag


CASES = [("normal", 3.0, 2.0), ("normal", -1.5, 0.01), ("lognormal", 3.0, 0.7), ("lognormal", 1e-3, 2.0),
         ("poisson", 0.0, None), ("poisson", 3.0, None), ("poisson", 250.0, None), ("negbin", 0.0, 2.5),
         ("negbin", 3.0, 2.5), ("negbin", 250.0, 0.3), ("negbin", 7.0, 1e4)]


@pytest.mark.parametrize("noise,y,s", CASES)
def test_log_density_matches_the_closed_form(noise, y, s):
    got = log_density(NOISE_MODELS.index(noise), y, H, math.nan if s is None else s)
    ref = reference(noise, y, H, math.nan if s is None else s)
    fin = np.isfinite(ref)
    # the same -inf/inf/NaN where the closed form has them (h < 0, h = 0, inf, NaN)
    assert np.array_equal(got[~fin], ref[~fin], equal_nan=True) and np.isfinite(got[fin]).all()
    assert np.all(np.abs(got[fin] - ref[fin]) <= bound(noise, y, H, s or 1.0)[fin])


def test_log_density_exact_values():
    """Values that are exact in floating point (no rounding in the formula): they must come out exactly."""
    c_n = -0.5 * L2PI - ds_log(2.0)
    h = np.array([0.0, 1.0, 2.5, 1e6])
    # normal at h = y: the constant alone; z = 1 exactly: c - 1/2
    assert list(log_density(0, 5.0, np.array([5.0, 7.0, 3.0]), 2.0)) == [c_n, c_n - 0.5, c_n - 0.5]
    # lognormal at h = y: -log(2 pi)/2 - log s - log y (log y - log h is exactly 0)
    assert log_density(1, 2.5, np.array([2.5]), 2.0)[0] == (c_n - ds_log(2.5))
    # Poisson y = 0: log p = -h; y = 1, h = 1: -1 (lgamma(2) = 0, log 1 = 0)
    assert list(log_density(2, 0.0, h, math.nan)) == [0.0, -1.0, -2.5, -1e6]
    assert log_density(2, 1.0, np.array([1.0]), math.nan)[0] == -1.0
    # negative binomial y = 0 at h = 0: log 1 = 0; y = 0: s (log s - log(s + h))
    assert log_density(3, 0.0, np.array([0.0]), 2.5)[0] == 0.0
    assert log_density(3, 0.0, np.array([1.5]), 2.5)[0] == 2.5 * (ds_log(2.5) - ds_log(4.0))
    # a noise parameter <= 0 or NaN: weight 0 for every particle
    for noise in (0, 1, 3):
        for s in (0.0, -1.0, math.nan):
            assert np.isneginf(log_density(noise, 2.0, h, s)).all()


def edge_inputs(noise: int) -> tuple[np.ndarray, np.ndarray, tuple[float, ...]]:
    """(h [4, 40], s [4], measurements) for kernel-vs-twin checks: observable values 0, subnormal, huge,
    infinite, NaN, negative and ordinary; noise parameters 2.5, 0, NaN, 1e-3."""
    rng = np.random.default_rng(noise)
    h = np.concatenate([[0.0, 5e-324, 1e-300, 1e300, np.inf, np.nan, -1.0, -np.inf, 2.5], rng.gamma(2.0, 5.0, 31)])
    h = np.stack([h, h[::-1], h * 0.5, h + 1.0])
    return h, np.array([2.5, 0.0, np.nan, 1e-3]), (0.5 if noise == 1 else 0.0, 1.0, 3.0, 250.0)  # lognormal: y > 0


def noise_problem(noise: str, formula: str = "X"):
    net = load(DATA / "immigration_death.rxn")
    par = {"normal": 1.0, "lognormal": "sd", "negbin": "r"}.get(noise)
    obs = [pmmh.Observable("y", formula, noise, par), pmmh.Observable("z", "2 * X", "poisson")]
    y = {"normal": [1.2, 3.5, 2.0, 4.4, 6.1], "lognormal": [1.2, 3.5, 2.0, 4.4, 6.1]}.get(noise, [1, 3, 2, 4, 6])
    ex = pmmh.Experiment([1, 2, 4, 6, 7], {"y": y, "z": [np.nan, 6, np.nan, 9, 12]})
    prior = {"k1": "gamma:2,1", "k2": "gamma:2,10"}
    if isinstance(par, str):
        prior[par] = "lognormal:0,1"
    return sampler.build_problem(net, obs, [ex], prior)


@pytest.mark.parametrize("noise,formula", [("normal", "X"), ("lognormal", "X + 0.5"), ("poisson", "X / 2 + k1"),
                                           ("negbin", "X")])
def test_batched_weights_equal_host_weights(noise, formula):
    """log_weights_batched (all chains: the Numba twin of the device kernel) == log_weights chain by
    chain, bit for bit, with missing measurements, per-chain noise parameters (one <= 0) and particles
    that give h = 0 or h < 0."""
    pr = noise_problem(noise, formula)
    ex = pr.experiments[0]
    rng = np.random.default_rng(7)
    X = rng.integers(-1, 12, size=(4, 64, 1)).astype(np.int64)
    extra = len(pr.names) > 2
    thetas = [[1.0, 0.2, 0.8], [1.5, 0.3, 3.0], [1.0, 0.2, 0.0], [0.7, 0.1, 1e-3]]
    values = [pr.values(np.array(th[:3 if extra else 2]), ex) for th in thetas]
    noise_par = np.array([noise_values(pr.observables, v) for v in values])
    zero = 0
    for k in range(len(ex.times)):
        got = log_weights_batched(np, pr.observables, ex.data[k], X, values, noise_par)
        ref = np.stack([log_weights(pr.observables, ex.data[k], X[g], values[g], noise_par[g]) for g in range(4)])
        assert np.array_equal(got, ref, equal_nan=True) and np.isfinite(got[1]).any()
        zero += int(np.isneginf(got[1]).sum())
        if extra:  # the chain with noise parameter 0
            assert np.isneginf(got[2]).all()
    assert zero > 0  # some particles cannot explain a measurement (h < 0 for a count; X < 0 below)


@pytest.mark.parametrize("noise,formula", [("lognormal", "X + 0.5"), ("negbin", "X")])
def test_filter_batched_path_equals_host_path(noise, formula, monkeypatch):
    """The whole filter's estimates on the batched path equal those of the chain-by-chain host path."""
    pr = noise_problem(noise, formula)
    keys = np.array([sampler.chain_key(2, c) for c in range(3)])
    thetas = np.array([[1.1, 0.25, 0.8], [2.0, 0.5, 0.0], [0.9, 0.2, 2.0]])  # chain 1: noise parameter 0
    assert pf.device_weights(pr.observables)
    batched, f1 = pf.log_likelihoods(pr, thetas, 48, keys, 3, "cpu")
    monkeypatch.setattr(pf, "device_weights", lambda obs: False)
    host, f2 = pf.log_likelihoods(pr, thetas, 48, keys, 3, "cpu")
    assert np.array_equal(batched, host) and f1 == f2 > 0
    assert batched[1] == -math.inf and np.isfinite(batched[[0, 2]]).all()
