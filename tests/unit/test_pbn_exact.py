"""Simulation against exact stationary distributions (2**n x 2**n matrices solved by linear algebra).

Two independent checks, on every backend:
* the final states of N independent trajectories, after a burn-in B with |lambda_2|**B < 1e-9, are a
  sample of the stationary distribution: chi-square goodness-of-fit at significance 1e-4;
* time averages of a target set over a window (pooled over chains, the counts the steady-state
  estimator uses) agree with pi(target) within 4.4 standard errors (two-sided 1e-5), the standard
  error computed exactly from the chain's asymptotic variance (fundamental matrix).
Seeds are fixed, so each test is deterministic; the tolerances follow from the stated levels.
"""

import math

import numpy as np
import pytest
from scipy import stats

from distsim.engine.executor import ShardContext
from distsim.engine import registry
from distsim.models.pbn import random_pbn
from distsim.pbn import load, reference as ref, simulate
from distsim.pbn.compile import compile_pbn
from distsim.pbn.shard import MODES, Block, advance_block

BACKENDS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]
ALPHA = 1e-4


def networks(examples):
    return {
        "shmulevich3": load(examples / "bnmpy_shmulevich2002_examplePBN_3n.txt", perturbation=0.01),
        "faure10": load(examples / "bbm023_faure2006_mammalian_cell_cycle_10n.bnet", perturbation=0.01),
        "dependent6": random_pbn(6, seed=21, multi_fraction=0.6, perturbation=0.02, contexts=3),
        "assa3-p0.2": load(examples / "bang_test2_perturbation0.2.pbn"),
    }


CASES = [("shmulevich3", "sync"), ("shmulevich3", "async"), ("faure10", "sync"), ("faure10", "async"),
         ("dependent6", "sync"), ("dependent6", "async"), ("assa3-p0.2", "sync")]


def burn_in(net, mode):
    lam = ref.second_eigenvalue(net, mode)
    return max(50, math.ceil(math.log(1e-9) / math.log(lam)))


def chi_square(counts: np.ndarray, pi: np.ndarray) -> tuple[float, float]:
    """Chi-square statistic and critical value, merging cells with expected count < 5."""
    N = counts.sum()
    exp = pi * N
    order = np.argsort(exp)
    obs_m, exp_m, acc_o, acc_e = [], [], 0.0, 0.0
    for k in order:
        acc_o += counts[k]
        acc_e += exp[k]
        if acc_e >= 5:
            obs_m.append(acc_o)
            exp_m.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0:
        obs_m[-1] += acc_o
        exp_m[-1] += acc_e
    obs_m, exp_m = np.array(obs_m), np.array(exp_m)
    chi2 = float(((obs_m - exp_m) ** 2 / exp_m).sum())
    return chi2, float(stats.chi2.ppf(1 - ALPHA, len(obs_m) - 1))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,mode", CASES)
def test_final_states_follow_stationary_distribution(examples, name, mode, backend):
    net = networks(examples)[name]
    pi = ref.stationary_distribution(net, mode)
    B = burn_in(net, mode)
    ds = simulate(net, steps=B, trajectories=64 * 300, mode=mode, seed=2024, backend=backend, keep_states=True)
    X = ds.final_state.values.astype(np.int64)
    idx = (X << np.arange(net.n)).sum(axis=1)
    counts = np.bincount(idx, minlength=1 << net.n).astype(float)
    chi2, crit = chi_square(counts, pi)
    assert chi2 < crit, f"chi2={chi2:.1f} >= {crit:.1f} (B={B})"


def asymptotic_variance(P: np.ndarray, pi: np.ndarray, f: np.ndarray) -> float:
    """sigma^2 of the time average of f: sum_x pi_x g_x (2 (Z g)_x - g_x), g = f - pi(f), Z fundamental."""
    N = len(pi)
    g = f - pi @ f
    Z = np.linalg.inv(np.eye(N) - P + np.outer(np.ones(N), pi))
    return float(pi @ (g * (2 * (Z @ g) - g)))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,mode", CASES)
def test_time_averages_match_exact(examples, name, mode, backend):
    net = networks(examples)[name]
    P = ref.transition_matrix(net, mode)
    pi = ref.stationary_distribution(net, mode)
    targets = (((0, 1),), ((1, 0), (net.n - 1, 1)))
    B, L, chains = burn_in(net, mode), 400, 64 * 64
    c = compile_pbn(net)
    zero = (np.zeros(net.n, bool), np.zeros(net.n, np.uint8))
    blk = Block(c, MODES[mode], targets, 77, 0, chains, *zero, B, (B, B + L // 2, B + L))
    out = advance_block(ShardContext("exact", 0, 0, backend), blk)
    registry.release("exact")
    for t, tgt in enumerate(targets):
        f = ref.target_mask(net, tgt).astype(float)
        exact = float(pi @ f)
        ones = int(out["pooled"][1:, t, 0].sum())
        est = ones / (chains * L)
        se = math.sqrt(max(asymptotic_variance(P, pi, f), 1e-300) / (chains * L))
        assert abs(est - exact) < 4.42 * se, f"target {tgt}: {est:.5f} vs exact {exact:.5f} (se {se:.2e})"
        # the two-state counts are consistent: entries - exits = change of occupancy
        n01 = int(out["pooled"][1:, t, 1].sum())
        n10 = int(out["pooled"][1:, t, 2].sum())
        assert n01 - n10 == int(out["pooled"][-1, t, 3]) - int(out["pooled"][0, t, 3])


def test_reference_matrix_is_stochastic(examples):
    for net in networks(examples).values():
        for mode in ("sync", "async"):
            P = ref.transition_matrix(net, mode)
            assert np.allclose(P.sum(axis=1), 1.0) and (P >= 0).all()
