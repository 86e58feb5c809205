"""MaBoSS time courses over 1 and 2 GPUs through Dask (issue 31: 1e8 trajectories on 2 GPUs >= 1.9x one).

    python3 benchmarks/maboss_scaling.py [--model tests/data/maboss/sizek.bnd] [--trajectories 100000000]
                                         [--gpus 1 2] [--out table.md]

Each configuration starts ``distsim.connect(gpus=g)`` (one worker per GPU), warms every worker up (a
run of 1e6 trajectories: kernels compiled and loaded), then times one ``maboss()`` call end to end.
The same seed gives the same bits on any number of GPUs: the table says whether every result equals
the first configuration's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _report import emit  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(ROOT / "tests/data/maboss/sizek.bnd"))
    ap.add_argument("--trajectories", type=int, default=100_000_000)
    ap.add_argument("--gpus", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()

    import numpy as np

    import distsim
    from distsim import backends
    from distsim.maboss import maboss

    n_gpu = backends.count_gpus()
    rows, first = [], None
    for g in a.gpus:
        if g > n_gpu:
            print(f"skipping {g} GPUs: only {n_gpu} visible", flush=True)
            continue
        client = distsim.connect(gpus=g)
        try:
            maboss(a.model, trajectories=1_000_000, client=client, progress=False)
            t = time.perf_counter()
            ds = maboss(a.model, trajectories=a.trajectories, client=client, progress=False)
            wall = time.perf_counter() - t
        finally:
            client.close()
            client.cluster.close()
        p = ds.probability.values
        same = "-" if first is None else ("yes" if np.array_equal(p, first) else "NO")
        first = p if first is None else first
        rows.append((g, wall, same))
        print(f"{g} GPU: {wall:.2f} s ({a.trajectories / wall:.3g} trajectories/s), same bits: {same}", flush=True)
    base = rows[0][1] if rows else float("nan")
    lines = [f"{Path(a.model).name}, {a.trajectories:g} trajectories; {backends.device_description('gpu')} x{n_gpu}", "",
             "| GPUs | wall s | trajectories/s | speed-up | same bits as the first |", "|---|---|---|---|---|"]
    lines += [f"| {g} | {w:.2f} | {a.trajectories / w:.3g} | {base / w:.2f} | {s} |" for g, w, s in rows]
    emit(lines, a.out)


if __name__ == "__main__":
    main()
