"""DA-MCMC throughput (iterations/s, attempts/s) on the Michaelis-Menten data of seed 003 (Table 2).

    python benchmarks/mcmc.py [--quick] [--cpu-iterations 200] [--gpu-iterations 50000] [--chains 4]
                              [--gpus 1 2 4] [--out table.md]

CPU backend (all cores, in-process) vs 1 GPU (in-process) vs 2/4 GPUs (a LocalCUDACluster, chains
as shards). Goals (issue 7): >= 1,000 iterations/s per chain on one GPU and 4 chains x 50,000
iterations in under 2 minutes on one GPU. The reference single-core Numba sampler of the issue ran
about 15 iterations/s (46,000 attempts/s). Every run also prints the K_M 95% interval.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _report import emit  # noqa: E402

from distsim import backends  # noqa: E402
from distsim.engine import LocalExecutor  # noqa: E402
from distsim.mcmc import infer_rates, summary  # noqa: E402
from distsim.ssa import load  # noqa: E402

MODEL = ROOT / "examples" / "mcmc" / "michaelis_menten.rxn"
DATA = ROOT / "examples" / "mcmc" / "mm_observations.csv"
PRIOR = {"k1": (2.0, 1000.0), "k2": (2.0, 10.0), "k3": (2.0, 10.0)}


def one(label, client, backend, iterations, chains):
    net = load(MODEL)
    infer_rates(net, DATA, prior=PRIOR, iterations=5, burn_in=0, chains=chains, seed=99, client=client,
                backend=backend)  # warm-up: JIT / NVRTC
    t = time.perf_counter()
    ds = infer_rates(net, DATA, prior=PRIOR, iterations=iterations, burn_in=min(iterations // 5, 10_000),
                     chains=chains, seed=1, client=client, backend=backend, derived={"K_M": "(k2 + k3) / k1"},
                     progress=True)
    wall = time.perf_counter() - t
    km = next(r for r in summary(ds) if r["variable"] == "K_M")
    a = ds.attrs
    row = (f"| {label} | {a['devices']} | {chains} | {iterations} | {wall:.1f} | "
           f"{iterations / wall:.4g} | {iterations * chains / wall:.4g} | {a['attempts_per_second']:.3g} | "
           f"[{km['lo']:.0f}, {km['hi']:.0f}] | {km['rhat']:.3f} |")
    print(row, flush=True)
    return row, iterations * chains / wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="short runs (about a minute in all)")
    ap.add_argument("--cpu-iterations", type=int, default=200)
    ap.add_argument("--gpu-iterations", type=int, default=50_000)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--gpus", type=int, nargs="*", default=[1, 2, 4])
    ap.add_argument("--no-cpu", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.quick:
        args.cpu_iterations, args.gpu_iterations = min(args.cpu_iterations, 40), min(args.gpu_iterations, 5000)
    lines = [f"DA-MCMC, Michaelis-Menten (seed 003 Table 2), {datetime.date.today()}",
             "", "| backend | device | chains | iterations/chain | wall s | it/s per chain | it/s total | "
             "attempts/s | K_M 95% | R-hat K_M |", "|---|---|---|---|---|---|---|---|---|---|"]
    rates = {}
    if not args.no_cpu:
        row, rates["cpu"] = one("CPU (all cores)", LocalExecutor("cpu"), "cpu", args.cpu_iterations, args.chains)
        lines.append(row)
    if backends.gpu_available():
        from distsim.cluster import count_gpus

        n_gpu = count_gpus()
        for g in args.gpus:
            if g > n_gpu:
                print(f"skip {g} GPUs: {n_gpu} visible", flush=True)
                continue
            if g == 1:
                row, rates["gpu1"] = one("1 GPU", LocalExecutor("gpu"), "gpu", args.gpu_iterations, args.chains)
            else:
                from dask_cuda import LocalCUDACluster
                from distributed import Client

                with LocalCUDACluster(CUDA_VISIBLE_DEVICES=list(range(g)), resources={"GPU": 1}) as cl, Client(cl) as c:
                    row, rates[f"gpu{g}"] = one(f"{g} GPUs (Dask)", c, "gpu", args.gpu_iterations,
                                                max(args.chains, g))
            lines.append(row)
    if "cpu" in rates:
        for k, v in rates.items():
            if k != "cpu":
                lines.append(f"\n{k} / CPU (total iterations/s): {v / rates['cpu']:.1f}x")
    emit(lines, args.out)


if __name__ == "__main__":
    main()
