"""Every headline figure in one call, compared with its last recorded value (a benchmark with a memory).

    python3 benchmarks/headline.py                      # all figures; GPU if present (< 8 min on one H200)
    python3 benchmarks/headline.py --quick              # one timed call each, no 2-GPU or long figures
    python3 benchmarks/headline.py --backend cpu        # CPU sizes (small: minutes on 2 cores)
    python3 benchmarks/headline.py --only ssa.mm grn.optimum --update   # and write the new values
    python3 benchmarks/headline.py --only grn pbn.steady --code ../old   # another checkout's distsim (A/B)

Figures (ids; ``--list`` prints them with their sizes): PBN kernel (Sizek, Montagud) and end to end,
PBN steady state through Dask (Sizek, Montagud r = 1e-4) and Sizek's through Dask over in-process (issue 33's
1.3x), SSA Michaelis-Menten and large networks (cyclic chain N = 1e3, 1e4 with the warp kernel), the batched MM sweep (default and ``tree``), DA-MCMC
(4 chains), GRN mouse eye to the optimum, and 1 vs 2 GPUs (PBN steady state, Montagud r = 1e-5) when
two GPUs are visible. Each is first run at a small size (the warm-up: compiles every kernel, so a
broken figure fails in the first seconds and compile time stays out of the timings; its seconds are
printed), then timed at the size of the recorded command (best of ``--reps``). GPU warm-ups of SSA
ensembles and sweeps hold more than ``ssa.gpu.HOST_REDUCE_MAX`` realizations where the timed call
does: above it the per-realization words are reduced by CuPy reductions, compiled on first use.

The memory is ``benchmarks/headline_baseline.json``: per figure and device, the last recorded value
with its date, unit and the command that produced it (taken from benchmarks/RESULTS.md). The table
compares each figure with the record of the same device name (an H100 run is 'new' against H200
records, whose value is shown for reference). Verdict: 'ok' within the figure's noise band (default
10%), 'REGRESSION' beyond it on the slow side, 'faster' beyond it on the fast side, 'new' without a
record. ``--update`` writes the measured values as this device's new records (``--baseline-out``
elsewhere). Exit status 1 when a figure regressed or failed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
# --code DIR: time another checkout's distsim (this script's figures and models), here and in Dask workers
CODE = next((Path(a.split("=", 1)[1] if "=" in a else sys.argv[i + 2]).resolve()
             for i, a in enumerate(sys.argv[1:]) if a.split("=", 1)[0] == "--code"), None)
if CODE is not None:
    sys.path.insert(0, str(CODE))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(CODE), os.environ.get("PYTHONPATH", "")])

BASELINE = Path(__file__).resolve().parent / "headline_baseline.json"
NOISE = 0.10
SIZEK = ROOT / "examples/pbn/bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet"
MONTAGUD = ROOT / "examples/pbn/bbm083_montagud2022_prostate_cancer_133n.bnet"
MM = ROOT / "examples/ssa/michaelis_menten.rxn"
MCMC_MM = ROOT / "examples/mcmc/michaelis_menten.rxn"
MCMC_OBS = ROOT / "examples/mcmc/mm_observations.csv"
MCMC_PRIOR = {"k1": (2.0, 1000.0), "k2": (2.0, 10.0), "k3": (2.0, 10.0)}
GRN_OPTIMUM = 0.0005859375


def _distsim_dir() -> str:
    import distsim

    return str(Path(distsim.__file__).parent)


@dataclass
class Ctx:
    """Where a figure runs: backend ('gpu' or 'cpu') and the Dask clients it may share."""

    backend: str
    gpus: int
    open_cluster: bool = False  # local clusters without TLS (distsim.connect(security=False)): its cost, A/B
    clients: dict = field(default_factory=dict)

    def client(self, n: int) -> Any:
        """A Dask client of n workers (one per GPU; on CPUs n single-threaded workers), kept for the run."""
        if n not in self.clients:
            import distsim

            for m in list(self.clients):  # one cluster at a time: 1 and 2 GPUs share the devices
                self.close(m)
            sec = {"security": False} if self.open_cluster else {}
            c = (distsim.connect(gpus=n, **sec) if self.backend == "gpu"
                 else distsim.connect(gpus=False, n_workers=n, **sec))
            c.wait_for_workers(n, timeout=300)
            print(f"# Dask workers ({n}) import distsim from {sorted(set(c.run(_distsim_dir).values()))}", flush=True)
            self.clients[n] = c
        return self.clients[n]

    def close(self, n: int | None = None) -> None:
        for m in [n] if n is not None else list(self.clients):
            c = self.clients.pop(m)
            c.close()
            if getattr(c, "cluster", None) is not None:
                c.cluster.close()


@dataclass(frozen=True)
class Figure:
    """One headline figure: ``run(ctx, size)`` returns (value, check text) for a size of this backend."""

    id: str
    title: str
    unit: str
    higher_is_better: bool
    run: Callable[[Ctx, Any], tuple[float, str]]
    sizes: dict  # backend -> (warm-up size, timed size)
    command: str  # the recorded command the GPU size reproduces
    gpus: int = 1
    quick: bool = True  # part of --quick
    noise: float = NOISE
    warm: Callable[[Ctx, Any], Any] | None = None  # the warm-up call, when not run() at the warm-up size


def _local(ctx: Ctx) -> Any:
    from distsim.engine import LocalExecutor

    return LocalExecutor(ctx.backend)


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


# --- PBN ---------------------------------------------------------------------------------------------------


def pbn_kernel(path: Path) -> Callable[[Ctx, Any], tuple[float, str]]:
    def run(ctx: Ctx, chains: int) -> tuple[float, str]:
        import pbn_sim

        import distsim.pbn as pbn

        net = pbn.load(path, perturbation=1e-3)
        if ctx.backend == "gpu":
            rate, build = pbn_sim.bench_gpu(net, chains, 1000)
            return rate, f"{chains} x 1000 steps, kernel build {build:.2f} s"
        rate, threads = pbn_sim.bench_cpu(net, chains, 1000)
        return rate, f"{chains} x 1000 steps, {threads} threads"
    return run


def pbn_e2e(ctx: Ctx, n: int) -> tuple[float, str]:
    import distsim.pbn as pbn

    net = pbn.load(MONTAGUD, perturbation=1e-3)
    ds, wall = _timed(lambda: pbn.simulate(net, steps=1000, trajectories=n, seed=1, keep_states=False,
                                           backend=ctx.backend, progress=False))
    return 1000 * n / wall, f"{wall:.3f} s, {n} x 1000 steps"


def pbn_e2e_sizek(ctx: Ctx, n: int) -> tuple[float, str]:
    """The issue-33 figure: ``pbn.simulate`` with the defaults a user gets (Sizek, 1,000 steps), to set
    against the kernel figure of the same size (target: within 1.25x)."""
    import distsim.pbn as pbn

    net = pbn.load(SIZEK, perturbation=1e-3)
    ds, wall = _timed(lambda: pbn.simulate(net, steps=1000, trajectories=n, seed=1, backend=ctx.backend,
                                           progress=False))
    return 1000 * n / wall, f"{wall:.3f} s, {n} x 1000 steps, {ds.attrs['rounds']} rounds"


def pbn_steady(path: Path, target: str) -> Callable[[Ctx, Any], tuple[float, str]]:
    def run(ctx: Ctx, precision: float) -> tuple[float, str]:
        import distsim.pbn as pbn

        net = pbn.load(path, perturbation=1e-3)
        client = ctx.client(1 if ctx.backend == "gpu" else 2)
        ds, wall = _timed(lambda: pbn.steady_state(net, target, precision=precision, seed=1, client=client))
        return wall, f"p={float(ds.probability[0]):.6f}, {ds.attrs['steps_simulated']:.3g} steps, r={precision:g}"
    return run


def pbn_steady_dask_ratio(ctx: Ctx, precision: float) -> tuple[float, str]:
    """Issue 33's goal (<= 1.3x): Sizek's steady state through Dask (one GPU; on CPUs two single-threaded
    workers) over the same run in this process (same answer checked)."""
    import distsim.pbn as pbn

    net = pbn.load(SIZEK, perturbation=1e-3)
    walls, probs = [], []
    for client in (_local(ctx), ctx.client(1 if ctx.backend == "gpu" else 2)):
        pbn.steady_state(net, "v_Casp3=1", precision=1e-2, seed=1, client=client)  # compiles, here or on the workers
        ds, wall = _timed(lambda: pbn.steady_state(net, "v_Casp3=1", precision=precision, seed=1, client=client))
        walls.append(wall)
        probs.append(float(ds.probability[0]))
    if probs[0] != probs[1]:
        raise RuntimeError(f"in-process and Dask differ: {probs}")
    return walls[1] / walls[0], f"in-process {walls[0]:.3f} s, Dask {walls[1]:.3f} s, r={precision:g}"


def pbn_two_gpus(ctx: Ctx, precision: float) -> tuple[float, str]:
    """Speed-up of 2 GPUs over 1 (same answer checked): Montagud's steady state through Dask."""
    import distsim.pbn as pbn

    net = pbn.load(MONTAGUD, perturbation=1e-3)
    walls, probs = [], []
    for n in (1, 2):
        client = ctx.client(n)
        pbn.steady_state(net, "v_Proliferation=1", precision=1e-2, seed=1, client=client)  # every worker compiles
        ds, wall = _timed(lambda: pbn.steady_state(net, "v_Proliferation=1", precision=precision, seed=1,
                                                   client=client))
        walls.append(wall)
        probs.append(float(ds.probability[0]))
    ctx.close()
    if probs[0] != probs[1]:
        raise RuntimeError(f"1 and 2 GPUs differ: {probs}")
    return walls[0] / walls[1], f"1 GPU {walls[0]:.2f} s, 2 GPUs {walls[1]:.2f} s, p={probs[0]:.6f}"


# --- SSA -----------------------------------------------------------------------------------------------------


def ssa_mm(ctx: Ctx, n: int) -> tuple[float, str]:
    import distsim.ssa as ssa

    net = ssa.load(MM)
    ds, wall = _timed(lambda: ssa.simulate(net, t_end=100, points=101, realizations=n, seed=1, quantiles=None,
                                           backend=ctx.backend, progress=False))
    return float(ds.attrs["firings_total"]) / wall, f"{wall:.3f} s, {n} realizations"


def ssa_chain(species: int) -> Callable[[Ctx, Any], tuple[float, str]]:
    def run(ctx: Ctx, size: tuple[int, float]) -> tuple[float, str]:
        from distsim.ssa import simulate
        from distsim.ssa.generators import cyclic_chain

        n, t_end = size
        method = "warp" if ctx.backend == "gpu" else "tree"
        ds, wall = _timed(lambda: simulate(cyclic_chain(species), realizations=n, seed=2, t_end=t_end, points=2,
                                           method=method, client=_local(ctx), quantiles=None, keep_final=False))
        f = float(ds.attrs["firings_total"])
        return f / wall, f"{wall:.3f} s, {n} realizations to t={t_end:g} ({method})"
    return run


def _mm_table(n: int) -> list[dict]:
    import sweep_batched

    return sweep_batched.mm_table(n)


def sweep_mm(method: str | None) -> Callable[[Ctx, Any], tuple[float, str]]:
    def run(ctx: Ctx, size: tuple[int, int]) -> tuple[float, str]:
        import distsim
        import distsim.ssa as ssa

        points, realizations = size
        kw = dict(t_end=100.0, points=11, realizations=realizations, quantiles=None)
        if method:
            kw["method"] = method
        net = ssa.load(MM)
        ds, wall = _timed(lambda: distsim.sweep(ssa.simulate, net, _mm_table(points), seed=1, client=_local(ctx),
                                                **kw))
        return wall, f"{points} points x {realizations}, {int(ds.firings_total.sum()) / wall:.3g} firings/s"
    return run


# --- MCMC, GRN -------------------------------------------------------------------------------------------------


def mcmc_chains(ctx: Ctx, its: int) -> tuple[float, str]:
    import distsim.mcmc as mcmc
    import distsim.ssa as ssa

    net = ssa.load(MCMC_MM)
    with warnings.catch_warnings():  # a throughput run: short chains are expected not to converge
        warnings.filterwarnings("ignore", message="the chains have not converged")
        ds, wall = _timed(lambda: mcmc.infer_rates(net, MCMC_OBS, prior=MCMC_PRIOR, chains=4, iterations=its,
                                                   burn_in=0, seed=1, client=_local(ctx), progress=False))
    return its / wall, f"4 chains x {its} in {wall:.2f} s, k3 mean {float(ds['k3'].mean()):.4f}"


def _grn(ctx: Ctx, size: tuple[int, int], generations: int = 3000) -> Any:
    import distsim.grn as grn

    islands, population = size
    mouse = grn.load(ROOT / "examples/grn/mouse_eye.toml")
    return grn.infer(mouse, islands=islands, population=population, generations=generations,
                     target_fitness=GRN_OPTIMUM, seed=1, client=_local(ctx), time_limit=120)


def grn_warm(ctx: Ctx, size: tuple[int, int]) -> Any:
    return _grn(ctx, size, generations=2)


def grn_optimum(ctx: Ctx, size: tuple[int, int]) -> tuple[float, str]:
    a = _grn(ctx, size).attrs
    if a.get("time_to_target_s") is None:
        raise RuntimeError(f"optimum not reached in {a['generations']} generations")
    return float(a["time_to_target_s"]), f"{a['generations']} generations, {a['generations_per_second']:.0f}/s"


def grn_rate(ctx: Ctx, size: tuple[int, int]) -> tuple[float, str]:
    a = _grn(ctx, size).attrs
    return float(a["generations_per_second"]), f"{a['generations']} generations in {a['wall_time_s']:.2f} s"


FIGURES: list[Figure] = [
    Figure("pbn.kernel.sizek", "PBN kernel, Sizek 87 nodes", "steps/s", True, pbn_kernel(SIZEK),
           {"gpu": (4096, 4194304), "cpu": (256, 16384)}, "python3 benchmarks/pbn_sim.py"),
    Figure("pbn.kernel.montagud", "PBN kernel, Montagud 133 nodes", "steps/s", True, pbn_kernel(MONTAGUD),
           {"gpu": (4096, 4194304), "cpu": (256, 16384)}, "python3 benchmarks/pbn_sim.py"),
    Figure("pbn.e2e", "PBN simulate(), Montagud, in-process", "steps/s", True, pbn_e2e,
           {"gpu": (4096, 2**20), "cpu": (256, 2**14)},
           "python3 benchmarks/old_vs_new.py --baseline OLD --backend gpu --cases pbn_sim"),
    Figure("pbn.e2e.sizek", "PBN simulate() with its defaults, Sizek, in-process", "steps/s", True, pbn_e2e_sizek,
           {"gpu": (4096, 2**22), "cpu": (256, 2**14)}, "python3 benchmarks/headline.py --only pbn.e2e.sizek"),
    Figure("pbn.steady.sizek", "PBN steady state through Dask, Sizek r=1e-4", "s", False,
           pbn_steady(SIZEK, "v_Casp3=1"), {"gpu": (1e-2, 1e-4), "cpu": (1e-2, 2e-3)},
           "python3 benchmarks/pbn_steady_state.py --gpus 1 --precisions 1e-4 1e-5 --cpu-precisions 1e-4"),
    Figure("pbn.steady.montagud", "PBN steady state through Dask, Montagud r=1e-4", "s", False,
           pbn_steady(MONTAGUD, "v_Proliferation=1"), {"gpu": (1e-2, 1e-4), "cpu": (1e-2, 5e-3)},
           "python3 benchmarks/pbn_steady_state.py --gpus 1 --precisions 1e-4 1e-5 --cpu-precisions 1e-4"),
    Figure("pbn.steady.dask", "PBN steady state, Dask over in-process, Sizek r=1e-4", "x", False,
           pbn_steady_dask_ratio, {"gpu": (None, 1e-4), "cpu": (None, 2e-3)},
           "python3 benchmarks/pbn_steady_state.py --gpus 1 --cpu-precisions --precisions 1e-4 --networks sizek "
           "--in-process", noise=0.15),
    Figure("ssa.mm", "SSA Michaelis-Menten ensemble, in-process", "firings/s", True, ssa_mm,
           {"gpu": (2**21, 2**24), "cpu": (256, 2**15)},
           "python3 benchmarks/old_vs_new.py --baseline OLD --backend gpu --cases ssa_mm"),
    Figure("ssa.chain1e3", "SSA large: cyclic chain N=1e3, wall", "firings/s", True, ssa_chain(1000),
           {"gpu": ((65536, 0.1), (65536, 10.0)), "cpu": ((64, 0.01), (256, 0.2))},
           "python3 benchmarks/ssa_realizations.py --methods warp --sizes 1000 10000 --realizations 65536 "
           "262144 --t-end 10"),
    Figure("ssa.chain1e4", "SSA large: cyclic chain N=1e4, wall", "firings/s", True, ssa_chain(10000),
           {"gpu": ((65536, 0.1), (65536, 10.0)), "cpu": ((64, 0.01), (256, 0.2))},
           "python3 benchmarks/ssa_realizations.py --methods warp --sizes 1000 10000 --realizations 65536 "
           "262144 --t-end 10", quick=False),
    Figure("sweep.mm", "Batched MM sweep (default method), in-process", "s", False, sweep_mm(None),
           {"gpu": ((1100, 1000), (10000, 1000)), "cpu": ((8, 25), (2000, 25))},
           "python3 benchmarks/sweep_batched.py --points 10000 --loop-points 300 --cpu-oat-stride 8",
           # 0.25-0.35 s run to run on one H200 (2026-11-27: 0.2566 s on main and 0.2586 s on the code before
           # the balanced tasks in the same call, 0.3457 s and 0.3026 s in later calls of the same code)
           noise=0.4),
    Figure("sweep.mm.tree", "Batched MM sweep (tree), in-process", "s", False, sweep_mm("tree"),
           {"gpu": ((1100, 1000), (10000, 1000)), "cpu": ((8, 25), (2000, 25))},
           "python3 benchmarks/sweep_batched.py --points 10000 --loop-points 300 --cpu-oat-stride 8"),
    Figure("mcmc.chains4", "DA-MCMC, 4 MM chains, iterations/s per chain", "it/s", True, mcmc_chains,
           {"gpu": (5, 3000), "cpu": (2, 20)},
           "python3 benchmarks/mcmc.py --baseline ../.. --no-cpu --chains 4 --gpu-iterations 3000"),
    Figure("grn.optimum", "GRN mouse eye to the optimum, seed 1, time", "s", False, grn_optimum,
           {"gpu": ((16, 1024), (16, 1024)), "cpu": ((4, 256), (4, 256))},
           "python3 benchmarks/grn.py --gpus 1,2,4 --generations 256 --interval 32", noise=0.15, warm=grn_warm),
    Figure("grn.rate", "GRN mouse eye to the optimum, seed 1, generations/s", "gen/s", True, grn_rate,
           {"gpu": ((16, 1024), (16, 1024)), "cpu": ((4, 256), (4, 256))},
           "python3 benchmarks/grn.py --gpus 1,2,4 --generations 256 --interval 32", noise=0.15, warm=grn_warm),
    Figure("pbn.steady.2gpu", "1 vs 2 GPUs: PBN steady state, Montagud r=1e-5, speed-up", "x", True, pbn_two_gpus,
           {"gpu": (None, 1e-5)},
           "python3 benchmarks/pbn_steady_state.py --gpus 1 2 --networks montagud --precisions 1e-5 "
           "--cpu-precisions", gpus=2, quick=False, noise=0.05),
]


# --- the memory ----------------------------------------------------------------------------------------------


def device_key(backend: str, gpus: int = 1) -> str:
    """The device a record belongs to: the GPU's name ('NVIDIA H200'), or 'CPU <arch> x<cores>'."""
    from distsim import backends

    name = backends.device_description(backend)
    if backend == "gpu":
        name = name.rsplit(" (GPU", 1)[0]
        return name if gpus == 1 else f"{gpus} x {name}"
    return name


def load_baseline(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"noise": NOISE, "records": []}


def find_record(base: dict, fid: str, device: str) -> dict | None:
    """The latest record of a figure on this device (records are kept in date order per id)."""
    hits = [r for r in base["records"] if r["id"] == fid and r["device"] == device]
    return max(hits, key=lambda r: r["date"]) if hits else None


def verdict(value: float, rec: dict | None, higher_is_better: bool, noise: float) -> tuple[float | None, str]:
    """(ratio now / recorded, verdict): 'REGRESSION' when worse than the noise band allows."""
    if rec is None:
        return None, "new"
    ratio = value / float(rec["value"])
    better = ratio if higher_is_better else 1.0 / ratio
    if better < 1.0 - noise:
        return ratio, "REGRESSION"
    if better > 1.0 + noise:
        return ratio, "faster"
    return ratio, "ok"


def update_records(base: dict, rows: list[dict], today: str) -> dict:
    """The baseline with each measured row as its device's record (replacing the one of that id/device)."""
    out = {**base, "records": [dict(r) for r in base["records"]]}
    for row in rows:
        if row.get("value") is None:
            continue
        f = row["figure"]
        out["records"] = [r for r in out["records"] if not (r["id"] == f.id and r["device"] == row["device"])]
        out["records"].append(dict(id=f.id, figure=f.title, unit=f.unit, higher_is_better=f.higher_is_better,
                                   value=float(f"{row['value']:.4g}"), device=row["device"], date=today,
                                   command=row["command"], source="benchmarks/headline.py --update"))
    out["records"].sort(key=lambda r: (r["id"], r["device"]))
    return out


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def table(rows: list[dict], base: dict) -> list[str]:
    lines = ["| figure | unit | recorded | device, date | now | ratio | verdict | check |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        f, rec = row["figure"], row.get("record")
        other = None if rec else next((r for r in base["records"] if r["id"] == f.id), None)
        shown = rec or other
        where = f"{shown['device']}, {shown['date']}" + ("" if rec else " (other device)") if shown else "-"
        lines.append(f"| {f.id}: {f.title} | {f.unit} | {_fmt(shown and shown['value'])} | {where} | "
                     f"{_fmt(row.get('value'))} | {_fmt(row.get('ratio'))} | {row['verdict']} | {row['check']} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one timed call per figure; no 2-GPU or long figures")
    ap.add_argument("--backend", choices=["auto", "gpu", "cpu"], default="auto")
    ap.add_argument("--only", nargs="+", default=None, help="figure ids (exactly that figure) or prefixes ('pbn', 'ssa.')")
    ap.add_argument("--reps", type=int, default=None, help="timed calls per figure, best kept (default 2; quick 1)")
    ap.add_argument("--budget", type=float, default=450.0, help="seconds; figures past it are skipped")
    ap.add_argument("--baseline", default=str(BASELINE))
    ap.add_argument("--update", action="store_true", help="write the measured values as this device's records")
    ap.add_argument("--baseline-out", default=None, help="where --update writes (default: --baseline)")
    ap.add_argument("--noise", type=float, default=None, help="noise band for every figure (default per figure)")
    ap.add_argument("--open-cluster", action="store_true",
                    help="local clusters without TLS (security=False), to measure what TLS costs")
    ap.add_argument("--code", default=None, help="time the distsim of another checkout (an old commit: A/B in one "
                    "call; not with --update)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--out", default=None, help="also write the table here")
    args = ap.parse_args()
    if args.code and args.update:
        ap.error("--update records this checkout's figures; drop --code")
    if args.list:
        for f in FIGURES:
            print(f"{f.id:<22} {f.title} [{f.unit}] sizes {f.sizes}{' (not in --quick)' if not f.quick else ''}")
        return

    from _report import emit

    from distsim import backends
    from distsim.cluster import count_gpus

    if args.backend == "cpu":
        os.environ["DISTSIM_DISABLE_GPU"] = "1"  # inherited by Dask workers
        backends.gpu_available.cache_clear()
    backend = backends.resolve(args.backend if args.backend != "auto" else "auto")
    gpus = count_gpus() if backend == "gpu" else 0
    reps = args.reps or (1 if args.quick else 2)
    ids = {f.id for f in FIGURES}  # --only: a figure's id is that figure (pbn.e2e, not pbn.e2e.sizek); else a prefix
    chosen = [f for f in FIGURES if backend in f.sizes and (not args.quick or f.quick)
              and (args.only is None or any(f.id == o or (o not in ids and f.id.startswith(o)) for o in args.only))]
    skipped = [f for f in chosen if backend == "gpu" and f.gpus > gpus]
    chosen = [f for f in chosen if f not in skipped]
    base = load_baseline(Path(args.baseline))
    ctx = Ctx(backend, gpus, open_cluster=args.open_cluster)
    t_start = time.perf_counter()
    import distsim

    print(f"# distsim from {Path(distsim.__file__).parent}", flush=True)
    print(f"# headline on {device_key(backend)} ({backend}, {gpus} GPU(s) visible), {len(chosen)} figures, "
          f"reps {reps}{', quick' if args.quick else ''}; skipped (GPUs): {[f.id for f in skipped]}", flush=True)

    rows: list[dict] = []
    warm: dict[str, str] = {}
    for f in chosen:  # warm-up: every kernel compiled at a small size; a broken figure fails here, at once
        size = f.sizes[backend][0]
        if size is None:
            continue
        try:
            _, dt = _timed(lambda: (f.warm or f.run)(ctx, size))
            print(f"  warm-up {f.id}: {dt:.2f} s", flush=True)
        except Exception as e:  # noqa: BLE001 (reported in the table, the other figures still run)
            warm[f.id] = f"FAILED in warm-up: {type(e).__name__}: {e}"[:200]
            traceback.print_exc()
    print(f"# warm-up done in {time.perf_counter() - t_start:.1f} s", flush=True)
    for f in chosen:
        device = device_key(backend, f.gpus)
        row: dict = dict(figure=f, device=device, record=find_record(base, f.id, device), value=None, ratio=None,
                         command=f.command if backend == "gpu" else
                         f"python3 benchmarks/headline.py --backend cpu --only {f.id}")
        rows.append(row)
        if f.id in warm:
            row.update(verdict="FAILED", check=warm[f.id])
            continue
        if time.perf_counter() - t_start > args.budget:
            row.update(verdict="skipped", check=f"over the {args.budget:.0f} s budget")
            continue
        try:
            best, check = None, ""
            for _ in range(1 if f.gpus > 1 else reps):
                v, c = f.run(ctx, f.sizes[backend][1])
                if best is None or (v > best if f.higher_is_better else v < best):
                    best, check = v, c
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            row.update(verdict="FAILED", check=f"{type(e).__name__}: {e}"[:200])
            continue
        ratio, ver = verdict(best, row["record"], f.higher_is_better,
                             args.noise if args.noise is not None else f.noise)
        row.update(value=best, ratio=ratio, verdict=ver, check=check)
        print(f"  {f.id:<22} {best:10.4g} {f.unit:<9} recorded {_fmt(row['record'] and row['record']['value']):>10}"
              f"  {ver}  ({check})", flush=True)
    ctx.close()
    total = time.perf_counter() - t_start
    lines = [f"headline on {device_key(backend)}, {datetime.date.today()}, {total:.0f} s in all; noise band per "
             f"figure (default {NOISE:.0%}); ratio = now / recorded", ""] + table(rows, base)
    bad = [r["figure"].id for r in rows if r["verdict"] in ("REGRESSION", "FAILED")]
    lines.append("")
    lines.append(f"regressions or failures: {', '.join(bad)}" if bad else "no regression beyond noise")
    emit(lines, args.out)
    if args.update:
        out = Path(args.baseline_out or args.baseline)
        new = update_records(base, rows, str(datetime.date.today()))
        out.write_text(json.dumps(new, indent=2) + "\n")
        print(f"# wrote {out}", flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
