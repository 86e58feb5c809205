"""distsim's MaBoSS workload against cmaboss (MaBoSS's engine, CPU) on the shipped MaBoSS models.

    python benchmarks/maboss.py [--models calzone cellcycle p53] [--trajectories 100000 1000000]
                                [--backends gpu cpu] [--cmaboss-max 100000] [--out t.md]

Each backend is warmed up (kernels compiled) on 1000 trajectories, then timed in-process on one
device; cmaboss (if installed) runs the same .bnd/.cfg with sample_count = N and thread_count = the
CPUs distsim's CPU backend uses (``--cmaboss-threads``), up to --cmaboss-max trajectories. The table
prints wall seconds, trajectories/s, transitions/s and, on distsim's rows, cmaboss's time over
distsim's (issue 31's goal for the CPU backend: >= 5 on the same cores).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _report import emit  # noqa: E402

DATA = ROOT / "tests" / "data" / "maboss"
MODELS = {
    "calzone": (ROOT / "examples" / "pbn" / "maboss_calzone2010_cell_fate_28n.bnd",
                ROOT / "examples" / "pbn" / "maboss_calzone2010_cell_fate_28n.cfg", {"max_time": 50}),
    "cellcycle": (DATA / "cellcycle.bnd", DATA / "cellcycle_runcfg.cfg", {"discrete_time": 0}),
    "p53": (DATA / "p53_Mdm2.bnd", DATA / "p53_Mdm2_runcfg.cfg", {}),
    "metastasis": (DATA / "metastasis.bnd", DATA / "metastasis.cfg", {}),
    # 87 and 133 nodes: more than cmaboss's wheel takes
    "sizek": (DATA / "sizek.bnd", DATA / "sizek.cfg", {}),
    "montagud": (DATA / "Montagud2022_Prostate_Cancer.bnd", DATA / "Montagud2022_Prostate_Cancer.cfg", {}),
}


def _cmaboss(bnd: Path, cfg: Path, over: dict, n: int, threads: int) -> float:
    import cmaboss

    with tempfile.TemporaryDirectory() as d:
        c = Path(d) / cfg.name
        c.write_text(cfg.read_text() + "".join(f"\n{k} = {int(v)};" for k, v in
                                               {**over, "sample_count": n, "thread_count": threads}.items()))
        t = time.perf_counter()
        cmaboss.MaBoSSSim(network=str(bnd), config=str(c)).run()
        return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["calzone", "cellcycle", "p53", "metastasis"],
                    choices=sorted(MODELS))
    ap.add_argument("--trajectories", nargs="+", type=int, default=[100000, 1000000])
    ap.add_argument("--backends", nargs="+", default=["gpu", "cpu"], choices=["gpu", "cpu"])
    ap.add_argument("--cmaboss-max", type=int, default=100000)
    ap.add_argument("--cmaboss-threads", type=int, default=None, help="default: the CPUs distsim uses")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    from distsim import backends
    from distsim.cluster import usable_cpus
    from distsim.maboss import maboss

    threads = args.cmaboss_threads or usable_cpus()

    try:
        import cmaboss  # noqa: F401
        have_cmaboss = True
    except ImportError:
        have_cmaboss = False
    lines = ["| model | N | engine | wall s | trajectories/s | transitions/s | cmaboss s / this |",
             "|---|---|---|---|---|---|---|"]
    for name in args.models:
        bnd, cfg, over = MODELS[name]
        kw = {k: (bool(v) if k == "discrete_time" else v) for k, v in over.items()}
        ref = {}
        if have_cmaboss:
            for n in [n for n in args.trajectories if n <= args.cmaboss_max]:
                try:
                    ref[n] = _cmaboss(bnd, cfg, over, n, threads)
                except Exception as e:  # noqa: BLE001 -- e.g. the wheel's 64-node limit
                    lines.append(f"| {name} | {n:.0e} | cmaboss {threads} threads | {e} | | | |")
                    continue
                lines.append(f"| {name} | {n:.0e} | cmaboss {threads} threads | {ref[n]:.2f} | {n / ref[n]:.3g} | | |")
        for backend in args.backends:
            if backend == "gpu" and not backends.gpu_available():
                print("no GPU: skipping the gpu backend", file=sys.stderr)
                continue
            maboss(bnd, cfg, trajectories=1000, backend=backend, progress=False, **kw)  # warm-up
            for n in args.trajectories:
                t = time.perf_counter()
                ds = maboss(bnd, cfg, trajectories=n, seed=args.seed, backend=backend, progress=False, **kw)
                dt = time.perf_counter() - t
                ratio = f"{ref[n] / dt:.2f}" if n in ref else ""
                lines.append(f"| {name} | {n:.0e} | distsim {backend} | {dt:.2f} | {n / dt:.3g} | "
                             f"{ds.attrs['events'] / dt:.3g} | {ratio} |")
    emit(lines, args.out)


if __name__ == "__main__":
    main()
