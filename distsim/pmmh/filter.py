"""The inference problem and the bootstrap particle filter whose particles are exact SSA realizations.

Random numbers (Philox, :mod:`distsim.rng`): a filter has a key word ``key`` (chain c of seed s:
``derive_seeds(s, c, CHAIN_DOMAIN)``; repeat r of the particle-number check: ``derive_seeds(s, r,
CHECK_DOMAIN)``) and an iteration ``it``. Particle p over observation interval i (numbered across the
experiments) draws its SSA events from key (key, p), counter (event, it * n_intervals + i, 0, 0)
(:mod:`distsim.ssa.advance`); the systematic resampling after interval i uses key (key, CHAIN_RID),
counter (it, i, 0, 1). So a filter's estimate depends on (seed, chain, iteration) alone.
With SBML events or assignment rules, a particle is its counts and its event work row, advanced
from absolute time to absolute time by :mod:`distsim.ssa.advance_events` (draw d: firings and stops at
time comparisons, counter (d, it * n_intervals + i, 0, 0); on a GPU its twin
:mod:`distsim.ssa.gpu_advance_events`, the rows staying on the device) and resampled together; the
events are compiled at each chain's parameter values. With time-dependent propensities or rate rules
(hybrid networks), a particle also carries its integrator work row (the rate-rule values live in its
event work row), advanced by the SSA's hybrid loop (draw d: firing d, counter (d, it * n_intervals + i,
0, 0); on a GPU kernels/ssa_hybrid.cu's twin, except triggers that read rate-rule variables:
:func:`check_backend`) and resampled with the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numba
import numpy as np

from ..backends.dsmath import ds_exp
from ..models.compile_events import CompiledEvents, compile_events, parameter_slots
from ..models.compile_reactions import CompiledNetwork, compile_network
from ..models.reactions import ReactionNetwork
from ..rng import philox, uniform_f64
from ..ssa.advance import advance
from ..ssa.advance_events import advance_events, new_works, start_events
from ..ssa.errors import ERR_MASK, ERR_MAX_EVENTS, ERR_NONE, describe
from ..ssa.gpu_events import check_gpu
from ..ssa.methods import METHODS
from .observation import (CompiledExperiment, CompiledObservable, device_weights, filter_kernel, log_weights,
                          log_weights_batched, noise_values)
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


def check_backend(net: ReactionNetwork, gpu: bool) -> None:
    """The SSA particles support every kinetic law, SBML events, assignment rules, time-dependent
    propensities and rate rules (hybrid networks) on either backend; a GPU filter refuses what the GPU
    SSA refuses (:func:`distsim.ssa.gpu_events.check_gpu`: triggers that read rate-rule variables)."""
    if gpu and net.hybrid:
        check_gpu(net, compile_network(net))


def _events_at(pr: Problem, values: Mapping[str, float]) -> CompiledEvents:
    """The events and rules compiled at these parameter values (the initial values of the parameters
    they assign, the constants their programs read)."""
    net = pr.net.with_parameters(**{k: v for k, v in values.items() if k in pr.net.params})
    return compile_events(net, pr.compiled.law_start)


def _uniforms(keys: np.ndarray, it: int, n_int: int) -> np.ndarray:
    """The resampling uniforms [G, n_int] of iteration ``it``: key (key, CHAIN_RID), counter (it, i, 0, 1)."""
    k = np.stack([np.asarray(keys, np.uint32), np.full(len(keys), CHAIN_RID, np.uint32)], axis=1)
    ctr = np.zeros((n_int, 4), np.uint32)
    ctr[:, 0], ctr[:, 1], ctr[:, 3] = it, np.arange(n_int), 1
    w = philox(ctr[None, :, :], k[:, None, :])
    return np.asarray(uniform_f64(w[..., 0], w[..., 1]), np.float64)


@numba.njit(cache=True)
def reweigh_cpu(lw, u, resample, m_out, s_out, anc):  # pragma: no cover - compiled
    """Per chain g (row g of ``lw`` [G, N]): m_out[g] the largest log weight (-inf when the estimate is
    lost: a NaN or an infinite maximum), s_out[g] = sum_p ds_exp(lw - m) in particle order and, with
    ``resample``, systematic resampling with the uniform u[g]: anc[g N + i] = g N + the first j whose
    running sum exceeds (u + i) (s / N) (at most N - 1). The twin of kernels/pmmh_filter.cu."""
    G, N = lw.shape
    cum = np.empty(N)
    for g in range(G):
        m = -np.inf
        bad = False
        for p in range(N):
            v = lw[g, p]
            if v != v:
                bad = True
            elif v > m:
                m = v
        if bad or m == -np.inf or m == np.inf:
            m_out[g] = -np.inf
            s_out[g] = 0.0
            continue
        s = 0.0
        for p in range(N):
            s += ds_exp(lw[g, p] - m)
            cum[p] = s
        m_out[g] = m
        s_out[g] = s
        if not resample:
            continue
        step = s / N
        base = g * N
        j = 0
        for i in range(N):
            pos = (u[g] + i) * step
            while j < N and cum[j] <= pos:
                j += 1
            anc[base + i] = base + min(j, N - 1)


RW_THREADS = 256  # threads per chain of kernels/pmmh_filter.cu's pmmh_reweigh (its RW_THREADS)


def reweigh(xp, lw, u: np.ndarray, resample: bool) -> tuple[np.ndarray, np.ndarray, Any]:
    """(m, s) per chain on the host and the ancestors' rows (where ``lw`` lives) of
    :func:`reweigh_cpu`; ``xp`` cupy: its CUDA twin on the current GPU (only m and s come back)."""
    G, N = lw.shape
    if xp is np:
        m, s, anc = np.empty(G), np.empty(G), np.arange(G * N, dtype=np.int64)
        reweigh_cpu(lw, u, resample, m, s, anc)
        return m, s, anc
    m, s, anc = xp.empty(G), xp.empty(G), xp.arange(G * N, dtype=xp.int64)
    cum = xp.empty(G * N)
    filter_kernel("pmmh_reweigh")((G,), (RW_THREADS,), (np.int32(G), np.int32(N), xp.ascontiguousarray(lw),
                                                       xp.asarray(u), np.int32(resample), m, s, cum, anc))
    return xp.asnumpy(m), xp.asnumpy(s), anc


def log_likelihood(pr: Problem, theta: np.ndarray, particles: int, key: int, it: int, backend: str = "cpu"
                   ) -> tuple[float, int]:
    """The bootstrap filter's estimate of log p(data | theta) (unbiased in the likelihood) and the SSA
    events fired; -inf when every particle has zero weight at some measurement."""
    ll, fired = log_likelihoods(pr, np.asarray(theta, np.float64)[None, :], particles, np.array([key]), it, backend)
    return float(ll[0]), fired


def log_likelihoods(pr: Problem, thetas: np.ndarray, particles: int, keys: np.ndarray, it: int, backend: str = "cpu"
                    ) -> tuple[np.ndarray, int]:
    """:func:`log_likelihood` of G filters at once (chain g: parameters ``thetas[g]``, key ``keys[g]``):
    their particles advance in one launch; the log weights of all chains are computed at once (the
    formulas as array operations, every noise model by one kernel) where
    :func:`~distsim.pmmh.observation.device_weights` applies (formulas of + - * /; else chain by chain on
    the host).
    ``backend`` 'gpu': the filter stays on the current GPU (states, those log weights, the resampling),
    the same bits; only each chain's (max, sum) comes back per interval. Each filter's estimate is the
    one it gives alone."""
    check_backend(pr.net, backend == "gpu")
    c = pr.compiled
    hooks = c.events is not None  # particles carry event work rows W (hybrid: and integrator rows) along with X
    if backend == "gpu":
        import cupy as xp

        from ..ssa.gpu_advance import advance_device
        from ..ssa.gpu_advance_events import to_device

        move, method = advance_device, METHODS[pr.method]
    else:
        xp, move, method = np, advance, METHODS[pr.method].cpu
    G, N, S = len(keys), int(particles), c.n_species
    keys = np.asarray(keys)
    n_int = pr.n_intervals
    total = np.zeros(G)
    fired, gi = 0, 0
    batched = device_weights(pr.observables)  # weights of all chains as array operations (else chain by chain)
    U = _uniforms(keys, it, n_int)
    for ex in pr.experiments:
        values = [pr.values(th, ex) for th in thetas]
        tabs = [pr.tables(v) for v in values]
        th_all, la_all = np.array([t[0] for t in tabs]), np.array([t[1] for t in tabs])
        noise = np.array([noise_values(pr.observables, v) for v in values]).reshape(G, len(pr.observables))
        x0 = [ex.x0_of(v) for v in values] if ex.x0_params else [ex.x0] * G
        total[[g for g in range(G) if x0[g] is None]] = -math.inf  # no initial count at these parameters
        live = np.flatnonzero(total > -math.inf)  # chains still with a finite estimate
        X = np.repeat(np.array([x0[g] for g in live], np.int64).reshape(-1, S), N, axis=0)
        if hooks:  # the work rows start on the host (rules and events of t = 0 change X)
            ces = {int(g): _events_at(pr, values[g]) for g in live}
            W = _start_hooked(pr, c, ces, X, th_all, la_all, live, keys, N, ex)
            if xp is not np:
                W = to_device(W)
        X = xp.asarray(X)
        t_prev = 0.0
        for k, t in enumerate(ex.times):
            if not live.size:
                return total, int(fired)
            if hooks:
                events, errors = _advance_hooked(xp, c, method, ces, X, W, live, keys, N, t_prev, float(t),
                                                 it * n_int + gi, pr.max_events)
            else:
                events, errors = move(c, method, X, th_all[live], la_all[live], float(t) - t_prev, key=keys[live],
                                      e_hi=it * n_int + gi, max_events=pr.max_events)
            fired = fired + events.sum()  # stays on the device until the end
            Gl = live.size
            if batched:
                lw = log_weights_batched(xp, pr.observables, ex.at(k), X.reshape(Gl, N, S),
                                         [values[g] for g in live], noise[live])
            else:
                Xh = xp.asnumpy(X) if xp is not np else X
                lw = np.stack([log_weights(pr.observables, ex.at(k), Xh[q * N:(q + 1) * N], values[g], noise[g])
                               for q, g in enumerate(live)])
                lw = xp.asarray(lw)
            # too many events: such a particle cannot explain the data (weight 0); other errors stop the run
            bad = errors != ERR_NONE
            n_bad = xp.count_nonzero(bad)  # read after the reweighing's copy: one wait for the device per interval
            lw = xp.where(bad.reshape(Gl, N), -xp.inf, lw)
            resample = k + 1 < len(ex.times)
            m, s, anc = reweigh(xp, lw, np.ascontiguousarray(U[live, gi]), resample)
            if int(n_bad):
                err = xp.asnumpy(errors) if xp is not np else errors
                stop = np.flatnonzero((err != ERR_NONE) & ((err.astype(np.int64) & ERR_MASK) != ERR_MAX_EVENTS))
                if stop.size:
                    r = int(stop[0])
                    q, p, g = r // N, r % N, int(live[r // N])
                    Xh = xp.asnumpy(X) if xp is not np else X
                    raise RuntimeError(describe(pr.net, int(err[r]), p, f"{ex.source}, t={t_prev:g} to {t:g}, theta "
                                                f"{dict(zip(pr.names, np.round(thetas[g], 6)))}", int(keys[g]),
                                                None, Xh[r], None))
            ok = m > -math.inf
            for q, g in enumerate(live):
                total[g] = total[g] + (m[q] + math.log(s[q] / N)) if ok[q] else -math.inf
            if resample:
                X = X[anc]
                if hooks:  # a particle is its counts and its work rows
                    W = tuple(a[anc] for a in W)
            if not ok.all():
                X = X.reshape(Gl, N, S)[xp.asarray(ok)].reshape(-1, S)
                if hooks:
                    W = tuple(a.reshape((Gl, N) + a.shape[1:])[xp.asarray(ok)].reshape((-1,) + a.shape[1:])
                              for a in W)
                live = live[ok]
            t_prev = float(t)
            gi += 1
    return total, int(fired)


def _start_hooked(pr: Problem, c: CompiledNetwork, ces: dict[int, CompiledEvents], X: np.ndarray, th_all: np.ndarray,
                  la_all: np.ndarray, live: np.ndarray, keys: np.ndarray, N: int, ex: CompiledExperiment) -> tuple:
    """The event work rows of the live chains' particles at time 0 (rules and events of t = 0 change X in place)."""
    parts = []
    for q, g in enumerate(live):
        Xq = X[q * N:(q + 1) * N]
        Wq, err, val = start_events(c, ces[int(g)], Xq, th_all[g], la_all[g])
        bad = np.flatnonzero(err != ERR_NONE)
        if bad.size:
            p = int(bad[0])
            raise RuntimeError(describe(pr.net, int(err[p]), p, f"{ex.source}, t=0", int(keys[g]), 0.0, Xq[p],
                                        float(val[p])))
        parts.append(Wq)
    if not parts:
        return new_works(c, 0)
    return tuple(np.concatenate([w[i] for w in parts]) for i in range(len(parts[0])))


def _advance_hooked(xp: Any, c: CompiledNetwork, method: Any, ces: dict[int, CompiledEvents], X: Any, W: tuple,
                    live: np.ndarray, keys: np.ndarray, N: int, t0: float, t1: float, e_hi: int, max_events: int
                    ) -> tuple[Any, Any]:
    """:func:`~distsim.ssa.advance_events.advance_events` of each live chain's rows (its own events'
    tables, key and particles 0..N-1: the bits it gives alone), in place; (firings, error words) per row.
    ``xp`` cupy: its GPU twin, every chain in one launch."""
    if xp is not np:
        from ..ssa.gpu_advance_events import advance_events_device

        ev, er, _ = advance_events_device(c, [ces[int(g)] for g in live], method, X, W, t0, t1, keys=keys[live],
                                          e_hi=e_hi, max_events=max_events)
        return ev, er
    out = [advance_events(c, ces[int(g)], method, X[q * N:(q + 1) * N], tuple(a[q * N:(q + 1) * N] for a in W),
                          t0, t1, key=int(keys[g]), e_hi=e_hi, max_events=max_events) for q, g in enumerate(live)]
    return np.concatenate([o[0] for o in out]), np.concatenate([o[1] for o in out])
