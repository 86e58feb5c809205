"""Where ``pbn.simulate`` spends its time beyond the kernel (issue 33): one device, in-process.

    python3 benchmarks/pbn_e2e_profile.py                     # Sizek, 2^22 x 1000 steps, GPU if present
    python3 benchmarks/pbn_e2e_profile.py --backend cpu --trajectories 65536 --steps 200

Prints, best of ``--reps``: the kernel alone (one advance of every chain, with the per-step node counts
``simulate`` asks for, and without them as ``pbn_sim.py`` times it),
``simulate`` with its defaults and with ``keep_states=True``, and a profile (top functions by own
time) of one default call.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(ROOT / "examples/pbn/bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet"))
    ap.add_argument("--trajectories", type=int, default=2**22)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--backend", default="auto", choices=("auto", "cpu", "gpu"))
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()

    import numpy as np

    import distsim.pbn as pbn
    from distsim.backends import resolve
    from distsim.pbn.compile import compile_pbn

    backend = resolve(a.backend)
    net = pbn.load(a.model, perturbation=1e-3)
    n, steps = a.trajectories, a.steps
    zero = (np.zeros(net.n, bool), np.zeros(net.n, np.uint8))

    def kernel(nodes: bool = True) -> float:
        c = compile_pbn(net)
        if backend == "gpu":
            import cupy as cp

            from distsim.pbn.gpu import get_kernel

            k = get_kernel(c, 0, [])
            S = k.init_state(0, n, 1, *zero)
            cp.cuda.Device().synchronize()
            t = time.perf_counter()
            k.advance(S, chain0=0, n_chains=n, step0=0, nsteps=steps, seed=1, want_nodes=nodes)
            cp.cuda.Device().synchronize()
            return time.perf_counter() - t
        from distsim.pbn import cpu
        from distsim.pbn.shard import flat_targets

        S = cpu.init_sliced(net.n, 0, n, 1, *zero)
        t = time.perf_counter()
        cpu.advance_sliced(S, c, chain0=0, n_chains=n, step0=0, nsteps=steps, seed=1, mode=0,
                           targets=flat_targets(((),)), want_nodes=nodes)
        return time.perf_counter() - t

    def sim(**kw) -> float:
        t = time.perf_counter()
        pbn.simulate(net, steps=steps, trajectories=n, seed=1, backend=backend, progress=False, **kw)
        return time.perf_counter() - t

    pbn.simulate(net, steps=10, trajectories=4096, seed=1, backend=backend, progress=False)  # compiles
    kernel()
    rows = [("kernel advance (node counts on), no init", min(kernel() for _ in range(a.reps))),
            ("kernel advance, node counts off (pbn_sim.py)", min(kernel(False) for _ in range(a.reps))),
            ("simulate(), defaults", min(sim() for _ in range(a.reps))),
            ("simulate(keep_states=True)", min(sim(keep_states=True) for _ in range(a.reps)))]
    print(f"# {net.name}: {n} x {steps} steps on {backend}")
    for what, s in rows:
        print(f"{what:45s} {s:8.4f} s  {n * steps / s:.3g} steps/s  ({s / rows[0][1]:.2f}x the kernel)")
    prof = cProfile.Profile()
    prof.enable()
    sim()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(15)
    print(out.getvalue())


if __name__ == "__main__":
    main()
