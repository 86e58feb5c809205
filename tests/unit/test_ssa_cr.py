"""Method 'cr' (composition-rejection with exact group sums): its work array after arbitrary updates,
its selection law, and the cyclic chain's exact law. (Moments, errors and CPU == GPU bit identity
are in test_conformance.py and test_ssa_errors.py, which run every method.)"""

import math

import numpy as np
import pytest
from scipy.stats import chi2, poisson

from distsim.ssa import simulate
from distsim.ssa.generators import cyclic_chain, random_network
from distsim.ssa.methods import cr


def _check(a, aux):
    """Members are exactly the positive propensities, in segments by exponent group inside the window
    [lo, hi] with non-empty ends; positions invert the member array; mantissa sums are exact."""
    M = len(a)
    pos, perm, start, sh, sl, gv, meta = cr._layout(M)
    lo, hi, n = int(aux[meta]), int(aux[meta + 1]), int(aux[meta + 2])
    positive = [d for d in range(M) if a[d] > 0]
    assert n == len(positive) and sorted(int(aux[perm + p]) for p in range(n)) == positive
    assert all(int(aux[pos + int(aux[perm + p])]) == p for p in range(n))
    assert aux[:M].tolist() == list(a)
    if n:
        assert aux[start + lo] == 0 and aux[start + hi + 1] == n
        assert aux[start + lo] < aux[start + lo + 1] and aux[start + hi] < aux[start + hi + 1]
    else:
        assert lo > hi
    for e in range(cr.G):
        mem = [int(aux[perm + p]) for p in range(int(aux[start + e]), int(aux[start + e + 1]))] if lo <= e <= hi else []
        assert all(cr._split(a[d])[0] == e for d in mem)
        parts = [cr._split(a[d]) for d in mem]
        assert aux[sh + e] == sum(p[1] for p in parts) and aux[sl + e] == sum(p[2] for p in parts)
        if mem:  # exact: the mantissas times the group's unit add up to the propensities exactly
            unit = math.ldexp(1.0, max(e, 1) - 1075)
            assert all((p[1] * cr.TWO27 + p[2]) * unit == a[d] for p, d in zip(parts, mem))
            assert aux[gv + e] == cr._value(aux, sh, sl, e)


def test_cr_work_array_after_random_updates():
    rng = np.random.default_rng(0)
    M = 40
    a = np.zeros(M)
    aux = np.zeros(cr.aux_size(M))
    cr.reset(aux)
    _check(a, aux)
    for step in range(3000):
        d = int(rng.integers(M))
        r = rng.random()
        v = (0.0 if r < 0.3 else float(rng.integers(0, 20)) if r < 0.5 else 5e-324 * float(rng.integers(1, 1000))
             if r < 0.55 else float(np.exp(rng.normal(0, 30))))
        a[d] = v
        cr.update(a, aux, d, v)
        if step % 25 == 0:
            _check(a, aux)
    _check(a, aux)


@pytest.mark.parametrize("a", [[0.5, 3.0, 0.0, 1.25, 1e-3, 7.0, 7.5, 2.0],
                               [2.0**-1050 * 3, 0.0, 2.0**-1050 * 7, 2.0**-1050]], ids=["groups", "subnormal"])
def test_cr_selects_in_proportion(a):
    """Chi-square of 50,000 selections, 99.9% confidence. Subnormal propensities (2^-1050 here) are
    accepted with probability about 2^-28, so their member is found by the linear search after 64
    rejections."""
    a = np.array(a)
    aux = np.zeros(cr.aux_size(len(a)))
    cr.reset(aux)
    for d in range(len(a)):
        cr.update(a, aux, d, a[d])
    n = 50_000
    counts = np.zeros(len(a))
    for e in range(n):
        tau, u = cr.event(a, aux, np.uint64(e), 3, 5)
        counts[cr.select(a, aux, u)] += 1
    p = a / a.sum()
    ok = p > 1e-9
    assert counts[p == 0].sum() == 0
    stat = float((((counts - n * p) ** 2)[ok] / (n * p[ok])).sum())
    assert stat < chi2.isf(1e-3, ok.sum() - 1), stat


@pytest.mark.parametrize("n", [40, 300])
def test_cr_cyclic_chain_exact_law(n):
    """As test_ssa_warp_gpu.py's analytic check: species i at t is a sum of Bernoulli(p_m(t)),
    p_m = P(Poisson(t) = m mod n); events per realization ~ Poisson(n t); |Z| < 4.5 each."""
    R, t_end = 2000, 2.0
    ds = simulate(cyclic_chain(n), t_end=t_end, points=5, realizations=R, seed=23, backend="cpu", method="cr",
                  quantiles=None)
    for i, ti in enumerate(ds.time.values[1:], start=1):
        q = np.arange(0, 200 + n)
        p = np.bincount(q % n, weights=poisson.pmf(q, ti), minlength=n)
        var = np.sum(p * (1 - p))
        for s in (0, n // 2, n - 1):
            z = (ds["mean"].values[i, s] - 1.0) / math.sqrt(var / R)
            assert abs(z) < 4.5, (i, s, z)
    events = ds["events"].values.astype(float)
    assert abs((events.mean() - n * t_end) / math.sqrt(n * t_end / R)) < 4.5


def test_cr_equals_tree_in_distribution():
    """Random network: final means of every species and events per realization, two-sample |Z| < 4.5."""
    net = random_network(120, seed=5)
    kw = dict(t_end=1.0, points=3, realizations=3000, quantiles=None, backend="cpu")
    a = simulate(net, method="tree", seed=1, **kw)
    b = simulate(net, method="cr", seed=2, **kw)
    va, vb = a["variance"].values[-1], b["variance"].values[-1]
    ok = va + vb > 0
    z = (a["mean"].values[-1] - b["mean"].values[-1])[ok] / np.sqrt((va + vb)[ok] / 3000)
    assert np.all(np.abs(z) < 4.5), np.round(z[np.abs(z) >= 4.5], 2)
