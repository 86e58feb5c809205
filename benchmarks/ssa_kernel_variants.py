"""Where the Michaelis-Menten GPU kernel spends its time: the fused register kernel timed with parts
of its work changed (firing by a switch, a register cap) or removed (recording; a probe, not a
sampler), and optionally earlier versions of the kernel given as source files.

    python3 benchmarks/ssa_kernel_variants.py [--realizations 4194304]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from distsim import backends  # noqa: E402
from distsim.backends import cuda  # noqa: E402
from distsim.ssa import load  # noqa: E402
from distsim.models.compile_reactions import compile_network  # noqa: E402
from distsim.ssa.gpu import BLOCK, OPTIONS, generate_direct  # noqa: E402

REC_PREFIX = "#define DS_RECORD(k, s, v) { const int i_"
KERNEL_HEAD = 'extern "C" __global__ void ssa_direct('


def variants(src: str, switch_fire: str) -> dict[str, str]:
    """The shipped kernel (``base``) and variants; probes remove one part of the work."""
    assert REC_PREFIX in src and KERNEL_HEAD in src
    i = src.index(REC_PREFIX)
    j = src.index("#else", i)
    bounded = lambda n: src.replace(KERNEL_HEAD, f'extern "C" __global__ void __launch_bounds__({BLOCK}, {n}) ssa_direct(')  # noqa: E731
    return {
        "base (shipped)": src,
        "fire by switch (dependency graph)": switch_fire,
        "registers capped for 8 blocks/SM": bounded(8),
        "registers capped for 10 blocks/SM": bounded(10),
        "no recording (probe)": src[:i] + "#define DS_RECORD(k, s, v) {}\n" + src[j:],
    }


def main() -> None:
    import cupy as cp

    ap = argparse.ArgumentParser()
    ap.add_argument("--realizations", type=int, default=1 << 22)
    ap.add_argument("--model", default=str(ROOT / "examples" / "ssa" / "michaelis_menten.rxn"))
    ap.add_argument("--extra", nargs=2, action="append", default=[], metavar=("NAME", "FILE"),
                    help="also time this kernel source (e.g. an earlier version of the generated kernel)")
    args = ap.parse_args()
    c = compile_network(load(args.model))
    K, S, M, R = 101, c.n_species, c.n_reactions, args.realizations
    grid = cp.asarray(np.linspace(0.0, 100.0, K))
    print(f"# {backends.device_description('gpu')}; {R} realizations, {K} grid points")
    print("| variant | kernel ms | firings/s |\n|---|---|---|")
    todo = variants(generate_direct(c, fused=True), generate_direct(c, fused=True, branchless=False))
    todo.update({name: Path(f).read_text() for name, f in args.extra})
    for name, src in todo.items():
        fn = cuda.load_module(src, OPTIONS).get_function("ssa_direct")
        best = None
        for rep in range(3):
            firings = cp.zeros(M, dtype=cp.uint64)
            sums, sumsq = cp.zeros(K * S, dtype=cp.uint64), cp.zeros(K * S, dtype=cp.uint64)
            final, ev, er = cp.empty((S, R), cp.int32), cp.zeros(R, cp.uint64), cp.zeros(R, cp.int8)
            t0, t1 = cp.cuda.Event(), cp.cuda.Event()
            t0.record()
            fn(((R + BLOCK - 1) // BLOCK,), (BLOCK,), (np.int32(R), np.uint64(rep * R), np.uint32(7), np.int32(K), grid,
               np.int64(0), final, firings, ev, er, sums, sumsq), shared_mem=20 * K * S)
            t1.record()
            t1.synchronize()
            ms = cp.cuda.get_elapsed_time(t0, t1)
            rate = float(firings.sum()) / (ms / 1e3)
            best = max(best or 0.0, rate) if rep else 0.0
            last_ms = ms
        print(f"| {name} | {last_ms:.1f} | {best:.3g} |", flush=True)


if __name__ == "__main__":
    main()
