"""Batched PBN sweep vs the per-point loop: a knockout screen (every node fixed to 0, plus the wild
type) of one network's steady state, in-process on one device.

    python benchmarks/pbn_batch.py [--network sizek] [--precision 1e-2] [--backends gpu cpu] [--out t.md]

Each backend runs the same screen twice after a warm-up (kernels compiled): batched (the default
``run_chunk`` of the pbn.steady_state adapter, all points in one chunk) and one steady_state call
per point (the adapter without ``run_chunk``). Both give the same numbers (checked here); the table
prints the wall times, points/s and the speed-up of the batch.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
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


def screen(adapter, net, target, backend, precision, seed):  # type: ignore[no-untyped-def]
    import distsim

    t = time.perf_counter()
    ds = distsim.sweep.knockouts(adapter, net, target=target, precision=precision, seed=seed, backend=backend,
                                 chunk_size=net.n + 1)
    return ds, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--network", default="sizek", choices=sorted(NETWORKS))
    ap.add_argument("--perturbation", type=float, default=0.01)
    ap.add_argument("--precision", type=float, default=1e-2)
    ap.add_argument("--backends", nargs="+", default=["gpu", "cpu"], choices=["gpu", "cpu"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import numpy as np

    from distsim import backends
    from distsim.pbn import load, steady_state
    from distsim.sweep.adapters import PBN_STEADY_STATE

    fname, target = NETWORKS[args.network]
    net = load(ROOT / "examples" / "pbn" / fname, perturbation=args.perturbation)
    loop = replace(PBN_STEADY_STATE, run_chunk=None)
    rows = []
    for backend in args.backends:
        if backend == "gpu" and not backends.gpu_available():
            print("no GPU here: skipping the gpu backend")
            continue
        steady_state(net, target, precision=1e-2, chains=4096, seed=0, backend=backend)  # warm-up: compile
        batched, t_batch = screen(PBN_STEADY_STATE, net, target, backend, args.precision, args.seed)
        single, t_loop = screen(loop, net, target, backend, args.precision, args.seed)
        same = all(np.array_equal(batched[v].values, single[v].values, equal_nan=True)
                   for v in single.data_vars if v != "wall_time_s")
        steps = float(batched["steps_simulated"].sum())
        rows.append(dict(backend=backend, points=batched.sizes["point"], chains=int(batched["chains"][0]), steps=steps,
                         batch=t_batch, loop=t_loop, same=same,
                         device=backends.device_description(backend)))
        print(f"{backend}: {rows[-1]['points']} points, batched {t_batch:.2f} s, one call per point {t_loop:.2f} s, "
              f"speed-up {t_loop / t_batch:.1f}x, same numbers: {same}", flush=True)
    lines = [f"{args.network} ({net.n} nodes) knockout screen of {target}, p={args.perturbation:g}, precision "
             f"{args.precision:g}, seed {args.seed}", "",
             "| backend | device | points | chains per point | steps in all | batched s | per-point loop s | "
             "points/s batched | speed-up | same numbers |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['backend']} | {r['device']} | {r['points']} | {r['chains']} | {r['steps']:.3g} | "
                     f"{r['batch']:.2f} | {r['loop']:.2f} | {r['points'] / r['batch']:.1f} | "
                     f"{r['loop'] / r['batch']:.1f}x | {'yes' if r['same'] else 'NO'} |")
    emit(lines, args.out)


if __name__ == "__main__":
    main()
