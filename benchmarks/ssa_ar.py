"""Seed 001's validation of the parallel acceptance-rejection selection (GPU-AR), on CPU and GPU.

    python benchmarks/ssa_ar.py [--selections 10000000] [--instances 62500] [--out table.md]

For the seed's Gaussian-shaped propensity vectors (M = 64, 256, 1024) it selects N reactions with
K parallel instances, using the seed's uniform rating and the exact exponential rating, and prints
the MSE between normalised propensities and selection frequencies, the MSE an exact sampler has
from multinomial noise alone (mean p(1-p)/N), the rejection rate and the selections per second.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _report import emit  # noqa: E402

from distsim import backends  # noqa: E402
from distsim.backends import cuda  # noqa: E402
from distsim.ssa import ar  # noqa: E402


def gpu_counts(D, instances, rounds, seed, mode):
    import cupy as cp

    mod = cuda.load_module(cuda.kernel_source("ssa_ar.cu"), ("--fmad=false",))
    threads = min(1024, max(32, 1 << int(np.ceil(np.log2(len(D))))))
    counts = cp.zeros(len(D) + 1, dtype=cp.uint64)
    fn = mod.get_function("ar_select")
    args = (cp.asarray(D), np.int32(len(D)), np.float64(D.max()), np.int32(mode), np.uint32(seed), np.int32(rounds),
            counts)
    fn((instances,), (threads,), args, shared_mem=threads * 12)  # warm-up
    counts.fill(0)
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    fn((instances,), (threads,), args, shared_mem=threads * 12)
    cp.cuda.Device().synchronize()
    return cp.asnumpy(counts).astype(np.int64), time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--selections", type=int, default=10_000_000)
    ap.add_argument("--instances", type=int, default=62_500)
    ap.add_argument("--cpu-selections", type=int, default=1_000_000)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    gpu = backends.gpu_available()
    lines = [f"GPU: {backends.device_description('gpu') if gpu else 'none'}; N = {args.selections} (GPU) / "
             f"{args.cpu_selections} (CPU) selections, K = {args.instances} parallel instances", "",
             "| M | rating | device | selections | MSE | exact-sampler MSE (noise) | MSE / noise | rejection rate | "
             "selections/s |", "|---|---|---|---|---|---|---|---|---|"]
    for M in (64, 256, 1024):
        D = ar.gaussian_propensities(M)
        p = D / D.sum()
        for mode, name in ((ar.MODE_UNIFORM, "uniform (seed 001)"), (ar.MODE_EXPONENTIAL, "exponential (exact)")):
            runs = []
            inst = min(args.instances, args.cpu_selections)
            cpu_rounds = max(1, args.cpu_selections // inst)
            t = time.perf_counter()
            runs.append(("cpu", ar.select_counts(D, instances=inst, rounds=cpu_rounds, seed=1, mode=mode),
                         time.perf_counter() - t))
            if gpu:
                rounds = max(1, args.selections // args.instances)
                c, dt = gpu_counts(D, args.instances, rounds, 1, mode)
                runs.append(("gpu", c, dt))
            for dev, counts, dt in runs:
                n = int(counts.sum())
                sel = counts[:-1]
                mse = float(np.mean((sel / max(sel.sum(), 1) - p) ** 2))
                noise = float(np.mean(p * (1 - p)) / max(sel.sum(), 1))
                lines.append(f"| {M} | {name} | {dev} | {n} | {mse:.3e} | {noise:.3e} | {mse / noise:.2f} | "
                             f"{counts[-1] / n:.2e} | {n / dt:.3g} |")
                print(lines[-1], flush=True)
    emit(lines, args.out)


if __name__ == "__main__":
    main()
