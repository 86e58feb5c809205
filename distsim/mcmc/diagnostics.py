"""Posterior summaries and convergence diagnostics of an MCMC Dataset (ArviZ layout: the data
variables are the posterior, each with dims (chain, draw)).

R-hat is the rank-normalised split R-hat (the larger of the bulk and folded versions) and the ESS
are the bulk and tail (5% and 95% quantile) effective sample sizes of Vehtari, Gelman, Simpson,
Carpenter and Buerkner (2021, doi:10.1214/20-BA1221).

They are computed here, in NumPy, by the algorithm of arviz-stats (``array_stats.rhat(x)``,
``array_stats.ess(x, method="bulk")`` and ``method="tail", prob=(0.05, 0.95)``, arviz-stats 0.8:
the same split chains, average ranks, Blom offset, FFT autocovariance, Geyer truncation, bounds and
NaN cases), because importing ``arviz_stats.base`` imports scipy.stats, scipy.signal and
scipy.optimize: measured 1.2-2.9 s of a new process's first infer_rates / pmmh.infer call on the
GPU machines, 0.5-0.6 s on a CPU machine after distsim's own imports (``scipy.special`` alone, for
``ndtri``, is ~0.3 s, so the normal quantile is Wichura's AS241, as in :class:`statistics.NormalDist`).
tests/unit/test_mcmc_diagnostics.py checks all three against arviz-stats on random arrays: the tail
ESS exactly, R-hat and bulk ESS to rtol 1e-12 (they differ only by the normal quantile's last bits,
AS241 here and Cephes ``ndtri`` there).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from ..errors import ConvergenceWarning

RHAT_MAX = 1.01  # Vehtari et al. 2021: use the draws only when R-hat < 1.01 ...
ESS_MIN = 400  # ... and the bulk ESS is at least 400 (100 per chain for 4 chains)
MIN_DRAWS = 4  # fewer draws per chain: R-hat and ESS are NaN (as in arviz-stats)
TAIL_PROB = (0.05, 0.95)  # the quantiles of the tail ESS

# Wichura (1988), Algorithm AS241 (PPND16): numerator and denominator coefficients, highest power first
_AS241 = (
    ((2.5090809287301226727e+3, 3.3430575583588128105e+4, 6.7265770927008700853e+4, 4.5921953931549871457e+4,
      1.3731693765509461125e+4, 1.9715909503065514427e+3, 1.3314166789178437745e+2, 3.3871328727963666080e+0),
     (5.2264952788528545610e+3, 2.8729085735721942674e+4, 3.9307895800092710610e+4, 2.1213794301586595867e+4,
      5.3941960214247511077e+3, 6.8718700749205790830e+2, 4.2313330701600911252e+1, 1.0)),
    ((7.7454501427834140764e-4, 2.2723844989269184583e-2, 2.4178072517745061177e-1, 1.2704582524523683826e+0,
      3.6478483247632046050e+0, 5.7694972214606914055e+0, 4.6303378461565452959e+0, 1.4234371107496835773e+0),
     (1.0507500716444168432e-9, 5.4759380849953449460e-4, 1.5198666563616457197e-2, 1.4810397642748007459e-1,
      6.8976733498510000455e-1, 1.6763848301838038494e+0, 2.0531916266377588219e+0, 1.0)),
    ((2.0103343992922881326e-7, 2.7115555687434875781e-5, 1.2426609473880784386e-3, 2.6532189526576123093e-2,
      2.9656057182850489123e-1, 1.7848265399172913358e+0, 5.4637849111641143699e+0, 6.6579046435011037772e+0),
     (2.0442631033899397856e-15, 1.4215117583164458887e-7, 1.8463183175100546818e-5, 7.8686913114561329059e-4,
      1.4875361290850614853e-2, 1.3692988092273580531e-1, 5.9983220655588793769e-1, 1.0)),
)


def _horner(coefs: tuple[float, ...], r: np.ndarray) -> np.ndarray:
    out = np.full_like(r, coefs[0])
    for c in coefs[1:]:
        out = out * r + c
    return out


def normal_quantile(p: np.ndarray) -> np.ndarray:
    """The standard normal quantile of each ``p`` in (0, 1) (-inf at 0, inf at 1, NaN outside or
    at NaN): Wichura's AS241, relative error ~1e-16, vectorised ``statistics.NormalDist().inv_cdf``."""
    p = np.asarray(p, dtype=np.float64)
    x = np.full(p.shape, np.nan)
    q = p - 0.5
    central = np.abs(q) <= 0.425
    r = 0.180625 - q[central] * q[central]
    num, den = _AS241[0]
    x[central] = _horner(num, r) * q[central] / _horner(den, r)
    tail = (np.abs(q) > 0.425) & (p > 0) & (p < 1)
    r = np.sqrt(-np.log(np.where(q[tail] <= 0.0, p[tail], 1.0 - p[tail])))
    xt = np.empty_like(r)
    for near, (num, den), shift in ((r <= 5.0, _AS241[1], 1.6), (r > 5.0, _AS241[2], 5.0)):
        rs = r[near] - shift
        xt[near] = _horner(num, rs) / _horner(den, rs)
    x[tail] = np.where(q[tail] < 0.0, -xt, xt)
    x[p == 0] = -np.inf
    x[p == 1] = np.inf
    return x


def _next_regular(target: int) -> int:
    """The smallest 2^a 3^b 5^c >= target (``scipy.fftpack.next_fast_len``, the FFT length of
    arviz-stats' autocovariance)."""
    if target <= 6:
        return max(int(target), 1)
    best = 1 << (target - 1).bit_length()  # a power of two is regular
    p5 = 1
    while p5 < target:
        p35 = p5
        while p35 < target:
            best = min(best, p35 << max(0, -(-target // p35) - 1).bit_length())
            p35 *= 3
        best = min(best, p35)
        p5 *= 5
    return min(best, p5)


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of the flattened ``x`` among its non-NaN values, ties given their average rank,
    NaN at NaN (``scipy.stats.rankdata(x, "average", nan_policy="omit")``)."""
    flat = x.ravel()
    ranks = np.full(flat.shape, np.nan)
    ok = ~np.isnan(flat)
    v = flat[ok]
    order = np.argsort(v, kind="stable")
    s = v[order]
    first = np.concatenate(([True], s[1:] != s[:-1]))
    bounds = np.flatnonzero(np.concatenate((first, [True])))  # start of each tie group, then n
    group_rank = 0.5 * (bounds[:-1] + 1 + bounds[1:])  # mean of the ranks start+1 .. end
    r = np.empty(v.shape)
    r[order] = group_rank[np.cumsum(first) - 1]
    ranks[ok] = r
    return ranks


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Rank-normalised ``x``: the normal quantiles of (rank - 3/8) / (n - 3/4 + 1) (Blom 1958;
    n counts every element, NaN included, as arviz-stats does)."""
    c = 3 / 8
    return normal_quantile((_average_ranks(x) - c) / (x.size - 2 * c + 1)).reshape(x.shape)


def _split_chains(x: np.ndarray) -> np.ndarray:
    """Each chain's first and last ``draws // 2`` draws as two chains (the middle draw of an odd
    number dropped)."""
    half = x.shape[1] // 2
    return np.vstack((x[:, :half], x[:, -half:]))


def _not_valid(x: np.ndarray, min_chains: int) -> bool:
    return bool(np.isnan(x).any()) or x.shape[0] < min_chains or x.shape[1] < MIN_DRAWS


def _rhat(x: np.ndarray) -> float:
    """Gelman-Rubin R-hat of the chains (rows) of ``x``."""
    n = x.shape[1]
    between = n * np.var(np.mean(x, axis=1), axis=None, ddof=1)
    within = np.mean(np.var(x, axis=1, ddof=1))
    return np.sqrt((between / within + n - 1) / n)


def _ess(x: np.ndarray) -> float:
    """ESS of the chains (rows) of ``x``: FFT autocovariance, Geyer's initial positive then initial
    monotone sequence, tau at least 1 / log10(draws) (arviz-stats ``_ess``)."""
    x = np.asarray(x, dtype=np.float64)
    if (np.max(x) - np.min(x)) < np.finfo(float).resolution:
        return float(x.size)
    n_chain, n_draw = x.shape
    m = _next_regular(2 * n_draw)
    xc = x - x.mean(1, keepdims=True)
    f = np.fft.rfft(xc, n=m, axis=1)
    f *= np.conjugate(f)
    acov = np.fft.irfft(f, n=m, axis=1)[:, :n_draw]
    acov /= n_draw
    chain_mean = x.mean(axis=1)
    mean_var = np.mean(acov[:, 0]) * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus += np.var(chain_mean, axis=None, ddof=1)
    rho = np.zeros(n_draw)
    rho_even = 1.0
    rho[0] = rho_even
    rho_odd = 1.0 - (mean_var - np.mean(acov[:, 1])) / var_plus
    rho[1] = rho_odd
    t = 1  # Geyer's initial positive sequence
    while t < (n_draw - 3) and (rho_even + rho_odd) > 0.0:
        rho_even = 1.0 - (mean_var - np.mean(acov[:, t + 1])) / var_plus
        rho_odd = 1.0 - (mean_var - np.mean(acov[:, t + 2])) / var_plus
        if (rho_even + rho_odd) >= 0:
            rho[t + 1] = rho_even
            rho[t + 2] = rho_odd
        t += 2
    max_t = t - 2
    if rho_even > 0:
        rho[max_t + 1] = rho_even
    t = 1  # Geyer's initial monotone sequence
    while t <= max_t - 2:
        if (rho[t + 1] + rho[t + 2]) > (rho[t - 1] + rho[t]):
            rho[t + 1] = (rho[t - 1] + rho[t]) / 2.0
            rho[t + 2] = rho[t + 1]
        t += 2
    ess = n_chain * n_draw
    tau = -1.0 + 2.0 * np.sum(rho[: max_t + 1]) + np.sum(rho[max_t + 1: max_t + 2])
    tau = max(tau, 1 / np.log10(ess))  # Python's max: a NaN tau stays NaN (then ess is NaN below)
    return np.nan if np.isnan(rho).any() else float(ess / tau)


def rhat(x: np.ndarray) -> float:
    """Rank-normalised split R-hat of a (chain, draw) array: the larger of the bulk and folded
    versions; NaN for one chain, fewer than 4 draws or any NaN draw."""
    x = np.asarray(x, dtype=np.float64)
    if _not_valid(x, min_chains=2):
        return np.nan
    split = _split_chains(x)
    with np.errstate(divide="ignore", invalid="ignore"):  # constant chains: 0/0, NaN as in arviz-stats
        bulk = _rhat(_z_scale(split))
        tail = _rhat(_z_scale(abs(split - np.median(split))))
    return float(max(bulk, tail))  # as arviz-stats: Python's max, so a NaN bulk R-hat wins


def ess_bulk(x: np.ndarray) -> float:
    """Bulk ESS of a (chain, draw) array: the ESS of the rank-normalised split chains; NaN for fewer
    than 4 draws or any NaN draw."""
    x = np.asarray(x, dtype=np.float64)
    if _not_valid(x, min_chains=1):
        return np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        return _ess(_z_scale(_split_chains(x)))


def ess_tail(x: np.ndarray, prob: tuple[float, float] = TAIL_PROB) -> float:
    """Tail ESS of a (chain, draw) array: the smaller of the ESS of the indicators draw <= the
    ``prob`` quantiles (linear interpolation over all draws) of the split chains; NaN for fewer
    than 4 draws or any NaN draw."""
    x = np.asarray(x, dtype=np.float64)
    if _not_valid(x, min_chains=1):
        return np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        low, high = (_ess(_split_chains(x <= np.quantile(x, p))) for p in prob)
    return float(min(low, high))


def posterior_variables(ds: xr.Dataset) -> list[str]:
    """The data variables with dims (chain, draw, ...): the posterior."""
    return [str(v) for v, da in ds.data_vars.items() if da.dims[:2] == ("chain", "draw")]


def convergence(ds: xr.Dataset) -> pd.DataFrame:
    """R-hat, bulk ESS and tail ESS per posterior variable (NaN where undefined: one chain for
    R-hat, fewer than 4 draws for all three)."""
    rows = {}
    for v in posterior_variables(ds):
        x = np.asarray(ds[v].transpose("chain", "draw").values, dtype=np.float64)
        rows[v] = (rhat(x), ess_bulk(x), ess_tail(x))
    return pd.DataFrame.from_dict(rows, orient="index", columns=["rhat", "ess_bulk", "ess_tail"]).rename_axis(
        "variable")


def interval_columns(prob: float) -> tuple[str, str]:
    """Names of the central ``prob`` interval's ends: ``("2.5%", "97.5%")`` for 0.95."""
    lo = (1 - prob) / 2
    return f"{100 * lo:.6g}%", f"{100 * (1 - lo):.6g}%"


def summary(ds: xr.Dataset, prob: float = 0.95) -> pd.DataFrame:
    """One row per posterior variable: ``mean``, ``sd``, the ends of the central ``prob`` interval
    (columns named by their quantile, e.g. ``2.5%`` and ``97.5%``), ``rhat``, ``ess_bulk`` and
    ``ess_tail``. Mean, sd (ddof=1) and quantiles are over all chains' finite draws."""
    if not 0 < prob < 1:
        raise ValueError(f"prob must be in (0, 1), got {prob!r}")
    lo_col, hi_col = interval_columns(prob)
    lo = (1 - prob) / 2
    rows = {}
    for v in posterior_variables(ds):
        x = np.asarray(ds[v].values, dtype=np.float64).ravel()
        x = x[np.isfinite(x)]
        q = np.quantile(x, [lo, 1 - lo]) if x.size else (np.nan, np.nan)
        rows[v] = {"mean": x.mean() if x.size else np.nan, "sd": x.std(ddof=1) if x.size > 1 else np.nan,
                   lo_col: q[0], hi_col: q[1]}
    table = pd.DataFrame.from_dict(rows, orient="index", columns=["mean", "sd", lo_col, hi_col], dtype=np.float64)
    return table.rename_axis("variable").join(convergence(ds))


def warn_if_not_converged(ds: xr.Dataset) -> None:
    """A :class:`~distsim.errors.ConvergenceWarning` naming every variable whose stored ``rhat`` is
    > 1.01 or ``ess_bulk`` < 400 (or not computable: fewer than 4 draws)."""
    diag = pd.DataFrame({k: ds[k].values for k in ("rhat", "ess_bulk")}, index=ds["variable"].values)
    bad_rhat = diag.index[diag["rhat"] > RHAT_MAX]
    bad_ess = diag.index[~(diag["ess_bulk"] >= ESS_MIN)]
    if len(bad_rhat) == 0 and len(bad_ess) == 0:
        return
    parts = []
    if len(bad_rhat):
        parts.append(f"R-hat > {RHAT_MAX} for " + ", ".join(f"{v} ({diag.at[v, 'rhat']:.3g})" for v in bad_rhat))
    if len(bad_ess):
        parts.append(f"bulk ESS < {ESS_MIN} for " + ", ".join(f"{v} ({diag.at[v, 'ess_bulk']:.3g})"
                                                           for v in bad_ess))
    warnings.warn(f"the chains have not converged: {'; '.join(parts)}. Run more iterations (or more chains, "
                  "or a longer burn-in) before using these draws.", ConvergenceWarning, stacklevel=3)
