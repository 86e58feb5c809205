"""distsim's MaBoSS workload against cmaboss (MaBoSS's engine, CPU) on the shipped MaBoSS models.

    python benchmarks/maboss.py [--models calzone cellcycle p53] [--trajectories 100000 1000000]
                                [--backends gpu cpu] [--cmaboss-max 100000] [--threads 2] [--repeats 3]
                                [--out t.md]

Each backend is warmed up (kernels compiled) on 1000 trajectories, then timed in-process on one
device; cmaboss (if installed; the module for the model's node count, as ``maboss_reference.py``
picks it) runs the same .bnd/.cfg with sample_count = N and thread_count = ``--threads`` (distsim's
CPU backend uses as many: ``NUMBA_NUM_THREADS``), up to --cmaboss-max trajectories. The runs
alternate, cmaboss then each distsim backend, ``--repeats`` times, so that the load of a shared
machine falls on all of them; the table prints median wall seconds, trajectories/s, transitions/s
and, on distsim's rows, cmaboss's median time over distsim's with the range of the paired ratios
(issue 31's goal for the CPU backend: >= 5 on the same cores).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _report import emit  # noqa: E402

DATA = ROOT / "tests" / "data" / "maboss"
MODELS = {  # .bnd, .cfg, overrides, trajectories without --trajectories (cmaboss: a few seconds on 2 cores)
    "calzone": (ROOT / "examples" / "pbn" / "maboss_calzone2010_cell_fate_28n.bnd",
                ROOT / "examples" / "pbn" / "maboss_calzone2010_cell_fate_28n.cfg", {"max_time": 50}, 500000),
    "cellcycle": (DATA / "cellcycle.bnd", DATA / "cellcycle_runcfg.cfg", {"discrete_time": 0}, 100000),
    "p53": (DATA / "p53_Mdm2.bnd", DATA / "p53_Mdm2_runcfg.cfg", {}, 100000),
    "metastasis": (DATA / "metastasis.bnd", DATA / "metastasis.cfg", {}, 50000),
    "sizek": (DATA / "sizek.bnd", DATA / "sizek.cfg", {}, 500),  # 87 nodes: cmaboss_128n
    "montagud": (DATA / "Montagud2022_Prostate_Cancer.bnd", DATA / "Montagud2022_Prostate_Cancer.cfg", {},
                 1000),  # 133 nodes: cmaboss_256n
}


def _cmaboss(bnd: Path, cfg: Path, over: dict, n: int, threads: int) -> float:
    from maboss_reference import _cmaboss as module, _cfg_copy

    from distsim.maboss import load

    cm = module(len(load(bnd, cfg).nodes))
    with tempfile.TemporaryDirectory() as d:
        c = _cfg_copy(cfg, n, threads, Path(d))
        c.write_text(c.read_text() + "".join(f"{k} = {int(v)};\n" for k, v in over.items()))
        t = time.perf_counter()
        cm.MaBoSSSim(network=str(bnd), config=str(c)).run()
        return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["calzone", "cellcycle", "p53", "metastasis"],
                    choices=sorted(MODELS))
    ap.add_argument("--trajectories", nargs="+", type=int, default=None, help="default: each model's own")
    ap.add_argument("--backends", nargs="+", default=["gpu", "cpu"], choices=["gpu", "cpu"])
    ap.add_argument("--cmaboss-max", type=int, default=1000000)
    ap.add_argument("--threads", type=int, default=None,
                    help="cmaboss's thread_count and distsim's CPU threads (default: the usable CPUs)")
    ap.add_argument("--repeats", type=int, default=1, help="alternating timed runs of each engine")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.threads:
        os.environ["NUMBA_NUM_THREADS"] = str(args.threads)  # before numba is imported

    from distsim import backends
    from distsim.cluster import usable_cpus
    from distsim.maboss import maboss

    threads = args.threads or usable_cpus()
    try:
        import cmaboss  # noqa: F401
        have_cmaboss = True
    except ImportError:
        have_cmaboss = False
    engines = [b for b in args.backends if b == "cpu" or backends.gpu_available()]
    if len(engines) < len(args.backends):
        print("no GPU: skipping the gpu backend", file=sys.stderr)
    lines = [f"| model | N | engine | wall s (median of {args.repeats}) | trajectories/s | transitions/s | "
             "cmaboss s / this (range) |", "|---|---|---|---|---|---|---|"]
    for name in args.models:
        bnd, cfg, over, n_default = MODELS[name]
        kw = {k: (bool(v) if k == "discrete_time" else v) for k, v in over.items()}
        for backend in engines:
            maboss(bnd, cfg, trajectories=1000, backend=backend, progress=False, **kw)  # warm-up
        for n in args.trajectories or [n_default]:
            walls: dict[str, list[float]] = {e: [] for e in ["cmaboss", *engines]}
            events = {}
            use_cm = have_cmaboss and n <= args.cmaboss_max
            for _ in range(args.repeats):
                if use_cm:
                    walls["cmaboss"].append(_cmaboss(bnd, cfg, over, n, threads))
                for backend in engines:
                    t = time.perf_counter()
                    ds = maboss(bnd, cfg, trajectories=n, seed=args.seed, backend=backend, progress=False, **kw)
                    walls[backend].append(time.perf_counter() - t)
                    events[backend] = ds.attrs["events"]
            ref = statistics.median(walls["cmaboss"]) if use_cm else None
            if use_cm:
                lines.append(f"| {name} | {n:.0e} | cmaboss {threads} threads | {ref:.2f} | {n / ref:.3g} | | |")
            for backend in engines:
                dt = statistics.median(walls[backend])
                ratio = ""
                if use_cm:
                    pair = [a / b for a, b in zip(walls["cmaboss"], walls[backend])]
                    ratio = f"{ref / dt:.2f} ({min(pair):.2f}-{max(pair):.2f})"
                label = f"distsim {backend}" + (f" {threads} threads" if backend == "cpu" else "")
                lines.append(f"| {name} | {n:.0e} | {label} | {dt:.2f} | {n / dt:.3g} | {events[backend] / dt:.3g} | "
                             f"{ratio} |")
            print(*lines[-1 - len(engines) - use_cm:], sep="\n", file=sys.stderr, flush=True)
    emit(lines, args.out)


if __name__ == "__main__":
    main()
