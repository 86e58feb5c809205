"""GRN inference GA (seed 002): time to the mouse-eye optimum, evaluation rates, islands over 1/2/4 GPUs.

    python benchmarks/grn.py [--quick] [--gpus 1,2,4] [--genes 512] [--out table.md]

1. time to the optimum 0.0005859375 on the mouse eye GRN (32 genes), CPU backend vs one GPU, from
   several seeds (standard mode, island model), after a warm-up run (kernels compiled);
2. individual-evaluations/s of the evaluation kernel alone (CPU Numba vs GPU) on the mouse eye and on
   planted random GRNs of 256 and 1024 genes;
3. end-to-end GA rates (generations/s, evaluations/s including selection, crossover, mutation);
4. a planted random GRN (``--genes``, default 512; 256 with ``--quick``) with islands spread over 1, 2
   and 4 GPUs through ``distsim.connect()`` (LocalCUDACluster): wall time and speed-up.
Goals (issue 6): optimum < 1 s on one GPU, >= 1e8 evaluations/s per GPU, >= 3.6x on 4 GPUs.
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

import distsim  # noqa: E402
import distsim.grn as grn  # noqa: E402
from distsim import backends  # noqa: E402
from distsim.engine import LocalExecutor  # noqa: E402
from distsim.grn.ga import Consts, CPUOps  # noqa: E402

OPTIMUM = 0.0005859375


def log(msg: str) -> None:
    print(f"[grn-bench] {msg}", file=sys.stderr, flush=True)


def eval_rate(prob, backend: str, P: int, repeats: int = 3) -> float:
    """Evaluations/s of the evaluation kernel alone on P individuals (initial population of one island)."""
    c = Consts.of(prob)
    if backend == "gpu":
        import cupy as cp

        from distsim.grn.gpu import GPUOps

        ops = GPUOps(c)
        sync = cp.cuda.Device().synchronize
    else:
        ops = CPUOps(c)
        sync = lambda: None  # noqa: E731
    act, rep = ops.init_links(1, np.array([0], np.int64), P)
    rules = ops.xp.zeros((P, c.n), ops.xp.uint8)
    a, r = act[0], rep[0]
    ops.evaluate(a[:8], r[:8], rules[:8])
    sync()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        ops.evaluate(a, r, rules)
        sync()
        best = min(best, time.perf_counter() - t)
    return P / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer seeds and smaller problems (a few minutes)")
    ap.add_argument("--gpus", default="1,2,4", help="GPU counts for the scaling runs (those available)")
    ap.add_argument("--genes", type=int, default=None, help="genes of the planted problem (default 512, quick 256)")
    ap.add_argument("--islands", type=int, default=32, help="islands of the planted-problem runs (default 32)")
    ap.add_argument("--population", type=int, default=None, help="per island (default 512, quick 256)")
    ap.add_argument("--generations", type=int, default=64, help="generations of the planted-problem runs")
    ap.add_argument("--interval", type=int, default=32, help="migration interval of the planted-problem runs")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    gpu = backends.gpu_available()
    seeds = [1, 2] if args.quick else [1, 2, 3, 4, 5]
    mouse = grn.load(ROOT / "examples" / "grn" / "mouse_eye.toml")
    dev = backends.device_description("gpu") if gpu else "none"
    lines = [f"GPU: {dev}; CPU: {backends.device_description('cpu')}; {time.strftime('%Y-%m-%d')}", ""]

    # 1. time to the optimum -------------------------------------------------------------------------------
    lines += ["### Mouse eye GRN (32 genes): time to the optimum 0.0005859375 (standard mode, island model)", "",
              "| backend | islands x population | seed | generations | time to optimum (s) | generations/s | "
              "evaluations/s |", "|---|---|---|---|---|---|---|"]
    configs = [("cpu", 4, 256)] + ([("gpu", 4, 256), ("gpu", 16, 1024)] if gpu else [])
    for backend, K, N in configs:
        ex = LocalExecutor(backend)
        grn.infer(mouse, islands=K, population=N, generations=2, client=ex)  # warm-up: compile kernels
        for seed in seeds:
            log(f"optimum: {backend} {K}x{N} seed {seed}")
            ds = grn.infer(mouse, islands=K, population=N, generations=3000, target_fitness=OPTIMUM, seed=seed,
                           client=ex, time_limit=120)
            a = ds.attrs
            tt = a.get("time_to_target_s")
            lines.append(f"| {backend} | {K} x {N} | {seed} | {a['generations']} | "
                         f"{'not reached' if tt is None else f'{tt:.3f}'} | {a['generations_per_second']:.0f} | "
                         f"{a['evaluations_per_second']:.3g} |")
            print(lines[-1], flush=True)

    # 2. evaluation kernel ---------------------------------------------------------------------------------
    lines += ["", "### Evaluation kernel alone (individual-evaluations/s; 5 synchronous steps + link distance)", "",
              "| problem | CPU (Numba, all cores) | GPU | GPU / CPU |", "|---|---|---|---|"]
    problems = [("mouse eye, 32 genes", mouse, 1 << 16, 1 << 20),
                ("planted, 256 genes", grn.planted(256, seed=1), 1 << 10, 1 << 16),
                ("planted, 1024 genes", grn.planted(1024, seed=1), 1 << 6, 1 << 13)]
    for name, prob, p_cpu, p_gpu in problems:
        log(f"evaluation rate: {name}")
        rc = eval_rate(prob, "cpu", p_cpu)
        rg = eval_rate(prob, "gpu", p_gpu) if gpu else float("nan")
        lines.append(f"| {name} | {rc:.3g} | {rg:.3g} | {rg / rc:.1f}x |")
        print(lines[-1], flush=True)

    # 3. end-to-end GA rate --------------------------------------------------------------------------------
    lines += ["", "### End-to-end GA on the mouse eye (selection + crossover + mutation + evaluation)", "",
              "| backend | islands x population | generations | wall (s) | generations/s | evaluations/s |",
              "|---|---|---|---|---|---|"]
    runs = [("cpu", 4, 1024, 50)] + ([("gpu", 64, 1024, 200), ("gpu", 256, 1024, 100)] if gpu else [])
    for backend, K, N, G in runs:
        log(f"GA rate: {backend} {K}x{N}")
        ex = LocalExecutor(backend)
        grn.infer(mouse, islands=K, population=N, generations=2, client=ex)
        ds = grn.infer(mouse, islands=K, population=N, generations=G, seed=1, client=ex)
        a = ds.attrs
        lines.append(f"| {backend} | {K} x {N} | {G} | {a['wall_time_s']:.2f} | {a['generations_per_second']:.1f} | "
                     f"{a['evaluations_per_second']:.3g} |")
        print(lines[-1], flush=True)

    # 4. islands over GPUs ---------------------------------------------------------------------------------
    n = args.genes or (256 if args.quick else 512)
    prob = grn.planted(n, seed=1)
    K, G, I = args.islands, args.generations, args.interval
    N = args.population or (256 if args.quick else 512)
    lines += ["", f"### Planted random GRN, {n} genes: {K} islands x {N}, {G} generations, ring migration "
              f"(8 migrants) every {I} generations through Dask", "",
              "| workers | wall (s) | generations/s | evaluations/s | speed-up vs 1 GPU |", "|---|---|---|---|---|"]
    kw = dict(islands=K, population=N, generations=G, migration_interval=I, migration_rate=8, seed=1)
    log(f"planted {n}: CPU reference (4 islands, 4 generations)")
    ds = grn.infer(prob, client=LocalExecutor("cpu"), **{**kw, "islands": min(K, 4), "generations": 4})
    lines.append(f"| CPU in-process ({min(K, 4)} islands, 4 generations) | {ds.attrs['wall_time_s']:.2f} | "
                 f"{ds.attrs['generations_per_second']:.2f} | {ds.attrs['evaluations_per_second']:.3g} | |")
    print(lines[-1], flush=True)
    base = None
    from distsim.cluster import count_gpus

    have = count_gpus() if gpu else 0
    for g in [int(x) for x in args.gpus.split(",") if x.strip()]:
        if g > have:
            lines.append(f"| {g} GPU(s) | not available ({have} visible) | | | |")
            continue
        log(f"planted {n}: {g} GPU worker(s)")
        client = distsim.connect(gpus=g)
        try:
            grn.infer(prob, client=client, **{**kw, "generations": 2})  # warm-up: NVRTC on every worker
            ds = grn.infer(prob, client=client, **kw)
        finally:
            client.close()
            client.cluster.close()
        wall = ds.attrs["wall_time_s"]
        base = base or wall
        lines.append(f"| {g} GPU(s) ({ds.attrs['shards']} shards) | {wall:.2f} | "
                     f"{ds.attrs['generations_per_second']:.2f} | {ds.attrs['evaluations_per_second']:.3g} | "
                     f"{base / wall:.2f}x |")
        print(lines[-1], flush=True)
    emit(lines, args.out)


if __name__ == "__main__":
    main()
