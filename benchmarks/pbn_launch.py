"""Launch balance on one GPU: seconds to advance 2^20, 2^21 and 2^22 chains of a steady-state
kernel by a fixed number of steps, with one task per tile (as before) and with each tile's advance
cut into pieces taken from a queue (``launch.plan_launch``).

    python benchmarks/pbn_launch.py [--network montagud] [--steps 4000] [--chains 20 21 22] [--out t.md]
    python benchmarks/pbn_launch.py --label old   # with an older checkout first on PYTHONPATH

The per-GPU share of a 2-GPU steady state of 2^22 chains is 2^21 chains. If the device ran a launch
at the same speed whatever its size, t(2^22) / t(2^21) would be 2; a last, partial wave of thread
blocks makes the smaller share relatively slower, and the 2-GPU speed-up of the steady state
follows this ratio. The kernel is the one steady_state builds (the targets' ancestors, automatic
register placement); the table gives its registers and resident blocks per SM as the device reports.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import emit  # noqa: E402

NETWORKS = {
    "montagud": ("bbm083_montagud2022_prostate_cancer_133n.bnet", "v_Proliferation=1"),
    "sizek": ("bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet", "v_Casp3=1"),
}


def kernel_for(name: str):  # type: ignore[no-untyped-def]
    from distsim.pbn import load
    from distsim.pbn.compile import compile_pbn
    from distsim.pbn.gpu import get_kernel
    from distsim.pbn.inputs import parse_targets
    from distsim.pbn.reduce import ancestors

    fname, target = NETWORKS[name]
    net = load(ROOT / "examples" / "pbn" / fname, perturbation=1e-3)
    tgts = parse_targets(target, net)
    keep = ancestors(net, {i for t in tgts for i, _ in t})
    remap = {old: new for new, old in enumerate(keep)}
    targets = tuple(tuple((remap[i], v) for i, v in t) for t in tgts)
    return get_kernel(compile_pbn(net, keep), 0, targets), len(keep)


def time_advance(k, n_chains: int, steps: int, repeats: int) -> float:  # type: ignore[no-untyped-def]
    import cupy as cp
    import numpy as np

    n = k.compiled.n
    S = k.init_state(0, n_chains, 1, np.zeros(n, bool), np.zeros(n, np.uint8))
    k.advance(S, chain0=0, n_chains=n_chains, step0=0, nsteps=64, seed=1)  # warm-up
    best = float("inf")
    for r in range(repeats):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        k.advance(S, chain0=0, n_chains=n_chains, step0=64 + r * steps, nsteps=steps, seed=1)
        cp.cuda.Device().synchronize()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--network", default="montagud", choices=sorted(NETWORKS))
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--chains", type=int, nargs="+", default=[20, 21, 22], help="log2 of the chain counts")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--label", default="new")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import cupy as cp

    from distsim.pbn import gpu

    k, nodes = kernel_for(args.network)
    fn = k.module.get_function("pbn_sliced")
    per_sm = getattr(k, "blocks_per_sm", None)
    variants = {"one launch": None}
    if hasattr(gpu, "plan_launch"):
        variants = {"one task per tile": lambda tasks, capacity, min_steps=None: tasks, "pieces from a queue": None}
    rows = []
    for label, plan in variants.items():
        if plan is not None:
            saved, gpu.plan_launch = gpu.plan_launch, plan
        try:
            times = {c: time_advance(k, 1 << c, args.steps, args.repeats) for c in args.chains}
        finally:
            if plan is not None:
                gpu.plan_launch = saved
        rows.append((label, times))
        print(f"{args.label} {label}: " + ", ".join(f"2^{c}: {t:.3f} s" for c, t in times.items()), flush=True)
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    head = [f"{args.label} code, {args.network} ({nodes} nodes simulated), sync, {args.steps} steps; pbn_sliced: "
            f"{fn.num_regs} registers, {fn.local_size_bytes} B local, "
            f"{per_sm if per_sm is not None else '?'} blocks/SM x {sms} SMs; {cp.cuda.runtime.getDeviceProperties(dev.id)['name'].decode()}",
            "", "| code | launch | " + " | ".join(f"2^{c} chains s" for c in args.chains) + " | steps/s at 2^"
            f"{args.chains[-1]} | t(2^22) / t(2^21) |", "|---|---|" + "---|" * (len(args.chains) + 2)]
    for label, times in rows:
        ratio = times[22] / times[21] if 21 in times and 22 in times else float("nan")
        rate = (1 << args.chains[-1]) * args.steps / times[args.chains[-1]]
        head.append(f"| {args.label} | {label} | " + " | ".join(f"{times[c]:.3f}" for c in args.chains)
                    + f" | {rate:.3g} | {ratio:.2f} |")
    emit(head, args.out)


if __name__ == "__main__":
    main()
