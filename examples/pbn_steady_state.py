"""Steady-state probabilities of a probabilistic Boolean network on a local Dask cluster.

    python examples/pbn_steady_state.py            # Sizek et al. (2019), 87 nodes, r = 1e-3
    python examples/pbn_steady_state.py --small    # a quick run (the test suite uses it)

On a laptop CPU (2 cores) the default run takes about a minute; with GPUs present the cluster has
one worker per GPU.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import distsim

HERE = Path(__file__).resolve().parent


def main(small: bool = False) -> None:
    net = distsim.pbn.load(HERE / "pbn" / "bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet", perturbation=1e-3)
    targets = ["v_Casp3=1", {"v_Casp3": 0, "v_Casp8": 1}]
    with distsim.connect(n_workers=2) as client:  # LocalCUDACluster on GPUs, LocalCluster on CPUs
        ds = distsim.pbn.steady_state(net, targets, precision=1e-2 if small else 1e-3, seed=1, client=client)
    print(ds[["probability", "ci_low", "ci_high", "rhat", "burn_in", "sample_size"]].to_dataframe())


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="a quick run at low precision")
    main(ap.parse_args().small)
