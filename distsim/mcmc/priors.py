"""Gamma priors for the rate parameters of mass-action reactions (seed 003, section 3.1).

theta_p ~ Gamma(shape, rate) (density proportional to theta^(shape-1) exp(-rate theta)); the
improper 1/theta prior is the limit shape = rate = 0 and is used only on request. A parameter
shared by several reactions gets one posterior Gamma(shape + sum_j r_j, rate + sum_j b_j).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..errors import ModelError
from ..models.reactions import ReactionNetwork


@dataclass(frozen=True)
class GammaPrior:
    shape: float
    rate: float

    @property
    def improper(self) -> bool:
        return self.shape == 0.0 and self.rate == 0.0


IMPROPER = GammaPrior(0.0, 0.0)


@dataclass(frozen=True)
class RateModel:
    """Which parameter each reaction's rate is, the priors, and the initial values."""

    names: tuple[str, ...]  # inferred parameters
    param_of: np.ndarray  # int32 [M]: index into names, or -1 for a fixed numeric rate
    fixed_theta: np.ndarray  # float64 [M]: the rate of reactions with a numeric rate (else 0)
    shape: np.ndarray  # float64 [P]
    rate: np.ndarray  # float64 [P]
    initial: np.ndarray  # float64 [P]: the model file's values

    def theta_reactions(self, theta: np.ndarray) -> np.ndarray:
        """Per-reaction rates from per-parameter values."""
        return np.where(self.param_of >= 0, theta[np.maximum(self.param_of, 0)], self.fixed_theta)

    def reactions_of(self, p: int, net: ReactionNetwork) -> str:
        return "; ".join(_reaction_text(net, j) for j in np.flatnonzero(self.param_of == p))


def parse_prior_spec(text: str) -> tuple[str, GammaPrior]:
    """``NAME=gamma:SHAPE,RATE`` (the CLI's ``--prior``) or ``NAME=improper``."""
    if "=" not in text:
        raise ValueError(f"--prior {text!r}: expected NAME=gamma:SHAPE,RATE")
    name, spec = (s.strip() for s in text.split("=", 1))
    if spec.lower() in ("improper", "1/theta"):
        return name, IMPROPER
    if not spec.lower().startswith("gamma:"):
        raise ValueError(f"--prior {text!r}: expected NAME=gamma:SHAPE,RATE (or NAME=improper)")
    parts = spec[6:].split(",")
    try:
        shape, rate = (float(v) for v in parts)
    except ValueError:
        raise ValueError(f"--prior {text!r}: SHAPE and RATE must be two numbers") from None
    return name, GammaPrior(shape, rate)


def rate_model(net: ReactionNetwork, prior: Mapping[str, object] | None, improper: bool = False) -> RateModel:
    """Check that every reaction is mass action and every rate parameter has a prior."""
    net.require_plain("rate inference")
    names, param_of, fixed = _rate_parameters(net)
    prior = dict(prior or {})
    unknown = [k for k in prior if k not in names]
    if unknown:
        raise ValueError(f"prior given for {unknown[0]!r}, which is not a rate parameter of a reaction "
                         f"(parameters: {', '.join(names)})")
    priors = [_gamma_prior(n, prior.get(n), improper) for n in names]
    init = np.array([net.params[n] for n in names], dtype=np.float64)
    for n, v in zip(names, init):
        if not v > 0:
            raise ValueError(f"initial value of {n!r} in the model is {v}; the sampler starts from the model's "
                             "values and needs them > 0")
    return RateModel(tuple(names), param_of, fixed, np.array([p.shape for p in priors]),
                     np.array([p.rate for p in priors]), init)


def _rate_parameters(net: ReactionNetwork) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The named rate parameters (first use first), each reaction's parameter index (-1: a numeric
    rate) and the numeric rates; every reaction must be mass action."""
    src = net.source or None
    names: list[str] = []
    param_of = np.full(net.n_reactions, -1, dtype=np.int32)
    fixed = np.zeros(net.n_reactions)
    for j, r in enumerate(net.reactions):
        if not r.mass_action:
            raise ModelError(f"{_reaction_text(net, j)}: rate inference needs mass-action reactions "
                             "(propensity theta * h(x)); this one has a general kinetic law", file=src)
        if isinstance(r.rate, str):
            if r.rate not in names:
                names.append(r.rate)
            param_of[j] = names.index(r.rate)
        else:
            fixed[j] = float(r.rate)
    if not names:
        raise ModelError("no reaction has a named rate parameter to infer", file=src)
    return names, param_of, fixed


def _gamma_prior(n: str, given: object, improper: bool) -> GammaPrior:
    """The checked prior of parameter ``n`` from the one ``given`` (None: the improper prior, if allowed)."""
    pr = given
    if pr is None:
        if not improper:
            raise ValueError(f"no prior for rate parameter {n!r}: give gamma(shape, rate) for every parameter "
                             "(or request the improper 1/theta prior explicitly)")
        pr = IMPROPER
    if isinstance(pr, str):
        pr = parse_prior_spec(f"{n}={pr}")[1]
    if isinstance(pr, tuple):
        pr = GammaPrior(float(pr[0]), float(pr[1]))
    if not isinstance(pr, GammaPrior):
        raise TypeError(f"prior for {n!r} must be (shape, rate), a GammaPrior or 'improper', got {pr!r}")
    if not pr.improper and not (pr.shape > 0 and pr.rate > 0 and math.isfinite(pr.shape) and math.isfinite(pr.rate)):
        raise ValueError(f"prior for {n!r}: gamma shape and rate must be finite and > 0 (or both 0 for the "
                         f"improper 1/theta prior), got shape={pr.shape}, rate={pr.rate}")
    return pr


def _reaction_text(net: ReactionNetwork, j: int) -> str:
    r = net.reactions[j]

    def side(terms):
        return " + ".join((f"{s} " if s > 1 else "") + net.species[i] for i, s in terms) or "0"

    label = f"{r.name}: " if r.name else ""
    rate = f" ({r.rate})" if isinstance(r.rate, str) else ""
    return f"reaction {j + 1} '{label}{side(r.reactants)} -> {side(r.products)}'{rate}"
