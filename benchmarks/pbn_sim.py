"""PBN simulation throughput (steps/s): distsim CPU backend vs GPU backend vs BANG, in one run.

    python benchmarks/pbn_sim.py [--networks sizek montagud raza] [--p 1e-3] [--gpu-chains 4194304]
                                 [--steps 1000] [--no-bang] [--out table.md]

One "step" is one synchronous update of one trajectory (all nodes). Rows:
* distsim gpu   -- bit-sliced CUDA kernel (32 trajectories per thread), counting one target set;
* distsim cpu   -- bit-sliced Numba kernel (64 trajectories per word), all cores of this machine;
* distsim cpu-table -- seed-000-style per-trajectory kernel with packed truth tables (the "before");
* BANG gpu      -- bang-gpu (numba-cuda port of ASSA-PBN's GPU kernels), save_history=False,
  timed around ``simple_steps`` (includes its per-call state upload and RNG set-up).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _report import emit  # noqa: E402

from distsim.models.formats import load  # noqa: E402
from distsim.pbn import cpu  # noqa: E402
from distsim.models.boolean import truth_table, variables  # noqa: E402
from distsim.pbn.compile import compile_pbn  # noqa: E402
from distsim.pbn.shard import flat_targets  # noqa: E402

NETWORKS = {
    "sizek": "bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet",
    "montagud": "bbm083_montagud2022_prostate_cancer_133n.bnet",
    "raza": "bbm001_raza2008_macrophage_activation_321n.bnet",
    "erbb": "bbm004_helikar2013_erbb_receptor_signaling_247n.bnet",
    "faure": "bbm023_faure2006_mammalian_cell_cycle_10n.bnet",
}
TARGET = [((0, 1),)]


def bench_cpu(net, chains: int, steps: int) -> float:
    import numba

    c = compile_pbn(net)
    zero = (np.zeros(net.n, bool), np.zeros(net.n, np.uint8))
    S = cpu.init_sliced(net.n, 0, chains, 1, *zero)
    tg = flat_targets(TARGET)
    cpu.advance_sliced(S, c, chain0=0, n_chains=chains, step0=0, nsteps=2, seed=1, mode=0, targets=tg)  # compile
    t = time.perf_counter()
    cpu.advance_sliced(S, c, chain0=0, n_chains=chains, step0=2, nsteps=steps, seed=1, mode=0, targets=tg)
    return chains * steps / (time.perf_counter() - t), numba.get_num_threads()


def bench_cpu_table(net, chains: int, steps: int) -> float:
    import numba

    c = compile_pbn(net)
    zero = (np.zeros(net.n, bool), np.zeros(net.n, np.uint8))
    X = cpu.pack_states(cpu.unslice(cpu.init_sliced(net.n, 0, chains, 1, *zero), chains, net.n))
    cpu.advance_table(X, c, chain0=0, step0=0, nsteps=2, seed=1, mode=0)
    t = time.perf_counter()
    cpu.advance_table(X, c, chain0=0, step0=2, nsteps=steps, seed=1, mode=0)
    return chains * steps / (time.perf_counter() - t), numba.get_num_threads()


def bench_gpu(net, chains: int, steps: int, repeats: int = 3, registers="auto") -> tuple[float, float]:
    import cupy as cp

    from distsim.pbn.gpu import get_kernel

    c = compile_pbn(net)
    t0 = time.perf_counter()
    k = get_kernel(c, 0, TARGET, registers)
    zero = (np.zeros(net.n, bool), np.zeros(net.n, np.uint8))
    S = k.init_state(0, chains, 1, *zero)
    k.advance(S, chain0=0, n_chains=chains, step0=0, nsteps=2, seed=1)
    cp.cuda.Device().synchronize()
    build = time.perf_counter() - t0
    rates = []
    step = 2
    for _ in range(repeats):
        t = time.perf_counter()
        k.advance(S, chain0=0, n_chains=chains, step0=step, nsteps=steps, seed=1)
        cp.cuda.Device().synchronize()
        rates.append(chains * steps / (time.perf_counter() - t))
        step += steps
    return float(np.median(rates)), build


def bench_bang(net, chains: int, steps: int) -> float:
    os.environ.setdefault("BANG_SUPPRESS_WARNINGS", "1")
    if not hasattr(np, "row_stack"):  # bang-gpu 0.4.4 targets NumPy < 2.4, where row_stack still existed
        np.row_stack = np.vstack
    from bang import PBN as BangPBN

    nf, nv, F, var, cij = [], [], [], [], []
    for plist in net.predictors:
        nf.append(len(plist))
        cij.append([p.probability for p in plist])
        for p in plist:
            par = variables(p.expr)
            nv.append(len(par))
            var.append(list(par))
            F.append([bool(x) for x in truth_table(p.expr, par)])
    b = BangPBN(net.n, nf, nv, F, var, cij, net.perturbation, sorted(net.fixed), n_parallel=chains,
                update_type="synchronous", save_history=False)
    rng = np.random.default_rng(0)
    b.set_states(rng.integers(0, 2**32, size=(chains, b.state_size), dtype=np.uint64).astype(np.uint32),
                 reset_history=True)
    b.simple_steps(2, device="cuda")  # JIT compile
    t = time.perf_counter()
    b.simple_steps(steps, device="cuda")
    from numba import cuda

    cuda.synchronize()
    return chains * steps / (time.perf_counter() - t)


def placement_sweep(args) -> None:
    """Data placement (seed 000 sections 3.2-3.4, adapted): steps/s with R nodes in registers and the
    rest in global memory (block-tiled, double-buffered), R chosen by read frequency."""
    from distsim import backends

    rows = []
    for name in args.networks:
        net = load(ROOT / "examples" / "pbn" / NETWORKS[name]).with_perturbation(args.p)
        for p in args.placements:
            reg = None if p == "all" else int(p)
            if reg is not None and reg >= net.n:
                continue
            rate, _ = bench_gpu(net, args.gpu_chains, args.steps, registers=reg)
            rows.append((name, net.n, p, rate))
            print(f"{name} ({net.n} nodes) registers={p}: {rate:.3g} steps/s", flush=True)
    lines = [f"device: {backends.device_description('gpu')}; p={args.p}, sync, {args.gpu_chains} trajectories x "
             f"{args.steps} steps", "", "| network | nodes | nodes in registers | GPU steps/s | vs all in registers |",
             "|---|---|---|---|---|"]
    base = {r[0]: r[3] for r in rows if r[2] == "all"}
    for name, n, p, rate in rows:
        rel = f"{rate / base[name]:.2f}" if name in base else "-"
        lines.append(f"| {name} | {n} | {p} | {rate:.3g} | {rel} |")
    emit(lines, args.out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--networks", nargs="+", default=["sizek", "montagud", "raza"], choices=sorted(NETWORKS))
    ap.add_argument("--p", type=float, default=1e-3)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--gpu-chains", type=int, default=2**22)
    ap.add_argument("--cpu-chains", type=int, default=0, help="default: 2048 per CPU thread")
    ap.add_argument("--cpu-steps", type=int, default=500)
    ap.add_argument("--bang-chains", type=int, default=2**20)
    ap.add_argument("--no-bang", action="store_true")
    ap.add_argument("--no-gpu", action="store_true")
    ap.add_argument("--out", default=None, help="also write the markdown table here")
    ap.add_argument("--placements", nargs="*", default=[],
                    help="also time the GPU kernel with these register budgets ('all' = every node in registers)")
    args = ap.parse_args()
    if args.placements:
        placement_sweep(args)
        return

    import numba

    from distsim import backends

    threads = numba.get_num_threads()
    cpu_chains = args.cpu_chains or 2048 * threads
    have_gpu = backends.gpu_available() and not args.no_gpu
    device = backends.device_description("gpu") if have_gpu else "no GPU"
    rows = []
    for name in args.networks:
        net = load(ROOT / "examples" / "pbn" / NETWORKS[name]).with_perturbation(args.p)
        r_cpu, th = bench_cpu(net, cpu_chains, args.cpu_steps)
        r_tab, _ = bench_cpu_table(net, max(threads * 64, 1024), max(args.cpu_steps // 4, 20))
        r_gpu = build = r_bang = float("nan")
        note = ""
        if have_gpu:
            r_gpu, build = bench_gpu(net, args.gpu_chains, args.steps)
            if not args.no_bang:
                try:
                    r_bang = bench_bang(net, args.bang_chains, max(args.steps // 10, 20))
                except Exception as e:  # noqa: BLE001 - report and continue
                    note = f"BANG failed: {type(e).__name__}: {str(e)[:80]}"
        rows.append((name, net.n, r_gpu, r_cpu, r_cpu / th, r_tab / 1, r_bang, build, note))
        print(f"{name}: gpu {r_gpu:.3g}  cpu {r_cpu:.3g} ({th} thr)  cpu-table {r_tab:.3g}  bang {r_bang:.3g} {note}",
              flush=True)

    head = (f"device: {device}; CPU: {platform.processor() or platform.machine()} x{os.cpu_count()} "
            f"({threads} Numba threads); p={args.p}, sync, GPU {args.gpu_chains} trajectories x {args.steps} steps, "
            f"BANG {args.bang_chains} trajectories")
    lines = [head, "",
             "| network | nodes | distsim GPU steps/s | distsim CPU steps/s (all threads) | CPU per thread | "
             "CPU table kernel (all threads) | BANG GPU steps/s | GPU / CPU | GPU / BANG | kernel build s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, n, g, c, cpt, tab, bang, build, note in rows:
        lines.append(f"| {name} | {n} | {g:.3g} | {c:.3g} | {cpt:.3g} | {tab:.3g} | {bang:.3g} | {g / c:.3g} | "
                     f"{g / bang:.3g} | {build:.2f} |" + (f" {note}" if note else ""))
    emit(lines, args.out)


if __name__ == "__main__":
    main()
