"""The first `ssa.simulate` calls of a fresh GPU process at new ensemble sizes: 256 realizations, then
4,096 under cProfile (its slowest functions printed), 4,096 again and 8,192 (cyclic chain N = 1e3,
t_end 1, 2 grid points, no quantiles or final states). A one-time cost at a new size shows up as the
first 4,096 call being much slower than the second (CuPy compiles a reduction per size class).

    python3 benchmarks/ssa_first_call.py [--methods warp cr]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--methods", nargs="+", default=["warp", "cr"])
    args = ap.parse_args()
    from distsim.engine import LocalExecutor
    from distsim.ssa import simulate
    from distsim.ssa.generators import cyclic_chain

    ex, net = LocalExecutor("gpu"), cyclic_chain(1000)
    for method in args.methods:
        kw = dict(t_end=1.0, points=2, method=method, client=ex, quantiles=None, keep_final=False)
        for r, seed, profile in ((256, 1, False), (4096, 2, True), (4096, 3, False), (8192, 4, False)):
            pr = cProfile.Profile() if profile else None
            if pr:
                pr.enable()
            t = time.perf_counter()
            simulate(net, realizations=r, seed=seed, **kw)
            wall = time.perf_counter() - t
            if pr:
                pr.disable()
            print(f"{method} {r} realizations: {wall:.3f} s", flush=True)
            if pr:
                pstats.Stats(pr).sort_stats("cumulative").print_stats(15)


if __name__ == "__main__":
    main()
