"""Cold starts: the first call of each workload in a new process, with empty and with filled kernel caches.

    python3 benchmarks/cold_start.py [--workloads pbn ssa ssa-tree sweep grn mcmc] [--backend cpu|gpu] [--out t.md]
                                     [--profile DIR]

Per workload, two fresh processes share one empty cache folder (Numba's ``NUMBA_CACHE_DIR``, distsim's
``DISTSIM_CACHE_DIR`` for NVRTC output, CuPy's ``CUPY_CACHE_DIR``): the first ("cold") compiles every
kernel it needs, the second ("cached") should load them all. Each process times ``import`` of the
workload, its first call and a second, identical call (warm: everything loaded). Columns: compiles and
compile seconds (``distsim.backends.compiles``), whether the compile notice was printed, and the
cached first call minus warm (the goal: <= 1 s). Small sizes; in-process (no Dask).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import emit  # noqa: E402

WORKLOADS = ("pbn", "ssa", "ssa-tree", "sweep", "grn", "mcmc")


def call(name: str, backend: str):  # noqa: ANN201 (a function running one workload once)
    """The workload's small call (module imports happen outside it, in :func:`child`)."""
    import numpy as np

    import distsim

    kw = dict(backend=backend, progress=False)
    if name == "pbn":
        import distsim.pbn as pbn

        net = pbn.load(ROOT / "examples/pbn/bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet", perturbation=1e-3)
        return lambda: pbn.simulate(net, steps=100, trajectories=256, seed=1, keep_states=False, **kw)
    if name in ("ssa", "ssa-tree", "sweep"):
        import distsim.ssa as ssa
        from distsim.ssa.generators import cyclic_chain

        if name == "ssa-tree":
            net = cyclic_chain(100)
            return lambda: ssa.simulate(net, t_end=0.1, points=2, realizations=64, method="tree", seed=1,
                                        quantiles=None, **kw)
        net = ssa.load(ROOT / "examples/ssa/michaelis_menten.rxn")
        if name == "ssa":
            return lambda: ssa.simulate(net, t_end=100.0, points=11, realizations=256, seed=1, **kw)
        table = [{"k1": float(a), "k3": 0.1} for a in np.geomspace(2.5e-4, 4e-3, 8)]
        return lambda: distsim.sweep(ssa.simulate, net, table, seed=1, t_end=100.0, points=11, realizations=25,
                                     quantiles=None, **kw)
    if name == "grn":
        import distsim.grn as grn

        prob = grn.load(ROOT / "examples/grn/mouse_eye.toml")
        return lambda: grn.infer(prob, islands=2, population=64, generations=20, seed=1, **kw)
    if name == "mcmc":
        import distsim.mcmc as mcmc
        import distsim.ssa as ssa

        net = ssa.load(ROOT / "examples/mcmc/michaelis_menten.rxn")
        prior = {"k1": (2.0, 1000.0), "k2": (2.0, 10.0), "k3": (2.0, 10.0)}
        return lambda: mcmc.infer_rates(net, ROOT / "examples/mcmc/mm_observations.csv", prior=prior, chains=2,
                                        iterations=3, burn_in=0, seed=1, **kw)
    raise ValueError(name)


def child(name: str, backend: str) -> dict:
    t = time.perf_counter()
    fn = call(name, backend)
    imports = time.perf_counter() - t
    from distsim.backends import compiles

    prof = os.environ.get("COLD_START_PROFILE")
    if prof:  # --profile: where the cached process's first call spends its time
        import cProfile
        import pstats

        pr = cProfile.Profile()
    t = time.perf_counter()
    if prof:
        pr.runcall(fn)
    else:
        fn()
    first = time.perf_counter() - t
    if prof:
        with open(prof, "w") as f:
            pstats.Stats(pr, stream=f).sort_stats("cumulative").print_stats(45)
    n, s = compiles.count(), compiles.seconds()
    t = time.perf_counter()
    fn()
    warm = time.perf_counter() - t
    return dict(imports=imports, first=first, warm=warm, compiles=n, compile_s=s, again=compiles.count() - n)


def run(name: str, backend: str, cache: Path, profile: str | None = None) -> dict:
    env = dict(os.environ, **({"COLD_START_PROFILE": profile} if profile else {}), NUMBA_CACHE_DIR=str(cache / "numba"), DISTSIM_CACHE_DIR=str(cache / "distsim"),
               CUPY_CACHE_DIR=str(cache / "cupy"), PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    if backend == "cpu":
        env["DISTSIM_DISABLE_GPU"] = "1"
    p = subprocess.run([sys.executable, __file__, "--child", name, "--backend", backend], env=env, cwd=ROOT,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{name} ({backend}) failed:\n{p.stderr[-3000:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["notice"] = p.stderr.count("kernels on first use")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=WORKLOADS)
    ap.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None)
    ap.add_argument("--profile", default=None, metavar="DIR",
                    help="write a cProfile of each cached process's first call (cumulative, top 45) into DIR")
    a = ap.parse_args()
    if a.profile:
        Path(a.profile).mkdir(parents=True, exist_ok=True)
    if a.child:
        print(json.dumps(child(a.child, a.backend)))
        return
    from distsim import backends

    lines = [f"cold starts, backend {a.backend}, {backends.device_description('cpu')}, {time.strftime('%Y-%m-%d')}", "",
             "| workload | cold: first call s | compiles, compile s | notices | warm call s | cached: first call s "
             "(new process) | cached - warm s | compiles | notices | imports s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name in a.workloads:
        with tempfile.TemporaryDirectory(prefix="distsim-cold-") as tmp:
            cold = run(name, a.backend, Path(tmp))
            cached = run(name, a.backend, Path(tmp),
                         a.profile and str(Path(a.profile) / f"cold_start_profile_{name}_{a.backend}.txt"))
        lines.append(f"| {name} | {cold['first']:.2f} | {cold['compiles']}, {cold['compile_s']:.1f} | "
                     f"{cold['notice']} | "
                     f"{cached['warm']:.3f} | {cached['first']:.2f} | {cached['first'] - cached['warm']:.2f} | "
                     f"{cached['compiles']} | {cached['notice']} | {cached['imports']:.2f} |")
        print(lines[-1], flush=True)
    emit(lines, a.out)


if __name__ == "__main__":
    main()
