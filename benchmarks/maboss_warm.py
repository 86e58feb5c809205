"""Warm ``maboss()`` seconds on one GPU, as ``maboss_gpu_peer.py`` times distsim (the best of --repeats
calls after a warm-up call that compiles the kernel), without MaBoSS.GPU or a new process: for A/B runs of
kernel changes on a lent GPU. The distsim imported is the one on PYTHONPATH (printed), so two checkouts
can be timed by the same script in one call. ``--profile`` also prints the kernel's phase seconds
(DISTSIM_MABOSS_PROFILE=1, one extra call) and ``--cprofile K`` the host's K most expensive functions of
one warm call; ``--once`` makes one call per model and N and nothing else (a target for ``ncu``).

    python3 benchmarks/maboss_warm.py --models sizek Montagud2022_Prostate_Cancer --trajectories 100000 1000000
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "maboss"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--models", nargs="+", default=["sizek", "Montagud2022_Prostate_Cancer"])
    ap.add_argument("--trajectories", nargs="+", type=int, default=[100000, 1000000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--cprofile", type=int, default=0)
    ap.add_argument("--once", action="store_true", help="one call per model and N, no warm-up (for ncu)")
    args = ap.parse_args()

    import distsim
    from distsim.maboss import maboss

    if args.once:
        for name in args.models:
            for n in args.trajectories:
                maboss(args.data / f"{name}.bnd", args.data / f"{name}.cfg", trajectories=n, backend="gpu",
                       progress=False)
        return

    print(f"distsim from {Path(distsim.__file__).parent}")
    print("| model | N | warm s (best) | all |")
    print("|---|---|---|---|")
    for name in args.models:
        bnd, cfg = args.data / f"{name}.bnd", args.data / f"{name}.cfg"
        maboss(bnd, cfg, trajectories=1000, backend="gpu", progress=False)  # compile
        if args.profile:
            _kernel_resources(bnd, cfg)
        for n in args.trajectories:
            times = []
            for _ in range(args.repeats):
                t = time.perf_counter()
                maboss(bnd, cfg, trajectories=n, backend="gpu", progress=False)
                times.append(time.perf_counter() - t)
            print(f"| {name} | {n:.0e} | {min(times):.4f} | {' '.join(f'{x:.4f}' for x in times)} |", flush=True)
            if args.profile:
                os.environ["DISTSIM_MABOSS_PROFILE"] = "1"
                maboss(bnd, cfg, trajectories=n, backend="gpu", progress=False)
                del os.environ["DISTSIM_MABOSS_PROFILE"]
            if args.cprofile:
                pr = cProfile.Profile()
                pr.enable()
                maboss(bnd, cfg, trajectories=n, backend="gpu", progress=False)
                pr.disable()
                s = io.StringIO()
                pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(args.cprofile)
                print(s.getvalue(), flush=True)


def _kernel_resources(bnd: Path, cfg: Path) -> None:
    """Registers, local (spill) bytes and resident blocks of 128 threads of the model's kernel."""
    import cupy as cp

    from distsim.maboss import compile_model, gpu, load

    fn = gpu._module(compile_model(load(bnd, cfg))).get_function("ctbn_simulate")
    blocks = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, 128, 0)
    print(f"{bnd.stem}: {fn.num_regs} registers, {fn.local_size_bytes} local bytes, {blocks} blocks of 128 per SM",
          flush=True)


if __name__ == "__main__":
    main()
