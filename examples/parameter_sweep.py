"""A parameter sweep: Michaelis-Menten over a grid of k1 and the initial substrate, and a
one-at-a-time sensitivity of every rate constant; results in a resumable zarr store.

    python examples/parameter_sweep.py            # 3 x 2 grid + 3 x 2 sensitivity, 1,000 realizations each
    python examples/parameter_sweep.py --small    # a quick run (the test suite uses it)
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import distsim

HERE = Path(__file__).resolve().parent


def main(small: bool = False) -> None:
    net = distsim.ssa.load(HERE / "ssa" / "michaelis_menten.rxn")
    fixed = dict(t_end=50, points=11, realizations=100 if small else 1_000)
    with distsim.connect(n_workers=2) as client, tempfile.TemporaryDirectory() as tmp:
        grid = distsim.sweep(distsim.ssa.simulate, net, {"k1": [5e-4, 1e-3, 2e-3], "S": [150, 301]}, seed=1,
                             client=client, store=Path(tmp) / "mm.zarr", **fixed)
        print(grid["mean"].sel(species="P").isel(time=-1).to_pandas())
        sens = distsim.sweep.sensitivity(distsim.ssa.simulate, net, [0.5, 2.0], seed=2, client=client, **fixed)
        print(sens["mean"].sel(species="P").isel(time=-1).to_pandas())


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="a quick run")
    main(ap.parse_args().small)
