"""The inference problem and the bootstrap particle filter whose particles are exact SSA realizations.

Random numbers (Philox, :mod:`distsim.rng`): a filter has a key word ``key`` (chain c of seed s:
``derive_seeds(s, c, CHAIN_DOMAIN)``; repeat r of the particle-number check: ``derive_seeds(s, r,
CHECK_DOMAIN)``) and an iteration ``it``. Particle p over observation interval i (numbered across the
experiments) draws its SSA events from key (key, p), counter (event, it * n_intervals + i, 0, 0)
(:mod:`distsim.ssa.advance`); the systematic resampling after interval i uses key (key, CHAIN_RID),
counter (it, i, 0, 1). So a filter's estimate depends on (seed, chain, iteration) alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..errors import ModelError
from ..models.compile_events import parameter_slots
from ..models.compile_reactions import CompiledNetwork, compile_network
from ..models.reactions import ReactionNetwork
from ..rng import philox, uniform_f64
from ..ssa.advance import advance
from ..ssa.errors import ERR_MASK, ERR_MAX_EVENTS, ERR_NONE, describe
from ..ssa.methods import METHODS
from .observation import CompiledExperiment, CompiledObservable, log_weights, noise_values
from .priors import Prior

CHAIN_DOMAIN = 0x504D4D48  # "PMMH"
CHECK_DOMAIN = 0x504D4843  # "PMHC"
CHAIN_RID = 0xFFFFFFFF  # key word 1 of a chain's own draws (particles are < 2**32 - 1)
MAX_PARTICLES = 2**24


@dataclass(frozen=True)
class Problem:
    """Everything a filter needs (shipped to the workers with each task)."""

    net: ReactionNetwork
    method: str
    names: tuple[str, ...]  # inferred parameters
    priors: tuple[Prior, ...]
    initial: np.ndarray  # float64 [P]: the chains' starting values (linear scale)
    observables: tuple[CompiledObservable, ...]
    experiments: tuple[CompiledExperiment, ...]
    max_events: int

    @property
    def n_intervals(self) -> int:
        return sum(len(e.times) for e in self.experiments)

    @property
    def compiled(self) -> CompiledNetwork:
        return compile_network(self.net)

    def values(self, theta: np.ndarray, ex: CompiledExperiment | None = None) -> dict[str, float]:
        """Every parameter's value: the model's, the condition's fixed ones, then the inferred ``theta``."""
        v = dict(self.net.params)
        if ex is not None:
            v.update(ex.fixed)
        v.update({n: float(t) for n, t in zip(self.names, theta)})
        return v

    def tables(self, values: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
        """(theta [M], law_arg [L]) of the compiled network at these parameter values."""
        c = self.compiled
        theta_at, law_at = _slots(self.net, c)
        th, la = np.array(c.theta, np.float64), np.array(c.law_arg, np.float64)
        for name, v in values.items():
            for j in theta_at.get(name, ()):
                th[j] = float(v)
            for q in law_at.get(name, ()):
                la[q] = float(v)
        return th, la


_SLOTS: dict[str, tuple[dict, dict]] = {}


def _slots(net: ReactionNetwork, c: CompiledNetwork) -> tuple[dict, dict]:
    hit = _SLOTS.get(c.digest)
    if hit is None:
        hit = _SLOTS[c.digest] = parameter_slots(net, c.law_start)
    return hit


def check_network(net: ReactionNetwork) -> None:
    """The SSA particles support every kinetic law, but not (yet) events, rules or time-dependent laws."""
    if net.has_hooks:
        net.require_plain("particle MCMC")
        raise ModelError("particle MCMC does not support SBML events or assignment rules yet", file=net.source or None)


def _uniform(key: int, c0: int, c1: int, c2: int, c3: int) -> float:
    w = philox(np.array([c0, c1, c2, c3], np.uint32), np.array([key, CHAIN_RID], np.uint32))
    return float(uniform_f64(w[0], w[1]))


def systematic(lw: np.ndarray, u: float) -> np.ndarray:
    """Systematic resampling: the ancestor of each of N particles from log weights ``lw`` and one uniform."""
    w = np.exp(lw - lw.max())
    cum = np.cumsum(w)
    pos = (u + np.arange(lw.size)) * (cum[-1] / lw.size)
    return np.minimum(np.searchsorted(cum, pos, side="right"), lw.size - 1)


def log_likelihood(pr: Problem, theta: np.ndarray, particles: int, key: int, it: int, backend: str = "cpu"
                   ) -> tuple[float, int]:
    """The bootstrap filter's estimate of log p(data | theta) (unbiased in the likelihood) and the SSA
    events fired; -inf when every particle has zero weight at some measurement. ``backend`` 'gpu':
    the particles advance on the current GPU (the same bits); the weights are computed on the host."""
    c = pr.compiled
    if backend == "gpu":
        from ..ssa.gpu_advance import advance_gpu

        move, method = advance_gpu, METHODS[pr.method]
    else:
        move, method = advance, METHODS[pr.method].cpu
    n_int = pr.n_intervals
    total, fired, gi = 0.0, 0, 0
    for ex in pr.experiments:
        values = pr.values(theta, ex)
        th, la = pr.tables(values)
        noise = noise_values(pr.observables, values)
        X = np.repeat(ex.x0[None, :], particles, axis=0)
        t_prev = 0.0
        for k, t in enumerate(ex.times):
            events, errors = move(c, method, X, th, la, float(t) - t_prev, key=key, e_hi=it * n_int + gi,
                                     max_events=pr.max_events)
            fired += int(events.sum())
            lw = log_weights(pr.observables, ex.data[k], X, values, noise)
            bad = errors != ERR_NONE
            if bad.any():
                word = int(errors[np.flatnonzero(bad)[0]])
                if word & ERR_MASK != ERR_MAX_EVENTS:
                    p = int(np.flatnonzero(bad)[0])
                    raise RuntimeError(describe(pr.net, word, p, f"{ex.source}, t={t_prev:g} to {t:g}, theta "
                                                f"{dict(zip(pr.names, np.round(theta, 6)))}", key, None, X[p], None))
                lw[bad] = -np.inf  # too many events: such a particle cannot explain the data (weight 0)
            m = float(lw.max())
            if m == -math.inf or math.isnan(m):
                return -math.inf, fired
            total += m + math.log(float(np.mean(np.exp(lw - m))))
            if k + 1 < len(ex.times):
                X = np.ascontiguousarray(X[systematic(lw, _uniform(key, it, gi, 0, 1))])
            t_prev = float(t)
            gi += 1
    return total, fired
