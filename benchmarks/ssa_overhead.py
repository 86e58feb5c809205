"""Host work around the GPU kernel of one ``ssa.simulate`` call: the cyclic chain with method 'warp',
4,096 realizations, t_end 10, on a warm executor, with and without the final states; then a
cProfile of the host side. ``--baseline DIR`` runs another checkout's distsim instead (run it in
its own process, before or after this one, on the same machine).

    python3 benchmarks/ssa_overhead.py [--baseline ../old] [--sizes 1000 10000] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", help="another checkout whose distsim to time")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--realizations", type=int, default=4096)
    ap.add_argument("--profile", action="store_true", help="also print the host functions that take the most time")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(args.baseline).resolve() if args.baseline else Path(__file__).resolve().parents[1]))
    from distsim.engine import LocalExecutor
    from distsim.ssa import simulate
    from distsim.ssa.generators import cyclic_chain

    code = args.baseline or "this checkout"
    for n in args.sizes:
        net = cyclic_chain(n)
        kw = dict(t_end=10.0, points=11, method="warp", client=LocalExecutor("gpu"), quantiles=None)
        simulate(net, realizations=256, seed=1, **kw)  # warm-up: NVRTC
        for keep_final in (None, False):
            t = time.perf_counter()
            ds = simulate(net, realizations=args.realizations, seed=2, keep_final=keep_final, **kw)
            wall = time.perf_counter() - t
            print(f"{code}: N={n} keep_final={keep_final}: wall {wall:.4f} s, "
                  f"{ds.attrs['firings_total'] / wall:.3g} firings/s end to end, "
                  f"kernel+reductions {ds.attrs['firings_per_second']:.3g}", flush=True)
        if args.profile:
            pr = cProfile.Profile()
            pr.enable()
            simulate(net, realizations=args.realizations, seed=2, **kw)
            pr.disable()
            pstats.Stats(pr).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
