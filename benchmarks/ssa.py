"""SSA throughput (firings/s): distsim CPU and GPU backends vs GillesPy2, libRoadRunner and rebop.

    python benchmarks/ssa.py [--mm-realizations 200000] [--gpu-realizations 4194304] [--peers]
                             [--chain 1000 10000 50000] [--large-realizations 256] [--out table.md]

Part 1, Michaelis-Menten (E+S->ES 0.001, ES->E+S 0.2, ES->E+P 0.1; x0 120/301/0/0) to t = 100 with
101 grid points, all outputs reduced (mean/variance/histograms per grid point). distsim CPU uses
every core (firings/s per core is also shown); peers run one realization at a time on one core
(benchmarks/ssa_peers.py; their figures are per CPU-second). Part 2, large models: firings/s vs
size for the cyclic chain (t_end = 10), colloidal aggregation and a random sparse network, CPU
(sum tree, all cores) vs GPU (warp per realization, seed 004; optionally the generic kernel).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _report import emit  # noqa: E402

from distsim import backends  # noqa: E402
from distsim.engine import LocalExecutor  # noqa: E402
from distsim.ssa import load, simulate  # noqa: E402
from distsim.ssa.generators import colloidal_aggregation, cyclic_chain, random_network  # noqa: E402


def run(net, backend, realizations, t_end, points, method, quantiles=(0.05, 0.5, 0.95)):
    ex = LocalExecutor(backend)
    simulate(net, t_end=t_end / 100, points=points, realizations=realizations, method=method, seed=1,
             client=ex, quantiles=quantiles)  # warm-up: JIT / NVRTC of the kernels this size uses (warp: its lanes)
    t = time.perf_counter()
    ds = simulate(net, t_end=t_end, points=points, realizations=realizations, method=method, seed=2, client=ex,
                  quantiles=quantiles)
    wall = time.perf_counter() - t
    return ds, wall


def _michaelis_menten(args, gpu: bool, threads: int) -> list[str]:
    """Part 1: the Michaelis-Menten table (distsim CPU, GPU and the peers)."""
    lines: list[str] = []
    mm = load(ROOT / "examples" / "ssa" / "michaelis_menten.rxn")
    rows = []
    ds, wall = run(mm, "cpu", args.mm_realizations, 100.0, 101, "direct",
                   quantiles=None if args.no_histograms else (0.05, 0.5, 0.95))
    f_real = ds.attrs["mean_firings_per_realization"]
    cpu_rate = ds.attrs["firings_total"] / wall
    rows.append(("distsim CPU (direct, all cores)", args.mm_realizations, cpu_rate, cpu_rate / threads,
                 float(ds["mean"].sel(species="P")[-1])))
    print(f"MM cpu: {cpu_rate:.3g} firings/s ({cpu_rate / threads:.3g} per core)", flush=True)
    if gpu:
        ds, wall = run(mm, "gpu", args.gpu_realizations, 100.0, 101, "direct",
                       quantiles=None if args.no_histograms else (0.05, 0.5, 0.95))
        rate = ds.attrs["firings_total"] / wall
        rows.append(("distsim GPU (direct, generated kernel)", args.gpu_realizations, rate, float("nan"),
                     float(ds["mean"].sel(species="P")[-1])))
        print(f"MM gpu: {rate:.3g} firings/s end to end, kernel+reductions {ds.attrs['firings_per_second']:.3g}",
              flush=True)
    if args.peers:
        import ssa_peers

        for peer in ssa_peers.runnable():
            variants = ssa_peers.VARIANTS.get(peer, [None]) if hasattr(ssa_peers, "VARIANTS") else [None]
            for variant in variants:
                try:
                    r = ssa_peers.run_peer(peer, mm, t_end=100.0, points=101, realizations=args.peer_realizations,
                                           seed=3, variant=variant, max_seconds=120)
                except Exception as e:  # noqa: BLE001
                    print(f"{peer}: failed: {e}")
                    continue
                rate = ssa_peers.firings_per_second(r, f_real)
                label = f"{peer}{'' if variant is None else ' (' + variant + ')'} (1 core)"
                rows.append((label, r["realizations"], rate, rate, float(r["mean_final"][3])))
                print(f"{label}: {rate:.3g} firings/CPU-s", flush=True)
    lines += ["Michaelis-Menten to t = 100, 101 points, outputs reduced per grid point "
              f"({f_real:.1f} firings per realization)", "",
              "| engine | realizations | firings/s | per core | mean P(100) | vs distsim CPU per core |",
              "|---|---|---|---|---|---|"]
    ref = cpu_rate / threads
    for name, n, rate, per_core, p100 in rows:
        rel = f"{per_core / ref:.3g}" if per_core == per_core else f"{rate / ref:.3g} (device vs 1 core)"
        lines.append(f"| {name} | {n} | {rate:.3g} | {per_core:.3g} | {p100:.2f} | {rel} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mm-realizations", type=int, default=200_000)
    ap.add_argument("--gpu-realizations", type=int, default=2**22)
    ap.add_argument("--peers", action="store_true", help="also run GillesPy2, libRoadRunner and rebop")
    ap.add_argument("--peer-realizations", type=int, default=500)
    ap.add_argument("--chain", type=int, nargs="*", default=[1000, 10000, 50000])
    ap.add_argument("--aggregation", type=int, nargs="*", default=[40])
    ap.add_argument("--random", type=int, nargs="*", default=[10000])
    ap.add_argument("--large-realizations", type=int, default=256)
    ap.add_argument("--large-gpu-realizations", type=int, default=4096)
    ap.add_argument("--large-t-end", type=float, default=10.0, help="end time of the chain/aggregation runs")
    ap.add_argument("--random-t-end", type=float, default=0.1,
                    help="end time of the random-network runs (about 200 firings per species per unit time)")
    ap.add_argument("--skip-mm", action="store_true", help="large models only")
    ap.add_argument("--no-histograms", action="store_true", help="MM: means/variances only (no quantiles)")
    ap.add_argument("--no-gpu", action="store_true")
    ap.add_argument("--gpu-methods", nargs="+", default=["warp"], choices=["warp", "tree", "cr"],
                    help="large models on the GPU: 'warp' (seed 004, one warp per realization) and/or 'tree' / "
                         "'cr' (generic kernel, one thread per realization)")
    ap.add_argument("--cpu-methods", nargs="*", default=["tree"], choices=["tree", "cr"],
                    help="large models on the CPU: 'tree' (O(log M) sum tree) and/or 'cr' (composition-rejection); "
                         "none: GPU only")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import numba

    threads = numba.get_num_threads()
    gpu = backends.gpu_available() and not args.no_gpu
    lines = [f"CPU: {platform.processor() or platform.machine()} x{os.cpu_count()} ({threads} Numba threads); "
             f"GPU: {backends.device_description('gpu') if gpu else 'none'}", ""]

    # ---- part 1: Michaelis-Menten
    if not args.skip_mm:
        lines += _michaelis_menten(args, gpu, threads)

    # ---- part 2: large models
    gm = args.gpu_methods if gpu else []
    cm = args.cpu_methods
    lines += ["", "Large models: firings/s (CPU: " + ", ".join(cm) + " on all cores; GPU: " + ", ".join(gm or ["none"])
              + "; GPU / CPU against the first CPU method)", "",
              "| model | species | reactions | realizations CPU / GPU | firings per realization |"
              + "".join(f" CPU {m} firings/s | CPU {m} per core |" for m in cm)
              + "".join(f" GPU {m} firings/s | GPU {m} / CPU |" for m in gm),
              "|---|---|---|---|---|" + "---|---|" * (len(cm) + len(gm))]
    large = [(cyclic_chain(n), args.large_t_end) for n in args.chain]
    large += [(colloidal_aggregation(n), args.large_t_end) for n in args.aggregation]
    large += [(random_network(n), args.random_t_end) for n in args.random]
    for net, t_end in large:
        cells, c_rate = [], float("nan")
        for m in cm:
            ds, wall = run(net, "cpu", args.large_realizations, t_end, 11, m, quantiles=None)
            rate = ds.attrs["firings_total"] / wall
            cells.append(f"{rate:.3g} | {rate / threads:.3g}")
            print(f"{net.name}: cpu {m} {rate:.3g} firings/s", flush=True)
            if len(cells) == 1:
                c_rate, f_per = rate, ds.attrs["mean_firings_per_realization"]
        for m in gm:
            ds, wall = run(net, "gpu", args.large_gpu_realizations, t_end, 11, m, quantiles=None)
            g_rate = ds.attrs["firings_total"] / wall
            cells.append(f"{g_rate:.3g} | {g_rate / c_rate:.3g}")
            f_per = f_per if cm else ds.attrs["mean_firings_per_realization"]
            print(f"{net.name}: cpu {c_rate:.3g} gpu {m} {g_rate:.3g} firings/s "
                  f"(kernel+reductions {ds.attrs['firings_per_second']:.3g})", flush=True)
        lines.append(f"| {net.name} (t_end {t_end:g}) | {net.n_species} | {net.n_reactions} | {args.large_realizations} / "
                     f"{args.large_gpu_realizations} | {f_per:.3g} |" + "".join(f" {c} |" for c in cells))
    emit(lines, args.out)


if __name__ == "__main__":
    main()
