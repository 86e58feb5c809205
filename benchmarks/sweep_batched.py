"""Batched SSA sweeps (issue 17): many parameter points per launch against the per-point loop.

    python benchmarks/sweep_batched.py [--points 10000] [--loop-points 300] [--out t.md]   # GPU + CPU here
    python benchmarks/sweep_batched.py --cpu-only                  # the CPU small-point case only
    python benchmarks/sweep_batched.py --gpus 1 2                  # the MM sweep on 1 and 2 GPUs (Dask, a worker each)

Sections (each prints its rows as it goes; a table at the end):
* ``mm``: Michaelis-Menten, a k1 x k3 table of ``--points`` points x 1,000 realizations to t = 100 (11
  grid points, no histograms, as benchmarks/scaling.py's sweep), through ``distsim.sweep`` end to end
  on one device in this process: the per-point loop (the pre-batching path, method 'tree' as in the
  issue's figure, on ``--loop-points`` points) and the batched path with the same method, side by
  side (the first ``--loop-points`` points must agree exactly: checked); then the batched default
  (method 'direct': the generated register kernel, fused sums) and the same with quantiles.
* ``oat``: one-at-a-time sensitivity of a 1,029-reaction, 641-species mass-action network (the size
  of seed 001's yeast model; ``distsim.ssa.generators.yeast_sized_network``), 9 factors x every rate
  constant x 1,000 realizations to t = 0.03 (about 300 firings each), on the GPU; the CPU backend
  (every core) runs every ``--cpu-oat-stride``-th rate constant and the GPU that same subset, so the
  ratio is measured on equal work and the CPU's full-design time is extrapolated (linear in points).
* ``cpu``: the CPU backend in this process: 2,000 MM points x 25 realizations (batched, and the
  per-point loop on ``--loop-points`` of them) against one 100,000-realization ensemble (firings/s).
Timings are wall-clock seconds of the whole call after a warm-up call (kernels compiled).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _report import emit  # noqa: E402

import distsim  # noqa: E402
import distsim.ssa as ssa  # noqa: E402
from distsim import backends  # noqa: E402
from distsim.engine import LocalExecutor  # noqa: E402
from distsim.ssa.generators import yeast_sized_network  # noqa: E402
from distsim.ssa.gpu import HOST_REDUCE_MAX  # noqa: E402
from distsim.sweep import adapters  # noqa: E402

MM = ROOT / "examples" / "ssa" / "michaelis_menten.rxn"
LOOP = dataclasses.replace(adapters.SSA_SIMULATE, run_chunk=None, plan_chunk=None)  # the per-point path
MM_FIXED = dict(t_end=100.0, points=11, realizations=1000, quantiles=None)
FACTORS = [0.25, 0.5, 0.67, 0.8, 1.0, 1.25, 1.5, 2.0, 4.0]
OAT_FIXED = dict(t_end=0.03, points=4, realizations=1000, quantiles=None)
ROWS: list[dict] = []


def mm_table(n: int) -> list[dict]:
    side = int(np.ceil(np.sqrt(n)))
    k1, k3 = np.geomspace(2.5e-4, 4e-3, side), np.geomspace(0.025, 0.4, side)
    return [{"k1": float(a), "k3": float(b)} for a in k1 for b in k3][:n]


def timed(label: str, device: str, fn: Any, work: str = "firings") -> Any:
    t0 = time.perf_counter()
    ds = fn()
    wall = time.perf_counter() - t0
    firings = int(ds["firings_total"].sum()) if "firings_total" in ds else int(ds.attrs.get("firings_total", 0))
    points = int(ds.sizes.get("point", 0)) or int(np.prod([ds.sizes[d] for d in ("parameter", "factor")
                                                             if d in ds.sizes]) or 1)
    row = dict(label=label, device=device, wall=wall, points=points, firings=firings, rate=firings / wall)
    ROWS.append(row)
    print(f"{label:<58} {device:<10} {wall:9.3f} s  {points:>7} pts  {firings:.3e} firings  "
          f"{firings / wall:.3e} /s  {points / wall:.4g} pts/s", flush=True)
    return ds


def section_mm(args: argparse.Namespace, client: Any, device: str) -> None:
    net = ssa.load(MM)
    table = mm_table(args.points)
    tree = dict(MM_FIXED, method="tree")
    quant = dict(MM_FIXED, quantiles=(0.05, 0.5, 0.95))
    # warm-ups: kernels compiled. On a GPU past HOST_REDUCE_MAX realizations the per-realization words are
    # reduced by CuPy reductions compiled on first use (seconds on a fresh machine): warm those up too.
    warm = table[:HOST_REDUCE_MAX // MM_FIXED["realizations"] + 1] if device == "gpu" else table[:4]
    for kw in (tree, MM_FIXED, quant):
        distsim.sweep(ssa.simulate, net, warm, seed=1, client=client, **kw)
    distsim.sweep(LOOP, net, table[:4], seed=1, client=client, chunk_size=2, **tree)
    n_loop = min(args.loop_points, len(table))
    loop = timed(f"MM per-point loop (tree), {n_loop} points x 1,000", device,
                 lambda: distsim.sweep(LOOP, net, table[:n_loop], seed=1, client=client, chunk_size=64, **tree))
    same_method = timed(f"MM batched (tree), {len(table)} points x 1,000", device,
                        lambda: distsim.sweep(ssa.simulate, net, table, seed=1, client=client, **tree))
    same = all(np.array_equal(loop[v].values, same_method[v].values[:n_loop]) for v in ("mean", "variance", "firings"))
    print(f"  loop == batched on the first {n_loop} points: {same}", flush=True)
    if not same:
        raise SystemExit("the batched sweep differs from the per-point loop")
    batched = timed(f"MM batched (default: direct), {len(table)} points x 1,000", device,
                    lambda: distsim.sweep(ssa.simulate, net, table, seed=1, client=client, **MM_FIXED))
    print(f"  tasks {batched.attrs['tasks']}, chunk {batched.attrs['chunk_size']}, task seconds "
          f"{batched.attrs['task_seconds']:.3f}", flush=True)
    if not np.array_equal(batched["mean"].values, same_method["mean"].values):
        print("  (direct and tree give other realizations: expected, different selection)", flush=True)
    timed(f"MM batched + quantiles, {len(table)} points x 1,000", device,
          lambda: distsim.sweep(ssa.simulate, net, table, seed=1, client=client, **quant))


def section_oat(args: argparse.Namespace) -> None:
    net = yeast_sized_network()
    names = list(net.params)
    subset = names[:: args.cpu_oat_stride]
    run = lambda client, params, method="auto": distsim.sweep.sensitivity(  # noqa: E731
        ssa.simulate, net, FACTORS, parameters=params, seed=3, client=client, method=method, **OAT_FIXED)
    gpu = backends.gpu_available() and not args.cpu_only
    if gpu:
        run(LocalExecutor("gpu"), names[:2])
        for method in args.oat_methods:
            run(LocalExecutor("gpu"), names[:2], method)
            ds = timed(f"OAT 1,029 reactions x 9 x 1,000 ({method})", "gpu",
                       lambda: run(LocalExecutor("gpu"), names, method))
            print(f"  tasks {ds.attrs['tasks']}, chunk {ds.attrs['chunk_size']}, task seconds "
                  f"{ds.attrs['task_seconds']:.2f}", flush=True)
            top = ds.sensitivity.isel(time=-1).sel(species="S0")
            print(f"  S0 at t_end: largest |S| {str(top.parameter.values[int(np.nanargmax(np.abs(top.values)))])} "
                  f"= {float(np.nanmax(np.abs(top.values))):.3f}", flush=True)
            timed(f"OAT subset {len(subset)} rates x 9 x 1,000 ({method})", "gpu",
                  lambda: run(LocalExecutor("gpu"), subset, method))
    run(LocalExecutor("cpu"), names[:1])
    cpu = timed(f"OAT subset {len(subset)} rates x 9 x 1,000 (tree)", f"cpu x{backends.cpu_threads()}",
                lambda: run(LocalExecutor("cpu"), subset))
    full = ROWS[-1]["wall"] * len(names) / len(subset)
    print(f"  CPU, full design extrapolated: {full:.1f} s ({len(names)} / {len(subset)} x the subset)", flush=True)
    _ = cpu


def section_cpu(args: argparse.Namespace) -> None:
    cpu = LocalExecutor("cpu")
    net = ssa.load(MM)
    table = mm_table(2000)
    small = dict(MM_FIXED, realizations=25)
    ssa.simulate(net, seed=1, client=cpu, **dict(MM_FIXED, realizations=1000))  # warm-ups
    distsim.sweep(ssa.simulate, net, table[:8], seed=1, client=cpu, **small)
    distsim.sweep(LOOP, net, table[:8], seed=1, client=cpu, chunk_size=4, **small)
    dev = f"cpu x{backends.cpu_threads()}"
    ens = timed("MM one ensemble, 100,000 realizations", dev,
                lambda: ssa.simulate(net, seed=1, client=cpu, **dict(MM_FIXED, realizations=100_000)))
    ref = ROWS[-1]["rate"]
    timed("MM batched sweep, 2,000 points x 25", dev,
          lambda: distsim.sweep(ssa.simulate, net, table, seed=1, client=cpu, **small))
    print(f"  batched sweep / ensemble firings/s: {ROWS[-1]['rate'] / ref:.2f} (goal >= 0.5)", flush=True)
    n_loop = min(args.loop_points, 2000)
    timed(f"MM per-point loop, {n_loop} points x 25", dev,
          lambda: distsim.sweep(LOOP, net, table[:n_loop], seed=1, client=cpu, chunk_size=64, **small))
    print(f"  per-point loop / ensemble firings/s: {ROWS[-1]['rate'] / ref:.2f}", flush=True)
    _ = ens


def section_workers(args: argparse.Namespace) -> None:
    """The MM sweep on n Dask workers (one per GPU, or CPU workers with --cpu-workers), every n given."""
    net = ssa.load(MM)
    table = mm_table(args.points)
    cpu = args.cpu_workers is not None
    for n in args.cpu_workers if cpu else args.gpus:
        client = distsim.connect(gpus=False, n_workers=n) if cpu else distsim.connect(gpus=n)
        try:
            client.wait_for_workers(n, timeout=300)
            big = n * (HOST_REDUCE_MAX // MM_FIXED["realizations"] + 1)  # the device-side reductions too
            warm = table[: 8 * n] if cpu else table[: max(8 * n, big)]
            distsim.sweep(ssa.simulate, net, warm, seed=1, client=client, **MM_FIXED)  # warm-up
            ds = timed(f"MM batched, {len(table)} points x 1,000, Dask", f"{'cpu' if cpu else 'gpu'} x{n} workers",
                       lambda: distsim.sweep(ssa.simulate, net, table, seed=1, client=client, **MM_FIXED))
            print(f"  tasks {ds.attrs['tasks']}, chunk {ds.attrs['chunk_size']}, devices {ds.attrs['devices']}",
                  flush=True)
            quant = dict(MM_FIXED, quantiles=(0.05, 0.5, 0.95))
            distsim.sweep(ssa.simulate, net, table[: 8 * n], seed=1, client=client, **quant)  # warm-up
            where = f"{'cpu' if cpu else 'gpu'} x{n} workers"
            timed(f"MM batched + quantiles, {len(table)} points x 1,000, Dask", where,
                  lambda: distsim.sweep(ssa.simulate, net, table, seed=1, client=client, **quant))
        finally:
            client.close()
            cluster = getattr(client, "cluster", None)
            if cluster is not None:
                cluster.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--loop-points", type=int, default=300)
    ap.add_argument("--sections", nargs="+", default=["mm", "oat", "cpu"], choices=["mm", "oat", "cpu"])
    ap.add_argument("--oat-methods", nargs="+", default=["warp"], choices=["warp", "tree", "direct"])
    ap.add_argument("--cpu-oat-stride", type=int, default=16)
    ap.add_argument("--gpus", type=int, nargs="*", default=None, help="run the MM section on n Dask GPU workers")
    ap.add_argument("--cpu-workers", type=int, nargs="*", default=None, help="... on n Dask CPU workers")
    ap.add_argument("--cpu-only", action="store_true", help="the cpu section only (no GPU)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.cpu_only:
        os.environ["DISTSIM_DISABLE_GPU"] = "1"
        backends.gpu_available.cache_clear()
        args.sections = ["cpu"]
    gpu = backends.gpu_available()
    device = backends.device_description("gpu" if gpu else "cpu")
    print(f"# sweep_batched on {device}; CPU threads {backends.cpu_threads()}", flush=True)
    if args.gpus or args.cpu_workers:
        section_workers(args)
    else:
        if "mm" in args.sections:
            section_mm(args, LocalExecutor("gpu" if gpu else "cpu"), "gpu" if gpu else "cpu")
        if "oat" in args.sections:
            section_oat(args)
        if "cpu" in args.sections:
            section_cpu(args)
    lines = ["| case | device | wall s | points | firings | firings/s | points/s |", "|---|---|---|---|---|---|---|"]
    for r in ROWS:
        lines.append(f"| {r['label']} | {r['device']} | {r['wall']:.3f} | {r['points']} | {r['firings']:.3e} | "
                     f"{r['rate']:.3e} | {r['points'] / r['wall']:.4g} |")
    lines.append(f"\ndevice: {device}")
    emit(lines, args.out)


if __name__ == "__main__":
    main()
