"""distsim.mcmc.diagnostics computes R-hat, bulk ESS and tail ESS itself (no arviz-stats/scipy.stats
import at run time): here checked against arviz-stats, which it reproduces.

Tolerances: the tail ESS uses no normal quantile, so it is the same arithmetic as arviz-stats and is
compared exactly. R-hat and bulk ESS rank-normalise through the normal quantile, AS241 here and
Cephes ``ndtri`` in arviz-stats (both ~1e-16 relative, measured <= 1.1e-15 apart below); that
difference moves R-hat by <= 4e-16 and bulk ESS by <= 4.4e-15 relative on these 94 arrays (measured),
so they are compared to rtol 1e-12."""

import os
import statistics
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from distsim.mcmc import diagnostics as diag

ROOT = Path(__file__).resolve().parents[2]
RTOL = 1e-12


def _ar1(rng, phi, chains, draws):
    e = rng.normal(size=(chains, draws))
    x = np.empty((chains, draws))
    x[:, 0] = e[:, 0] / np.sqrt(1 - phi**2)
    for t in range(1, draws):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    return x


def _random_arrays():
    """(name, array): random shapes (1-8 chains, 4-699 draws, odd and even) of every kind of chain."""
    rng = np.random.default_rng(20261128)
    out = []
    for i in range(12):
        c, n = int(rng.integers(1, 9)), int(rng.integers(4, 700))
        out += [(f"iid{i}", rng.normal(size=(c, n))), (f"ar0.9_{i}", _ar1(rng, 0.9, c, n)),
                (f"ar-0.5_{i}", _ar1(rng, -0.5, c, n)), (f"cauchy{i}", rng.standard_cauchy(size=(c, n))),
                (f"poisson{i}", rng.poisson(0.5, size=(c, n)).astype(float)),
                (f"means{i}", rng.normal(size=(c, n)) + 3.0 * np.arange(c)[:, None]),
                (f"walk{i}", np.cumsum(rng.normal(size=(c, n)), axis=1))]
    mostly_zero = np.zeros((4, 100))
    mostly_zero[0, 0] = 1.0
    nan, inf, both, most_inf = (rng.normal(size=(4, 100)) for _ in range(4))
    nan[1, 3] = np.nan
    inf[1, 3] = np.inf
    both[1, 3], both[2, 5] = np.inf, -np.inf
    most_inf[:, :70] = np.inf  # the folded draws' median is inf: inf - inf
    out += [("2x4", rng.normal(size=(2, 4))), ("2x3", rng.normal(size=(2, 3))), ("1 chain", rng.normal(size=(1, 100))),
            ("constant", np.full((4, 100), 2.5)), ("mostly zero", mostly_zero), ("nan", nan), ("inf", inf),
            ("+-inf", both), ("mostly inf", most_inf), ("all nan", np.full((3, 10), np.nan))]
    return out


ARRAYS = _random_arrays()


def _arviz_stats(x):
    from arviz_stats.base import array_stats

    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        return (float(array_stats.rhat(x)), float(array_stats.ess(x, method="bulk")),
                float(array_stats.ess(x, method="tail", prob=(0.05, 0.95))))


@pytest.mark.parametrize("name,x", ARRAYS, ids=[a[0] for a in ARRAYS])
def test_equal_to_arviz_stats(name, x):
    pytest.importorskip("arviz_stats")
    r_ref, bulk_ref, tail_ref = _arviz_stats(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from the degenerate cases
        r, bulk, tail = diag.rhat(x), diag.ess_bulk(x), diag.ess_tail(x)
    np.testing.assert_allclose(r, r_ref, rtol=RTOL, atol=0)  # NaN where arviz-stats gives NaN
    np.testing.assert_allclose(bulk, bulk_ref, rtol=RTOL, atol=0)
    np.testing.assert_array_equal(tail, tail_ref)


def test_the_cases_the_comparison_covers():
    """The array set holds the cases named: NaN R-hat for one chain, NaN everything below 4 draws or
    with a NaN draw, antithetic chains with ESS > draws, shifted chains with R-hat >> 1."""
    got = {name: (diag.rhat(x), diag.ess_bulk(x), diag.ess_tail(x), x.size) for name, x in ARRAYS}
    assert np.isnan(got["1 chain"][0]) and got["1 chain"][1] > 0
    assert all(np.isnan(got[k][:3]).all() for k in ("2x3", "nan", "all nan"))
    assert np.isnan(got["constant"][0]) and got["constant"][1:3] == (400.0, 400.0)
    assert all(np.isfinite(got[k][:3]).all() for k in ("inf", "+-inf", "mostly inf", "2x4"))
    antithetic = [v for k, v in got.items() if k.startswith("ar-0.5") and v[3] >= 400]
    assert antithetic and all(bulk > size for _, bulk, _, size in antithetic)
    shifted = [v[0] for k, v in got.items() if k.startswith("means") and not np.isnan(v[0])]
    assert shifted and min(shifted) > 1.5


def test_chains_each_constant_at_different_values():
    """Each chain constant, the chains apart: the within-chain variance is rounding noise, so R-hat is
    ~1e16 in both (arviz-stats 3.2e16, here 9.1e16: the noise of the z-values' last bits); the ESS are
    the same."""
    pytest.importorskip("arviz_stats")
    x = np.repeat(np.arange(4.0)[:, None], 100, axis=1)
    r_ref, bulk_ref, tail_ref = _arviz_stats(x)
    assert diag.rhat(x) > 1e15 and r_ref > 1e15
    assert diag.ess_bulk(x) == pytest.approx(bulk_ref, rel=RTOL) and diag.ess_tail(x) == tail_ref


def test_normal_quantile():
    """AS241 against statistics.NormalDist (the same algorithm, scalar) to 1 ulp-ish and scipy's
    ndtri (Cephes) to 2e-15 relative, over the whole range the Blom offsets reach and beyond."""
    p = np.concatenate([np.linspace(1e-9, 1 - 1e-9, 20001), np.logspace(-300, -1, 600), 1 - np.logspace(-16, -1, 200)])
    z = diag.normal_quantile(p)
    nd = statistics.NormalDist()
    np.testing.assert_allclose(z, [nd.inv_cdf(float(v)) for v in p], rtol=4e-16, atol=1e-15)
    ndtri = pytest.importorskip("scipy.special").ndtri
    np.testing.assert_allclose(z, ndtri(p), rtol=2e-15, atol=0)
    edge = diag.normal_quantile(np.array([0.0, 1.0, 0.5, np.nan, -0.1, 1.1]))
    assert edge[0] == -np.inf and edge[1] == np.inf and edge[2] == 0.0 and np.isnan(edge[3:]).all()


def test_next_regular_is_scipy_next_fast_len():
    fftpack = pytest.importorskip("scipy.fftpack")
    targets = [*range(1, 5001), *range(10**6, 10**6 + 500), 2**40 + 1]
    assert [diag._next_regular(t) for t in targets] == [fftpack.next_fast_len(t) for t in targets]


def test_average_ranks_are_scipy_rankdata():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    x = rng.poisson(1.0, size=(5, 41)).astype(float)
    x[2, 7], x[0, 0], x[4, 40] = np.nan, np.inf, -np.inf
    np.testing.assert_array_equal(diag._average_ranks(x), stats.rankdata(x, method="average", nan_policy="omit"))


def test_convergence_table():
    """convergence: one row per posterior variable (dims chain, draw), the three columns."""
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(3, 50)), _ar1(rng, 0.9, 3, 50)
    ds = xr.Dataset({"a": (("chain", "draw"), a), "b": (("chain", "draw"), b), "ll": ("draw", a[0])})
    t = diag.convergence(ds)
    assert list(t.columns) == ["rhat", "ess_bulk", "ess_tail"] and list(t.index) == ["a", "b"]
    assert t.index.name == "variable"
    for k, x in (("a", a), ("b", b)):
        assert t.loc[k].tolist() == [diag.rhat(x), diag.ess_bulk(x), diag.ess_tail(x)]


def test_infer_rates_imports_neither_scipy_stats_nor_arviz_stats():
    """A new process's infer_rates (which calls convergence) imports neither: 1.2-2.9 s on the GPU machines."""
    code = ("import sys, warnings; warnings.simplefilter('ignore'); from pathlib import Path; "
            f"R = Path({str(ROOT)!r}); import distsim.ssa as s, distsim.mcmc as w; "
            "ds = w.infer_rates(s.load(R / 'examples/mcmc/michaelis_menten.rxn'), "
            "R / 'examples/mcmc/mm_observations.csv', "
            "prior={'k1': (2.0, 1000.0), 'k2': (2.0, 10.0), 'k3': (2.0, 10.0)}, chains=2, iterations=6, burn_in=0, "
            "seed=1, backend='cpu', progress=False); "
            "print('RHAT', len(ds['rhat'])); print('MODULES', sorted(m for m in sys.modules "
            "if m.split('.')[0] == 'arviz_stats' or m.startswith('scipy.stats')))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=900,
                       env={**os.environ, "DISTSIM_DISABLE_GPU": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "RHAT 3" in r.stdout and "MODULES []" in r.stdout, r.stdout[-2000:]
