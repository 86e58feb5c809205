"""Rank-normalised split R-hat and effective sample sizes (Vehtari, Gelman, Simpson, Carpenter and
Buerkner 2021, "Rank-normalization, folding, and localization"), the definitions ArviZ uses.

``x`` is [chain, draw]. ``rhat`` is the larger of the rank-normalised split R-hat of x and of its
folded version |x - median|; ``ess_bulk`` is the ESS of the rank-normalised split chains;
``ess_tail`` the smaller ESS of the 5% and 95% quantile indicators.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri
from scipy.stats import rankdata


def _split(x: np.ndarray) -> np.ndarray:
    n = x.shape[1] // 2
    return np.concatenate([x[:, :n], x[:, x.shape[1] - n:]], axis=0)


def _z_scale(x: np.ndarray) -> np.ndarray:
    r = rankdata(x, method="average").reshape(x.shape)
    return ndtri((r - 0.375) / (x.size + 0.25))


def _rhat(x: np.ndarray) -> float:
    m, n = x.shape
    if n < 2:
        return float("nan")
    means = x.mean(axis=1)
    w = x.var(axis=1, ddof=1).mean()
    b = n * means.var(ddof=1) if m > 1 else 0.0
    if w == 0:
        return float("nan")
    return float(np.sqrt(((n - 1) / n * w + b / n) / w))


def rhat(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=np.float64)
    if x.shape[1] < 4 or np.all(x == x.flat[0]):
        return float("nan")
    s = _split(x)
    return max(_rhat(_z_scale(s)), _rhat(_z_scale(np.abs(s - np.median(s)))))


def _autocov(x: np.ndarray) -> np.ndarray:
    n = x.shape[-1]
    m = 2 ** int(np.ceil(np.log2(2 * n)))
    f = np.fft.rfft(x - x.mean(axis=-1, keepdims=True), n=m)
    return np.fft.irfft(f * np.conj(f), n=m)[..., :n] / n


def _ess(x: np.ndarray) -> float:
    """ESS of [chain, draw]: Geyer's initial positive then monotone sequence (Stan; ArviZ's ``_ess``)."""
    m, n = x.shape
    if n < 4:
        return float("nan")
    if np.max(x) - np.min(x) < np.finfo(float).resolution:
        return float(x.size)
    acov = _autocov(x)
    mean_var = np.mean(acov[:, 0]) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if m > 1:
        var_plus += np.var(x.mean(axis=1), ddof=1)
    rho = np.zeros(n)
    rho[0] = even = 1.0
    rho[1] = odd = 1.0 - (mean_var - np.mean(acov[:, 1])) / var_plus
    t = 1
    while t < n - 3 and even + odd > 0.0:
        even = 1.0 - (mean_var - np.mean(acov[:, t + 1])) / var_plus
        odd = 1.0 - (mean_var - np.mean(acov[:, t + 2])) / var_plus
        if even + odd >= 0:
            rho[t + 1], rho[t + 2] = even, odd
        t += 2
    max_t = t - 2
    if even > 0:
        rho[max_t + 1] = even
    t = 1
    while t <= max_t - 2:
        if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
            rho[t + 1] = rho[t + 2] = (rho[t - 1] + rho[t]) / 2.0
        t += 2
    tau = -1.0 + 2.0 * np.sum(rho[: max_t + 1]) + np.sum(rho[max_t + 1: max_t + 2])
    tau = max(tau, 1.0 / np.log10(m * n))
    return float(m * n / tau)


def ess_bulk(x: np.ndarray) -> float:
    return _ess(_z_scale(_split(np.asarray(x, dtype=np.float64))))


def ess_tail(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=np.float64)
    lo, hi = np.quantile(x, [0.05, 0.95])
    return min(_ess(_split((x <= lo).astype(np.float64))), _ess(_split((x <= hi).astype(np.float64))))
