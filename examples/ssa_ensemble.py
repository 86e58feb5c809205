"""An ensemble of exact SSA realizations of the Michaelis-Menten system, reduced on the workers.

    python examples/ssa_ensemble.py            # 100,000 realizations (about 20 s on 2 CPU cores)
    python examples/ssa_ensemble.py --small    # a quick run (the test suite uses it)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import distsim

HERE = Path(__file__).resolve().parent


def main(small: bool = False) -> None:
    net = distsim.ssa.load(HERE / "ssa" / "michaelis_menten.rxn")
    with distsim.connect(n_workers=2) as client:
        ds = distsim.ssa.simulate(net, t_end=100, points=11, realizations=2_000 if small else 100_000, seed=1,
                                  client=client)
    print(ds["mean"].to_pandas().round(2))  # (time, species), exact integer sums reduced on the workers
    print(f"{ds.attrs['firings_per_second']:.3g} firings/s on {ds.attrs['backend']}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="a quick run")
    main(ap.parse_args().small)
