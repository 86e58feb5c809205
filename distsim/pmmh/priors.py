"""Priors of the inferred parameters (all positive); the sampler works on phi = log theta, so each
prior's log density on phi is log p(theta) + phi (the Jacobian of theta = e^phi).

* ``gamma:SHAPE,RATE``: density proportional to theta^(shape-1) e^(-rate theta);
* ``lognormal:MU,SIGMA``: log theta ~ N(mu, sigma^2) (a normal prior on the log scale);
* ``uniform:LO,HI``: uniform on [lo, hi] (0 <= lo < hi);
* ``loguniform:LO,HI``: log theta uniform on [log lo, log hi] (0 < lo < hi).

(``mcmc.priors`` holds the DA-MCMC's conjugate gamma priors of mass-action rates; these are the
general priors a Metropolis-Hastings sampler can use.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scipy.special import gammaln

KINDS = {"gamma": 2, "lognormal": 2, "uniform": 2, "loguniform": 2}


@dataclass(frozen=True)
class Prior:
    kind: str
    a: float
    b: float

    def __post_init__(self) -> None:
        a, b = self.a, self.b
        if self.kind not in KINDS:
            raise ValueError(f"prior kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if not (math.isfinite(a) and math.isfinite(b)):
            raise ValueError(f"{self.kind} prior: parameters must be finite, got {a}, {b}")
        ok = {"gamma": a > 0 and b > 0, "lognormal": b > 0, "uniform": 0 <= a < b, "loguniform": 0 < a < b}
        if not ok[self.kind]:
            raise ValueError(f"{self} is not a proper prior of a positive parameter")

    def __str__(self) -> str:
        return f"{self.kind}:{self.a:g},{self.b:g}"

    def log_density_phi(self, phi: float) -> float:
        """log p(phi = log theta), up to a constant."""
        th = math.exp(phi)
        if self.kind == "gamma":
            return self.a * math.log(self.b) - gammaln(self.a) + self.a * phi - self.b * th
        if self.kind == "lognormal":
            return -0.5 * ((phi - self.a) / self.b) ** 2 - math.log(self.b) - 0.5 * math.log(2 * math.pi)
        if self.kind == "uniform":
            return phi - math.log(self.b - self.a) if self.a <= th <= self.b else -math.inf
        return -math.log(math.log(self.b / self.a)) if math.log(self.a) <= phi <= math.log(self.b) else -math.inf

    def center(self) -> float:
        """A starting value: the mean (gamma, uniform) or the median (lognormal, loguniform)."""
        if self.kind == "gamma":
            return self.a / self.b
        if self.kind == "lognormal":
            return math.exp(self.a)
        if self.kind == "uniform":
            return 0.5 * (self.a + self.b)
        return math.sqrt(self.a * self.b)

    def support(self) -> tuple[float, float]:
        """The bounds of theta."""
        if self.kind in ("uniform", "loguniform"):
            return self.a, self.b
        return 0.0, math.inf


def as_prior(name: str, spec: Any) -> Prior:
    """A :class:`Prior` from ``"gamma:2,1"``, ``("gamma", 2, 1)`` or a Prior."""
    if isinstance(spec, Prior):
        return spec
    if isinstance(spec, str):
        kind, _, rest = spec.partition(":")
        try:
            vals = [float(v) for v in rest.split(",")]
        except ValueError:
            raise ValueError(f"prior of {name!r}: {spec!r} is not KIND:A,B (e.g. gamma:2,1)") from None
        spec = (kind.strip().lower(), *vals)
    if not isinstance(spec, tuple) or len(spec) != 3:
        raise ValueError(f"prior of {name!r}: expected 'KIND:A,B' or (KIND, A, B), got {spec!r}")
    try:
        return Prior(str(spec[0]), float(spec[1]), float(spec[2]))
    except ValueError as e:
        raise ValueError(f"prior of {name!r}: {e}") from None
