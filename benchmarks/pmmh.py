"""Particle-filter throughput on smfsb's noisy Lotka-Volterra data (issue 34): log-likelihood
evaluations per second of distsim's bootstrap filter (exact SSA particles) on the CPU and, where a GPU
is present, on the GPU, against smfsb's ``pf_marginal_ll`` with the same particles and data.

    python benchmarks/pmmh.py [--particles 100 1000] [--repeats 20] [--smfsb-repeats 2] [--out table.md]
    python benchmarks/pmmh.py --parts [--chains 256] [--particles 8192] [--backend gpu|cpu] [--out table.md]
    python benchmarks/pmmh.py --ess [--chains 128] [--particles 200] [--iterations 900] [--burn-in 300]
                              [--backend gpu|cpu] [--gpus N | --workers N] [--time-limit 120] [--out table.md]
    python benchmarks/pmmh.py --scaling [--sizes 1 2] [--chains 256] [--particles 8192] [--iterations 40]
                              [--burn-in 20] [--noise normal|lognormal] [--backend gpu|cpu] [--out table.md]

``--ess`` measures issue 34's goal (bulk ESS >= 400 for every parameter in under 60 s on one GPU, with
R-hat < 1.01): one ``distsim.pmmh.infer`` call on this problem (c1, c2, c3 with the priors below, chains
starting at the model's values) after a short warm-up call that compiles the kernels (reported apart).
On one GPU (in-process) the chains are one shard: each iteration advances every chain's particles in one
launch (chains x particles threads) and reweighs them on the device. ``--gpus N`` (a local cluster of N
GPU workers) or ``--workers N`` (N CPU workers) splits the chains over N shards. Printed: the whole
call's wall time and the sampling time (``sampling_seconds``: the rounds, without the particle-number
check), iterations/s (chain iterations), the variance of the log-likelihood estimate at the start
(Doucet et al. 2015: about 1 to 1.7), acceptance, the burn-in's adaptation stages, bulk and tail ESS,
R-hat and the kept draws' proposal sd over the posterior sd (of log c; Sherlock et al. 2015's optimum
2.562 / sqrt(3) = 1.48) per parameter, and the time to ESS 400 = wall time x 400 / min bulk ESS.
R-hat needs long chains, not many: with an integrated autocorrelation time tau, split R-hat is about
1 + tau / (iterations after burn-in), so R-hat < 1.01 needs about 100 tau kept iterations per chain
(``benchmarks/pmmh_rhat.py``: tau >= 10.6 for this random walk in 3 dimensions even with an exact
likelihood, so about 1,300 kept iterations).
Defaults: 128 chains x 200 particles (Var(loglik) about 1.0), 900 iterations of which 300 are burn-in
(4 adaptation stages, ending at 37, 75, 150, 300; about 60 s at the 65 ms per iteration measured on
an H200 at 128 x 200). Measured on CPU (8 chains x 100 particles, Var(loglik) 3.3, 220 iterations, 120
burn-in, seed 0), per-chain Haario adaptation -> pooled stages: acceptance 0.33 -> 0.18, min bulk ESS
13 -> 43 of 800 draws, max R-hat 1.84 -> 1.18, proposal sd / posterior sd 1.23 to 1.47.

``--scaling`` measures issue 34's 2-GPU goal (>= 1.9x on 2 GPUs for 8+ chains): the same ``pmmh.infer``
call (LV problem, same seed) on a local cluster of 1 GPU worker, then of 2 (``--sizes``; with ``--backend
cpu``: CPU workers), each after an untimed warm-up call of the same shape on that cluster. An
iteration's time on one GPU is a part that does not shrink with the particles plus a part that does
(``--parts``, one H200, twelfth session: 686 ms at 256 chains x 8,192 particles, 359 ms at 128; not halved
32.6 ms per iteration, of which 24.4 ms is the SSA advance kernels' tail, the longest particles' events in
each of the 16 intervals, and 4.0 ms the reweighing), so 2 GPUs give at most about 2 / (1 + 32.6 / 686) =
1.91x at these defaults and more with more particles per GPU; hence the defaults: 256 chains x 8,192 =
2,097,152 particles per filter step, 1,048,576 per GPU on 2 GPUs (``--chains 64`` gives 262,144 per GPU).
Many chains of 8,192 particles rather than few of many: the reweighing is one block of 256 threads per
chain (until the twelfth session one thread per chain, sequential over its particles: 22.7 ms per interval
at 128 chains on an H200, now 0.23 ms). Printed per size: the whole call, the sampling time (rounds), chain
iterations/s, the speed-ups over the first size, and whether every draw and log-likelihood estimate
equals the first size's bit for bit; then where each size's rounds' time went (``Run.timings``: the
slowest task of each round, stragglers = slowest minus mean task, round overhead = round wall time
minus its slowest task, the client's work between rounds).

``--parts``: one filter step (one iteration's filters of every chain, in-process) of ``--chains`` and of
half as many (one of 2 GPUs' share), the time of its SSA advance launches (GPU: CUDA events around each
launch; CPU: wall time) and the reweighing kernel alone at both sizes: 2 x step(half) - step(all) is the
part of an iteration a second GPU does not halve, and the same difference of the advance times says how
much of it is the SSA kernels' (the longest particle's events) rather than the host's.

distsim's evaluations are of one filter at a time (one chain's view: the chains of a run add
parallelism on top). CPU and GPU rows evaluate the same filters (keys 0..repeats-1), so their
estimates must be equal bit for bit ("same bits"). Goal (issue 34): >= 100x smfsb's evaluations/s.
"""

from __future__ import annotations

import argparse
import contextlib
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
    from distsim.pmmh import sampler

    net, obs, ex = lv_inputs()
    return sampler.build_problem(net, obs, [ex], PRIOR)


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


PRIOR = {"c1": "lognormal:0,1", "c2": "lognormal:-5,1", "c3": "lognormal:0,1"}
ESS_GOAL = 400
RHAT_GOAL = 1.01


NOISE = {"normal": 10.0, "lognormal": 0.1}  # smfsb's data: N(0, 10^2) noise on counts of about 30 to 400


def lv_inputs(noise: str = "normal"):
    import csv

    import distsim.pmmh as pmmh
    from distsim.ssa import load

    with open(ROOT / "examples/pmmh/lv_noise_10.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    ex = pmmh.Experiment([float(r["time"]) for r in rows], {"prey": [float(r["Y1"]) for r in rows],
                                                           "predator": [float(r["Y2"]) for r in rows]})
    obs = [pmmh.Observable("prey", "Y1", noise, NOISE[noise]), pmmh.Observable("predator", "Y2", noise, NOISE[noise])]
    return load(ROOT / "examples/pmmh/lotka_volterra.rxn"), obs, ex


def ess_run(a) -> list[str]:
    """One timed ``pmmh.infer`` on the LV problem (after an untimed warm-up call): the ESS table."""
    import contextlib
    import warnings

    import distsim
    import distsim.pmmh as pmmh
    from distsim.backends import gpu_available

    backend = a.backend or ("gpu" if gpu_available() else "cpu")
    net, obs, ex = lv_inputs()
    kw = dict(prior=PRIOR, particles=a.particles[0], chains=a.chains, seed=a.seed, backend=backend, progress=False)
    with contextlib.ExitStack() as stack:
        client = None
        if a.gpus or a.workers:
            client = stack.enter_context(distsim.connect(gpus=a.gpus or False, n_workers=a.workers or None))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            pmmh.infer(net, obs, ex, iterations=3, burn_in=1, client=client, **{**kw, "chains": min(a.chains, 2)})
            warm = time.perf_counter() - t0
            t0 = time.perf_counter()
            ds = pmmh.infer(net, obs, ex, iterations=a.iterations, burn_in=a.burn_in, client=client,
                            time_limit=a.time_limit, **kw)
            wall = time.perf_counter() - t0
    at = ds.attrs
    where = f"{a.gpus} GPU workers" if a.gpus else f"{a.workers} CPU workers" if a.workers else f"in-process {backend}"
    ess = ds["ess_bulk"].values
    lines = [f"LV PMMH ({where}): {a.chains} chains x {at['particles']} particles, {at['iterations']} iterations "
             f"({a.burn_in} burn-in; stopped by {at['stopped_by']}), seed {a.seed}",
             "",
             "| figure | value |", "|---|---:|",
             f"| warm-up call (kernel compiles) | {warm:.1f} s |",
             f"| whole call | {wall:.1f} s |",
             f"| sampling (rounds) | {at['sampling_seconds']:.1f} s |",
             f"| chain iterations/s | {at['iterations_per_second']:.1f} |",
             f"| Var(loglik estimate) at the start | {at['loglik_variance_at_start']:.2f} |",
             f"| acceptance rate (mean over chains) | {float(ds['acceptance_rate'].mean()):.3f} |",
             f"| adaptation stages end at | {at['adaptation_stage_ends'] or '-'} |",
             f"| kept draws | {ds.sizes['chain'] * ds.sizes['draw']} |",
             f"| min bulk ESS | {ess.min():.0f} |",
             f"| time to ESS {ESS_GOAL} (whole call x {ESS_GOAL} / min bulk ESS) | "
             f"{wall * ESS_GOAL / ess.min():.1f} s |",
             f"| goal: min bulk ESS >= {ESS_GOAL} with max R-hat < {RHAT_GOAL} within 60 s (this call, burn-in "
             f"included) | {'met' if ess.min() >= ESS_GOAL and ds['rhat'].values.max() < RHAT_GOAL and wall < 60 else 'not met'} |",
             f"| max R-hat (< {RHAT_GOAL} for a converged posterior) | {ds['rhat'].values.max():.3f} |",
             "", "| parameter | mean | sd | bulk ESS | tail ESS | R-hat | proposal sd / sd (log) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for i, v in enumerate(ds["variable"].values):
        x = ds[str(v)].values
        lines.append(f"| {v} | {x.mean():.4g} | {x.std():.3g} | {ess[i]:.0f} | {ds['ess_tail'].values[i]:.0f} | "
                     f"{ds['rhat'].values[i]:.3f} | {float(ds['proposal_sd'].values[i]) / np.log(x).std():.2f} |")
    return lines


def scaling_run(a) -> list[str]:
    """The same ``pmmh.infer`` call on local clusters of each size in ``a.sizes``: times, speed-ups, same draws."""
    import warnings

    import distsim
    import distsim.pmmh as pmmh
    from distsim.backends import gpu_available

    backend = a.backend or ("gpu" if gpu_available() else "cpu")
    net, obs, ex = lv_inputs(a.noise)
    N = a.particles[0]
    kw = dict(prior=PRIOR, particles=N, chains=a.chains, seed=a.seed, backend=backend, progress=False)
    unit = "GPU" if backend == "gpu" else "CPU worker"
    rows, ref, parts = [], None, []
    for n in a.sizes:
        conn = distsim.connect(gpus=n) if backend == "gpu" else distsim.connect(gpus=False, n_workers=n)
        with conn as client, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pmmh.infer(net, obs, ex, iterations=3, burn_in=1, client=client, **kw)  # compiles on every worker
            t0 = time.perf_counter()
            ds = pmmh.infer(net, obs, ex, iterations=a.iterations, burn_in=a.burn_in, client=client, **kw)
            wall = time.perf_counter() - t0
        draws = [ds[str(v)].values for v in ds["variable"].values] + [ds["log_likelihood"].values]
        if ref is None:
            ref = (wall, ds.attrs["sampling_seconds"], draws)
        same = all(np.array_equal(x, y) for x, y in zip(draws, ref[2]))
        rows.append((n, wall, ds.attrs["sampling_seconds"], ds.attrs["iterations_per_second"], same))
        at = ds.attrs
        tasks = np.array([float(x) for x in at["task_seconds"].split(",")])
        walls = np.array([float(x) for x in at["round_wall_s"].split(",")])
        split = np.cumsum([int(x) for x in at["round_tasks"].split(",")])[:-1]
        per = [t.max() for t in np.split(tasks, split)]
        parts.append((n, len(walls), walls.sum(), float(np.sum(per)), at["round_imbalance_s"], at["round_overhead_s"],
                      at["between_rounds_s"]))
    base = a.sizes[0]
    lines = [f"PMMH LV scaling ({backend}): {a.chains} chains x {N} particles ({a.chains * N:,} per filter step), "
             f"{a.iterations} iterations ({a.burn_in} burn-in), seed {a.seed}, {a.noise} noise",
             "", f"| {unit}s | particles per {unit} | whole call | sampling (rounds) | chain it/s | speed-up (sampling) "
             f"| speed-up (whole call) | same draws as {base} |", "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for n, wall, samp, rate, same in rows:
        lines.append(f"| {n} | {-(-a.chains // n) * N:,} | {wall:.2f} s | {samp:.2f} s | {rate:.1f} | "
                     f"{ref[1] / samp:.2f}x | {ref[0] / wall:.2f}x | {'yes' if same else 'NO'} |")
    lines += ["", f"Where the rounds' time went (the particle-number check's round included): slowest task, its "
              "excess over the mean task (stragglers), the round's wall time beyond its slowest task (payloads, "
              "scheduling, results) and the client's work between rounds", "",
              f"| {unit}s | rounds | rounds' wall time | slowest tasks | stragglers | round overhead | "
              "overhead per round | between rounds |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n, k, w, slow, imb, over, between in parts:
        lines.append(f"| {n} | {k} | {w:.2f} s | {slow:.2f} s | {imb:.2f} s | {over:.3f} s | "
                     f"{1e3 * over / k:.1f} ms | {between:.3f} s |")
    two = [r for r in rows if r[0] == 2 * base]
    if backend == "gpu" and base == 1 and two:
        n, wall, samp, rate, same = two[0]
        ok = ref[1] / samp >= 1.9 and a.chains >= 8 and same
        lines += ["", f"goal (>= 1.9x on 2 GPUs for 8+ chains, sampling time, same draws): {'met' if ok else 'not met'}"]
    return lines


def parts_run(a) -> list[str]:
    """One filter step of ``a.chains`` and of half as many chains (what each of 2 GPUs runs), and the
    reweighing kernel alone at those sizes: the part of an iteration that a second GPU does not halve."""
    from distsim.backends import gpu_available
    from distsim.pmmh.filter import log_likelihoods, reweigh

    backend = a.backend or ("gpu" if gpu_available() else "cpu")
    if backend == "gpu":
        import cupy as xp

        sync = xp.cuda.get_current_stream().synchronize
    else:
        xp, sync = np, (lambda: None)
    net, obs, ex = lv_inputs(a.noise)
    pr = sampler_problem(net, obs, ex)
    N, n_int = a.particles[0], pr.n_intervals
    rng = np.random.default_rng(a.seed)
    times = {}
    for G in (a.chains, a.chains // 2):
        th = TH * np.exp(0.05 * rng.standard_normal((G, TH.size)))  # nearby chains, as after burn-in
        keys = np.arange(G)
        log_likelihoods(pr, th, N, keys, 0, backend)  # compile, allocate
        with advance_timer(backend) as adv:
            t0 = time.perf_counter()
            for it in range(a.repeats):
                log_likelihoods(pr, th, N, keys, it + 1, backend)
            step = (time.perf_counter() - t0) / a.repeats
        lw = xp.asarray(rng.normal(-50.0, 5.0, (G, N)))
        u = rng.random(G)
        reweigh(xp, lw, u, True)
        sync()
        t0 = time.perf_counter()
        for _ in range(a.repeats):
            reweigh(xp, lw, u, True)
        sync()
        times[G] = (step, (time.perf_counter() - t0) / a.repeats, adv() / a.repeats)
    G, H = a.chains, a.chains // 2
    fixed = 2 * times[H][0] - times[G][0]
    lines = [f"PMMH LV filter step ({backend}): {N} particles per chain, {n_int} observation times, mean of "
             f"{a.repeats}", "", "| chains | filter step | SSA advance x intervals | reweighing (one interval) | "
             "reweighing x intervals |", "|---:|---:|---:|---:|---:|"]
    for g in (G, H):
        lines.append(f"| {g} | {1e3 * times[g][0]:.1f} ms | {1e3 * times[g][2]:.1f} ms | {1e3 * times[g][1]:.2f} ms | "
                     f"{1e3 * n_int * times[g][1]:.1f} ms |")
    lines += ["", f"not halved by a second device (2 x step({H}) - step({G})): {1e3 * fixed:.1f} ms per iteration, "
              f"of which the SSA advance (2 x advance({H}) - advance({G})): "
              f"{1e3 * (2 * times[H][2] - times[G][2]):.1f} ms and the reweighing (x {n_int} intervals at {H} "
              f"chains): {1e3 * n_int * times[H][1]:.1f} ms"]
    return lines


@contextlib.contextmanager
def advance_timer(backend: str):
    """Seconds the SSA advance launches of the filter took (GPU: CUDA events around each launch; CPU: wall
    time), summed: yields a function giving the total so far."""
    import distsim.pmmh.filter as pf
    import distsim.ssa.gpu_advance as ga

    mod, name = (ga, "advance_device") if backend == "gpu" else (pf, "advance")
    orig, spans = getattr(mod, name), []

    def timed(*args, **kw):
        if backend == "gpu":
            import cupy as cp

            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record()
            out = orig(*args, **kw)
            e1.record()
            spans.append((e0, e1))
        else:
            t0 = time.perf_counter()
            out = orig(*args, **kw)
            spans.append(time.perf_counter() - t0)
        return out

    def total() -> float:
        if backend != "gpu":
            return sum(spans)
        import cupy as cp

        spans[-1][1].synchronize()
        return sum(cp.cuda.get_elapsed_time(e0, e1) for e0, e1 in spans) / 1e3

    setattr(mod, name, timed)
    try:
        yield total
    finally:
        setattr(mod, name, orig)


def sampler_problem(net, obs, ex):
    from distsim.pmmh import sampler

    return sampler.build_problem(net, obs, [ex], PRIOR)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--particles", type=int, nargs="+", default=None,
                    help="default: 100 1000 (throughput), 200 (--ess), 8192 (--scaling)")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--smfsb-repeats", type=int, default=2, help="0: skip smfsb")
    ap.add_argument("--ess", action="store_true", help="time one pmmh.infer call and report ESS per parameter")
    ap.add_argument("--scaling", action="store_true", help="one pmmh.infer call on 1 and 2 GPUs (--sizes)")
    ap.add_argument("--parts", action="store_true",
                    help="one filter step of --chains and of half as many, and the reweighing alone")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 2], help="--scaling: GPUs (or CPU workers) per run")
    ap.add_argument("--noise", choices=sorted(NOISE), default="normal",
                    help="--scaling: the observables' noise model (lognormal: sd 0.1 of log y; weighed on the device too)")
    ap.add_argument("--chains", type=int, default=None, help="default: 128 (--ess), 256 (--scaling)")
    ap.add_argument("--iterations", type=int, default=None, help="default: 900 (--ess), 40 (--scaling)")
    ap.add_argument("--burn-in", type=int, default=None, help="default: 300 (--ess), 20 (--scaling)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", choices=["cpu", "gpu"], default=None, help="default: gpu when present")
    ap.add_argument("--gpus", type=int, default=0, help="a local cluster of this many GPU workers")
    ap.add_argument("--workers", type=int, default=0, help="a local cluster of this many CPU workers")
    ap.add_argument("--time-limit", type=float, default=120.0, help="infer's time_limit (s) of the timed call")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    from distsim.backends import gpu_available

    if a.scaling:
        a.particles, a.chains = a.particles or [8192], a.chains or 256
        a.iterations, a.burn_in = a.iterations or 40, 20 if a.burn_in is None else a.burn_in
        emit(scaling_run(a), a.out)
        return
    if a.parts:
        a.particles, a.chains = a.particles or [8192], a.chains or 256
        a.repeats = min(a.repeats, 5)
        emit(parts_run(a), a.out)
        return
    if a.ess:
        a.particles, a.chains = a.particles or [200], a.chains or 128
        a.iterations, a.burn_in = a.iterations or 900, 300 if a.burn_in is None else a.burn_in
        emit(ess_run(a), a.out)
        return
    a.particles = a.particles or [100, 1000]
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
