"""Wall time of one steady-state probability (seed 000's Algorithm 3) on CPU and 1/2/4 GPUs.

    python benchmarks/pbn_steady_state.py [--gpus 1 2 4] [--precisions 1e-4 1e-5] [--cpu-precisions 1e-4]
                                          [--networks sizek montagud] [--in-process] [--out table.md]

Each configuration runs through Dask end to end (``distsim.connect()``: LocalCUDACluster with one
worker per GPU, or a LocalCluster of CPU workers), after a warm-up run that compiles the kernels
on every worker; the timed call is ``steady_state(...)`` from call to returned Dataset. The chain
count depends only on the precision, so every configuration does the same work and returns the
same numbers; throughput = simulated steps / wall time. After each run its per-task timings are
printed (each round's tasks by worker; summed over rounds: slowest minus mean task -- uneven shards
or a slower GPU --, round wall minus slowest task -- Dask and transfers --, and the client's time
between rounds).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _report import emit  # noqa: E402

NETWORKS = {
    "sizek": ("bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet", "v_Casp3=1"),
    "montagud": ("bbm083_montagud2022_prostate_cancer_133n.bnet", "v_Proliferation=1"),
    "faure": ("bbm023_faure2006_mammalian_cell_cycle_10n.bnet", "v_CycE=1"),
}


def run_config(label: str, client, nets, precisions, seed: int, rows: list) -> None:
    from distsim.pbn import load, steady_state

    for name in nets:
        fname, target = NETWORKS[name]
        net = load(ROOT / "examples" / "pbn" / fname, perturbation=1e-3)
        steady_state(net, target, precision=1e-2, seed=seed, client=client)  # warm-up: compile on all workers
        for r in precisions:
            t = time.perf_counter()
            ds = steady_state(net, target, precision=r, seed=seed, client=client)
            wall = time.perf_counter() - t
            a = ds.attrs
            row = dict(config=label, network=name, nodes=net.n, target=target, precision=r,
                       probability=float(ds.probability[0]), half_width=float(ds.half_width[0]),
                       rhat=float(ds.rhat[0]), chains=a["chains"], length=a["chain_length"],
                       steps=a["steps_simulated"], rounds=a["rounds"], wall=wall, rate=a["steps_simulated"] / wall,
                       backend=a["backend"], removed=a["nodes_removed"])
            rows.append(row)
            print(f"{label:>6} {name:>9} r={r:g}: p={row['probability']:.6f} +-{row['half_width']:.1e} "
                  f"R-hat {row['rhat']:.3f} {row['chains']} chains x {row['length']} = {row['steps']:.3g} steps, "
                  f"{row['rounds']} rounds, {wall:.2f} s ({row['rate']:.3g} steps/s) [{row['backend']}]", flush=True)
            print(task_report(a), flush=True)
            walls = sum(float(x) for x in a["round_wall_s"].split(","))
            row.update(imbalance=a["round_imbalance_s"], overhead=a["round_overhead_s"], between=a["between_rounds_s"],
                       device=a["device_seconds"], outside=wall - walls - a["between_rounds_s"])


def task_report(a: dict) -> str:
    """Per-task timings of a run (Dataset attrs from engine.Run.timings): every round's wall time and
    its tasks' seconds with their workers, each worker's total, and where the time between went."""
    secs = [float(x) for x in a["task_seconds"].split(",")]
    per_round = [int(x) for x in a["round_tasks"].split(",")]
    walls = [float(x) for x in a["round_wall_s"].split(",")]
    workers = a["task_workers"].split(",")
    lines, at = [], 0
    for r, (wall, n) in enumerate(zip(walls, per_round)):
        tasks = ", ".join(f"{w.rsplit(':', 1)[-1]} {s:.3f}" for w, s in zip(workers[at:at + n], secs[at:at + n]))
        lines.append(f"      round {r}: wall {wall:.3f} s; tasks (worker port, s): {tasks}")
        at += n
    total: dict[str, float] = {}
    for w, s in zip(workers, secs):
        total[w] = total.get(w, 0.0) + s
    lines.append("      per worker: " + ", ".join(f"{w} {s:.2f} s" for w, s in sorted(total.items())))
    lines.append(f"      summed over rounds: slowest task - mean task {a['round_imbalance_s']:.3f} s, round wall - "
                 f"slowest task {a['round_overhead_s']:.3f} s, client between rounds {a['between_rounds_s']:.3f} s")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpus", type=int, nargs="*", default=[1, 2, 4])
    ap.add_argument("--precisions", type=float, nargs="+", default=[1e-4, 1e-5])
    ap.add_argument("--cpu-precisions", type=float, nargs="*", default=[1e-4])
    ap.add_argument("--networks", nargs="+", default=["sizek", "montagud"], choices=sorted(NETWORKS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--in-process", action="store_true",
                    help="also time the GPU (else CPU) in this process, without Dask (issue 33: Dask within 1.3x)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import distsim
    from distsim import backends
    from distsim.cluster import count_gpus

    rows: list[dict] = []
    n_gpu = count_gpus()
    if args.cpu_precisions:
        os.environ["DISTSIM_DISABLE_GPU"] = "1"  # CPU workers only (inherited by the spawned workers)
        backends.gpu_available.cache_clear()
        client = distsim.connect(gpus=False)
        try:
            run_config("cpu", client, args.networks, args.cpu_precisions, args.seed, rows)
        finally:
            client.close()
            client.cluster.close()
        del os.environ["DISTSIM_DISABLE_GPU"]
        backends.gpu_available.cache_clear()
    if args.in_process:
        from distsim.engine import LocalExecutor

        run_config("in-process", LocalExecutor("gpu" if n_gpu else "cpu"), args.networks, args.precisions,
                   args.seed, rows)
    for g in args.gpus:
        if g > n_gpu:
            print(f"skipping {g} GPUs: only {n_gpu} visible")
            continue
        client = distsim.connect(gpus=g)
        try:
            run_config(f"{g} GPU", client, args.networks, args.precisions, args.seed, rows)
        finally:
            client.close()
            client.cluster.close()

    cpu_name = f"{os.cpu_count()} CPU cores"
    gpu_name = backends.device_description("gpu") if n_gpu and backends.gpu_available() else "no GPU"
    lines = [f"GPU: {gpu_name} (x{n_gpu} visible); CPU config: {cpu_name}, one single-threaded worker per core; "
             f"p=1e-3, sync, confidence 0.95, seed {args.seed}", "",
             "| config | network | target | r | probability | half-width | R-hat | chains x length | steps | "
             "rounds | wall s | steps/s | speed-up vs 1 GPU | imbalance s | overhead s | between rounds s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    base = {(r["network"], r["precision"]): r["wall"] for r in rows if r["config"] == "1 GPU"}
    # speed-up vs 1 GPU through Dask; the in-process row's is Dask's cost (1 GPU wall / in-process wall < 1)
    for r in rows:
        ref = base.get((r["network"], r["precision"]))
        sp = f"{ref / r['wall']:.2f}" if ref else "-"
        lines.append(f"| {r['config']} | {r['network']} ({r['nodes']}) | {r['target']} | {r['precision']:g} | "
                     f"{r['probability']:.6f} | {r['half_width']:.1e} | {r['rhat']:.3f} | {r['chains']} x {r['length']} | "
                     f"{r['steps']:.3g} | {r['rounds']} | {r['wall']:.2f} | {r['rate']:.3g} | {sp} | "
                     f"{r['imbalance']:.3f} | {r['overhead']:.3f} | {r['between']:.3f} |")
    lines += dask_cost(rows)
    emit(lines, args.out)


def dask_cost(rows: list[dict]) -> list[str]:
    """Where a Dask run's extra wall time goes against the in-process run of the same network and
    precision: its slowest tasks summed over rounds (device work in the worker), each round's wall
    minus its slowest task (submit, transfers, results back), the client between rounds, and outside
    the rounds (before the first: compile, the run's start; after the last: the Dataset, the release)."""
    ref = {(r["network"], r["precision"]): r for r in rows if r["config"] == "in-process"}
    out = []
    for r in rows:
        base = ref.get((r["network"], r["precision"]))
        if base is None or r is base:
            continue
        d = {k: r[k] - base[k] for k in ("wall", "device", "overhead", "between", "outside")}
        out.append(f"* {r['config']} - in-process, {r['network']} r={r['precision']:g}: wall {d['wall']:+.3f} s = "
                   f"slowest tasks {d['device']:+.3f} + round overhead {d['overhead']:+.3f} + between rounds "
                   f"{d['between']:+.3f} + outside the rounds {d['outside']:+.3f} ({r['rounds']} rounds; "
                   f"{r['wall'] / base['wall']:.2f}x)")
    return [""] + out if out else []


if __name__ == "__main__":
    main()
