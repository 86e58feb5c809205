"""``distsim.grn.infer``: GRN inference by a parallel GA, islands spread over the cluster's workers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from .. import engine, results
from ..rng import check_seed
from .ga import MODELS, MODES, SELECTIONS, Consts, GAParams, grid_shape
from .problem import RULE_NAMES, Problem, load, unpack_links
from .shard import ISLANDS, Setup, Step

DEFAULT_ISLANDS = {"master-slave": 1, "island": 4, "cellular": 1, "hybrid": 4}


def _count(value: Any, name: str, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}")
    return int(value)


def infer(
    problem: Problem | str,
    model: str = "island",
    islands: int | None = None,
    population: int = 256,
    selection: str = "elitist",
    migration_rate: int | float | None = None,
    migration_interval: int = 16,
    generations: int = 1000,
    target_fitness: float | None = None,
    mode: str = "standard",
    seed: int = 0,
    client: Any = None,
    time_limit: float | None = None,
    backend: str | None = None,
    link_mutation: float = 0.5,
    rule_mutation: float = 0.5,
    shards: int | None = None,
    round_generations: int = 64,
    progress: bool | None = None,
    plot: str | None = None,
) -> xr.Dataset:
    """Infer a GRN (links and rules) that drives ``problem.initial`` to ``problem.target``.

    ``model``: 'master-slave' (one panmictic population), 'island' (ring of islands), 'cellular'
    (one torus grid) or 'hybrid' (a ring of cellular grids). ``population`` is per island;
    ``selection`` 'elitist' or 'roulette' (panmictic models); ``mode`` 'standard' ((mu+lambda)
    replacement) or 'faithful' (the reference code's in-place replacement). ``migration_rate``
    migrants (an int, or a fraction of the island) every ``migration_interval`` generations.
    Stops at ``generations``, when an island reaches ``target_fitness`` (checked after each migration
    epoch) or fitness 0, or after ``time_limit`` seconds (not reproducible). Islands are split over
    ``shards`` (default: one per worker); for a given seed the result does not depend on the number
    of shards or workers, nor on the backend.
    """
    if not isinstance(problem, Problem):
        problem = load(problem)
    prm = _params(problem, model=model, islands=islands, population=population, selection=selection,
                  migration_rate=migration_rate, migration_interval=migration_interval, generations=generations,
                  target_fitness=target_fitness, mode=mode, seed=seed, link_mutation=link_mutation,
                  rule_mutation=rule_mutation)
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"time_limit must be positive, got {time_limit}")
    if plot is not None and not str(plot).lower().endswith(".png"):
        raise ValueError(f"plot must be a .png path, got {plot!r}")

    with engine.Run("grn", client, backend, progress=progress, label="grn infer") as run:
        parts = run.split(prm.islands, shards=shards)
        run.progress.start(f"{model} GA, {prm.islands} x {prm.population} individuals, {len(parts)} shard(s) on "
                           f"{run.describe()}", total=prm.generations, unit="gen")
        rec = _evolve(run, problem, prm, parts, round_generations, time_limit)
    ds = _dataset(problem, prm, rec, run, target_fitness, len(parts))
    if plot is not None:
        from .plots import plot_result

        plot_result(ds, plot)
    return ds


def _params(problem: Problem, *, model: str, islands: int | None, population: int, selection: str,
            migration_rate: int | float | None, migration_interval: int, generations: int,
            target_fitness: float | None, mode: str, seed: int, link_mutation: float,
            rule_mutation: float) -> GAParams:
    """The checked GA parameters (a clear error for each bad value)."""
    _check_choices(model, mode, selection)
    K, N = _islands_and_population(model, islands, population)
    interval = _count(migration_interval, "migration_interval", 1)
    rate = _migration_rate(migration_rate, N)
    G = _count(generations, "generations", 0)
    for name, v in (("link_mutation", link_mutation), ("rule_mutation", rule_mutation)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} must be a probability in [0, 1], got {v}")
    seed = check_seed(seed)
    if (Consts.of(problem).max_score + 1) * 2 * N >= 2**62:
        raise ValueError("problem too large for exact 64-bit fitness keys (reduce lambda's denominator or population)")
    stop_score = 0 if target_fitness is None else max(0, problem.score_of_fitness(float(target_fitness)))
    return GAParams(model, selection, mode, N, K, rate, interval, float(link_mutation), float(rule_mutation), seed,
                    G, stop_score)


def _check_choices(model: str, mode: str, selection: str) -> None:
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    if model in ("cellular", "hybrid") and selection == "roulette":
        raise ValueError(f"selection applies to the panmictic models; '{model}' mates each cell with its best "
                         "neighbour")


def _islands_and_population(model: str, islands: int | None, population: int) -> tuple[int, int]:
    K = DEFAULT_ISLANDS[model] if islands is None else _count(islands, "islands", 1)
    if model in ("master-slave", "cellular") and K != 1:
        raise ValueError(f"model '{model}' has one population; use "
                         f"'{'island' if model == 'master-slave' else 'hybrid'}' for {K} islands")
    N = _count(population, "population", 2)
    if model in ("cellular", "hybrid"):
        rows, cols = grid_shape(N)
        if min(rows, cols) < 3:
            raise ValueError(f"a cellular island needs a grid of at least 3x3; population {N} gives {rows}x{cols}")
    elif N % 2:
        raise ValueError(f"population must be even (parents are paired), got {N}")
    return K, N


def _migration_rate(migration_rate: int | float | None, N: int) -> int:
    if migration_rate is None:
        rate = max(1, N // 16)
    elif isinstance(migration_rate, float) and 0 <= migration_rate < 1:
        rate = int(round(migration_rate * N))
    else:
        rate = _count(migration_rate, "migration_rate", 0)
    if rate > N // 2:
        raise ValueError(f"migration_rate must be at most half the island ({N // 2}), got {rate}")
    return rate


@dataclass
class _Record:
    """What the rounds brought back: per-generation statistics of every shard's islands, the best
    individual each shard reported, and why the search stopped."""

    best: list[list[np.ndarray]]
    sums: list[list[np.ndarray]]
    best_ind: dict[int, tuple] = field(default_factory=dict)
    stop_reason: str = "generations"
    t_target: float | None = None

    def add(self, res: list[dict]) -> list[dict]:
        for s, r in enumerate(res):
            self.best[s].append(r["best"])
            self.sums[s].append(r["sum"])
            if r["best_individual"] is not None:
                self.best_ind[s] = (r["best_key"], r["best_individual"])
        return res

    def reached(self, res: list[dict], stop_score: int, elapsed: float) -> bool:
        if min(r["best_key"] for r in res)[0] > stop_score:
            return False
        self.t_target, self.stop_reason = elapsed, "target"
        return True


def _evolve(run: engine.Run, problem: Problem, prm: GAParams, parts: list[range], round_generations: int,
            time_limit: float | None) -> _Record:
    """Rounds of migration epochs until the generation limit, the target fitness or the time limit."""
    S = len(parts)
    external = S > 1 and prm.migrates
    islands = run.stateful(ISLANDS, [Setup(problem, prm, tuple(r), external) for r in parts])
    epochs_total = math.ceil(prm.generations / prm.migration_interval)
    per_round = 1 if S > 1 else max(1, round_generations // prm.migration_interval)  # shards stop at the same epoch
    rec = _Record([[] for _ in parts], [[] for _ in parts])
    res = rec.add(islands.advance())
    reached = rec.reached(res, prm.stop_score, run.elapsed())
    epoch = 0
    while epoch < epochs_total and not reached:
        if time_limit is not None and run.elapsed() >= time_limit:
            rec.stop_reason = "time_limit"
            break
        m = min(per_round, epochs_total - epoch)
        # one shard runs many epochs a round: it stops between generations at the time limit
        left = None if time_limit is None or S > 1 else max(0.0, time_limit - run.elapsed())
        res = rec.add(islands.advance([Step(epoch, m, res[(s - 1) % S]["outgoing"] if external else None, left)
                                       for s in range(S)]))
        epoch += res[0]["epochs"]
        best_fit = float(problem.fitness_of_score(min(r["best_key"] for r in res)[0]))
        run.progress.update(res[0]["generation"], message=f"best fitness {best_fit:.8g}")
        reached = rec.reached(res, prm.stop_score, run.elapsed())
        if res[0].get("cut") and not reached:
            rec.stop_reason = "time_limit"
            break
    return rec


def _dataset(problem: Problem, prm: GAParams, rec: _Record, run: engine.Run, target_fitness: float | None,
             S: int) -> xr.Dataset:
    n, N = problem.n, prm.population
    best = np.concatenate([np.concatenate(b, axis=1) for b in rec.best], axis=0)  # [K, gens+1]
    total = np.concatenate([np.concatenate(s, axis=1) for s in rec.sums], axis=0)
    gens = best.shape[1] - 1
    (score, island), (act, rep, rules, gen_found) = min(rec.best_ind.values(), key=lambda v: v[0])
    links = unpack_links(act, rep, n)
    rules = np.asarray(rules, np.int8)
    traj = problem.simulate(links, rules)
    nm, lm = problem.mismatches(links, rules)
    assert problem.score(nm, lm) == score, "packed and reference evaluation disagree"
    changed = links != problem.links
    fit = problem.fitness_of_score(best)
    evaluations = prm.islands * N * (gens + 1)
    genes = list(problem.genes)
    data = {
        "best_fitness": (("island", "generation"), fit, {"long_name": "best fitness in the island (minimised)"}),
        "mean_fitness": (("island", "generation"), problem.fitness_of_score(total) / N,
                         {"long_name": "mean fitness of the island"}),
        "best_so_far": ("generation", np.minimum.accumulate(fit.min(axis=0)),
                        {"long_name": "best fitness found up to the generation (all islands)"}),
        "best_links": (("gene", "source"), links, {"long_name": "links of the best individual (row = target)",
                                                   "flag_values": "-1 0 1", "flag_meanings": "repression none "
                                                   "activation"}),
        "reference_links": (("gene", "source"), problem.links, {"long_name": "reference (literature) links"}),
        "changed_links": (("gene", "source"), changed.astype(np.int8),
                          {"long_name": "1 where the best links differ from the reference"}),
        "best_rules": ("gene", rules, {"long_name": "rule of each gene", "flag_values": "0 1 2 3",
                                       "flag_meanings": " ".join(RULE_NAMES)}),
        "best_rule_name": ("gene", np.array([RULE_NAMES[r] for r in rules], dtype=object)),
        "trajectory": (("step", "gene"), traj.astype(np.int8),
                       {"long_name": "state of the best network from the initial state"}),
        "initial_state": ("gene", problem.initial.astype(np.int8)),
        "target_state": ("gene", problem.target.astype(np.int8)),
    }
    coords = {"island": np.arange(prm.islands), "generation": np.arange(gens + 1), "gene": genes, "source": genes,
              "step": np.arange(problem.iterations + 1)}
    ds = results.dataset(data, coords)
    search = max(run.elapsed(), 1e-12)
    ds.attrs = run.provenance(
        workload="grn.infer", seed=prm.seed, model_name=problem.name, model_sha256=problem.digest(), model=prm.model,
        selection=prm.selection, mode=prm.mode, islands=prm.islands, population=N, migration_rate=prm.migration_rate,
        migration_interval=prm.migration_interval, link_mutation=prm.link_mutation, rule_mutation=prm.rule_mutation,
        generations=gens, generation_limit=prm.generations, shards=S, iterations=problem.iterations,
        lambda_=problem.lam, fitness=float(problem.fitness_of_score(score)), score=int(score),
        node_mismatches=nm, link_mismatches=lm, link_changes=int(changed.sum()), best_island=int(island),
        best_generation=int(gen_found), target_fitness=target_fitness, stop_reason=rec.stop_reason,
        reached_target=int(rec.stop_reason == "target"), time_to_target_s=rec.t_target, evaluations=evaluations,
        evaluations_per_second=evaluations / search, generations_per_second=gens / search,
    )
    return ds
