"""distsim's MaBoSS time courses (CPU backend, in this process) against MaBoSS itself (cmaboss, its CPU engine)
on the same .bnd/.cfg: every window and state, the states at max_time and the fixed points (issue 31).

    python benchmarks/maboss_reference.py MODEL.bnd[:MODEL.cfg] ... [-n 100000] [--threads 2] [--out t.md]

Both write MaBoSS's probtraj CSV (distsim: ``write_csv``; MaBoSS: ``display_probtraj``), compared by
``maboss_gpu_peer.compare``: ``z`` over a bound of the difference's standard deviation that holds for any
window average, ``z_se`` over both tools' written errors (MaBoSS's ErrorProba and distsim's are the same
estimate: the standard error of the mean of per-trajectory window fractions), each beside the Bonferroni bound
at a family-wise level 1e-3 over the cells; ``err ratio``: the median of distsim's error over MaBoSS's where
both see the state in 2-98% of the window. The states at max_time come from a second MaBoSS run with
``only_last_state`` (its probtraj's last row is the last window's average), fixed points from its fp table.
cmaboss's module is picked by node count (cmaboss, cmaboss_128n, cmaboss_256n, ...)."""

from __future__ import annotations

import argparse
import importlib
import math
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _report import emit  # noqa: E402
from maboss_gpu_peer import compare  # noqa: E402


def _cmaboss(n_nodes: int):
    for size, name in ((64, "cmaboss"), (128, "cmaboss_128n"), (256, "cmaboss_256n"), (512, "cmaboss_512n"),
                       (1024, "cmaboss_1024n")):
        if n_nodes <= size:
            return importlib.import_module(name)
    raise SystemExit(f"{n_nodes} nodes: more than cmaboss takes")


def _cfg_copy(cfg: Path, n: int, threads: int, folder: Path) -> Path:
    lines = [ln for ln in cfg.read_text().splitlines() if not re.match(r"\s*(sample_count|thread_count)\s*=", ln)]
    out = folder / cfg.name
    out.write_text("\n".join(lines) + f"\nsample_count = {n};\nthread_count = {threads};\n")
    return out


def _label(s: str) -> str:
    return " -- ".join(sorted(str(s).split(" -- ")))


def _max_z(a: dict[str, float], b: dict[str, float], n: int) -> tuple[float, str, float, float, float]:
    """Largest z of two fractions of n trajectories each over the states of either, its state, both values and
    the Bonferroni bound at 1e-3."""
    from scipy import stats

    best = (0.0, "-", 0.0, 0.0)
    keys = sorted(set(a) | set(b))
    for s in keys:
        pa, pb = a.get(s, 0.0), b.get(s, 0.0)
        p = min(max((pa + pb) / 2, 1 / (2 * n)), 1 - 1 / (2 * n))
        z = abs(pa - pb) / math.sqrt(p * (1 - p) * 2 / n)
        if z > best[0]:
            best = (z, s, pa, pb)
    return (*best, float(stats.norm.isf(1e-3 / (2 * max(1, len(keys))))))


def run(bnd: Path, cfg: Path, n: int, threads: int, seed: int, tmp: Path) -> str:
    from distsim.maboss import load, maboss, write_csv

    m = load(bnd, cfg)
    cm = _cmaboss(len(m.rates.nodes))
    t = time.perf_counter()
    ds = maboss(bnd, cfg, trajectories=n, seed=seed, backend="cpu", progress=False)
    t_ds = time.perf_counter() - t
    write_csv(ds, tmp / f"ds_{bnd.stem}", overwrite=True)
    cfg_n = _cfg_copy(cfg, n, threads, tmp)
    t = time.perf_counter()
    res = cm.MaBoSSSim(network=str(bnd), config=str(cfg_n)).run()
    t_mb = time.perf_counter() - t
    res.display_probtraj(str(tmp / f"mb_{bnd.stem}_probtraj.csv"))
    win = compare(tmp / f"ds_{bnd.stem}_probtraj.csv", tmp / f"mb_{bnd.stem}_probtraj.csv", n, n)
    ratios = [c["err_ds"] / c["err_peer"] for c in win.get("all", []) if c["err_peer"] > 0 and 0.02 < c["p_ds"] < 0.98]
    last = cm.MaBoSSSim(network=str(bnd), config=str(cfg_n)).run(only_last_state=True).get_last_probtraj()
    fin = _max_z({_label(s): float(p) for s, p in zip(ds.state.values, ds.final_probability.values) if p > 0},
                 {_label(s): float(p) for s, p in zip(last[2], last[0][0])}, n)
    fp = _max_z({_label(s): float(p) for s, p in zip(ds.fixed_point.values, ds.fixed_point_probability.values)},
                {_label(lab): float(p) for p, lab in res.get_fp_table().values()}, n)
    w = win["worst_z"]
    return (f"| {bnd.stem} | {n:.0e} | {t_ds:.1f} | {t_mb:.1f} | {win['cells']} | {win['dp']:.2g} | "
            f"{win['z']:.2f} ({w['time']:g}, {w['state']}) | {win['z_se']:.2f} | {win['crit']:.2f} | "
            f"{statistics.median(ratios) if ratios else math.nan:.4f} | {fin[0]:.2f} ({fin[1]}) / {fin[4]:.2f} | "
            f"{fp[0]:.2f} / {fp[4]:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", help="MODEL.bnd or MODEL.bnd:MODEL.cfg (default: the .cfg beside it)")
    ap.add_argument("-n", "--trajectories", type=int, default=100000)
    ap.add_argument("--threads", type=int, default=2, help="MaBoSS's thread_count")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    lines = ["| model | N | distsim s | MaBoSS s | cells | max abs dp | max z (where) | max z_se | bound | "
             "err ratio | final: max z / bound | fixed points: max z / bound |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as d:
        for spec in args.models:
            bnd, _, cfg = spec.partition(":")
            b = Path(bnd)
            lines.append(run(b, Path(cfg) if cfg else b.with_suffix(".cfg"), args.trajectories, args.threads,
                             args.seed, Path(d)))
            print(lines[-1], file=sys.stderr, flush=True)
    emit(lines, args.out)


if __name__ == "__main__":
    main()
