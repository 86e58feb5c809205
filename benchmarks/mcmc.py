"""DA-MCMC throughput (iterations/s, attempts/s) on the Michaelis-Menten data of seed 003 (Table 2).

    python benchmarks/mcmc.py [--quick] [--baseline OLD_CHECKOUT] [--cpu-iterations 400] [--gpu-iterations 20000]
                              [--chains 4] [--blocks-per-sm 1 2 4] [--gpus 1 2] [--no-cpu] [--out table.md]

Every row is one process (``--one``) importing distsim from this checkout ("new") or from
``--baseline`` ("old", e.g. a checkout of main), so old and new run on the same machine in the same
call: the CPU backend (all cores, in-process), 1 GPU (in-process; the new code for each
``--blocks-per-sm``) and 2+ GPUs (a LocalCUDACluster, chains as shards). Goals (issue 18): >= 1,000
iterations/s per chain on one GPU (moonshot: 4 x 50,000 in < 30 s) and >= 15 iterations/s per core on
the CPU. All runs use seed 1 and burn-in 0, so draws of the same chain and iteration must be equal
bit for bit across rows: the "same draws" column compares each row with the first row of its chain
count over their common iterations. K_M's 95% interval is taken over the last 80% of the draws.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import emit  # noqa: E402

PRIOR = {"k1": (2.0, 1000.0), "k2": (2.0, 10.0), "k3": (2.0, 10.0)}


def one(cfg: dict) -> dict:
    """One measurement with the distsim found first on sys.path (set by the parent)."""
    import numpy as np

    import distsim
    from distsim.engine import LocalExecutor
    from distsim.mcmc import infer_rates, summary
    from distsim.ssa import load

    if cfg.get("blocks_per_sm"):
        import distsim.mcmc.gpu as mg

        mg.BLOCKS_PER_SM = cfg["blocks_per_sm"]
    model, data = ROOT / "examples/mcmc/michaelis_menten.rxn", ROOT / "examples/mcmc/mm_observations.csv"
    net, its, chains = load(model), cfg["iterations"], cfg["chains"]
    cluster = None
    if cfg["gpus"] > 1:
        from dask_cuda import LocalCUDACluster
        from distributed import Client

        cluster = LocalCUDACluster(CUDA_VISIBLE_DEVICES=list(range(cfg["gpus"])), resources={"GPU": 1})
        client = Client(cluster)
    else:
        client = LocalExecutor(cfg["backend"])
    kw = dict(prior=PRIOR, chains=chains, client=client, backend=cfg["backend"], progress=False)
    infer_rates(net, data, iterations=5, burn_in=0, seed=99, **kw)  # warm-up: JIT / NVRTC
    t = time.perf_counter()
    ds = infer_rates(net, data, iterations=its, burn_in=0, seed=1, derived={"K_M": "(k2 + k3) / k1"}, **kw)
    wall = time.perf_counter() - t
    if cluster is not None:
        client.close()
        cluster.close()
    phases = ""
    if cfg["backend"] == "gpu" and cfg["gpus"] == 1:
        try:
            phases = _phases(net, data, ds, cfg)
        except Exception as e:  # a row without its breakdown rather than no row
            phases = f"failed: {e!r}"[:80]
    post = ds.isel(draw=slice(its // 5, None))
    km = np.quantile(post.K_M.values, [0.025, 0.975])
    np.savez(cfg["draws"], **{v: ds[v].values for v in ("k1", "k2", "k3", "attempts")})
    return dict(wall=wall, devices=ds.attrs["devices"], attempts=ds.attrs["attempts_simulated"], km=km.tolist(),
                rhat=float(summary(post).loc["K_M", "rhat"]), distsim=str(Path(distsim.__file__).parents[1]),
                phases=phases)


def _phases(net, data, ds, cfg: dict, n_iter: int = 1000) -> str:
    """Mean device time per iteration, split into the attempts and the finish (Gamma draws), from the
    kernel's clock stamps over a block of ``n_iter`` iterations from the last draws (new code only)."""
    import inspect

    import numpy as np

    from distsim.mcmc import as_observations, gpu

    if "stamps" not in inspect.signature(gpu.run_block_gpu).parameters:
        return ""
    from distsim.mcmc.block import MCMCBlock
    from distsim.mcmc.priors import rate_model
    from distsim.mcmc.sampler import build_problem

    pr = build_problem(net, as_observations(net, data), rate_model(net, PRIOR))
    theta = np.stack([ds[v].values[:, -1] for v in ("k1", "k2", "k3")], axis=1)
    effort = ds.attempts.values.mean(axis=1)
    blk = MCMCBlock(pr, 7, np.arange(cfg["chains"]), theta, 10**6, n_iter, effort)
    st = gpu.run_block_gpu(blk, stamps=True)["stamps"]
    ends = st[:, :, 1].astype(np.float64)
    it_us, att_us = np.diff(ends, axis=1).mean() / 1e3, (st[:, 1:, 0] - ends[:, :-1]).mean() / 1e3
    return f"{it_us:.0f} = {att_us:.0f} + {it_us - att_us:.0f}"


def spawn(label: str, root: Path, cfg: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, __file__, "--one", json.dumps(cfg)], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"{label}: failed\n{r.stderr[-3000:]}", flush=True)
        return {}
    return json.loads(r.stdout.strip().splitlines()[-1])


def same_draws(a: str, b: str) -> str:
    import numpy as np

    x, y = np.load(a), np.load(b)
    n = min(x["k1"].shape[1], y["k1"].shape[1])
    m = min(x["attempts"].shape[1], y["attempts"].shape[1]) - 1  # the last draw's path is one iteration later
    ok = all(np.array_equal(x[v][:, :n], y[v][:, :n]) for v in ("k1", "k2", "k3"))
    ok = ok and np.array_equal(x["attempts"][:, :m], y["attempts"][:, :m])
    return f"yes ({n} its)" if ok else "**no**"


def plan(args: argparse.Namespace) -> list[tuple[str, Path, dict]]:
    codes = [("new", ROOT)] + ([("old", Path(args.baseline).resolve())] if args.baseline else [])
    rows = []
    for chains in args.chains:
        if not args.no_cpu:
            threads = os.environ.get("NUMBA_NUM_THREADS", "all")
            cpu = dict(backend="cpu", gpus=1, chains=chains, iterations=args.cpu_iterations)
            rows += [(f"{code} CPU ({threads} threads)", root, dict(cpu)) for code, root in codes]
        for g in args.gpus:
            for code, root in codes:
                bps = args.blocks_per_sm if code == "new" and g == 1 else [None]
                rows += [(f"{code} {g} GPU{'s (Dask)' if g > 1 else ''}" + (f", {b} blocks/SM" if b else ""), root,
                          dict(backend="gpu", gpus=g, chains=chains, iterations=args.gpu_iterations, blocks_per_sm=b))
                         for b in bps]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="short runs")
    ap.add_argument("--baseline", help="another checkout (its distsim) to time in the same call: 'old'")
    ap.add_argument("--cpu-iterations", type=int, default=400)
    ap.add_argument("--gpu-iterations", type=int, default=20_000)
    ap.add_argument("--chains", type=int, nargs="+", default=[4])
    ap.add_argument("--blocks-per-sm", type=int, nargs="*", default=[0], help="new GPU code: 0 = its default")
    ap.add_argument("--gpus", type=int, nargs="*", default=[1])
    ap.add_argument("--no-cpu", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(json.loads(args.one))))
        return
    if args.quick:
        args.cpu_iterations, args.gpu_iterations = min(args.cpu_iterations, 100), min(args.gpu_iterations, 2000)
    lines = [f"DA-MCMC, Michaelis-Menten (seed 003 Table 2), {datetime.date.today()}, seed 1; "
             f"new = {ROOT}" + (f", old = {args.baseline}" if args.baseline else ""), "",
             "| code, backend | device | chains | iterations/chain | wall s | it/s per chain | attempts/s | "
             "K_M 95% | R-hat K_M | same draws | µs/iteration = attempts + finish |", "|---" * 11 + "|"]
    tmp = tempfile.mkdtemp(prefix="mcmc_bench_")
    first: dict[int, str] = {}
    for k, (label, root, cfg) in enumerate(plan(args)):
        cfg["draws"] = f"{tmp}/{k}.npz"
        r = spawn(label, root, cfg)
        if not r:
            continue
        ref = first.setdefault(cfg["chains"], cfg["draws"])
        same = "(reference)" if ref == cfg["draws"] else same_draws(ref, cfg["draws"])
        its, wall = cfg["iterations"], r["wall"]
        lines.append(f"| {label} | {r['devices']} | {cfg['chains']} | {its} | {wall:.2f} | {its / wall:.4g} | "
                     f"{r['attempts'] / wall:.3g} | [{r['km'][0]:.0f}, {r['km'][1]:.0f}] | {r['rhat']:.3f} | "
                     f"{same} | {r['phases']} |")
        print(lines[-1], flush=True)
    emit(lines, args.out)


if __name__ == "__main__":
    main()
