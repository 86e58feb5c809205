"""Where a GRN generation's time goes on a GPU (issue 33): host time per generation against device time.

    python3 benchmarks/grn_profile.py                       # mouse eye, 16 islands x 1,024 (the headline size)
    python3 benchmarks/grn_profile.py --islands 32 --population 512 --model cellular

Prints the host-timed time per generation (``IslandBlock.step`` + ``stats``, 100 generations, one sync at
the end); the device's own time for 1 and 3 generations, measured by holding the stream with a spinning
kernel while the host enqueues them (valid while the enqueue takes less than the spin and nothing inside
synchronizes); and a cProfile of 50 generations (top functions by own time). A GPU is required.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problem", default=str(ROOT / "examples/grn/mouse_eye.toml"))
    ap.add_argument("--islands", type=int, default=16)
    ap.add_argument("--population", type=int, default=1024)
    ap.add_argument("--model", default="island")
    ap.add_argument("--selection", default="elitist")
    ap.add_argument("--mode", default="standard")
    a = ap.parse_args()
    try:
        import cupy as cp

        cp.cuda.Device(0).compute_capability
    except Exception as e:  # noqa: BLE001 - any reason there is no usable GPU
        sys.exit(f"grn_profile.py needs a GPU (CuPy): {e}")

    import distsim.grn as grn
    from distsim.grn.ga import Consts, GAParams, IslandBlock
    from distsim.grn.gpu import GPUOps

    c = Consts.of(grn.load(a.problem))
    prm = GAParams(model=a.model, selection=a.selection, mode=a.mode, population=a.population, islands=a.islands,
                   migration_rate=1, migration_interval=16, link_mutation=0.5, rule_mutation=0.5, seed=1,
                   generations=10**6, stop_score=0)
    b = IslandBlock(GPUOps(c), c, prm, np.arange(a.islands))

    def generations(k: int) -> None:
        for _ in range(k):
            b.step()
            b.stats()

    generations(20)  # compiles and fills the memory pool
    dev = cp.cuda.Device()
    dev.synchronize()
    t = time.perf_counter()
    generations(100)
    dev.synchronize()
    print(f"{a.islands} x {a.population}, {a.model}/{a.selection}/{a.mode}: "
          f"{(time.perf_counter() - t) * 10:.3f} ms per generation (host-timed, 100 generations)")
    spin = cp.RawKernel(r'''extern "C" __global__ void spin(long long cycles) {
        const long long s = clock64(); while (clock64() - s < cycles) {} }''', "spin")
    for k in (1, 3):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        spin((1,), (1,), (np.int64(4_000_000_000),))  # about 2 s at 2 GHz
        e0.record()
        t = time.perf_counter()
        generations(k)
        e1.record()
        host = time.perf_counter() - t
        e1.synchronize()
        print(f"{k} generation(s): host enqueue {host * 1e3:.2f} ms, device {cp.cuda.get_elapsed_time(e0, e1):.3f} ms")
    pr = cProfile.Profile()
    pr.enable()
    generations(50)
    dev.synchronize()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(20)
    print(s.getvalue())


if __name__ == "__main__":
    main()
