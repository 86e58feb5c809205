"""``distsim.mcmc.infer_rates``: data-augmentation Gibbs sampling of mass-action rate constants
from exact discrete observations (Niemi and Wheeler, seed 003), chains sharded over the workers.

Iteration ``it`` of chain ``c``: (1) for every interval (t_{i-1}, t_i], forward SSA attempts from
y_{i-1} with the current theta until one ends at y_i (the lowest-index success; see
:mod:`distsim.mcmc.cpu`); (2) theta_p ~ Gamma(shape_p + r_p, rate_p + b_p) from the accepted
paths' firings r and integrals b of h. The draw kept for iteration ``it`` is the theta of step (2);
its latent path is the one drawn from that theta at iteration ``it + 1`` (so every draw is a joint
posterior sample (theta, X) and the path can be re-simulated from its Philox address).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import xarray as xr

from .. import engine, results
from ..models import arith
from ..models.reactions import ReactionNetwork
from ..rng import check_seed
from ..models.compile_reactions import compile_network
from . import cpu, diagnostics
from .observations import Observations, as_observations
from .priors import RateModel, rate_model
from .block import MCMCBlock, Problem
from .shard import run_block

MAX_EVENTS = 10_000_000
MAX_ATTEMPTS = 10**7  # per interval and iteration: past it the bridge is called effectively impossible
# The defaults of infer_rates and `distsim mcmc rates` (one home): 4 x 50,000 on Niemi and Wheeler 2011's
# Michaelis-Menten data gives K_M and k3 R-hat <= 1.001 and bulk ESS > 3,000, in 15 s on one H200
# (benchmarks/RESULTS.md); k1 and k2, identified only through K_M, mix slower (R-hat ~1.016, ESS ~290).
# The burn-in defaults to a fifth of the iterations (10,000 of 50,000).
ITERATIONS = 50_000
BURN_IN_DIVISOR = 5


FIRST_BLOCK = 20
ROUND_SECONDS = 2.0


def default_burn_in(iterations: int) -> int:
    """The burn-in when none is given: a fifth of the iterations."""
    return int(iterations) // BURN_IN_DIVISOR


def build_problem(net: ReactionNetwork, obs: Observations, rm: RateModel, *, max_events: int = MAX_EVENTS,
                  max_attempts: int = MAX_ATTEMPTS) -> Problem:
    """Flat arrays of the problem; checks that every endpoint is reachable by monotonicity."""
    c = compile_network(net)
    V = net.stoichiometry()
    can_inc, can_dec = cpu.monotone(V)
    for i in range(obs.n_intervals):
        a, b = obs.states[i], obs.states[i + 1]
        bad = [s for s in range(net.n_species) if (b[s] > a[s] and not can_inc[s]) or (b[s] < a[s] and not can_dec[s])]
        if bad:
            s = bad[0]
            raise ValueError(f"{obs.source}: interval {i + 1} (t={obs.times[i]:g} to {obs.times[i + 1]:g}): "
                             f"{net.species[s]} goes from {a[s]} to {b[s]}, which no reaction allows")
    return Problem(
        starts=np.ascontiguousarray(obs.states[:-1]), targets=np.ascontiguousarray(obs.states[1:]),
        dts=np.diff(obs.times).astype(np.float64), param_of=rm.param_of, fixed_theta=rm.fixed_theta,
        prior_shape=rm.shape, prior_rate=rm.rate, rct_start=c.rct_start, rct_species=c.rct_species,
        rct_stoich=c.rct_stoich, chg_start=c.chg_start, chg_species=c.chg_species, chg_delta=c.chg_delta,
        dep_start=c.dep_start, dep_list=c.dep_list, can_inc=can_inc, can_dec=can_dec, max_events=int(max_events),
        max_attempts=int(max_attempts), digest=c.digest)


def parse_derived(derived: Mapping[str, str] | Sequence[str] | None, names: Sequence[str]) -> dict[str, arith.Node]:
    """Derived quantities ``{"K_M": "(k2 + k3) / k1"}`` (or ``["K_M=(k2+k3)/k1"]``): parsed, never evaluated as code."""
    if not derived:
        return {}
    items = derived.items() if isinstance(derived, Mapping) else [d.split("=", 1) if "=" in d else (d, "")
                                                                     for d in derived]
    out = {}
    for name, text in items:
        name = str(name).strip()
        if not name.isidentifier():
            raise ValueError(f"derived quantity name {name!r} must be an identifier (NAME=EXPRESSION)")
        if name in names or name in out:
            raise ValueError(f"derived quantity {name!r} clashes with a parameter or another derived quantity")

        def resolve(n: str) -> arith.Node:
            if n in names:
                return arith.Species(list(names).index(n))
            raise KeyError(n)

        out[name] = arith.parse_arith(str(text), resolve, file=f"derived {name}")
    return out


def infer_rates(
    net: ReactionNetwork | str | os.PathLike,
    observations: Any,
    *,
    prior: Mapping[str, Any] | None = None,
    improper_prior: bool = False,
    iterations: int = ITERATIONS,
    burn_in: int | None = None,
    chains: int = 4,
    thin: int = 1,
    seed: int = 0,
    client: Any = None,
    derived: Mapping[str, str] | Sequence[str] | None = None,
    backend: str | None = None,
    max_attempts: int = MAX_ATTEMPTS,
    max_events: int = MAX_EVENTS,
    progress: bool | None = None,
    time_limit: float | None = None,
) -> xr.Dataset:
    """Posterior draws of the rate parameters given exact observations (ArviZ layout).

    ``iterations`` Gibbs iterations per chain (burn-in included); the first ``burn_in`` (default: a
    fifth of the iterations done) are dropped and every ``thin``-th of the rest is kept. The default 4 x
    50,000 takes 15 s on one H200 for Niemi and Wheeler 2011's Michaelis-Menten example and about 2
    hours on 2 CPU cores; there K_M and k3 converge while k1 and k2 (identified only through K_M) do
    not reach the checks below (R-hat ~1.016, bulk ESS ~290). ``prior``: ``{name: (shape, rate)}`` gamma priors
    for every rate parameter (``"improper"`` or ``improper_prior=True`` for the 1/theta limit, which
    can give an improper posterior: that stops with an error naming the reaction). Chains start at
    the model file's parameter values; chain c uses the Philox key (seed, c), so the draws do not
    depend on how chains are spread over workers, GPUs or rounds. ``derived``: ``{"K_M":
    "(k2 + k3) / k1"}``. Returns a Dataset in ArviZ's layout: its data variables are the posterior,
    one (chain, draw) variable per parameter and derived quantity (``az.summary(ds)`` reads it whole;
    :func:`~distsim.mcmc.to_inference_data` makes an InferenceData). Everything else is a coordinate:
    the sample stats ``attempts`` (chain, draw, interval) and ``acceptance_rate`` (chain, interval),
    the observations ``observed_state`` and ``observed`` (time, species), and R-hat / ESS per
    variable in ``rhat``, ``ess_bulk``, ``ess_tail``; attr ``initial_from_model`` names the species
    whose first value is the model's initial amount. Warns (:class:`~distsim.errors.ConvergenceWarning`)
    when a variable has R-hat > 1.01 or bulk ESS < 400. ``time_limit`` (seconds): stop after the
    round of iterations that passes it; the result is then that of ``iterations`` = the iterations
    done (attrs ``iterations``, ``stopped_by``; the draws do not depend on where a round ends).
    """
    if not isinstance(net, ReactionNetwork):
        from ..models.sources import load_network as load

        net = load(net)
    for name, v in (("iterations", iterations), ("chains", chains), ("thin", thin)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    if burn_in is not None and (isinstance(burn_in, bool) or not isinstance(burn_in, (int, np.integer))
                                or not 0 <= burn_in < iterations):
        raise ValueError(f"burn_in must be an integer in [0, iterations), got {burn_in!r}")
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and 0 < time_limit < float("inf")):
        raise ValueError(f"time_limit must be a positive number of seconds, got {time_limit!r}")
    seed = check_seed(seed)
    rm = rate_model(net, prior, improper_prior)
    obs = as_observations(net, observations)
    der = parse_derived(derived, rm.names)
    pr = build_problem(net, obs, rm, max_events=max_events, max_attempts=max_attempts)
    with engine.Run("mcmc", client, backend, progress=progress, label="mcmc rates") as run:
        run.progress.start(f"{chains} chains x {iterations} iterations, {obs.n_intervals} intervals, on "
                           f"{run.describe()}", total=int(iterations) + 1, unit="it")
        sample = _sample(run, net, obs, rm, pr, seed, int(chains), int(iterations) + 1, time_limit)
    stopped = sample.done < int(iterations) + 1
    iterations = sample.done - 1  # the last X-step is the path of the last kept draw
    if burn_in is None:  # a fifth of the iterations done (all of them unless a time limit stopped the run)
        burn_in = default_burn_in(max(iterations, 1))
    if burn_in >= iterations:
        slow = ""
        if sample.unfinished is not None:
            c, i, n_att, it = sample.unfinished
            slow = (f"; interval {i + 1} (t={obs.times[i]:g} to {obs.times[i + 1]:g}) had run {n_att} attempts "
                    f"without a path hitting the observation (chain {c}, iteration {it})")
        raise RuntimeError(f"the time limit ({time_limit:g} s) ended the run after {max(iterations, 0)} iterations, "
                           f"within the burn-in ({burn_in}){slow}: no draw to keep; raise time_limit or lower burn_in")
    keep = np.arange(burn_in, iterations, thin)
    ds = _dataset(net, obs, rm, der, sample, keep, run, seed=seed, chains=chains, iterations=iterations,
                  burn_in=burn_in, thin=thin, stopped_by="time_limit" if stopped else "iterations")
    diagnostics.warn_if_not_converged(ds)
    return ds


@dataclass
class _Sample:
    """Every chain's theta after each iteration and the accepted attempt of each interval."""

    draws: np.ndarray  # [C, total, P]
    best: np.ndarray  # [C, total, n]
    simulated: int = 0  # attempts simulated, all chains
    done: int = 0  # iterations (X-steps) done: total, or fewer when a time limit stopped the run
    unfinished: tuple[int, int, int, int] | None = None  # a time limit inside an iteration: its slowest interval


def _sample(run: engine.Run, net: ReactionNetwork, obs: Observations, rm: RateModel, pr: Problem, seed: int,
            chains: int, total: int, time_limit: float | None = None) -> _Sample:
    """Rounds of Gibbs iterations (``total`` = iterations + 1: one more X-step, the path of the last
    kept draw), sized to about ROUND_SECONDS each; the draws do not depend on the round sizes. Past
    ``time_limit`` seconds no new round starts (``_Sample.done`` says how many steps were done)."""
    t_start = time.perf_counter()
    shards = run.split(chains)
    n, P = obs.n_intervals, len(rm.names)
    out = _Sample(np.zeros((chains, total, P)), np.zeros((chains, total, n), dtype=np.int64))
    theta = np.tile(rm.initial, (chains, 1))
    effort = np.ones((chains, n))
    it0, block = 0, FIRST_BLOCK
    while it0 < total:
        k = min(block, total - it0)
        left = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - t_start))
        res = run.round(run_block, [MCMCBlock(pr, seed, np.arange(r.start, r.stop, dtype=np.int64),
                                              theta[r.start:r.stop], it0, k, effort[r.start:r.stop], left)
                                    for r in shards])
        done = min(int(x["done"]) for x in res)  # shards stopped by the time limit: the steps all did
        for r, x in zip(shards, res):
            _raise_errors(net, obs, rm, x["err"], r.start, x["draws"], it0, theta[r.start:r.stop], it0 + done)
            out.draws[r.start:r.stop, it0:it0 + done] = x["draws"][:, :done]
            out.best[r.start:r.stop, it0:it0 + done] = x["best"][:, :done]
            out.simulated += x["simulated"]
        if done < k:
            out.unfinished = _unfinished(res, shards, it0 + done)
        if done:
            theta = out.draws[:, it0 + done - 1].copy()
            effort = out.best[:, it0:it0 + done].mean(axis=1) + 1.0
        it0 += done
        block = int(np.clip(k * ROUND_SECONDS / max(run.last_round_seconds, 1e-3), 1, 100_000))
        run.progress.update(it0, message=f"{out.simulated / max(run.round_seconds, 1e-12):.3g} attempts/s")
        if done < k or (time_limit is not None and time.perf_counter() - t_start > time_limit and it0 < total):
            break
    out.done = it0
    return out


def _unfinished(res: list[dict], shards: list[range], it: int) -> tuple[int, int, int, int] | None:
    """(chain, interval, attempts, iteration) of the interval with the most attempts in the iteration
    a time limit cut short (None: no shard stopped inside an iteration)."""
    best = (0, 0, -1, it)
    for r, x in zip(shards, res):
        u = x.get("unfinished")
        if u is not None and u.size and int(u.max()) > best[2]:
            c, i = np.unravel_index(int(u.argmax()), u.shape)
            best = (r.start + int(c), int(i), int(u.max()), it)
    return best if best[2] >= 0 else None


def _raise_errors(net, obs, rm, err, chain0, draws, it0, theta_before, it_end) -> None:
    """The first error of each chain (before iteration ``it_end``: the steps every shard did) as a
    RuntimeError naming the chain, the iteration and the interval or parameter."""
    for c in range(err.shape[0]):
        code, it, where, detail = (int(v) for v in err[c])
        if code == cpu.ERR_NONE or it >= it_end:
            continue
        step = it - it0
        th = draws[c, step - 1] if step > 0 else theta_before[c]
        ths = ", ".join(f"{nm}={v:.4g}" for nm, v in zip(rm.names, th))
        chain = chain0 + c
        if code in (cpu.ERR_SHAPE, cpu.ERR_RATE):
            name = rm.names[where]
            what = ("fired 0 times in the latent path and its prior has shape 0 (the improper 1/theta prior): "
                    "the conditional Gamma(0, .) is undefined" if code == cpu.ERR_SHAPE else
                    "had h = 0 along the whole latent path and its prior has rate 0: the conditional gamma has rate 0")
            raise RuntimeError(
                f"improper posterior: {rm.reactions_of(where, net)} {what} (chain {chain}, iteration {it}; "
                f"{name} had drifted to {th[where]:.3g}). With the 1/theta prior these data do not rule out "
                f"{name} -> 0, so the posterior is improper; give {name} a proper gamma prior "
                f"(e.g. --prior {name}=gamma:SHAPE,RATE)")
        if code == cpu.ERR_MAX_ATTEMPTS:
            raise RuntimeError(
                f"interval {where + 1} (t={obs.times[where]:g} to {obs.times[where + 1]:g}): no forward path hit the "
                f"observation in {detail} attempts (chain {chain}, iteration {it}, theta: {ths}); the data are "
                "very unlikely under these rates: the bridge is effectively impossible (check this observation; "
                "or raise max_attempts, --max-attempts, or start nearer the posterior)")
        if code == cpu.ERR_MAX_EVENTS:
            raise RuntimeError(
                f"interval {where + 1}: attempt {detail} exceeded max_events (chain {chain}, iteration {it}, "
                f"theta: {ths}); the rates make the system fire without bound")
        raise RuntimeError(f"chain {chain}: error code {code} at iteration {it}")


def _dataset(net: ReactionNetwork, obs: Observations, rm: RateModel, der: dict[str, arith.Node], sample: _Sample,
             keep: np.ndarray, run: engine.Run, *, seed: int, chains: int, iterations: int, burn_in: int,
             thin: int, stopped_by: str = "iterations") -> xr.Dataset:
    names = list(rm.names)
    post = sample.draws[:, keep]  # theta after iteration it
    attempts = sample.best[:, keep + 1] + 1  # the path drawn from that theta (iteration it + 1)
    data: dict[str, Any] = {}
    for p, nm in enumerate(names):
        data[nm] = (("chain", "draw"), post[:, :, p], {"long_name": f"rate constant {nm} ({rm.reactions_of(p, net)})",
                                                      "prior": _prior_text(rm, p), "prior_shape": rm.shape[p],
                                                      "prior_rate": rm.rate[p]})
    for nm, node in der.items():
        with np.errstate(divide="ignore", invalid="ignore"):
            val = arith.evaluate(node, post, {})
        data[nm] = (("chain", "draw"), np.asarray(val, np.float64),
                    {"long_name": f"derived: {arith.to_text(node, names)}"})
    var_names = names + list(der)
    n_draw = len(keep)
    # everything that is not a (chain, draw) draw of the posterior is a coordinate, so that ArviZ
    # (az.summary(ds), az.convert_to_inference_data(ds)) reads the data variables as the posterior
    coords: dict[str, Any] = {
        "chain": np.arange(chains), "draw": np.arange(n_draw), "interval": np.arange(1, obs.n_intervals + 1),
        "iteration": ("draw", keep), "variable": var_names, "time": obs.times, "species": list(net.species),
        "attempts": (("chain", "draw", "interval"), attempts,
                     {"long_name": "attempts until the accepted path (its index + 1)", "sample_stat": 1}),
        "acceptance_rate": (("chain", "interval"), n_draw / np.maximum(attempts.sum(axis=1), 1),
                            {"long_name": "accepted paths / attempts", "sample_stat": 1}),
        "observed_state": (("time", "species"), obs.states, {"long_name": "observed (and conserved) counts",
                                                             "units": "molecules"}),
        "observed": (("time", "species"), obs.observed.astype(np.int8), {"long_name": "1 if measured"}),
    }
    ds = results.dataset(data, coords)
    diag = diagnostics.convergence(ds)
    for k, long_name in (("rhat", "rank-normalised split R-hat"), ("ess_bulk", "bulk ESS"), ("ess_tail", "tail ESS")):
        ds.coords[k] = results.variable("variable", diag.loc[var_names, k].to_numpy(), {"long_name": long_name})
    total = iterations * chains
    t_rounds = max(run.round_seconds, 1e-12)
    ds.attrs = run.provenance(
        workload="mcmc.infer_rates", seed=seed, model_name=net.name, model_sha256=net.digest(), chains=chains, iterations=iterations, burn_in=burn_in, thin=thin,
        parameters=",".join(names), derived=",".join(f"{k}={arith.to_text(v, names)}" for k, v in der.items()),
        posterior_variables=",".join(var_names), sample_stats="attempts,acceptance_rate",
        initial_theta=",".join(f"{nm}={v!r}" for nm, v in zip(names, rm.initial)),
        attempts_simulated=int(sample.simulated), iterations_per_second=(iterations + 1) * chains / t_rounds,
        attempts_per_second=sample.simulated / t_rounds, sampling_seconds=run.round_seconds,
        observations=obs.source, initial_from_model=",".join(obs.from_model), total_iterations=total,
        stopped_by=stopped_by,
    )
    return ds


def _prior_text(rm: RateModel, p: int) -> str:
    if rm.shape[p] == 0 and rm.rate[p] == 0:
        return "improper 1/theta"
    return f"gamma(shape={rm.shape[p]:g}, rate={rm.rate[p]:g})"
