"""Statistics of the steady-state estimator, computed from exact integer counts.

* Gelman & Rubin (1992) potential scale reduction from per-chain counts of steps in the target
  set over a window of psi steps.
* The two-state Markov chain approach (Raftery & Lewis 1992; seed 000 Algorithm 1, line 8):
  burn-in M and sample size N from the estimated transition probabilities alpha (0->1) and
  beta (1->0) of the 0/1 process "in the target set".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np


def exact_sums(counts: np.ndarray) -> tuple[int, int]:
    """(sum c, sum c**2) of non-negative integer counts, exactly (Python ints, no overflow)."""
    c = np.asarray(counts, dtype=np.uint64)
    if c.size == 0:
        return 0, 0
    top = int(c.max())
    chunk = max(1, (2**63 - 1) // max(top * top, 1))
    s1 = s2 = 0
    for k in range(0, c.size, chunk):
        part = c[k:k + chunk]
        s1 += int(np.sum(part, dtype=np.uint64))
        s2 += int(np.sum(part * part, dtype=np.uint64))
    return s1, s2


@dataclass(frozen=True)
class ChainSums:
    """Sufficient statistics of per-chain 0/1 windows: chains, window length, sum c, sum c^2."""

    chains: int
    psi: int
    s1: int
    s2: int

    def __add__(self, other: "ChainSums") -> "ChainSums":
        assert self.psi == other.psi
        return ChainSums(self.chains + other.chains, self.psi, self.s1 + other.s1, self.s2 + other.s2)


def between_variance(s: ChainSums) -> float:
    """Gelman-Rubin's B = n * (variance of the chain means), n = psi.

    For chains at stationarity and n much longer than the autocorrelation time, B estimates the
    asymptotic variance of the time average (sigma^2 in sqrt(N) (estimate - p) -> Normal(0,
    sigma^2)), with no assumption that the 0/1 process is Markov.
    """
    w, n = s.chains, s.psi
    if w < 2:
        return math.nan
    return (w * s.s2 - s.s1 * s.s1) / (w * n * (w - 1))


def rhat(s: ChainSums) -> float:
    """Potential scale reduction factor for 0/1 chains (Gelman & Rubin 1992).

    With n = psi values per chain and omega chains: B = n/(omega-1) sum (mu_i - mu)^2,
    W = mean within-chain variance, sigma^2 = (n-1)/n W + B/n, R = sqrt(sigma^2 / W).
    (Seed 000's Algorithm 2 prints 1/omega where Gelman & Rubin have 1/n; with many chains the
    printed form would make R insensitive to B, so the published formula is used.)
    """
    w, n = s.chains, s.psi
    if w < 2 or n < 2:
        return math.inf
    # exact rational arithmetic on the integer sums
    ss_between = w * s.s2 - s.s1 * s.s1  # = w * n^2 * sum (mu_i - mu)^2
    ss_within = n * s.s1 - s.s2  # = sum c_i (n - c_i) = n (n-1) * sum s_i^2
    if ss_within == 0:
        return 1.0 if ss_between == 0 else math.inf
    B = ss_between / (w * n * (w - 1))  # n/(w-1) * sum (mu_i - mu)^2
    W = ss_within / (n * (n - 1) * w)
    sigma2 = (n - 1) / n * W + B / n
    return math.sqrt(sigma2 / W)


@dataclass(frozen=True)
class TwoState:
    """Pooled counts of the 0/1 process over a sample window of ``size`` states (all chains)."""

    size: int  # states in the sample (= transitions counted)
    ones: int  # states of the sample in the target set
    n01: int
    n10: int
    from1: int  # transitions that start in the set

    @property
    def from0(self) -> int:
        return self.size - self.from1

    @property
    def alpha(self) -> float:
        return self.n01 / self.from0 if self.from0 else math.nan

    @property
    def beta(self) -> float:
        return self.n10 / self.from1 if self.from1 else math.nan

    @property
    def estimate(self) -> float:
        return self.ones / self.size if self.size else math.nan

    @property
    def identifiable(self) -> bool:
        """Both transitions seen: alpha and beta are positive and the formulas apply."""
        return self.n01 > 0 and self.n10 > 0


def z_value(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 * (1.0 + confidence))


def sample_size(alpha: float, beta: float, precision: float, confidence: float) -> int:
    """N = alpha beta (2 - alpha - beta) / (alpha + beta)^3 * (Phi^-1((1+s)/2) / r)^2 (seed 000, Alg. 1)."""
    return required_size(two_state_variance(alpha, beta), precision, confidence)


def burn_in(alpha: float, beta: float, epsilon: float) -> int:
    """M = log(eps (alpha+beta) / max(alpha, beta)) / log|1 - alpha - beta| (seed 000, Alg. 1)."""
    a, b = alpha, beta
    lam = abs(1.0 - a - b)
    if lam == 0.0:
        return 1
    if lam >= 1.0:
        return math.inf  # type: ignore[return-value]
    return max(1, math.ceil(math.log(epsilon * (a + b) / max(a, b)) / math.log(lam)))


def two_state_variance(alpha: float, beta: float) -> float:
    """Asymptotic variance of the time average of a two-state Markov chain: ab(2-a-b)/(a+b)^3."""
    return alpha * beta * (2 - alpha - beta) / (alpha + beta) ** 3


def required_size(variance: float, precision: float, confidence: float) -> int:
    """Sample size for half-width ``precision``: variance * (Phi^-1((1+s)/2) / r)^2."""
    return math.ceil(variance * (z_value(confidence) / precision) ** 2)


def half_width(t: TwoState, confidence: float, variance: float | None = None) -> float:
    """Achieved half-width z * sqrt(variance / size); variance defaults to the two-state one."""
    if variance is None:
        if not t.identifiable:
            return math.nan
        variance = two_state_variance(t.alpha, t.beta)
    return z_value(confidence) * math.sqrt(variance / t.size)
