"""Bayesian inference of Michaelis-Menten rate constants from exact observations (Niemi and Wheeler 2011).

    python examples/mcmc_rates.py            # 4 chains x 1,000 iterations (GPU-sized at 50,000)
    python examples/mcmc_rates.py --small    # a quick run (the test suite uses it)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import distsim

HERE = Path(__file__).resolve().parent / "mcmc"


def main(small: bool = False) -> None:
    net = distsim.ssa.load(HERE / "michaelis_menten.rxn")
    n = 20 if small else 1_000
    with distsim.connect(n_workers=2) as client:
        ds = distsim.mcmc.infer_rates(net, HERE / "mm_observations.csv",
                                      prior={"k1": (2, 1000), "k2": (2, 10), "k3": (2, 10)},
                                      iterations=n, burn_in=n // 4, chains=4, seed=1, client=client,
                                      derived={"K_M": "(k2 + k3) / k1"})
    print(distsim.mcmc.summary(ds).to_string(float_format="{:.4g}".format))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="a quick run")
    main(ap.parse_args().small)
