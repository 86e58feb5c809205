"""Seed 001's parallel acceptance-rejection selection: the uniform rating is biased, the exponential
rating is exact; both never reject with T = max D. Chi-square tests at significance 1e-4, fixed seeds."""

import numpy as np
import pytest
from scipy import stats

from distsim.ssa import ar

ALPHA = 1e-4


def chi2_pvalue(counts: np.ndarray, p: np.ndarray) -> float:
    n = counts.sum()
    keep = p * n >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(p[keep] * n, p[~keep].sum() * n)
    nz = exp > 0
    return float(stats.chisquare(obs[nz], exp[nz] * obs[nz].sum() / exp[nz].sum()).pvalue)


@pytest.mark.parametrize("M", [64, 256])
def test_exponential_rating_is_exact(M):
    D = ar.gaussian_propensities(M)
    counts = ar.select_counts(D, instances=500, rounds=200, seed=3, mode=ar.MODE_EXPONENTIAL)
    assert counts[-1] == 0  # no rejection
    assert chi2_pvalue(counts[:-1], D / D.sum()) > ALPHA


def test_uniform_rating_follows_its_own_law_not_the_propensities():
    D = np.array([1.0, 0.3, 0.01])
    counts = ar.select_counts(D, instances=400, rounds=250, seed=4, mode=ar.MODE_UNIFORM)
    assert counts[-1] == 0  # T = max D: the largest reaction is always eligible
    biased = ar.uniform_rating_probabilities(D)
    assert chi2_pvalue(counts[:-1], biased) > ALPHA
    assert chi2_pvalue(counts[:-1], D / D.sum()) < 1e-12
    # the smallest propensity is under-selected by about half
    assert biased[2] / (D[2] / D.sum()) == pytest.approx(0.57, abs=0.02)


def test_gaussian_vectors_mse():
    """The seed's validation: MSE between normalised propensities and selection frequencies."""
    D = ar.gaussian_propensities(64)
    p = D / D.sum()
    n_inst, rounds = 2000, 500  # 1e6 selections: the seed rating's bias is ~10x the noise floor here
    n = n_inst * rounds
    floor = np.mean(p * (1 - p)) / n  # expected MSE of an exact sampler (multinomial noise)
    exact = ar.select_counts(D, instances=n_inst, rounds=rounds, seed=5, mode=ar.MODE_EXPONENTIAL)
    seedmode = ar.select_counts(D, instances=n_inst, rounds=rounds, seed=5, mode=ar.MODE_UNIFORM)
    mse_exact = np.mean((exact[:-1] / n - p) ** 2)
    mse_seed = np.mean((seedmode[:-1] / n - p) ** 2)
    # MSE/floor of an exact sampler is a mean of chi-square(1)-like terms: well below 3
    assert mse_exact < 3 * floor
    assert mse_seed > 3 * floor
