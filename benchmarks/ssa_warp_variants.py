"""The warp-per-realization SSA kernel (method 'warp', seed 004) timed alone: the shipped kernel with
its placements and launch bounds varied, and optionally an earlier version of kernels/ssa_warp.cu
(the one before the firing tables: `git show 21ed6a9:kernels/ssa_warp.cu > old_warp.cu`), on the
same models, seeds and realizations. Kernel time from CUDA events; firings/s = firings / kernel time.
The check columns compare each kernel's per-realization events and final total count with the first
row's (z of the difference of means): all kernels draw the same random numbers and select by the
same rule, so they agree realization by realization except where the sums' rounding order differs.

    python3 benchmarks/ssa_warp_variants.py [--old old_warp.cu] [--realizations 4096] [--models chain-10000 ...]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from distsim import backends  # noqa: E402
from distsim.backends import cuda, dsmath  # noqa: E402
from distsim.models.compile_reactions import compile_network  # noqa: E402
from distsim.ssa import gpu  # noqa: E402
from distsim.ssa.generators import colloidal_aggregation, cyclic_chain, random_network  # noqa: E402

MODELS = {
    "chain-1000": (lambda: cyclic_chain(1000), 10.0),
    "chain-10000": (lambda: cyclic_chain(10000), 10.0),
    "chain-50000": (lambda: cyclic_chain(50000), 10.0),
    "aggregation-40": (lambda: colloidal_aggregation(40), 10.0),
    "random-1000": (lambda: random_network(1000), 0.1),
    "random-10000": (lambda: random_network(10000), 0.1),
}


def new_variants() -> dict[str, dict]:
    """Kernel variants: compile-time defines on top of the shipped source, and placement overrides."""
    return {
        "new (shipped placement)": {},
        "lanes 32": {"lanes": 32},
        "lanes 16": {"lanes": 16},
        "lanes 8": {"lanes": 8},
        "lanes 4": {"lanes": 4},
        "lanes 32, item_start": {"lanes": 32, "stride": False},
        "lanes 8, item_start": {"lanes": 8, "stride": False},
        "lanes 8, 2 warps per block": {"lanes": 8, "wpb": 2, "defines": {"DS_MIN_BLOCKS": 16}},
        "lanes 8, DS_MIN_BLOCKS 6 (85 registers)": {"lanes": 8, "defines": {"DS_MIN_BLOCKS": 6}},
        "lanes 16, DS_MIN_BLOCKS 6 (85 registers)": {"lanes": 16, "defines": {"DS_MIN_BLOCKS": 6}},
        "lanes 4, 2 warps per block": {"lanes": 4, "wpb": 2, "defines": {"DS_MIN_BLOCKS": 16}},
        "lanes 4, top in registers": {"lanes": 4, "top": 0},
        "lanes 8, top in registers": {"lanes": 8, "top": 0},
        "lanes 16, top shared": {"lanes": 16, "top": 1},
        "new, votes (DS_VOTE_SHFL 0)": {"defines": {"DS_VOTE_SHFL": 0}},
        "lanes 4, votes (DS_VOTE_SHFL 0)": {"lanes": 4, "defines": {"DS_VOTE_SHFL": 0}},
        "lanes 8, votes (DS_VOTE_SHFL 0)": {"lanes": 8, "defines": {"DS_VOTE_SHFL": 0}},
        "lanes 16, votes (DS_VOTE_SHFL 0)": {"lanes": 16, "defines": {"DS_VOTE_SHFL": 0}},
        "lanes 4, DS_MIN_BLOCKS 10 (48 registers)": {"lanes": 4, "defines": {"DS_MIN_BLOCKS": 10}},
        "lanes 8, DS_MIN_BLOCKS 10 (48 registers)": {"lanes": 8, "defines": {"DS_MIN_BLOCKS": 10}},
        "lanes 4, -lineinfo (for ncu)": {"lanes": 4, "options": ("-lineinfo",)},
        "lanes 32, -lineinfo (for ncu)": {"lanes": 32, "options": ("-lineinfo",)},
        "new, levels a kernel argument (before DS_LEVELS)": {"levels_arg": True},
        "new, levels and counts in global memory": {"place": (0, 0)},
        "new, no register cap (DS_MIN_BLOCKS 1)": {"defines": {"DS_MIN_BLOCKS": 1}},
        "new, touched blocks read 1 at a time": {"defines": {"DS_RAISE_BATCH": 1}},
        "new, 2 realizations per block (DS_MIN_BLOCKS 16)": {"wpb": 2, "defines": {"DS_MIN_BLOCKS": 16}},
        "new, -lineinfo (for ncu)": {"options": ("-lineinfo",)},
    }


def _launch_new(c, K, R, grid, variant: dict, seed: int):
    import cupy as cp

    S, M = c.n_species, c.n_reactions
    h_start, h_items = gpu.warp_items(c)
    lanes = variant.get("lanes") or gpu.warp_lanes(h_start, R)
    sizes, offs = gpu.warp_levels(M)
    L, LV = len(sizes) - 1, int(offs[-1])
    W = variant.get("wpb", gpu.WARPS_PER_BLOCK)
    groups = gpu.warp_groups(lanes, W)
    top = variant.get("top", gpu.warp_top_shared(lanes))
    xs_sh, up_sh = variant.get("place", gpu.warp_placement(S, LV, lanes, W, top))
    general = variant.get("general", gpu.warp_general(h_start, h_items, lanes))
    check = variant.get("check", gpu.warp_check(c))
    stride = gpu.warp_stride(h_start, general) if variant.get("stride", True) else 0
    src = gpu.warp_source(xs_sh, up_sh, general, check, levels=None if variant.get("levels_arg") else L, lanes=lanes,
                          stride=stride, top_shared=top)
    for k, v in {"DS_WARPS_PER_BLOCK": W, **variant.get("defines", {})}.items():  # the shipped value, or a new one
        src, n = re.subn(rf"^#define {k} .*$", f"#define {k} {v}", src, count=1, flags=re.M)
        src = src if n else f"#define {k} {v}\n" + src
    fn = cuda.load_module(src, gpu.OPTIONS + variant.get("options", ())).get_function("ssa_warp")
    tb = gpu._tables(c)
    item_start = cp.asarray(h_start)
    items = cp.asarray(gpu.warp_strided(h_start, h_items, stride) if stride else h_items)
    shared = gpu.warp_shared_bytes(S, LV, xs_sh, up_sh, groups)
    out = dict(rec=cp.empty((K, R, S), cp.int32), ev=cp.zeros(R, cp.uint64), er=cp.zeros(R, cp.int32),
               firings=cp.zeros(M, cp.uint64))
    xs = cp.empty(1 if xs_sh else S * R, cp.int32)
    a = cp.empty(gpu.warp_padded(M) * R, cp.float64)
    up = cp.empty(1 if up_sh else max(LV, 1) * R, cp.float64)
    args = (np.int32(R), np.uint64(0), np.uint32(seed), np.int32(S), np.int32(M), np.int32(K), np.int32(L),
            cp.asarray(offs), cp.asarray(sizes), np.int32(LV), *gpu.table_args(tb, gpu.WARP_TABLES), item_start, items,
            grid, np.int64(0), xs, a, up, out["rec"], out["firings"], out["ev"], out["er"])
    return lambda: fn((-(-R // groups),), (32 * W,), args, shared_mem=shared), out


def _launch_old(c, K, R, grid, source: str, seed: int):
    """The kernel before the firing tables (argument list of git 21ed6a9)."""
    import cupy as cp

    S, M = c.n_species, c.n_reactions
    sizes = [M]
    while sizes[-1] > 32:
        sizes.append(-(-sizes[-1] // 32))
    sizes = np.asarray(sizes, np.int32)
    offs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int32)
    L, LV = len(sizes) - 1, int(sizes.sum())
    fn = cuda.load_module(dsmath.neglog_table_cuda() + source, gpu.OPTIONS).get_function("ssa_warp")
    tb = gpu._tables(c)
    W = gpu.WARPS_PER_BLOCK
    out = dict(rec=cp.empty((K, R, S), cp.int32), ev=cp.zeros(R, cp.uint64), er=cp.zeros(R, cp.int32),
               firings=cp.zeros(M, cp.uint64))
    xs = cp.empty(S * R, cp.int32)
    lv = cp.empty(LV * R, cp.float64)
    args = (np.int32(R), np.uint64(0), np.uint32(seed), np.int32(S), np.int32(M), np.int32(K), np.int32(L),
            cp.asarray(offs), cp.asarray(sizes), np.int32(LV), *gpu.table_args(tb), grid, np.int64(0), xs, lv,
            out["rec"], out["firings"], out["ev"], out["er"])
    return lambda: fn(((R + W - 1) // W,), (32 * W,), args), out


def _time(launch, out, reps: int) -> tuple[float, dict]:
    import cupy as cp

    best = None
    for _ in range(reps):
        out["firings"][:] = 0
        t0, t1 = cp.cuda.Event(), cp.cuda.Event()
        t0.record()
        launch()
        t1.record()
        t1.synchronize()
        ms = cp.cuda.get_elapsed_time(t0, t1)
        best = ms if best is None else min(best, ms)
    ev = cp.asnumpy(out["ev"]).astype(float)
    total = cp.asnumpy(out["rec"][-1].sum(axis=1, dtype=cp.int64)).astype(float)
    stats = dict(firings=int(out["firings"].sum()), events=ev, total=total,
                 errors=int((out["er"] != 0).sum()))
    return best, stats


def _z(a: np.ndarray, b: np.ndarray) -> float:
    se = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    return float((a.mean() - b.mean()) / se) if se > 0 else 0.0


def main() -> None:
    import cupy as cp

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", help="an earlier kernels/ssa_warp.cu (argument list of git 21ed6a9)")
    ap.add_argument("--realizations", type=int, default=4096)
    ap.add_argument("--models", nargs="+", default=["chain-1000", "chain-10000", "aggregation-40", "random-1000"],
                    choices=sorted(MODELS))
    ap.add_argument("--t-end", type=float, default=None, help="override every model's end time")
    ap.add_argument("--variants", nargs="*", default=None, help="names of new variants to run (default: all)")
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    R, K = args.realizations, 11
    print(f"# {backends.device_description('gpu')}; {R} realizations, {K} grid points; kernel time (best of "
          f"{args.reps})")
    print("| model | kernel | ms | firings/s | events/realization | µs per event of a realization | z events vs first "
          "| z total vs first | errors |")
    print("|---|---|---|---|---|---|---|---|---|")
    todo = {k: v for k, v in new_variants().items() if args.variants is None or k in args.variants}
    for name in args.models:
        make, t_end = MODELS[name]
        t_end = args.t_end or t_end
        c = compile_network(make())
        grid = cp.asarray(np.linspace(0.0, t_end, K))
        runs = []
        if args.old:
            old = Path(args.old).read_text()
            runs.append((f"old ({Path(args.old).name})", lambda: _launch_old(c, K, R, grid, old, 7)))
        runs += [(v, lambda v=v: _launch_new(c, K, R, grid, todo[v], 7)) for v in todo]
        ref = None
        for label, setup in runs:
            try:
                launch, out = setup()
                ms, st = _time(launch, out, args.reps)
            except Exception as exc:  # e.g. a variant needing more shared memory than the device has
                print(f"| {name} | {label} | failed: {type(exc).__name__}: {exc} |||||||", flush=True)
                continue
            ref = ref or st
            print(f"| {name} (t_end {t_end:g}) | {label} | {ms:.1f} | {st['firings'] / (ms / 1e3):.3g} | "
                  f"{st['events'].mean():.5g} | {ms * 1e3 / st['events'].max():.3f} | "
                  f"{_z(st['events'], ref['events']):.2f} | "
                  f"{_z(st['total'], ref['total']):.2f} | {st['errors']} |", flush=True)
            del out
            cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
