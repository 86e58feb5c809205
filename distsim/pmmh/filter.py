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
    events fired; -inf when every particle has zero weight at some measurement."""
    ll, fired = log_likelihoods(pr, np.asarray(theta, np.float64)[None, :], particles, np.array([key]), it, backend)
    return float(ll[0]), fired


def log_likelihoods(pr: Problem, thetas: np.ndarray, particles: int, keys: np.ndarray, it: int, backend: str = "cpu"
                    ) -> tuple[np.ndarray, int]:
    """:func:`log_likelihood` of G filters at once (chain g: parameters ``thetas[g]``, key ``keys[g]``):
    their particles advance in one launch (``backend`` 'gpu': on the current GPU, the same bits); the
    weights and the resampling run on the host. Each filter's estimate is the one it gives alone."""
    c = pr.compiled
    if backend == "gpu":
        from ..ssa.gpu_advance import advance_gpu

        move, method = advance_gpu, METHODS[pr.method]
    else:
        move, method = advance, METHODS[pr.method].cpu
    G, N = len(keys), int(particles)
    n_int = pr.n_intervals
    total = np.zeros(G)
    fired, gi = 0, 0
    for ex in pr.experiments:
        values = [pr.values(th, ex) for th in thetas]
        tabs = [pr.tables(v) for v in values]
        noise = [noise_values(pr.observables, v) for v in values]
        X = np.repeat(ex.x0[None, :], G * N, axis=0)
        live = np.flatnonzero(total > -math.inf)  # chains still with a finite estimate
        t_prev = 0.0
        for k, t in enumerate(ex.times):
            if not live.size:
                return total, fired
            rows = (live[:, None] * N + np.arange(N)).ravel()
            Xl = np.ascontiguousarray(X[rows])
            events, errors = move(c, method, Xl, np.array([tabs[g][0] for g in live]),
                                  np.array([tabs[g][1] for g in live]), float(t) - t_prev, key=keys[live],
                                  e_hi=it * n_int + gi, max_events=pr.max_events)
            fired += int(events.sum())
            X[rows] = Xl
            for q, g in enumerate(live):
                Xg = X[g * N:(g + 1) * N]
                lw = log_weights(pr.observables, ex.data[k], Xg, values[g], noise[g])
                err = errors[q * N:(q + 1) * N]
                bad = err != ERR_NONE
                if bad.any():
                    p = int(np.flatnonzero(bad)[0])
                    word = int(err[p])
                    if word & ERR_MASK != ERR_MAX_EVENTS:
                        raise RuntimeError(describe(pr.net, word, p, f"{ex.source}, t={t_prev:g} to {t:g}, theta "
                                                    f"{dict(zip(pr.names, np.round(thetas[g], 6)))}", int(keys[g]),
                                                    None, Xg[p], None))
                    lw[bad] = -np.inf  # too many events: such a particle cannot explain the data (weight 0)
                m = float(lw.max())
                if m == -math.inf or math.isnan(m):
                    total[g] = -math.inf
                    continue
                total[g] += m + math.log(float(np.mean(np.exp(lw - m))))
                if k + 1 < len(ex.times):
                    X[g * N:(g + 1) * N] = Xg[systematic(lw, _uniform(int(keys[g]), it, gi, 0, 1))]
            live = live[total[live] > -math.inf]
            t_prev = float(t)
            gi += 1
    return total, fired
