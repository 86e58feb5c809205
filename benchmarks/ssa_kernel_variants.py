"""Where the Michaelis-Menten GPU kernel spends its time: the fused register kernel timed with parts
of its work replaced (recording, the exact log, Philox). Variants other than ``base`` are probes,
not exact samplers; the figures say what each part costs.

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
from distsim.ssa import load  # noqa: E402
from distsim.ssa.compile import compile_network  # noqa: E402
from distsim.ssa.gpu import BLOCK, OPTIONS, generate_direct  # noqa: E402

REC_PREFIX = "#define DS_RECORD(k, s, v) { const int i_"
PHILOX = ("const ds_u32x4 w = ds_philox4x32_10(ds_u32x4{(uint32_t)e, (uint32_t)(e >> 32), 0u, 0u}, seed, rid);\n"
          "            const double u1 = ds_u01_f64(w.x, w.y);\n            u2 = ds_u01_f64(w.z, w.w);")
TWICE = PHILOX.replace("const ds_u32x4 w = ds_philox4x32_10(", "const ds_u32x4 w = ds_philox4x32_10(ds_philox4x32_10(", 1).replace(
    "seed, rid);", "seed, rid), seed, rid);", 1)
HALF = ("if ((e & 1ull) == 0ull) hw = ds_philox4x32_10(ds_u32x4{(uint32_t)(e >> 1), (uint32_t)(e >> 33), 0u, 0u}, seed, rid);\n"
        "            const double u1 = ((double)((e & 1ull) ? hw.z : hw.x) + 0.5) * 2.3283064365386963e-10;\n"
        "            u2 = ((double)((e & 1ull) ? hw.w : hw.y) + 0.5) * 2.3283064365386963e-10;")


def variants(src: str, switch_fire: str) -> dict[str, str]:
    """The shipped kernel (``base``) and probes that remove or double one part of its work."""
    assert PHILOX in src and REC_PREFIX in src
    i = src.index(REC_PREFIX)
    j = src.index("#else", i)
    return {
        "base (shipped: branchless fire, int32 counts, 32-bit shared atomics)": src,
        "fire by switch (dependency graph)": switch_fire,
        "no recording (probe)": src[:i] + "#define DS_RECORD(k, s, v) {}\n" + src[j:],
        "library log (probe)": src.replace("t - ds_log(u1) / a0", "t - log(u1) / a0"),
        "Philox twice per event (probe)": src.replace(PHILOX, TWICE),
        "one Philox per 2 events, 32-bit uniforms (probe)": src.replace(PHILOX, HALF).replace(
            "double t = 0.0;", "double t = 0.0; ds_u32x4 hw;"),
    }


def main() -> None:
    import cupy as cp

    ap = argparse.ArgumentParser()
    ap.add_argument("--realizations", type=int, default=1 << 22)
    ap.add_argument("--model", default=str(ROOT / "examples" / "ssa" / "michaelis_menten.rxn"))
    args = ap.parse_args()
    c = compile_network(load(args.model))
    K, S, M, R = 101, c.n_species, c.n_reactions, args.realizations
    grid = cp.asarray(np.linspace(0.0, 100.0, K))
    print(f"# {backends.device_description('gpu')}; {R} realizations, {K} grid points")
    print("| variant | kernel ms | firings/s |\n|---|---|---|")
    for name, src in variants(generate_direct(c, fused=True), generate_direct(c, fused=True, branchless=False)).items():
        fn = backends.load_module(src, OPTIONS).get_function("ssa_direct")
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
