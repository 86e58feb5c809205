"""The warp-per-realization SSA kernel (method 'warp', seed 004) against analytic laws and the CPU.

The warp kernel sums propensities in another order than the CPU, so it matches the CPU in
distribution (DSMTS statistics, two-sample tests), not bit for bit.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import poisson

from distsim.ssa import load, simulate
from distsim.ssa.generators import colloidal_aggregation, cyclic_chain, random_network
from distsim.ssa.gpu import warp_levels

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "unit"))
from test_ssa import DSMTS, N, check_dsmts, reference  # noqa: E402

LANES = [32, 16, 8, 4]


@pytest.fixture
def lanes(request, monkeypatch):
    """Run the warp kernel with this many lanes per realization instead of the automatic choice."""
    import distsim.ssa.gpu as g

    monkeypatch.setattr(g, "warp_lanes", lambda item_start, ensemble: request.param)
    return request.param


@pytest.mark.parametrize("lanes", LANES, indirect=True)
@pytest.mark.parametrize("case", ["00003", "00011", "00020", "00030", "00031"])
def test_warp_dsmts_cases(case, lanes):
    net = load(DSMTS / case / f"{case}-sbml-l3v1.xml")
    t, ref = reference(case)
    ds = simulate(net, t_end=float(t[-1]), points=len(t), realizations=N, seed=300 + int(case), backend="gpu",
                  method="warp", max_bins=4096)
    assert ds.attrs["method"] == "warp"
    for sp, (mu, sd) in ref.items():
        check_dsmts(ds, mu, sd, net.index(sp))


@pytest.mark.parametrize("lanes", LANES, indirect=True)
@pytest.mark.parametrize("n", [40, 300, 2000])  # one, two and three sum levels at 32 lanes
def test_warp_cyclic_chain_analytic(n, lanes):
    """One molecule per species; each hops along the ring at rate 1, independently. Species i at t is
    a sum of Bernoulli(p_m(t)), p_m = P(Poisson(t) = m mod n); firings per realization ~ Poisson(n t)."""
    assert len(warp_levels(n)[0]) == {40: 2, 300: 2, 2000: 3}[n]
    R, t_end = 4000, 4.0
    ds = simulate(cyclic_chain(n), t_end=t_end, points=9, realizations=R, seed=17, backend="gpu", method="warp",
                  max_bins=64)
    assert ds.attrs["backend"] == "gpu"
    t = ds.time.values
    mu = np.ones_like(t)
    var = np.zeros_like(t)
    for i, ti in enumerate(t):
        q = np.arange(0, 200 + n)
        p = np.bincount(q % n, weights=poisson.pmf(q, ti), minlength=n)
        var[i] = np.sum(p * (1 - p))
    for species in (0, n // 2, n - 1):
        check_dsmts(ds, mu, np.sqrt(var), species)
    events = ds["events"].values.astype(float)
    z = (events.mean() - n * t_end) / np.sqrt(n * t_end / R)
    assert abs(z) < 3, z
    assert int(ds["firings"].sum()) == int(events.sum())


@pytest.mark.parametrize("make", [lambda: random_network(300, seed=4), lambda: colloidal_aggregation(12)],
                         ids=["random-300", "aggregation-12"])
@pytest.mark.parametrize("lanes", LANES, indirect=True)
def test_warp_equals_cpu_tree_in_distribution(make, lanes):
    """Heterogeneous propensities: two-sample Z of the final mean of every species and of the events per
    realization, |Z| < 4.5 (two-sided 6.8e-6 each; Bonferroni over <= 301 tests: < 0.3% in all)."""
    net = make()
    R = 4000
    kw = dict(t_end=2.0, points=3, realizations=R, quantiles=None, keep_final=True)
    a = simulate(net, backend="cpu", method="tree", seed=1, **kw)
    b = simulate(net, backend="gpu", method="warp", seed=2, **kw)
    va, vb = a["variance"].values[-1], b["variance"].values[-1]
    ok = (va + vb) > 0
    z = (a["mean"].values[-1] - b["mean"].values[-1])[ok] / np.sqrt((va + vb)[ok] / R)
    assert np.all(np.abs(z) < 4.5), np.round(z[np.abs(z) >= 4.5], 2)
    ea, eb = a["events"].values.astype(float), b["events"].values.astype(float)
    ze = (ea.mean() - eb.mean()) / np.sqrt((ea.var(ddof=1) + eb.var(ddof=1)) / R)
    assert abs(ze) < 4.5, ze


def test_warp_auto_on_gpu_and_michaelis_menten():
    """'auto' picks the warp kernel for large models on a GPU; on MM (one sum level) warp agrees with direct."""
    ds = simulate(cyclic_chain(100), t_end=1.0, points=3, realizations=64, seed=3, backend="gpu")
    assert ds.attrs["method"] == "warp"
    net = load(ROOT / "examples" / "ssa" / "michaelis_menten.rxn")
    n = 4000
    a = simulate(net, t_end=100, points=11, realizations=n, seed=5, method="direct", backend="gpu")
    b = simulate(net, t_end=100, points=11, realizations=n, seed=6, method="warp", backend="gpu")
    se = np.sqrt((a["variance"].values + b["variance"].values) / n)[1:]
    z = (a["mean"].values - b["mean"].values)[1:] / se
    assert np.all(np.abs(z) < 4.5), np.round(z, 2)


@pytest.mark.parametrize("lanes", [32, 4], indirect=True)
def test_warp_same_seed_same_result_across_chunks(monkeypatch, lanes):
    """A realization depends only on (seed, realization): one launch == several launches (of 37
    realizations: not a whole number of thread blocks at 4 lanes)."""
    import distsim.ssa.gpu as g

    net = random_network(100, seed=2)
    kw = dict(t_end=1.0, points=5, realizations=300, seed=8, backend="gpu", method="warp", keep_trajectories=True)
    a = simulate(net, **kw)
    monkeypatch.setattr(g, "WARP_LAUNCH_BYTES", (5 * 100 * 4 + 100 * 8) * 37)
    b = simulate(net, **kw)
    assert np.array_equal(a["trajectory"].values, b["trajectory"].values)
    assert np.array_equal(a["events"].values, b["events"].values)
