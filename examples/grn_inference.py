"""GRN inference by an island genetic algorithm: the mouse-eye network of García-Calvo et al. 2018.

    python examples/grn_inference.py            # until the known optimum 0.0005859375 (a minute or two on CPU)
    python examples/grn_inference.py --small    # 50 generations (the test suite uses it)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import distsim

HERE = Path(__file__).resolve().parent


def main(small: bool = False) -> None:
    problem = distsim.grn.load(HERE / "grn" / "mouse_eye.toml")
    with distsim.connect(n_workers=2) as client:
        ds = distsim.grn.infer(problem, model="island", islands=4, population=256, generations=50 if small else 4000,
                               target_fitness=0.0005859375, seed=1, client=client)
    a = ds.attrs
    print(f"best fitness {a['fitness']:.10g} after {a['generations']} generations ({a['stop_reason']})")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="a quick run")
    main(ap.parse_args().small)
