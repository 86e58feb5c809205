"""The same public calls timed with this checkout ("new") and with another ("old"), in one run.

    python benchmarks/old_vs_new.py --baseline OLD_CHECKOUT [--backend gpu|cpu] [--cases ...] [--out table.md]

Issue 13 asks for no speed regression from the architecture work: this runs PBN simulation, PBN
steady state, the SSA Michaelis-Menten ensemble, the SSA's hybrid loop (a DSMTS birth-death with a birth rate
modulated in time: ``--cases ssa_hybrid``) and DA-MCMC through their public functions, each
in its own process importing distsim from one checkout (PYTHONPATH), in-process (no Dask), first a
small warm-up call (kernel compilation stays out of the time), then the timed call. Every case
runs with a fixed seed, and the last column says whether old and new gave the same numbers bit
for bit (the architecture work promised no behaviour change).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import emit  # noqa: E402

MONTAGUD = "examples/pbn/bbm083_montagud2022_prostate_cancer_133n.bnet"
SIZEK = "examples/pbn/bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet"
MM = "examples/ssa/michaelis_menten.rxn"
PRIOR = {"k1": (2.0, 1000.0), "k2": (2.0, 10.0), "k3": (2.0, 10.0)}
# (warm-up size, timed size) per backend
SIZES = {
    "gpu": {"pbn_sim": (4096, 2**20), "pbn_steady": (1e-2, 1e-4), "ssa_mm": (4096, 2**24), "mcmc": (20, 2000),
            "ssa_hybrid": (4096, 2**18)},
    "cpu": {"pbn_sim": (256, 2**14), "pbn_steady": (1e-2, 2e-3), "ssa_mm": (256, 2**16), "mcmc": (4, 60),
            "ssa_hybrid": (256, 2**12)},
}


def hybrid_birth_death():
    """DSMTS 001-01's birth-death (X0 = 100, birth 0.1 X, death 0.11 X) with the birth rate modulated in time,
    0.1 (1 + 0.5 sin t) X: the SSA's hybrid loop (kernels/ssa_hybrid.cu on GPUs), to t = 50 with 51 points."""
    from distsim.models.arith import BinOp, Call, Num, Param, Species, Time
    from distsim.models.reactions import Reaction, ReactionNetwork

    mod = BinOp("+", Num(1.0), BinOp("*", Num(0.5), Call("sin", (Time(),))))
    birth = BinOp("*", BinOp("*", Param("lam"), mod), Species(0))
    return ReactionNetwork.create(["X"], [100], [Reaction(((0, 1),), ((0, 2),), law=birth, name="birth"),
                                                 Reaction(((0, 1),), (), rate="mu", name="death")],
                                  {"lam": 0.1, "mu": 0.11})


def _digest(*arrays) -> str:
    import numpy as np

    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(np.asarray(a)).tobytes())
    return h.hexdigest()[:12]


def _case(name: str, size, backend: str) -> tuple[float, str, str]:
    """Run one case at one size; returns (seconds, throughput text, digest of the numbers)."""
    import distsim
    import distsim.mcmc
    import distsim.pbn
    import distsim.ssa  # noqa: F401  (older versions have no lazy submodules)

    root = Path(os.environ["DISTSIM_BENCH_ROOT"])
    kw = dict(backend=backend, progress=False)
    t0 = time.perf_counter()
    if name == "pbn_sim":
        net = distsim.pbn.load(root / MONTAGUD, perturbation=1e-3)
        ds = distsim.pbn.simulate(net, steps=1000, trajectories=int(size), seed=1, keep_states=False, **kw)
        dt = time.perf_counter() - t0
        return dt, f"{1000 * size / dt:.3g} steps/s", _digest(ds["frequency"].values)
    if name == "pbn_steady":
        net = distsim.pbn.load(root / SIZEK, perturbation=1e-3)
        ds = distsim.pbn.steady_state(net, ["v_Casp3=1"], precision=float(size), seed=1, **kw)
        dt = time.perf_counter() - t0
        return dt, f"{int(ds.attrs.get('steps_simulated', 0)) / dt:.3g} steps/s", _digest(ds["probability"].values)
    if name == "ssa_mm":
        net = distsim.ssa.load(root / MM)
        ds = distsim.ssa.simulate(net, t_end=100, points=101, realizations=int(size), seed=1, quantiles=None, **kw)
        dt = time.perf_counter() - t0
        return dt, f"{float(ds.attrs['firings_total']) / dt:.3g} firings/s", _digest(ds["mean"].values,
                                                                                      ds["variance"].values)
    if name == "ssa_hybrid":
        ds = distsim.ssa.simulate(hybrid_birth_death(), t_end=50, points=51, realizations=int(size), seed=1,
                                  quantiles=None, **kw)
        dt = time.perf_counter() - t0
        return dt, f"{float(ds.attrs['firings_total']) / dt:.3g} firings/s", _digest(ds["mean"].values,
                                                                                      ds["variance"].values)
    if name == "mcmc":
        net = distsim.ssa.load(root / "examples/mcmc/michaelis_menten.rxn")
        ds = distsim.mcmc.infer_rates(net, root / "examples/mcmc/mm_observations.csv", prior=PRIOR, chains=4,
                                      iterations=int(size), burn_in=0, seed=1, **kw)
        dt = time.perf_counter() - t0
        return dt, f"{size / dt:.3g} it/s per chain", _digest(*(ds[k].values for k in ("k1", "k2", "k3")))
    raise ValueError(name)


def one(name: str, backend: str) -> dict:
    warm, timed = SIZES[backend][name]
    _case(name, warm, backend)
    seconds, rate, digest = _case(name, timed, backend)
    return {"seconds": seconds, "rate": rate, "digest": digest}


def run(tree: Path, name: str, backend: str) -> dict:
    env = dict(os.environ, PYTHONPATH=f"{tree}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               DISTSIM_BENCH_ROOT=str(ROOT))
    out = subprocess.run([sys.executable, __file__, "--one", name, "--backend", backend], env=env,
                         capture_output=True, text=True, cwd=tree)
    if out.returncode != 0:
        return {"seconds": float("nan"), "rate": "failed: " + out.stderr.strip().splitlines()[-1][:80], "digest": "-"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", required=False, help="the old checkout")
    ap.add_argument("--backend", default="gpu", choices=["gpu", "cpu"])
    ap.add_argument("--cases", nargs="+", default=list(SIZES["gpu"]))
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one, a.backend)))
        return
    lines = [f"old vs new, backend {a.backend}, {datetime.date.today()}, old = {a.baseline}", "",
             "| case | size | old s | new s | new/old time | old rate | new rate | same numbers |",
             "|---|---|---|---|---|---|---|---|"]
    for name in a.cases:
        old = run(Path(a.baseline).resolve(), name, a.backend)
        new = run(ROOT, name, a.backend)
        same = "yes" if old["digest"] == new["digest"] != "-" else "NO"
        lines.append(f"| {name} | {SIZES[a.backend][name][1]:g} | {old['seconds']:.3f} | {new['seconds']:.3f} | "
                     f"{new['seconds'] / old['seconds']:.2f} | {old['rate']} | {new['rate']} | {same} |")
        print(lines[-1], flush=True)
    emit(lines, a.out)


if __name__ == "__main__":
    main()
