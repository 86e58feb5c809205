"""``distsim pbn simulate | steady-state | influence | convert``: probabilistic Boolean networks."""

from __future__ import annotations

import argparse
import time
from typing import Any

from .common import client, finish, parse_initial


def _add_common_pbn(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="model file: .pbn/.assa (ASSA-PBN), .bnet/BoolNet text, or BNMPy 'X = f, p' text")
    p.add_argument("--mode", choices=["sync", "async"], default="sync")
    p.add_argument("--perturbation", "-p", type=float, default=None, help="override the perturbation probability")
    p.add_argument("--inputs", choices=["keep", "zero", "one", "random"], default="keep",
                   help="policy for free inputs of bnet/BoolNet files (default: keep their value)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--initial", default="random", help="initial states: random (default), zeros, ones, or A=1,B=0")
    p.add_argument("--output", "-o", default=None, help="write the result Dataset (.nc netCDF or .zarr)")


def _add_steady(p: argparse.ArgumentParser) -> None:
    p.add_argument("--precision", "-r", type=float, default=1e-4, help="half-width r of the interval (default 1e-4)")
    p.add_argument("--confidence", "-s", type=float, default=0.95, help="confidence level s (default 0.95)")
    p.add_argument("--epsilon", type=float, default=1e-10, help="burn-in tolerance of the two-state chain")
    p.add_argument("--chains", type=int, default=None, help="number of chains (default: from the precision)")
    p.add_argument("--initial-length", type=int, default=64, help="psi_0 of Gelman-Rubin (default 64)")
    p.add_argument("--rhat", type=float, default=1.05, help="R-hat threshold (default 1.05)")
    p.add_argument("--no-reduce", action="store_true", help="do not drop nodes irrelevant to the target")
    p.add_argument("--plot", default=None, help="write a PNG of the convergence")
    p.add_argument("--max-steps", type=float, default=None, help="stop after this many simulated steps in all")
    p.add_argument("--time-limit", type=float, default=None, help="stop after this many seconds")


def register(subparsers: Any) -> None:
    """Add the ``pbn`` command and its subcommands."""
    pbn = subparsers.add_parser("pbn", help="probabilistic Boolean networks")
    ps = pbn.add_subparsers(dest="pbn_command", metavar="PBN_COMMAND")
    ps.required = True
    sim = ps.add_parser("simulate", help="simulate many trajectories")
    _add_common_pbn(sim)
    sim.add_argument("--steps", type=int, required=True)
    sim.add_argument("--trajectories", type=int, required=True)
    sim.add_argument("--target", action="append", default=None, help="count steps in this set (repeatable)")
    sim.add_argument("--no-states", action="store_true", help="do not keep the final states")

    ss = ps.add_parser("steady-state", help="steady-state probability of target sets (Gelman-Rubin + two-state chain)")
    _add_common_pbn(ss)
    ss.add_argument("--target", action="append", required=True, help='set of states, e.g. "A=1,B=0" (repeatable)')
    _add_steady(ss)

    inf = ps.add_parser("influence", help="long-run influence of the parents of a node on it")
    _add_common_pbn(inf)
    inf.add_argument("--node", required=True, help="the influenced node")
    inf.add_argument("--parents", default=None, help="comma-separated parents (default: all)")
    _add_steady(inf)

    conv = ps.add_parser("convert", help="write a model as an ASSA-PBN .pbn file")
    conv.add_argument("model")
    conv.add_argument("--inputs", choices=["keep", "zero", "one", "random"], default="keep")
    conv.add_argument("--perturbation", "-p", type=float, default=None)
    conv.add_argument("--output", "-o", required=True)


def run(args: argparse.Namespace) -> int:
    from .. import results
    from ..pbn import load

    if args.output:
        results.check_output_path(args.output) if args.pbn_command != "convert" else None
    net = load(args.model, perturbation=args.perturbation, inputs=args.inputs)
    if args.pbn_command == "convert":
        from ..models.formats import write_assa

        write_assa(net, args.output)
        print(f"wrote {args.output}: {net.summary()}")
        return 0
    backend = "cpu" if args.cpu else None
    progress = not args.quiet
    print(net.summary())
    t0 = time.perf_counter()
    with client(args) as dask_client:
        if args.pbn_command == "simulate":
            from ..pbn import simulate

            ds = simulate(net, steps=args.steps, trajectories=args.trajectories, mode=args.mode, seed=args.seed,
                          initial=parse_initial(args.initial), targets=args.target, keep_states=not args.no_states,
                          client=dask_client, backend=backend, progress=progress)
            _print_simulation(ds)
        else:
            kw = dict(mode=args.mode, precision=args.precision, confidence=args.confidence, epsilon=args.epsilon,
                      chains=args.chains, initial_length=args.initial_length, rhat_threshold=args.rhat,
                      reduce=not args.no_reduce, seed=args.seed, initial=parse_initial(args.initial), client=dask_client,
                      backend=backend, progress=progress, plot=args.plot, max_steps=args.max_steps,
                      time_limit=args.time_limit)
            if args.pbn_command == "steady-state":
                from ..pbn import steady_state

                ds = steady_state(net, args.target, **kw)
                _print_steady(ds)
            else:
                from ..pbn import influence

                parents = args.parents.split(",") if args.parents else None
                ds = influence(net, args.node, parents, **kw)
                _print_influence(ds)
    return finish(ds, args.output, t0, plot=getattr(args, "plot", None))


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
    a = ds.attrs
    conf = f"{a['confidence']:.0%}"
    print(f"{'target':<28} {'probability':>11}  {conf + ' interval':>24}  {'half-width':>10} {'R-hat':>7} "
          f"{'burn-in':>8} {'sample':>9} {'alpha':>9} {'beta':>9}")
    for k in range(ds.sizes["target"]):
        d = ds.isel(target=k)
        print(f"{str(d.target.values):<28} {float(d.probability):11.6f}  [{float(d.ci_low):.6f}, {float(d.ci_high):.6f}]"
              f"  {float(d.half_width):10.2e} {float(d.rhat):7.4f} {int(d.burn_in):8d} {int(d.sample_size):9.3g} "
              f"{float(d.alpha):9.3g} {float(d.beta):9.3g}")
    print(f"{a['chains']} chains x {a['chain_length']} steps = {a['steps_simulated']:.3g} steps, {a['rounds']} rounds, "
          f"{a['wall_time_s']:.2f} s on {a['backend']} ({a['devices']}); nodes removed by reduction: "
          f"{a['nodes_removed']} of {a['nodes']}; {a['note']}")


def _print_influence(ds: Any) -> None:
    a = ds.attrs
    print(f"long-run influence on {a['target_node']} (+- conservative half-width):")
    for p, v, h in zip(ds.parent.values, ds.influence.values, ds.influence_halfwidth.values):
        print(f"  {p:<24} {v:.6f} +- {h:.2g}")
    print(f"{len(ds.assignment)} joint probabilities from {a['chains']} chains x {a['chain_length']} steps in "
          f"{a['wall_time_s']:.2f} s on {a['backend']}")
