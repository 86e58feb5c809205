"""The PBN kernel at each resident-block target (issue 33): registers, spilled bytes, blocks per SM and
steps/s of every build, and the build ``distsim.pbn.gpu`` chooses, on the example networks.

    python3 benchmarks/pbn_occupancy.py                                  # every example network, 2^22 x 200
    python3 benchmarks/pbn_occupancy.py --networks bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet --steps 1000

Each build asks ``__launch_bounds__(128, B)`` for B = 1 .. 8 resident blocks (DS_MINB); builds equal to an
earlier one (same registers and spills) are skipped. Every build must give the same final state (its hash is
printed). A GPU is required.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXAMPLES = ROOT / "examples" / "pbn"
NETWORKS = ["bbm023_faure2006_mammalian_cell_cycle_10n.bnet", "maboss_calzone2010_cell_fate_28n.bnd",
            "kgbn_aspc1_optimized_pbn_48n_80f.txt", "bbm070_grieco2013_mapk_cancer_cell_fate_53n.bnet",
            "bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet", "bbm083_montagud2022_prostate_cancer_133n.bnet",
            "bbm004_helikar2013_erbb_receptor_signaling_247n.bnet", "bbm001_raza2008_macrophage_activation_321n.bnet"]
TARGET = [((0, 1),)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--networks", nargs="+", default=NETWORKS, help="files in examples/pbn")
    ap.add_argument("--chains", type=int, default=1 << 22)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--p", type=float, default=1e-3)
    a = ap.parse_args()
    try:
        import cupy as cp

        cp.cuda.Device(0).compute_capability
    except Exception as e:  # noqa: BLE001 - any reason there is no usable GPU
        sys.exit(f"pbn_occupancy.py needs a GPU (CuPy): {e}")
    import warnings

    import distsim.pbn as pbn
    from distsim.backends import cuda
    from distsim.pbn import gpu as pg
    from distsim.pbn.compile import compile_pbn

    chosen_rule = pg._compile_for_occupancy
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}: {a.chains} chains x {a.steps} steps, "
          f"p = {a.p}, best of 3")
    for name in a.networks:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a .cfg's initial states: not used here
            net = pbn.load(EXAMPLES / name, perturbation=a.p)
        c = compile_pbn(net)
        src = pg.generate_source(c, 0, TARGET, pg.hot_nodes(c, pg.auto_registers(c)))
        mod, per_sm = chosen_rule(src)
        print(f"{name} ({c.n} nodes): distsim's choice {mod.get_function('pbn_sliced').num_regs} registers, "
              f"{per_sm} blocks/SM", flush=True)
        seen = set()
        for minb in range(1, 9):
            def build(s: str, m: int = minb) -> tuple:
                module = cuda.load_module(f"#define DS_MINB {m}\n" + s)
                return module, pg._blocks_per_sm(module.get_function("pbn_sliced"))

            pg._compile_for_occupancy = build
            pg._KERNELS.clear()
            try:
                k = pg.get_kernel(c, 0, TARGET, "auto")
            finally:
                pg._compile_for_occupancy = chosen_rule
            fn = k.module.get_function("pbn_sliced")
            if (fn.num_regs, fn.local_size_bytes) in seen:
                continue
            seen.add((fn.num_regs, fn.local_size_bytes))
            S = k.init_state(0, a.chains, 1, np.zeros(c.n, bool), np.zeros(c.n, np.uint8))
            k.advance(S, chain0=0, n_chains=a.chains, step0=0, nsteps=2, seed=1)
            rates, st = [], 2
            for _ in range(3):
                cp.cuda.Device().synchronize()
                t = time.perf_counter()
                k.advance(S, chain0=0, n_chains=a.chains, step0=st, nsteps=a.steps, seed=1)
                cp.cuda.Device().synchronize()
                rates.append(a.chains * a.steps / (time.perf_counter() - t))
                st += a.steps
            h = hashlib.sha256(cp.asnumpy(S).tobytes()).hexdigest()[:10]
            print(f"   DS_MINB {minb}: {fn.num_regs:3d} registers, {fn.local_size_bytes:4d} B spilled, "
                  f"{k.blocks_per_sm:2d} blocks/SM: {max(rates):.3e} steps/s, state {h}", flush=True)
        pg._KERNELS.clear()


if __name__ == "__main__":
    main()
