"""Write noisy_immigration_death.csv: one exact SSA path of tests/data/pmmh/immigration_death.rxn
(0 -> X at k1 = 1, X -> 0 at k2 X = 0.2 X; X(0) = 0; SSA seed 34) at t = 1 .. 8, measured with Poisson
noise (NumPy seed 34): column y ~ Poisson(X(t)), three replicate rows at t = 4, blank (not measured) at t = 6.

    python examples/mcmc/make_noisy_csv.py      # rewrites the file (the same bits every time)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import distsim

ROOT = Path(__file__).resolve().parents[2]
SEED = 34
REPLICATES = {4.0: 3}
MISSING = {6.0}


def main(out: Path = Path(__file__).resolve().parent / "noisy_immigration_death.csv") -> None:
    net = distsim.ssa.load(ROOT / "tests" / "data" / "pmmh" / "immigration_death.rxn")
    ds = distsim.ssa.simulate(net, t_end=8, points=9, realizations=1, quantiles=None, seed=SEED, client=None,
                              backend="cpu", progress=False)
    x = ds["mean"].sel(species="X").values  # one realization: its counts at t = 0 .. 8
    rng = np.random.default_rng(SEED)
    lines = [f"# made by examples/mcmc/make_noisy_csv.py (SSA and NumPy seed {SEED}): y ~ Poisson(X(t))",
             "time,y"]
    for t, xt in zip(ds["time"].values[1:], x[1:]):
        for _ in range(REPLICATES.get(float(t), 1)):
            lines.append(f"{t:g}," + ("" if float(t) in MISSING else f"{rng.poisson(xt)}"))
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
