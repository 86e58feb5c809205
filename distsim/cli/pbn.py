"""``distsim pbn simulate | steady-state | influence | convert``: probabilistic Boolean networks."""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from ..errors import UsageError
from .common import (backend, check_outputs, client, finish, parse_assignments, parse_initial, positive_float,
                     positive_int, progress, subparser)

INPUTS = ("keep", "zero", "one", "random")
PRECISION_HELP = ("half-width r of the interval; the work grows as 1/r^2 (r = 1e-3 takes seconds to minutes on a "
                  "laptop, 1e-4 a hundred times longer)")


def _add_model(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="model file: .pbn/.assa (ASSA-PBN), .bnet/BoolNet, BNMPy 'X = f, p' text, MaBoSS "
                   ".bnd (with its .cfg), or SBML-qual")
    p.add_argument("--perturbation", "-p", type=float, default=None, metavar="P",
                   help="perturbation probability per node and step (default: the file's, else 0)")
    p.add_argument("--inputs", choices=INPUTS, default="keep",
                   help="free inputs of bnet/BoolNet/BNMPy files: keep their value, fix to 0/1, or draw at random")
    p.add_argument("--cfg", default=None, metavar="CFG", help="the MaBoSS .cfg of a .bnd model (default: the one "
                   "beside it); its certain initial values become the default --initial")


def _add_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mode", choices=["sync", "async"], default=None,
                   help="synchronous (every node updates each step) or asynchronous (one node per step); default: "
                   "the update the file states (ASSA type=, MaBoSS), else sync")
    p.add_argument("--fix", action="append", default=[], metavar="NODE=0|1",
                   help="knock a node out (0) or in (1): a constant, never perturbed (repeatable)")
    p.add_argument("--seed", type=int, default=0, help="random seed; a seed gives the same result on any hardware")
    p.add_argument("--initial", default=None, metavar="STATES",
                   help="initial states: random, zeros, ones, or NODE=0|1,... (the other nodes random); default: "
                   "random (a MaBoSS .cfg's certain values)")
    p.add_argument("--output", "-o", default=None, metavar="PATH", help="write the result Dataset (.nc or .zarr)")


def _add_steady(p: argparse.ArgumentParser) -> None:
    p.add_argument("--precision", "-r", type=positive_float, default=1e-3, help=PRECISION_HELP)
    p.add_argument("--confidence", "-s", type=positive_float, default=0.95, help="confidence level s of the interval")
    p.add_argument("--epsilon", type=positive_float, default=1e-10, help="burn-in tolerance of the two-state chain")
    p.add_argument("--chains", type=positive_int, default=None, metavar="N",
                   help="number of chains (default: from the precision alone, never from the hardware)")
    p.add_argument("--initial-length", type=positive_int, default=64, metavar="PSI0",
                   help="chain length psi_0 of the first Gelman-Rubin round")
    p.add_argument("--rhat", type=positive_float, default=1.05, help="Gelman-Rubin R-hat threshold")
    p.add_argument("--no-reduce", action="store_true", help="simulate every node (default: only the targets' "
                   "ancestors, which gives the same answer)")
    p.add_argument("--max-length", type=positive_int, default=2**20, metavar="N",
                   help="stop (as not converged) when a chain would exceed this many steps")
    p.add_argument("--max-steps", type=positive_float, default=None, metavar="N",
                   help="stop after this many simulated steps in all")
    p.add_argument("--by-class", action="store_true",
                   help="with frozen nodes (never perturbed, f = x) left random: one answer per class of their values")
    p.add_argument("--time-limit", type=positive_float, default=None, metavar="SECONDS",
                   help="stop after this many seconds")


def register(subparsers: Any) -> None:
    """Add the ``pbn`` command and its subcommands."""
    pbn = subparsers.add_parser("pbn", help="probabilistic Boolean networks: simulate, steady state, influence")
    ps = pbn.add_subparsers(dest="pbn_command", metavar="PBN_COMMAND")
    ps.required = True
    sim = subparser(ps, "simulate", help="simulate many independent trajectories")
    _add_model(sim)
    _add_run(sim)
    sim.add_argument("--steps", type=positive_int, required=True, help="steps per trajectory")
    sim.add_argument("--trajectories", type=positive_int, required=True, metavar="N", help="number of trajectories")
    sim.add_argument("--target", action="append", default=None, metavar="SET",
                     help='count the steps in this set of states, e.g. "A=1,B=0" (repeatable)')
    sim.add_argument("--keep-states", action="store_true",
                     help="also keep every trajectory's final state (trajectories x nodes bytes); by default only "
                          "the fraction of trajectories with each node at 1 (final_frequency)")
    sim.add_argument("--no-states", action="store_true", help=argparse.SUPPRESS)  # the default since 2026-11-27

    ss = subparser(ps, "steady-state", help="steady-state probability of sets of states (Gelman-Rubin + two-state "
                   "Markov chain)")
    _add_model(ss)
    _add_run(ss)
    ss.add_argument("--target", action="append", required=True, metavar="SET",
                    help='set of states, e.g. "A=1,B=0" (repeatable; the sets share one simulation)')
    _add_steady(ss)
    ss.add_argument("--plot", default=None, metavar="PNG", help="write a PNG of the convergence")

    inf = subparser(ps, "influence", help="long-run influence of a node's parents on it")
    _add_model(inf)
    _add_run(inf)
    inf.add_argument("--node", required=True, help="the influenced node")
    inf.add_argument("--parents", default=None, help="comma-separated parents (default: all of the node's parents)")
    _add_steady(inf)

    conv = subparser(ps, "convert", help="write a model as an ASSA-PBN .pbn file")
    _add_model(conv)
    conv.add_argument("--output", "-o", required=True, metavar="PATH", help="the .pbn file to write")
    conv.add_argument("--fix", action="append", default=[], metavar="NODE=0|1",
                      help="knock a node out (0) or in (1) before writing (repeatable)")


NOT_CONVERGED = 3  # exit status of a steady state or influence that did not converge


def run(args: argparse.Namespace) -> int:
    plot = getattr(args, "plot", None)
    if args.pbn_command == "convert":
        check_outputs(args, files=[args.output])
    else:
        check_outputs(args, data=[args.output], figures=[plot])
    net, initial = _load(args)
    if args.pbn_command == "convert":
        from ..models.formats import write_assa

        write_assa(net, args.output)
        print(f"wrote {args.output}: {net.summary()}")
        return 0
    print(net.summary())
    t0 = time.perf_counter()
    kw = dict(mode=args.mode, seed=args.seed, initial=initial, backend=backend(args), progress=progress(args))
    with client(args) as dask_client:
        if args.pbn_command == "simulate":
            from ..pbn import simulate

            ds = simulate(net, steps=args.steps, trajectories=args.trajectories, targets=args.target,
                          keep_states=args.keep_states, client=dask_client, **kw)
            _print_simulation(ds)
            return finish(args, ds, args.output, t0)
        kw.update(precision=args.precision, confidence=args.confidence, epsilon=args.epsilon, chains=args.chains,
                  initial_length=args.initial_length, rhat_threshold=args.rhat, reduce=not args.no_reduce,
                  max_length=args.max_length, max_steps=args.max_steps, time_limit=args.time_limit,
                  by_class=args.by_class, client=dask_client)
        if args.pbn_command == "steady-state":
            from ..pbn import steady_state

            ds = steady_state(net, args.target, **kw)
            _print_steady(ds)
        else:
            from ..pbn import influence

            ds = influence(net, args.node, args.parents.split(",") if args.parents else None, **kw)
            _print_influence(ds)

    def draw(path: str) -> None:
        from ..pbn.plots import plot_convergence

        plot_convergence(ds, path)

    status = finish(args, ds, args.output, t0, {"convergence plot": (plot, draw)})
    return status or (0 if ds.attrs.get("converged", 1) else NOT_CONVERGED)


def _load(args: argparse.Namespace) -> tuple[Any, Any]:
    """The network (with --fix applied) and the initial states (--initial, else a MaBoSS .cfg's)."""
    from pathlib import Path

    from ..pbn import load

    fixed = {k: int(v) for k, v in parse_assignments(args.fix, "--fix").items()}
    if any(v not in (0, 1) for v in fixed.values()):
        raise UsageError(f"--fix: values must be 0 or 1, got {args.fix}")
    initial = parse_initial(args.initial) if getattr(args, "initial", None) else "random"
    if Path(args.model).suffix.lower() == ".bnd":
        from ..models.formats import read_maboss

        net, conf = read_maboss(args.model, args.cfg)
        for note in conf.notes:
            print(f"MaBoSS: {note}")
        if getattr(args, "initial", None) is None and conf.initial:
            initial = dict(conf.initial)
        if args.perturbation is not None:
            net = net.with_perturbation(args.perturbation)
    else:
        if args.cfg is not None:
            raise UsageError("--cfg is for MaBoSS .bnd models")
        net = load(args.model, perturbation=args.perturbation, inputs=args.inputs)
    return (net.with_fixed(fixed) if fixed else net), initial


def _print_simulation(ds: Any) -> None:
    a = ds.attrs
    print(f"{a['trajectories']} trajectories x {a['steps']} steps ({a['mode']}) on {a['backend']}: "
          f"{a['steps_simulated']:.3g} steps in {a['wall_time_s']:.2f} s ({a['steps_per_second']:.3g} steps/s)")
    freq = ds.frequency.values
    order = freq.argsort()[::-1]
    shown = ", ".join(f"{ds.node.values[i]}={freq[i]:.4f}" for i in order[:8])
    print(f"node frequencies (highest): {shown}{' ...' if len(order) > 8 else ''}")
    if "target" in ds.coords:
        for t, f in zip(ds.target.values, ds.target_frequency.values):
            print(f"  target {t}: fraction of steps {f:.6f}")


def _print_steady(ds: Any) -> None:
    if "frozen_class" in ds.dims:
        for c in ds.frozen_class.values:
            print(f"class {c} (frozen nodes {ds.attrs['frozen_nodes']}):")
            _print_steady(ds.sel(frozen_class=c))
        return
    a = ds.attrs
    labels = [str(t) for t in ds.target.values]
    w = max(8, *(len(s) for s in labels))
    conf = f"{a['confidence']:.0%} interval"
    print(f"{'target':<{w}} {'probability':>11}  {conf:^24}  {'half-width':>10} {'R-hat':>7} {'burn-in':>8} "
          f"{'sample':>9} {'alpha':>9} {'beta':>9}")
    for k, label in enumerate(labels):
        d = ds.isel(target=k)
        interval = (f"[{float(d.ci_low):.6f}, {float(d.ci_high):.6f}]" if np.isfinite(float(d.ci_low))
                    else "(not converged)")
        print(f"{label:<{w}} {float(d.probability):11.6f}  {interval:^24}  {float(d.half_width):10.2e} "
              f"{float(d.rhat):7.4f} {int(d.burn_in):8d} {int(d.sample_size):9.3g} {float(d.alpha):9.3g} "
              f"{float(d.beta):9.3g}")
    print(f"{a['chains']} chains x {a['chain_length']} steps = {a['steps_simulated']:.3g} steps, {a['rounds']} rounds, "
          f"{a['wall_time_s']:.2f} s on {a['backend']} ({a['devices']}); nodes removed by reduction: "
          f"{a['nodes_removed']} of {a['nodes']}")
    if not a.get("converged", 1):
        print(f"not converged: R-hat {float(ds.rhat.max()):.4g} (threshold {a['rhat_threshold']}), {a['note']}; "
              "no interval is given (raise --max-length/--max-steps/--time-limit, or check the network's ergodicity)")


def _print_influence(ds: Any) -> None:
    a = ds.attrs
    print(f"long-run influence on {a['target_node']} (+- conservative half-width):")
    for p, v, h in zip(ds.parent.values, ds.influence.values, ds.influence_halfwidth.values):
        print(f"  {p:<24} {v:.6f} +- {h:.2g}")
    print(f"{len(ds.assignment)} joint probabilities from {a['chains']} chains x {a['chain_length']} steps in "
          f"{a['wall_time_s']:.2f} s on {a['backend']}")
