"""How long must PMMH chains be for R-hat < 1.01? (issue 34's ``--ess`` goal; CPU, about a minute)

    python benchmarks/pmmh_rhat.py [--chains 64] [--kept 650 800 1000 1300 1600] [--repeats 8]
                                   [--ms-per-iteration 67] [--burn-in 100] [--out table.md]

The PMMH chain of ``distsim.pmmh`` is simulated on its idealised target: a d = 3 Gaussian posterior in
the log parameters, the random-walk proposal with distsim's adapted covariance (2.562^2 / d x the
posterior's: :data:`distsim.pmmh.sampler.PMMH_SCALE`) and a log-likelihood estimate with Gaussian
noise of variance sigma^2 and mean -sigma^2 / 2 (Pitt et al. 2012, Sherlock et al. 2015: the
bootstrap filter's Var(log-likelihood estimate) is sigma^2), kept with the current point. Chains start
in the posterior (no burn-in transient: the best case for R-hat). Printed: acceptance and the bulk
integrated autocorrelation time tau (chains x draws / bulk ESS) per sigma^2, then the largest of the
three parameters' rank-normalised split R-hat (``distsim.mcmc.diagnostics``' arviz-stats) over
``--repeats`` runs per number of kept iterations, and the wall time those iterations take at the
measured time per iteration (``--ms-per-iteration``: 67 ms for 64 x 400 on one H200, session 9).
Split R-hat of stationary chains is about 1 + (tau - 1) / kept: it falls with each chain's length over
tau, not with the number of chains.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import emit  # noqa: E402

D = 3
SIGMA2 = (0.0, 0.125, 0.5, 1.0)


def pmmh_chains(rng: np.random.Generator, chains: int, n: int, sigma2: float) -> tuple[np.ndarray, float]:
    """(draws [chains, n, D], acceptance) of the idealised PMMH chain (module docstring)."""
    from distsim.pmmh.sampler import PMMH_SCALE

    sd = np.sqrt(sigma2)
    step = np.sqrt(PMMH_SCALE / D)
    x = rng.standard_normal((chains, D))
    w = rng.normal(-sigma2 / 2, sd, chains)
    out = np.empty((chains, n, D))
    acc = 0.0
    for t in range(n):
        y = x + step * rng.standard_normal((chains, D))
        wy = rng.normal(-sigma2 / 2, sd, chains)
        a = np.log(rng.random(chains)) < (-0.5 * (y * y).sum(1) + wy) - (-0.5 * (x * x).sum(1) + w)
        x[a], w[a] = y[a], wy[a]
        acc += a.mean()
        out[:, t] = x
    return out, acc / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chains", type=int, default=64)
    ap.add_argument("--kept", type=int, nargs="+", default=[650, 800, 1000, 1300, 1600])
    ap.add_argument("--repeats", type=int, default=8)
    ap.add_argument("--ms-per-iteration", type=float, default=67.0)
    ap.add_argument("--burn-in", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    from arviz_stats.base import array_stats

    rng = np.random.default_rng(a.seed)
    lines = [f"Idealised PMMH, d = {D}, {a.chains} chains, chains started in the posterior, seed {a.seed}", "",
             "| Var(loglik) sigma^2 | acceptance | bulk tau (mean of 3) |", "|---:|---:|---:|"]
    for s2 in SIGMA2:
        x, acc = pmmh_chains(rng, a.chains, 4000, s2)
        tau = np.mean([a.chains * 4000 / array_stats.ess(x[:, :, j], method="bulk") for j in range(D)])
        lines.append(f"| {s2:g} | {acc:.3f} | {tau:.1f} |")
    lines += ["", f"max R-hat of the {D} parameters over {a.repeats} runs: mean [min, max]; wall time = (burn-in "
              f"{a.burn_in} + kept) x {a.ms_per_iteration:g} ms", "",
              "| kept iterations | wall time | " + " | ".join(f"sigma^2 = {s:g}" for s in SIGMA2) + " |",
              "|---:|---:|" + "---:|" * len(SIGMA2)]
    for n in a.kept:
        cells = []
        for s2 in SIGMA2:
            r = [max(float(array_stats.rhat(x[:, :, j])) for j in range(D))
                 for x in (pmmh_chains(rng, a.chains, n, s2)[0] for _ in range(a.repeats))]
            cells.append(f"{np.mean(r):.4f} [{min(r):.4f}, {max(r):.4f}]")
        lines.append(f"| {n} | {(a.burn_in + n) * a.ms_per_iteration / 1000:.1f} s | " + " | ".join(cells) + " |")
    emit(lines, a.out)


if __name__ == "__main__":
    main()
