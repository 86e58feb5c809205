"""Particle-filter throughput on smfsb's noisy Lotka-Volterra data (issue 34): log-likelihood
evaluations per second of distsim's bootstrap filter (exact SSA particles) on the CPU and, where a GPU
is present, on the GPU, against smfsb's ``pf_marginal_ll`` with the same particles and data.

    python benchmarks/pmmh.py [--particles 100 1000] [--repeats 20] [--smfsb-repeats 2] [--out table.md]

distsim's evaluations are of one filter at a time (one chain's view: the chains of a run add
parallelism on top). CPU and GPU rows evaluate the same filters (keys 0..repeats-1), so their
estimates must be equal bit for bit ("same bits"). Goal (issue 34): >= 100x smfsb's evaluations/s.
"""

from __future__ import annotations

import argparse
from importlib.metadata import version
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import emit  # noqa: E402

TH = np.array([1.0, 0.005, 0.6])


def problem():
    import csv

    import distsim.pmmh as pmmh
    from distsim.pmmh import sampler
    from distsim.ssa import load

    with open(ROOT / "examples/pmmh/lv_noise_10.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    ex = pmmh.Experiment([float(r["time"]) for r in rows], {"prey": [float(r["Y1"]) for r in rows],
                                                           "predator": [float(r["Y2"]) for r in rows]})
    obs = [pmmh.Observable("prey", "Y1", "normal", 10), pmmh.Observable("predator", "Y2", "normal", 10)]
    net = load(ROOT / "examples/pmmh/lotka_volterra.rxn")
    return sampler.build_problem(net, obs, [ex], {"c1": "lognormal:0,1", "c2": "lognormal:-5,1",
                                                  "c3": "lognormal:0,1"})


def distsim_rate(pr, n: int, repeats: int, backend: str) -> tuple[float, np.ndarray]:
    from distsim.pmmh.filter import log_likelihood

    log_likelihood(pr, TH, n, 999, 0, backend)  # compile
    t0 = time.perf_counter()
    ll = np.array([log_likelihood(pr, TH, n, k, 0, backend)[0] for k in range(repeats)])
    return repeats / (time.perf_counter() - t0), ll


def smfsb_rate(n: int, repeats: int) -> float:
    import smfsb
    from scipy import stats

    def obsll(x, t, y, th):
        return np.sum(stats.norm.logpdf(y - x, scale=10))

    mll = smfsb.pf_marginal_ll(n, lambda rng, t0, th: np.array([50, 100]), 0,
                               lambda rng, x, t, dt, th: smfsb.models.lv(th).step_gillespie()(rng, x, t, dt), obsll,
                               smfsb.data.lv_noise_10)
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    for _ in range(repeats):
        mll(rng, TH)
    return repeats / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--particles", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--smfsb-repeats", type=int, default=2, help="0: skip smfsb")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    from distsim.backends import gpu_available

    pr = problem()
    lines = ["| particles | backend | loglik evaluations/s | vs smfsb | mean loglik | same bits |",
             "|---:|---|---:|---:|---:|---|"]
    for n in a.particles:
        ref = smfsb_rate(n, a.smfsb_repeats) if a.smfsb_repeats else float("nan")
        if a.smfsb_repeats:
            lines.append(f"| {n} | smfsb {version('smfsb')} (1 core) | {ref:.3g} | 1 | | |")
        cpu_rate, cpu_ll = distsim_rate(pr, n, a.repeats, "cpu")
        lines.append(f"| {n} | distsim cpu | {cpu_rate:.3g} | {cpu_rate / ref:.3g} | {cpu_ll.mean():.2f} | |")
        if gpu_available():
            gpu_rate, gpu_ll = distsim_rate(pr, n, a.repeats, "gpu")
            lines.append(f"| {n} | distsim gpu | {gpu_rate:.3g} | {gpu_rate / ref:.3g} | {gpu_ll.mean():.2f} | "
                         f"{'yes' if np.array_equal(cpu_ll, gpu_ll) else 'NO'} |")
    emit(lines, a.out)


if __name__ == "__main__":
    main()
