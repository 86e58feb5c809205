"""``distsim.pmmh.infer``: particle marginal Metropolis-Hastings (Andrieu, Doucet and Holenstein 2010)
with a bootstrap particle filter of exact SSA particles, chains sharded over the workers.

Chain c works on phi = log theta. Iteration 0 estimates log p(y | theta_0); iteration it >= 1 proposes
phi' = phi + L z (z standard normals from key (key_c, CHAIN_RID), counter (it, j, 0, 2)), runs the
filter at phi' with iteration number it, and accepts when log u < log p^(y | phi') + log p(phi') -
log p^(y | phi) - log p(phi) (u from counter (it, 0, 0, 3)); the estimate of the current point is
kept, never recomputed (so the chain targets the exact posterior). L: the burn-in runs in stages of
fixed, doubling lengths (:func:`stage_ends`: iterations fixed by ``burn_in`` alone); the first uses
``INITIAL_STEP`` I; after each stage the client pools the stage's draws of **all** chains (every
chain's covariance estimate from its own few, sticky burn-in draws underestimates the posterior's)
and L L^T = 2.562^2 / d (pooled Cov + 1e-8 I) becomes every chain's proposal for the next stage, the
scale that is optimal for PMMH with Var(log-likelihood estimate) about 1 to 3 (Sherlock, Thiery,
Roberts and Rosenthal 2015). The last stage's L is kept for the draws after burn-in: a fixed-kernel
MH chain. A shard task is a pure function of its payload (the chains' state at ``it0``) and never
crosses a stage's end, so the draws do not depend on the number of workers, shards or rounds.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import xarray as xr

from .. import engine, results
from ..errors import ConvergenceWarning, ModelError
from ..mcmc import diagnostics
from ..models.reactions import ReactionNetwork
from ..rng import check_seed, derive_seeds, philox, uniform_f64
from ..ssa.methods import METHODS, choose_method
from .filter import (CHAIN_DOMAIN, CHAIN_RID, CHECK_DOMAIN, MAX_PARTICLES, Problem, check_backend,
                     log_likelihoods)
from .observation import Experiment, as_observables, compile_experiment, compile_observables
from .priors import as_prior

INITIAL_STEP = 0.1  # proposal sd of each log parameter before the adaptation starts
VAR_WARN = 2.0  # Var(log-likelihood estimate) above which the particles are too few (Doucet et al. 2015)
VAR_AUTO = 1.5  # particles="auto" doubles N until the variance is below this
AUTO_START, AUTO_MAX = 32, 8192
CHECK_REPEATS = 20
ROUND_SECONDS = 2.0
PMMH_SCALE = 2.562**2  # L L^T = PMMH_SCALE / d x Cov (Sherlock et al. 2015)
FIRST_STAGE = 20  # the shortest first adaptation stage (iterations); later stages double


@dataclass(frozen=True)
class ChainState:
    phi: np.ndarray  # [d]
    loglik: float
    logprior: float
    chol: np.ndarray  # [d, d]: the proposal's Cholesky factor (set by the client at each stage's end)


@dataclass(frozen=True)
class PMMHBlock:
    problem: Problem
    seed: int
    chains: np.ndarray  # chain ids
    states: list[ChainState]
    it0: int
    n_iter: int
    particles: int
    time_left: float | None = None


@dataclass(frozen=True)
class CheckBlock:
    problem: Problem
    seed: int
    repeats: np.ndarray
    theta: np.ndarray
    particles: int


def chain_key(seed: int, chain: int) -> int:
    return int(derive_seeds(seed, [chain], domain=CHAIN_DOMAIN)[0])


def _cholesky(a: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor in plain floating point (the same bits on every machine; d is small)."""
    d = a.shape[0]
    L = np.zeros_like(a)
    for i in range(d):
        for j in range(i + 1):
            s = float(a[i, j])
            for k in range(j):
                s -= float(L[i, k]) * float(L[j, k])
            if i == j:
                L[i, i] = math.sqrt(s) if s > 0 else 1e-12
            else:
                L[i, j] = s / float(L[j, j])
    return L


def _normals(keys: Sequence[int], it: int, d: int) -> np.ndarray:
    """Iteration ``it``'s d standard normals of each chain key: [C, d] (Box-Muller of counter (it, j, 0, 2))."""
    ctr = np.zeros((d, 4), np.uint32)
    ctr[:, 0], ctr[:, 1], ctr[:, 3] = it, np.arange(d), 2
    w = philox(ctr[None, :, :], _key_words(keys)[:, None, :])
    u1, u2 = uniform_f64(w[..., 0], w[..., 1]), uniform_f64(w[..., 2], w[..., 3])
    return np.array([[math.sqrt(-2.0 * math.log(a)) * math.cos(2.0 * math.pi * b) for a, b in zip(r1, r2)]
                     for r1, r2 in zip(u1, u2)]).reshape(len(keys), d)


def _accept_u(keys: Sequence[int], it: int) -> np.ndarray:
    """Iteration ``it``'s acceptance uniform of each chain key (counter (it, 0, 0, 3))."""
    w = philox(np.array([it, 0, 0, 3], np.uint32)[None, :], _key_words(keys))
    return np.asarray(uniform_f64(w[:, 0], w[:, 1]), np.float64)


def _key_words(keys: Sequence[int]) -> np.ndarray:
    return np.stack([np.asarray(keys, np.uint32), np.full(len(keys), CHAIN_RID, np.uint32)], axis=1)


def log_prior(pr: Problem, phi: np.ndarray) -> float:
    return float(sum(p.log_density_phi(float(v)) for p, v in zip(pr.priors, phi)))


def stage_ends(burn_in: int) -> list[int]:
    """The last iteration of each adaptation stage: burn_in / 2^k for k = K .. 0, doubling lengths, the
    first at least ``FIRST_STAGE`` iterations (one stage when burn_in < 2 FIRST_STAGE)."""
    ends = [burn_in]
    while ends[0] // 2 >= FIRST_STAGE:
        ends.insert(0, ends[0] // 2)
    return ends if burn_in > 0 else []


def pooled_proposal(phi: np.ndarray, accepted: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """The next stage's Cholesky factor from one stage's draws ``phi`` [chains, draws, d] of all chains
    (in chain order) and their ``accepted`` flags: that of PMMH_SCALE / d (Cov + 1e-8 I), Cov pooled over
    every chain and draw; with fewer than 2 d + 10 accepted moves in the stage (a covariance from so
    few moves is mostly the starting points), ``previous`` / 2. Plain sums: the same bits everywhere."""
    d = phi.shape[-1]
    if int(accepted.sum()) < 2 * d + 10:
        return previous / 2
    x = phi.reshape(-1, d)
    dx = x - np.array([math.fsum(x[:, i]) / x.shape[0] for i in range(d)])
    cov = np.array([[math.fsum(dx[:, i] * dx[:, j]) / (x.shape[0] - 1) for j in range(d)] for i in range(d)])
    return _cholesky((PMMH_SCALE / d) * (cov + 1e-8 * np.eye(d)))


def propose(pr: Problem, z: np.ndarray, st: ChainState) -> tuple[np.ndarray, float]:
    """One chain's proposal from its normals ``z`` (:func:`_normals`): (phi', log prior of phi')."""
    prop = st.phi + st.chol @ z
    return prop, log_prior(pr, prop)


def accept(st: ChainState, u: float, prop: np.ndarray, lp: float, llp: float) -> tuple[ChainState, bool]:
    """The MH decision (uniform ``u``: :func:`_accept_u`) given the proposal's estimate ``llp``."""
    if lp > -math.inf and llp > -math.inf and math.log(u) < llp + lp - st.loglik - st.logprior:
        return ChainState(prop, llp, lp, st.chol), True
    return st, False


def iterate(pr: Problem, keys: list[int], states: list[ChainState | None], it: int, particles: int,
            backend: str = "cpu") -> tuple[list[ChainState], list[bool], int]:
    """Iteration ``it`` of a block of chains (``states`` None: iteration 0, the starting point), their
    filters run together (:func:`~distsim.pmmh.filter.log_likelihoods`); each chain's result is the one
    it gets alone."""
    C, d = len(keys), len(pr.names)
    if states[0] is None:
        phi = np.log(pr.initial)
        ll, fired = log_likelihoods(pr, np.tile(pr.initial, (C, 1)), particles, np.array(keys), 0, backend)
        lp = log_prior(pr, phi)
        return [ChainState(phi, float(ll[c]), lp, INITIAL_STEP * np.eye(d)) for c in range(C)], [True] * C, fired
    z = _normals(keys, it, d)
    props = [propose(pr, z[c], states[c]) for c in range(C)]
    run = [c for c in range(C) if props[c][1] > -math.inf]  # outside the prior's support: rejected unseen
    llp = np.full(C, -math.inf)
    fired = 0
    if run:
        llp[run], fired = log_likelihoods(pr, np.exp(np.array([props[c][0] for c in run])), particles,
                                          np.array([keys[c] for c in run]), it, backend)
    u = _accept_u(keys, it)
    out = [accept(states[c], float(u[c]), *props[c], float(llp[c])) for c in range(C)]
    return [o[0] for o in out], [o[1] for o in out], fired


def run_block(ctx: engine.ShardContext | None, b: PMMHBlock) -> dict:
    """Shard task: iterations it0 .. it0 + n_iter - 1 of its chains (stopping early, between iterations,
    past the time left or when cancelled); per chain and iteration phi, log-likelihood, accepted, and
    each chain's last state (only: the client rebuilds an earlier one with :func:`state_at`)."""
    deadline = None if b.time_left is None else time.monotonic() + b.time_left
    C, d = len(b.chains), len(b.problem.names)
    phi = np.zeros((C, b.n_iter, d))
    ll = np.zeros((C, b.n_iter))
    acc = np.zeros((C, b.n_iter), dtype=bool)
    fired = 0
    done = 0
    keys = [chain_key(b.seed, int(c)) for c in b.chains]
    backend = _backend(ctx)
    now: list[ChainState | None] = list(b.states)
    for k in range(b.n_iter):
        now, accepted, f = iterate(b.problem, keys, now, b.it0 + k, b.particles, backend)
        for ci in range(C):
            phi[ci, k], ll[ci, k], acc[ci, k] = now[ci].phi, now[ci].loglik, accepted[ci]
        fired += f
        done = k + 1
        if (deadline is not None and time.monotonic() > deadline) or engine.task_cancelled():
            break
    return {"phi": phi[:, :done], "loglik": ll[:, :done], "accepted": acc[:, :done], "states": now,
            "fired": fired, "done": done}


def state_at(pr: Problem, phi: np.ndarray, loglik: float, before: ChainState | None) -> ChainState:
    """A chain's state after an iteration of a block that started at ``before`` (None: the block began
    at iteration 0): its proposal is the block's (blocks never cross a stage's end), its log prior that
    of ``phi`` (:func:`log_prior`: the same bits as the worker's)."""
    chol = INITIAL_STEP * np.eye(len(pr.names)) if before is None else before.chol
    return ChainState(np.array(phi, np.float64), float(loglik), log_prior(pr, phi), chol)


def run_check(ctx: engine.ShardContext, b: CheckBlock) -> list[float]:
    """Shard task: independent filters at ``theta`` (repeat r: key derive_seeds(seed, r, CHECK_DOMAIN))."""
    keys = derive_seeds(b.seed, b.repeats, domain=CHECK_DOMAIN)
    ll, _ = log_likelihoods(b.problem, np.tile(b.theta, (len(keys), 1)), b.particles, keys, 0, _backend(ctx))
    return [float(v) for v in ll]


def particles_backend(net: ReactionNetwork, backend: str | None) -> str | None:
    """The backend a run asks for: an automatic choice ("auto", or None with no ``distsim.backend`` in
    Dask's config) is the CPU for a network whose particles run on CPUs only (triggers that read rate-rule
    variables: :func:`check_backend` refuses a GPU asked for by name); any other network, hybrid ones too,
    keeps the choice."""
    try:
        check_backend(net, True)
    except ModelError:
        b = engine.executor.configured_backend(backend)
        return "cpu" if b == "auto" else b
    return backend


def _backend(ctx: engine.ShardContext | None) -> str:
    return "cpu" if ctx is None else ctx.backend


def build_problem(net: ReactionNetwork, observables: Sequence[Any], experiments: Sequence[Experiment],
                  prior: Mapping[str, Any], initial: Mapping[str, float] | None = None, method: str = "auto",
                  max_events: int = 10_000_000, species_scale: float = 1.0) -> Problem:
    """Check and compile the model, observables, experiments and priors (the inferred parameters are
    the keys of ``prior``: model parameters or noise parameters of the observables)."""
    if not prior:
        raise ValueError("give a prior for every parameter to infer (prior={'k1': 'gamma:2,1', ...})")
    names = tuple(str(n) for n in prior)
    priors = tuple(as_prior(n, prior[n]) for n in names)
    extra = [n for n in names if n not in net.params]
    obs = compile_observables(net, as_observables(observables), extra, species_scale)
    used = {p for o in obs for n in (o.formula, o.noise_parameter) if n is not None for p in _params(n)}
    used |= {v for e in experiments for v in e.initial.values() if isinstance(v, str)}
    unused = [n for n in extra if n not in used]
    if unused:
        raise ValueError(f"prior given for {unused[0]!r}, which is neither a model parameter nor used by an "
                         "observable or an initial amount")
    if not experiments:
        raise ValueError("no experiment (measurements) given")
    exps = tuple(compile_experiment(net, obs, e, i, extra, species_scale) for i, e in enumerate(experiments))
    init = dict(initial or {})
    start = []
    for n, p in zip(names, priors):
        v = float(init.get(n, net.params.get(n, p.center())))
        lo, hi = p.support()
        if not (v > 0 and lo <= v <= hi):
            raise ValueError(f"initial value of {n!r} is {v}; give one > 0 inside its prior's support "
                             f"({p}) with initial={{'{n}': ...}}")
        start.append(v)
    if method == "auto":
        method = choose_method(net, "cpu")
    if method not in METHODS:
        raise ValueError(f"unknown SSA method {method!r}")
    return Problem(net, method, names, priors, np.array(start), tuple(obs), exps, int(max_events))


def _params(node) -> tuple[str, ...]:
    from ..models import arith

    return arith.params_of(node)


def check_particles(run: engine.Run, pr: Problem, seed: int, theta: np.ndarray, particles: int,
                    repeats: int = CHECK_REPEATS) -> float:
    """Var of the filter's log-likelihood estimate at ``theta`` over ``repeats`` independent filters."""
    shards = run.split(repeats)
    res = run.round(run_check, [CheckBlock(pr, seed, np.arange(r.start, r.stop), theta, particles) for r in shards])
    ll = np.array([v for x in res for v in x])
    if not np.all(np.isfinite(ll)):
        return math.inf
    return float(np.var(ll, ddof=1))


def infer(
    net: ReactionNetwork | str | os.PathLike,
    observables: Sequence[Any],
    experiments: Sequence[Experiment] | Experiment,
    *,
    prior: Mapping[str, Any],
    initial: Mapping[str, float] | None = None,
    particles: int | str = "auto",
    iterations: int = 5_000,
    burn_in: int = 1_000,
    chains: int = 4,
    seed: int = 0,
    client: Any = None,
    backend: str | None = None,
    method: str = "auto",
    max_events: int = 10_000_000,
    progress: bool | None = None,
    time_limit: float | None = None,
    species_scale: float = 1.0,
) -> xr.Dataset:
    """Posterior of the parameters named in ``prior`` given noisy, partial measurements (PMMH).

    ``observables``: :class:`~distsim.pmmh.Observable` (name, formula of species and parameters, noise
    model, noise parameter); ``experiments``: :class:`~distsim.pmmh.Experiment` (times, {observable:
    values}, initial counts and fixed parameters of the condition; a value may be a sequence of
    replicates), all sharing the parameters.
    ``prior``: ``{name: "gamma:2,1" | "lognormal:MU,SIGMA" | "uniform:LO,HI" | "loguniform:LO,HI"}``;
    chains start at ``initial``, else the model's values, else the prior's center. ``particles``: N,
    or ``"auto"`` (doubled from 32 until Var(log-likelihood estimate) < 1.5 at the starting point); a
    ConvergenceWarning when that variance is > 2. ``iterations`` MH iterations per chain, burn-in (adaptation) included.
    Returns the Dataset layout of :func:`distsim.mcmc.infer_rates`: one (chain, draw) data variable per
    parameter (linear scale); coordinates ``log_likelihood`` and ``accepted`` (chain, draw) and
    ``acceptance_rate`` (chain) (sample stats), ``proposal_sd`` (variable: the kept draws' proposal sd of
    each log parameter), ``observed_value`` (observation, observable) with the
    experiment, time and replicate (0, 1, ...: a time's replicates are consecutive observations) of each
    observation, ``rhat``, ``ess_bulk``, ``ess_tail`` per variable; the
    attrs carry where the rounds' time went (:meth:`distsim.engine.Run.timings`; the particle-number
    check's rounds included).
    ``species_scale``: observables read each species as count / species_scale (SBML amounts: the system size).
    """
    if not isinstance(net, ReactionNetwork):
        from ..ssa import load

        net = load(net)
    for name, v in (("iterations", iterations), ("chains", chains)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    if isinstance(burn_in, bool) or not isinstance(burn_in, (int, np.integer)) or not 0 <= burn_in < iterations:
        raise ValueError(f"burn_in must be an integer in [0, iterations), got {burn_in!r}")
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and 0 < time_limit < math.inf):
        raise ValueError(f"time_limit must be a positive number of seconds, got {time_limit!r}")
    auto = isinstance(particles, str)
    if auto and particles != "auto":
        raise ValueError(f"particles must be an integer or 'auto', got {particles!r}")
    if not auto and (isinstance(particles, bool) or not isinstance(particles, (int, np.integer))
                     or not 1 <= particles <= MAX_PARTICLES):
        raise ValueError(f"particles must be an integer in [1, {MAX_PARTICLES}] or 'auto', got {particles!r}")
    seed = check_seed(seed)
    if isinstance(experiments, Experiment):
        experiments = [experiments]
    if not (isinstance(species_scale, (int, float)) and 0 < species_scale < math.inf):
        raise ValueError(f"species_scale must be a positive number, got {species_scale!r}")
    pr = build_problem(net, observables, experiments, prior, initial, method, max_events, float(species_scale))
    if (iterations + 1) * pr.n_intervals >= 2**32:
        raise ValueError(f"iterations x observation times ({iterations} x {pr.n_intervals}) must be < 2**32")
    with engine.Run("pmmh", client, particles_backend(pr.net, backend), progress=progress, label="mcmc pmmh") as run:
        check_backend(pr.net, run.uses_gpu())
        N = AUTO_START if auto else int(particles)
        while True:
            var = check_particles(run, pr, seed, pr.initial, N)
            if not auto or var < VAR_AUTO or N >= AUTO_MAX:
                break
            N *= 2
        if var > VAR_WARN:
            warnings.warn(f"Var(log-likelihood estimate) is {var:.3g} with {N} particles at the starting point "
                          f"(> {VAR_WARN:g}; Doucet et al. 2015 recommend about 1 to 1.7): the chains will mix "
                          "poorly; use more particles", ConvergenceWarning, stacklevel=2)
        run.progress.start(f"{chains} chains x {iterations} iterations, {N} particles, {pr.n_intervals} "
                           f"observation times, on {run.describe()}", total=int(iterations) + 1, unit="it")
        out = _sample(run, pr, seed, int(chains), int(iterations) + 1, N, int(burn_in), time_limit)
    done = out["done"]
    if done - 1 <= burn_in:
        raise RuntimeError(f"the time limit ({time_limit:g} s) ended the run after {max(done - 1, 0)} iterations, "
                           f"within the burn-in ({burn_in}): no draw to keep; raise time_limit or lower burn_in")
    return _dataset(pr, out, run, seed=seed, chains=chains, iterations=done - 1, burn_in=burn_in, particles=N,
                    var=var, stopped_by="iterations" if done == iterations + 1 else "time_limit")


def _sample(run: engine.Run, pr: Problem, seed: int, chains: int, total: int, N: int, burn_in: int,
            time_limit: float | None, shards: int | None = None) -> dict:
    """Iterations 0 .. total - 1 of every chain in rounds (``shards``: how many; default one per worker).
    A round stops at the next stage end (:func:`stage_ends`), where every chain gets the pooled proposal."""
    t_start = time.perf_counter()
    ranges = run.split(chains, shards=shards)
    d = len(pr.names)
    phi = np.zeros((chains, total, d))
    ll = np.zeros((chains, total))
    acc = np.zeros((chains, total), dtype=bool)
    states: list[ChainState | None] = [None] * chains
    ends = [e for e in stage_ends(burn_in) if e < total - 1]
    fired, it0, block, start = 0, 0, 2, 0
    while it0 < total:
        k = min(block, total - it0, *[e + 1 - it0 for e in ends if e >= it0])
        left = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - t_start))
        res = run.round(run_block, [PMMHBlock(pr, seed, np.arange(r.start, r.stop), states[r.start:r.stop], it0, k,
                                              N, left) for r in ranges])
        done = min(int(x["done"]) for x in res)
        for r, x in zip(ranges, res):
            phi[r.start:r.stop, it0:it0 + done] = x["phi"][:, :done]
            ll[r.start:r.stop, it0:it0 + done] = x["loglik"][:, :done]
            acc[r.start:r.stop, it0:it0 + done] = x["accepted"][:, :done]
            for ci, c in enumerate(r):  # a shard that went further than the others: its state at done
                states[c] = (x["states"][ci] if int(x["done"]) == done else
                             state_at(pr, x["phi"][ci, done - 1], x["loglik"][ci, done - 1], states[c]))
            fired += x["fired"]
        it0 += done
        if it0 - 1 in ends:  # a stage ended: every chain's next proposal from all chains' draws of the stage
            chol = pooled_proposal(phi[:, start:it0], acc[:, max(start, 1):it0], states[0].chol)
            states = [dataclasses.replace(st, chol=chol) for st in states]
            start = it0
        block = int(np.clip(k * ROUND_SECONDS / max(run.last_round_seconds, 1e-3), 1, 100_000))
        run.progress.update(it0, message=f"{fired / max(run.round_seconds, 1e-12):.3g} SSA events/s")
        if done < k or (time_limit is not None and time.perf_counter() - t_start > time_limit and it0 < total):
            break
    return {"phi": phi[:, :it0], "loglik": ll[:, :it0], "accepted": acc[:, :it0], "fired": fired, "done": it0,
            "proposal_chol": states[0].chol}


def _dataset(pr: Problem, out: dict, run: engine.Run, *, seed: int, chains: int, iterations: int, burn_in: int,
             particles: int, var: float, stopped_by: str) -> xr.Dataset:
    keep = np.arange(burn_in + 1, iterations + 1)
    names = list(pr.names)
    data: dict[str, Any] = {}
    for p, nm in enumerate(names):
        data[nm] = (("chain", "draw"), np.exp(out["phi"][:, keep, p]),
                    {"long_name": f"parameter {nm}", "prior": str(pr.priors[p])})
    # one observation per row of each experiment's data: a time's replicates are consecutive rows
    rows = [(e.name, float(e.times[i]), int(r), e.data[j]) for e in pr.experiments
            for j, (i, r) in enumerate(zip(e.row_times, e.row_replicates))]
    acc = out["accepted"][:, keep]
    coords: dict[str, Any] = {
        "chain": np.arange(chains), "draw": np.arange(keep.size), "iteration": ("draw", keep), "variable": names,
        "observable": [o.name for o in pr.observables],
        "log_likelihood": (("chain", "draw"), out["loglik"][:, keep],
                           {"long_name": "particle filter estimate of log p(data | parameters)", "sample_stat": 1}),
        "accepted": (("chain", "draw"), acc.astype(np.int8), {"long_name": "1 if the proposal was accepted",
                                                             "sample_stat": 1}),
        "acceptance_rate": (("chain",), acc.mean(axis=1), {"long_name": "accepted proposals / iterations",
                                                           "sample_stat": 1}),
        "observation_experiment": ("observation", [r[0] for r in rows]),
        "observation_time": ("observation", np.array([r[1] for r in rows])),
        "observation_replicate": ("observation", np.array([r[2] for r in rows], np.int64),
                                  {"long_name": "replicate of the measurements at this experiment and time"}),
        "observed_value": (("observation", "observable"), np.array([r[3] for r in rows]).reshape(len(rows), -1),
                           {"long_name": "measurement (NaN: not measured)"}),
    }
    ds = results.dataset(data, coords)
    ds.coords["proposal_sd"] = results.variable(
        "variable", np.sqrt(np.diag(out["proposal_chol"] @ out["proposal_chol"].T)),
        {"long_name": "sd of the kept draws' random-walk proposal of log parameter"})
    diag = diagnostics.convergence(ds)
    for k, long_name in (("rhat", "rank-normalised split R-hat"), ("ess_bulk", "bulk ESS"), ("ess_tail", "tail ESS")):
        ds.coords[k] = results.variable("variable", diag.loc[names, k].to_numpy(), {"long_name": long_name})
    t_rounds = max(run.round_seconds, 1e-12)
    ds.attrs = run.provenance(
        workload="pmmh.infer", seed=seed, model_name=pr.net.name, model_sha256=pr.net.digest(), chains=chains,
        iterations=iterations, burn_in=burn_in, thin=1, parameters=",".join(names), posterior_variables=",".join(names),
        sample_stats="log_likelihood,accepted,acceptance_rate", particles=particles, ssa_method=pr.method,
        loglik_variance_at_start=var, priors=",".join(f"{n}={p}" for n, p in zip(names, pr.priors)),
        initial_theta=",".join(f"{n}={v!r}" for n, v in zip(names, pr.initial)),
        observables=";".join(f"{o.name}~{('normal', 'lognormal', 'poisson', 'negbin')[o.noise]}"
                             for o in pr.observables),
        ssa_events=int(out["fired"]), iterations_per_second=(iterations + 1) * chains / t_rounds,
        sampling_seconds=run.round_seconds, stopped_by=stopped_by, method="pmmh",
        adaptation_stage_ends=",".join(str(e) for e in stage_ends(burn_in)), rounds=run.rounds,
        **run.timings(),
    )
    ds.attrs.update({f"model_{k}": v for k, v in pr.net.metadata})  # how the model was read (SBML units, rounding)
    diagnostics.warn_if_not_converged(ds)
    return ds
