"""Scale-out: throughput on 1, 2, 4 GPUs (or CPU workers) per workload, the share of wall time spent
outside the device kernels (Dask overhead), and a sweep of SSA parameter points.

    python benchmarks/scaling.py [--gpus 1 2 4] [--workloads pbn ssa sweep] [--points 10000] [--quick] [--out t.md]
    python benchmarks/scaling.py --cpu-workers 1 2 --quick          # the same on CPU workers (no GPU)

Each configuration starts ``distsim.connect(gpus=n)`` (LocalCUDACluster, one worker per GPU), warms
every worker up (kernel compilation), then times one call end to end and prints its line at once.
overhead = (wall - sum of per-task kernel seconds / workers) / wall, from the executor's per-task
meta (``seconds`` is measured around the task body on the worker, device synchronised). Every
configuration does the same work (same seed, chain and realization counts), so results are equal
and throughputs comparable; speed-up = throughput / throughput on 1 worker.
Workloads: pbn (steady state of the 87-node Sizek network, fixed chain count), ssa (Michaelis-Menten
ensemble), sweep (MM parameter points x 1,000 realizations each), mcmc (8 MM chains; --mcmc-chains). grn: add an entry to
WORKLOADS (a function (client, quick, args) -> dict with work, unit, wall, metas).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _report import emit  # noqa: E402

from distsim.engine import DaskExecutor  # noqa: E402


class Recording(DaskExecutor):
    """A DaskExecutor that keeps every task's meta (worker, seconds)."""

    def __init__(self, client: Any, backend: str | None = None):
        super().__init__(client, backend or "auto")
        self.metas: list[dict] = []
        self.t0 = time.time()

    def clear(self) -> None:
        """Forget the warm-up's tasks; the timeline starts now."""
        self.metas.clear()
        self.t0 = time.time()

    def timeline(self, end: float) -> list[str]:
        """One line per task of the timed call: worker, start and end (s after the call started), seconds."""
        out = [f"    timeline: call 0.000-{end - self.t0:.3f} s"]
        for m in sorted(self.metas, key=lambda m: m.get("start", 0.0)):
            a = m.get("start", self.t0) - self.t0
            out.append(f"    {m['worker']}: task {a:.3f}-{a + m['seconds']:.3f} s ({m['seconds']:.3f} s, "
                       f"compile {m.get('compile_s', 0.0):.3f} s)")
        return out

    def run_round(self, fn, run_id, round_no, payloads, on_done=None):  # type: ignore[no-untyped-def]
        out = super().run_round(fn, run_id, round_no, payloads, on_done=on_done)
        self.metas.extend(m for _, m in out)
        return out

    def stream(self, fn, run_id, payloads, round_no=0):  # type: ignore[no-untyped-def]
        for index, result, meta in super().stream(fn, run_id, payloads, round_no):
            self.metas.append(meta)
            yield index, result, meta


def run_pbn(ex: Recording, quick: bool, args: argparse.Namespace) -> dict:
    from distsim.pbn import load, steady_state

    net = load(ROOT / "examples" / "pbn" / "bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet", perturbation=1e-3)
    chains = 2**18 if quick else 2**21
    steady_state(net, "v_Casp3=1", precision=1e-2, chains=4096, seed=1, client=ex)  # warm-up
    ex.clear()
    t = time.perf_counter()
    ds = steady_state(net, "v_Casp3=1", precision=1e-4 if not quick else 3e-4, chains=chains, seed=1, client=ex)
    return dict(work=ds.attrs["steps_simulated"], unit="steps", wall=time.perf_counter() - t,
                check=f"p={float(ds.probability[0]):.6f}")


def run_ssa(ex: Recording, quick: bool, args: argparse.Namespace) -> dict:
    import distsim.ssa as ssa

    net = ssa.load(ROOT / "examples" / "ssa" / "michaelis_menten.rxn")
    n = args.ssa_realizations or (2**20 if quick else 2**24)
    ssa.simulate(net, t_end=100, points=101, realizations=4096, seed=1, client=ex, quantiles=None)  # warm-up
    ex.clear()
    t = time.perf_counter()
    ds = ssa.simulate(net, t_end=100, points=101, realizations=n, seed=1, client=ex, quantiles=None,
                      keep_final=False)
    return dict(work=ds.attrs["firings_total"], unit="firings", wall=time.perf_counter() - t,
                check=f"mean P(t_end)={float(ds['mean'][-1, 3]):.4f}")


def run_sweep(ex: Recording, quick: bool, args: argparse.Namespace) -> dict:
    import numpy as np

    import distsim
    import distsim.ssa as ssa

    net = ssa.load(ROOT / "examples" / "ssa" / "michaelis_menten.rxn")
    n_points = args.points if args.points else (200 if quick else 10_000)
    side = int(np.ceil(np.sqrt(n_points)))
    k1 = np.geomspace(2.5e-4, 4e-3, side)
    k3 = np.geomspace(0.025, 0.4, side)
    table = [{"k1": float(a), "k3": float(b)} for a in k1 for b in k3][:n_points]
    # method 'tree' takes the rates from a table on the GPU (no kernel recompiled per point; the
    # generated 'direct' kernel bakes the rates in). Points x 1,000 realizations each.
    fixed = dict(t_end=100.0, points=11, realizations=1000, quantiles=None, method=args.sweep_method)
    # warm-up: every worker runs a task of more than ssa.gpu.HOST_REDUCE_MAX realizations, as the timed
    # call's tasks are, so the CuPy reductions of large tasks are compiled (or loaded) before the clock
    per_task = 1
    if ex.uses_gpu():
        from distsim.ssa.gpu import HOST_REDUCE_MAX

        per_task = min(len(table), HOST_REDUCE_MAX // fixed["realizations"] + 1)
    distsim.sweep(ssa.simulate, net, table[: per_task * ex.n_workers()], seed=1, client=ex, chunk_size=per_task,
                  **fixed)
    ex.clear()
    t = time.perf_counter()
    ds = distsim.sweep(ssa.simulate, net, table, seed=1, client=ex, **fixed)
    wall = time.perf_counter() - t
    return dict(work=len(table), unit="points", wall=wall,
                check=f"{len(table) * 1000:.3g} realizations, {int(ds.firings_total.sum()):.3g} firings")


def run_mcmc(ex: Recording, quick: bool, args: argparse.Namespace) -> dict:
    import distsim.mcmc as mcmc
    import distsim.ssa as ssa

    net = ssa.load(ROOT / "examples" / "mcmc" / "michaelis_menten.rxn")
    obs = ROOT / "examples" / "mcmc" / "mm_observations.csv"
    prior = {"k1": (2, 1000), "k2": (2, 10), "k3": (2, 10)}
    its = args.mcmc_iterations or (1000 if quick else 5000)
    chains = args.mcmc_chains
    mcmc.infer_rates(net, obs, prior=prior, iterations=50, burn_in=10, chains=chains, seed=1, client=ex)  # warm-up
    ex.clear()
    t = time.perf_counter()
    ds = mcmc.infer_rates(net, obs, prior=prior, iterations=its, burn_in=its // 5, chains=chains, seed=1, client=ex)
    return dict(work=chains * its, unit=f"iterations ({chains} chains)", wall=time.perf_counter() - t,
                check=f"k1 mean {float(ds['k1'].mean()):.3g}")


WORKLOADS: dict[str, Callable[[Recording, bool, argparse.Namespace], dict]] = {
    "pbn": run_pbn, "ssa": run_ssa, "sweep": run_sweep, "mcmc": run_mcmc,
    # "grn": run_grn,   <- add when distsim.grn lands
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpus", type=int, nargs="*", default=[1, 2, 4])
    ap.add_argument("--cpu-workers", type=int, nargs="*", default=None, help="run on CPU workers instead of GPUs")
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=sorted(WORKLOADS))
    ap.add_argument("--points", type=int, default=None, help="sweep points (default 10000; 200 with --quick)")
    ap.add_argument("--sweep-method", default="tree", choices=["direct", "tree", "auto"])
    ap.add_argument("--ssa-realizations", type=int, default=None, help="MM realizations (default 2^24; quick 2^20)")
    ap.add_argument("--mcmc-chains", type=int, default=8, help="MM chains of the mcmc workload (default 8)")
    ap.add_argument("--mcmc-iterations", type=int, default=None, help="per chain (default 5000; 1000 with --quick)")
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds per configuration)")
    ap.add_argument("--timeline", action="store_true", help="print each timed task's start and end")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import distsim
    from distsim import backends
    from distsim.cluster import count_gpus

    cpu = args.cpu_workers is not None
    if cpu:
        os.environ["DISTSIM_DISABLE_GPU"] = "1"
        backends.gpu_available.cache_clear()
        sizes = args.cpu_workers
    else:
        have = count_gpus()
        sizes = [n for n in args.gpus if n <= have]
        if not sizes:
            sys.exit(f"no GPU configuration fits: {have} GPU(s) visible; use --cpu-workers for CPU workers")
    label = "cpu" if cpu else "gpu"
    rows: list[dict] = []
    base: dict[str, float] = {}
    print(f"# scaling on {label} workers {sizes}, workloads {args.workloads}{' (quick)' if args.quick else ''}",
          flush=True)
    for n in sizes:
        client = distsim.connect(gpus=False, n_workers=n) if cpu else distsim.connect(gpus=n)
        try:
            client.wait_for_workers(n, timeout=300)
            ex = Recording(client, "cpu" if cpu else None)
            for w in args.workloads:
                r = WORKLOADS[w](ex, args.quick, args)
                busy = sum(m["seconds"] for m in ex.metas) / n
                rate = r["work"] / r["wall"]
                base.setdefault(w, rate) if n == sizes[0] else None
                row = dict(workload=w, workers=n, kind=label, wall=r["wall"], work=r["work"], unit=r["unit"], rate=rate,
                           speedup=rate / base[w], overhead=max(0.0, (r["wall"] - busy) / r["wall"]),
                           tasks=len(ex.metas), check=r["check"],
                           device=", ".join(sorted({m["device"] for m in ex.metas})))
                rows.append(row)
                if args.timeline:
                    print("\n".join(ex.timeline(ex.t0 + r["wall"])), flush=True)
                print(f"{w:>6} {n} {label}: {r['wall']:8.2f} s  {rate:10.4g} {r['unit']}/s  speed-up "
                      f"{row['speedup']:.2f}x vs {sizes[0]}  overhead {100 * row['overhead']:.1f}%  "
                      f"({row['tasks']} tasks; {r['check']})", flush=True)
        finally:
            client.close()
            cluster = getattr(client, "cluster", None)
            if cluster is not None:
                cluster.close()
    lines = [f"| workload | {label}s | wall s | throughput | speed-up vs {sizes[0]} | outside kernels | tasks | check |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['workers']} | {r['wall']:.2f} | {r['rate']:.4g} {r['unit']}/s | "
                     f"{r['speedup']:.2f}x | {100 * r['overhead']:.1f}% | {r['tasks']} | {r['check']} |")
    if rows:
        lines.append(f"\ndevice: {rows[-1]['device']}")
    emit(lines, args.out)


if __name__ == "__main__":
    main()
