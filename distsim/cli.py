"""The ``distsim`` command line.

    distsim [--scheduler ADDRESS | --in-process] [--cpu] [--workers N] [--quiet] COMMAND ...

    distsim info
    distsim pbn simulate MODEL --steps N --trajectories N [--mode sync|async] [--target A=1,B=0] [-o out.nc]
    distsim pbn steady-state MODEL --target "A=1,B=0" [--target ...] [--precision R] [--confidence S]
                             [--perturbation P] [--chains N] [--seed S] [-o out.nc] [--plot conv.png]
    distsim pbn influence MODEL --node X [--parents A,B] [...same options...]
    distsim pbn convert MODEL -o model.pbn
    distsim ssa simulate MODEL --t-end T --points K --realizations N [--method auto|direct|tree|warp|ar] [-o out.nc]

Without ``--scheduler`` the command starts a local Dask cluster (one worker per GPU when GPUs are
present, else one per core) and shuts it down at the end; ``--in-process`` runs without Dask.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import time
from typing import Any, Iterator

import numpy as np

from . import __version__
from .errors import DistsimError


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


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="distsim", description="Stochastic systems-biology workloads on CPUs and GPUs "
                                 "through Dask.", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--version", action="version", version=f"distsim {__version__}")
    ap.add_argument("--scheduler", metavar="ADDRESS", default=None, help="connect to this Dask scheduler")
    ap.add_argument("--in-process", action="store_true", help="run in this process, without a Dask cluster")
    ap.add_argument("--cpu", action="store_true", help="CPU backend only, even when GPUs are present")
    ap.add_argument("--workers", type=int, default=None, help="workers of the local cluster (default: one per "
                    "GPU, else one per core)")
    ap.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    sub.add_parser("info", help="versions, backend, GPUs seen, and the cluster `connect()` would start")

    pbn = sub.add_parser("pbn", help="probabilistic Boolean networks")
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

    ssa = sub.add_parser("ssa", help="exact stochastic simulation (Gillespie) of reaction networks")
    ss2 = ssa.add_subparsers(dest="ssa_command", metavar="SSA_COMMAND")
    ss2.required = True
    sim2 = ss2.add_parser("simulate", help="simulate an ensemble of realizations")
    sim2.add_argument("model", help="SBML (.xml) or distsim reaction text (.rxn)")
    sim2.add_argument("--t-end", type=float, required=True)
    sim2.add_argument("--points", type=int, default=101, help="time points on the output grid (default 101)")
    sim2.add_argument("--realizations", "-n", type=int, default=1000)
    sim2.add_argument("--method", choices=["auto", "direct", "tree", "warp", "ar"], default="auto")
    sim2.add_argument("--seed", type=int, default=0)
    sim2.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="override a parameter")
    sim2.add_argument("--trajectories", action="store_true", help="keep every realization's grid states")
    sim2.add_argument("--max-events", type=int, default=0, help="cap on events per realization (0: none)")
    sim2.add_argument("--output", "-o", default=None, help="write the result Dataset (.nc or .zarr)")
    sim2.add_argument("--plot", default=None, help="write a PNG of the mean and 5-95%% band")

    conv = ps.add_parser("convert", help="write a model as an ASSA-PBN .pbn file")
    conv.add_argument("model")
    conv.add_argument("--inputs", choices=["keep", "zero", "one", "random"], default="keep")
    conv.add_argument("--perturbation", "-p", type=float, default=None)
    conv.add_argument("--output", "-o", required=True)
    for name in PLUGINS:
        importlib.import_module(f"distsim.{name}.cli").register(sub)
    return ap


# workloads whose commands live in distsim/<name>/cli.py: register(subparsers) and run(args, client)
PLUGINS = ("grn", "mcmc", "sweep")


@contextlib.contextmanager
def _client(args: argparse.Namespace) -> Iterator[Any]:
    if args.in_process:
        yield None
        return
    from .cluster import connect

    if args.scheduler:
        client = connect(args.scheduler)
    else:
        client = connect(gpus=not args.cpu and "auto", n_workers=args.workers)
    try:
        if not args.quiet:
            print(f"[distsim] cluster: {_describe(client)}", file=sys.stderr)
        yield client
    finally:
        client.close()
        cluster = getattr(client, "cluster", None)
        if cluster is not None and not args.scheduler:
            cluster.close()


def _describe(client: Any) -> str:
    workers = client.scheduler_info(n_workers=-1)["workers"]
    gpus = sum(1 for w in workers.values() if w.get("resources", {}).get("GPU"))
    kind = f"{gpus} GPU worker(s)" if gpus else f"{len(workers)} CPU worker(s)"
    return f"{kind} at {client.scheduler.address}"


def _initial(text: str) -> Any:
    if text in ("random", "zeros", "ones"):
        return text
    out = {}
    for part in text.split(","):
        if "=" not in part:
            raise ValueError(f"--initial: expected random, zeros, ones or A=1,B=0; got {text!r}")
        k, v = part.split("=", 1)
        out[k.strip()] = int(v)
    return out


def cmd_info(args: argparse.Namespace) -> int:
    import platform

    import dask
    import distributed
    import numba
    import numpy
    import xarray

    from . import backends
    from .cluster import count_gpus, describe_default

    print(f"distsim {__version__} (python {platform.python_version()}, {platform.platform()})")
    versions = {"numpy": numpy.__version__, "numba": numba.__version__, "xarray": xarray.__version__,
                "dask": dask.__version__, "distributed": distributed.__version__}
    for mod in ("cupy", "dask_cuda"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception as e:  # noqa: BLE001
            versions[mod] = f"not available ({type(e).__name__})"
    for k, v in versions.items():
        print(f"  {k:12s} {v}")
    backend = "cpu" if args.cpu else backends.resolve("auto")
    print(f"backend here: {backend}")
    n = count_gpus()
    print(f"GPUs seen (NVML): {n}")
    if backend == "gpu":
        print(f"  device 0: {backends.device_description('gpu')}")
    print(f"cluster `distsim.connect()` would start: {describe_default() if not args.cpu else 'LocalCluster (CPU)'}")
    print(f"CUDA kernel sources: {backends.kernels_dir()}")
    return 0


def cmd_pbn(args: argparse.Namespace) -> int:
    from . import results
    from .pbn import load

    if args.output:
        results.check_output_path(args.output) if args.pbn_command != "convert" else None
    net = load(args.model, perturbation=args.perturbation, inputs=args.inputs)
    if args.pbn_command == "convert":
        from .models.formats import write_assa

        write_assa(net, args.output)
        print(f"wrote {args.output}: {net.summary()}")
        return 0
    backend = "cpu" if args.cpu else None
    progress = not args.quiet
    print(net.summary())
    t0 = time.perf_counter()
    with _client(args) as client:
        if args.pbn_command == "simulate":
            from .pbn import simulate

            ds = simulate(net, steps=args.steps, trajectories=args.trajectories, mode=args.mode, seed=args.seed,
                          initial=_initial(args.initial), targets=args.target, keep_states=not args.no_states,
                          client=client, backend=backend, progress=progress)
            _print_simulation(ds)
        else:
            kw = dict(mode=args.mode, precision=args.precision, confidence=args.confidence, epsilon=args.epsilon,
                      chains=args.chains, initial_length=args.initial_length, rhat_threshold=args.rhat,
                      reduce=not args.no_reduce, seed=args.seed, initial=_initial(args.initial), client=client,
                      backend=backend, progress=progress, plot=args.plot, max_steps=args.max_steps,
                      time_limit=args.time_limit)
            if args.pbn_command == "steady-state":
                from .pbn import steady_state

                ds = steady_state(net, args.target, **kw)
                _print_steady(ds)
            else:
                from .pbn import influence

                parents = args.parents.split(",") if args.parents else None
                ds = influence(net, args.node, parents, **kw)
                _print_influence(ds)
    return finish(ds, args.output, t0, plot=getattr(args, "plot", None))


def cmd_ssa(args: argparse.Namespace) -> int:
    from . import results
    from .ssa import load, simulate

    if args.output:
        results.check_output_path(args.output)
    params = {}
    for item in args.param:
        if "=" not in item:
            raise ValueError(f"--param: expected NAME=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        params[k.strip()] = float(v)
    net = load(args.model)
    print(net.summary())
    t0 = time.perf_counter()
    with _client(args) as client:
        ds = simulate(net, t_end=args.t_end, points=args.points, realizations=args.realizations, method=args.method,
                      seed=args.seed, params=params or None, keep_trajectories=args.trajectories,
                      max_events=args.max_events, client=client, backend="cpu" if args.cpu else None,
                      progress=not args.quiet, plot=args.plot)
    a = ds.attrs
    print(f"{a['realizations']} realizations to t={a['t_end']:g} ({a['method']}, {a['backend']}): "
          f"{a['firings_total']:.3g} firings, {a['firings_per_second']:.3g} firings/s, "
          f"{a['mean_firings_per_realization']:.1f} per realization")
    print(f"{'species':<16} {'mean(t_end)':>12} {'sd(t_end)':>10} {'5%':>8} {'50%':>8} {'95%':>8}")
    last = ds.isel(time=-1)
    for s_, name in enumerate(ds.species.values):
        qs = [int(last.quantile_value.values[q, s_]) for q in range(3)] if "quantile_value" in ds else ["", "", ""]
        print(f"{str(name):<16} {float(last['mean'][s_]):12.3f} {float(np.sqrt(last['variance'][s_])):10.3f} "
              f"{qs[0]:>8} {qs[1]:>8} {qs[2]:>8}")
    return finish(ds, args.output, t0, plot=args.plot)


def finish(ds: Any, output: str | None, t0: float, **figures: str | None) -> int:
    """End of a command: write the result, name the figures already drawn, print the total time."""
    from . import results

    if output:
        results.write(ds, output)
        print(f"written: {output}")
    for kind, path in figures.items():
        if path:
            print(f"{kind}: {path}")
    print(f"total {time.perf_counter() - t0:.2f} s")
    return 0


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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.cpu:
        os.environ["DISTSIM_DISABLE_GPU"] = "1"  # also inherited by spawned local workers
    try:
        if args.command == "info":
            return cmd_info(args)
        if args.command == "ssa":
            return cmd_ssa(args)
        if args.command in PLUGINS:
            with _client(args) as client:
                return importlib.import_module(f"distsim.{args.command}.cli").run(args, client)
        return cmd_pbn(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (DistsimError, ValueError, KeyError, FileNotFoundError, TypeError, RuntimeError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"distsim: error: {msg}".replace("\n", " "), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
