"""PMMH with exact SSA particles on smfsb's noisy Lotka-Volterra data (Wilkinson, SMfSB 3rd ed.).

    python examples/pmmh_lotka_volterra.py            # 4 chains x 10,000 iterations (long on a CPU; use a GPU)
    python examples/pmmh_lotka_volterra.py --small    # 2 chains x 40 iterations (the test suite uses it)
"""

from __future__ import annotations

import argparse
import csv
import warnings
from pathlib import Path

import distsim.pmmh as pmmh
from distsim.errors import ConvergenceWarning
from distsim.mcmc import summary
from distsim.ssa import load

HERE = Path(__file__).resolve().parent


def data() -> pmmh.Experiment:
    with open(HERE / "pmmh" / "lv_noise_10.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    times = [float(r["time"]) for r in rows]
    return pmmh.Experiment(times, {"prey": [float(r["Y1"]) for r in rows],
                                   "predator": [float(r["Y2"]) for r in rows]}, source="lv_noise_10.csv")


def main(small: bool = False) -> None:
    net = load(HERE / "pmmh" / "lotka_volterra.rxn")
    obs = [pmmh.Observable("prey", "Y1", "normal", 10), pmmh.Observable("predator", "Y2", "normal", 10)]
    prior = {"c1": "lognormal:0,1", "c2": "lognormal:-5.3,1", "c3": "lognormal:-0.5,1"}  # as smfsb's example, roughly
    with warnings.catch_warnings():
        if small:
            warnings.simplefilter("ignore", ConvergenceWarning)
        ds = pmmh.infer(net, obs, data(), prior=prior, particles=32 if small else "auto",
                        iterations=40 if small else 10_000, burn_in=10 if small else 2_000, chains=2 if small else 4,
                        seed=1, progress=not small)
    print(summary(ds))
    print(f"{ds.attrs['particles']} particles; {ds.attrs['iterations_per_second']:.3g} iterations/s")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="a quick run")
    main(ap.parse_args().small)
