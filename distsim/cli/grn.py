"""``distsim grn infer PROBLEM ...``: GRN inference by parallel genetic algorithms."""

from __future__ import annotations

import argparse
import time
from typing import Any

from .common import (LazyChoices, backend, check_outputs, client, finish, nonnegative_int, positive_float,
                     positive_int, progress, subparser)

GA = "distsim.grn.ga"


def register(subparsers: Any) -> None:
    """Add the ``grn`` command (``grn infer``) to the top-level subparsers."""
    grn = subparsers.add_parser("grn", help="GRN inference by parallel genetic algorithms")
    sub = grn.add_subparsers(dest="grn_command", metavar="GRN_COMMAND")
    sub.required = True
    p = subparser(sub, "infer", help="infer links and rules that drive the initial state to the target state")
    p.add_argument("problem", help="problem: .toml/.json, or a links-matrix/edge-list .csv with --states")
    p.add_argument("--states", default=None, metavar="CSV", help="states CSV (node,initial,target) for a .csv problem")
    p.add_argument("--model", choices=LazyChoices(GA, "MODELS"), default="island", metavar="MODEL",
                   help="GA model, one of %(choices)s: one population, a ring of islands, a torus grid, a ring of grids")
    p.add_argument("--islands", type=positive_int, default=None, metavar="N",
                   help="islands (default: 4 for island/hybrid, else 1)")
    p.add_argument("--population", type=positive_int, default=256, metavar="N", help="individuals per island")
    p.add_argument("--selection", choices=LazyChoices(GA, "SELECTIONS"), default="elitist",
                   metavar="SELECTION", help="parent selection of the panmictic models: %(choices)s")
    p.add_argument("--mode", choices=LazyChoices(GA, "MODES"), default="standard", metavar="MODE",
                   help="%(choices)s; standard: (mu+lambda) replacement; faithful: the reference code's in-place replacement")
    p.add_argument("--migration-rate", type=nonnegative_int, default=None, metavar="N",
                   help="migrants per island and migration (default: population/16)")
    p.add_argument("--migration-interval", type=positive_int, default=16, metavar="G",
                   help="generations between migrations")
    p.add_argument("--generations", "-g", type=positive_int, default=1000, metavar="G", help="generation limit")
    p.add_argument("--target-fitness", type=float, default=None, metavar="F",
                   help="stop once this fitness is reached (e.g. 0.0005859375, the mouse-eye optimum)")
    p.add_argument("--time-limit", type=positive_float, default=None, metavar="SECONDS",
                   help="stop after this many seconds (the result then depends on the hardware)")
    p.add_argument("--link-mutation", type=float, default=0.5, metavar="P",
                   help="per-individual link mutation probability")
    p.add_argument("--rule-mutation", type=float, default=0.5, metavar="P",
                   help="per-individual rule mutation probability")
    p.add_argument("--seed", type=int, default=0, help="random seed; a seed gives the same result on any hardware")
    p.add_argument("--output", "-o", default=None, metavar="PATH", help="write the result Dataset (.nc or .zarr)")
    p.add_argument("--plot", default=None, metavar="PNG", help="write a PNG (fitness per generation, best network)")


def _sign(v: int) -> str:
    return {1: "+1", 0: "0", -1: "-1"}[int(v)]


def run(args: argparse.Namespace) -> int:
    """Run ``grn infer``."""
    from ..grn import infer, load

    check_outputs(args, data=[args.output], figures=[args.plot])
    problem = load(args.problem, states=args.states)
    print(problem.summary())
    t0 = time.perf_counter()
    with client(args) as dask_client:
        ds = infer(problem, model=args.model, islands=args.islands, population=args.population,
                   selection=args.selection, migration_rate=args.migration_rate,
                   migration_interval=args.migration_interval, generations=args.generations,
                   target_fitness=args.target_fitness, mode=args.mode, seed=args.seed, client=dask_client,
                   time_limit=args.time_limit, backend=backend(args), link_mutation=args.link_mutation,
                   rule_mutation=args.rule_mutation, progress=progress(args))
    a = ds.attrs
    print(f"best fitness {a['fitness']:.10g} ({a['node_mismatches']} node mismatches, {a['link_mismatches']} link "
          f"changes) at generation {a['best_generation']} on island {a['best_island']}; stopped by "
          f"{a['stop_reason']} after {a['generations']} generations ({a['backend']}, {a['shards']} shard(s))")
    changed = ds.changed_links.values.nonzero()
    for j, i in zip(*changed):
        print(f"  {ds.gene.values[j]} <- {ds.source.values[i]}: {_sign(ds.reference_links.values[j, i])} -> "
              f"{_sign(ds.best_links.values[j, i])}")
    print("rules: " + " ".join(f"{g}={r}" for g, r in zip(ds.gene.values, ds.best_rules.values)))
    if a.get("time_to_target_s") is not None:
        print(f"time to target {a['time_to_target_s']:.3f} s")
    print(f"{a['generations_per_second']:.1f} generations/s, {a['evaluations_per_second']:.3g} evaluations/s")

    def draw(path: str) -> None:
        from ..grn.plots import plot_result

        plot_result(ds, path)

    return finish(args, ds, args.output, t0, {"plot": (args.plot, draw)})
