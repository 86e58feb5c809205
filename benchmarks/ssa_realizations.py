"""Large reaction networks: GPU firings/s as the ensemble grows, for each GPU method. The issue's
size is 4,096 realizations (one warp each fills an H200 once); the one-thread-per-realization
kernels (`tree`, `cr`) need many more threads to hide their memory latency. `simulate` on a warm
executor, cyclic chain, t_end 1, 2 grid points, no quantiles or final states; firings/s end to end
(wall) and of the kernel + reductions (the Dataset's ``firings_per_second``).

    python3 benchmarks/ssa_realizations.py [--sizes 1000 10000] [--realizations 4096 16384 65536]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--realizations", type=int, nargs="+", default=[4096, 16384, 65536])
    ap.add_argument("--methods", nargs="+", default=["warp", "cr", "tree"])
    ap.add_argument("--t-end", type=float, default=1.0)
    args = ap.parse_args()
    from distsim.engine import LocalExecutor
    from distsim.ssa import simulate
    from distsim.ssa.generators import cyclic_chain

    ex = LocalExecutor("gpu")
    print("| N | method | realizations | wall s | firings | firings/s end to end | kernel + reductions |")
    print("|---|---|---|---|---|---|---|")
    for n in args.sizes:
        net = cyclic_chain(n)
        for method in args.methods:
            kw = dict(t_end=args.t_end, points=2, method=method, client=ex, quantiles=None, keep_final=False)
            for r in args.realizations:
                simulate(net, realizations=r, seed=1, **{**kw, "t_end": args.t_end / 100})  # NVRTC for this size
                t = time.perf_counter()
                ds = simulate(net, realizations=r, seed=2, **kw)
                wall = time.perf_counter() - t
                f = ds.attrs["firings_total"]
                print(f"| {n} | {method} | {r} | {wall:.3f} | {f:.3g} | {f / wall:.3g} | "
                      f"{ds.attrs['firings_per_second']:.3g} |", flush=True)


if __name__ == "__main__":
    main()
