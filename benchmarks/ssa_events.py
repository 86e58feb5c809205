"""SBML events and assignment rules: throughput of the events loop (CPU, all cores) and of
kernels/ssa_events.cu (GPU) in one run, with the CPU == GPU check, and the cost of the event hooks
against the same network without them.

    python3 benchmarks/ssa_events.py [--realizations 100000] [--backends cpu gpu] [--out table.md]

Rows: Michaelis-Menten (t = 100, 101 grid points) as shipped and with an inert state-triggered event
(``P < 0``, never true: the triggers are checked after every firing, so the events path runs but
nothing changes; same realizations), and the DSMTS cases 00019 (assignment rule), 00028
(time-triggered event) and 00033 (state-triggered event) to t = 50 with 51 points. All outputs
reduced on the workers, no histograms. 'same bits' compares mean and variance with the CPU run.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _report import emit  # noqa: E402

from distsim import backends  # noqa: E402
from distsim.engine import LocalExecutor  # noqa: E402
from distsim.models.arith import Num, Species  # noqa: E402
from distsim.models.events import Assignment, Compare, Event  # noqa: E402
from distsim.ssa import load, simulate  # noqa: E402

DSMTS = ROOT / "tests" / "data" / "dsmts"


def inert_event(net):
    p = net.index("P")
    return replace(net, name=net.name + " + inert event",
                   events=(Event("never", Compare("<", Species(p), Num(0.0)), (Assignment("P", p, Num(0.0)),)),))


def cases():
    mm = load(ROOT / "examples" / "ssa" / "michaelis_menten.rxn")
    yield "MM", mm, 100.0, 101
    yield "MM + inert state event", inert_event(mm), 100.0, 101
    for case, what in (("00019", "rule"), ("00028", "time event"), ("00033", "state event")):
        yield f"DSMTS {case} ({what})", load(DSMTS / case / f"{case}-sbml-l3v1.xml"), 50.0, 51


def run(net, backend, realizations, t_end, points, method):
    ex = LocalExecutor(backend)
    kw = dict(t_end=t_end, points=points, method=method, seed=2, client=ex, quantiles=None, keep_final=False,
              progress=False)
    simulate(net, realizations=min(realizations, 256), **kw)  # warm-up: JIT / NVRTC
    t = time.perf_counter()
    ds = simulate(net, realizations=realizations, **kw)
    return ds, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--realizations", type=int, default=100_000)
    ap.add_argument("--backends", nargs="+", default=["cpu", "gpu"])
    ap.add_argument("--methods", nargs="+", default=["direct", "tree"])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    use = [b for b in args.backends if b == "cpu" or backends.gpu_available()]
    lines = [f"# SBML events: CPU ({os.cpu_count()} cores, {platform.processor() or platform.machine()}) and GPU",
             "", f"{args.realizations} realizations each; seconds of the timed run (after a warm-up).", "",
             "| network | method | backend | s | M firings/s | mean firings/real. | same bits as CPU |",
             "|---|---|---|---|---|---|---|"]
    for name, net, t_end, points in cases():
        for method in args.methods:
            ref = None
            for backend in use:
                ds, wall = run(net, backend, args.realizations, t_end, points, method)
                f = ds.attrs["firings_total"]
                same = ""
                if ref is None:
                    ref = ds
                else:
                    same = "yes" if all(np.array_equal(ref[v].values, ds[v].values) for v in ("mean", "variance")) \
                        else "NO"
                lines.append(f"| {name} | {method} | {backend} | {wall:.3f} | {f / wall / 1e6:.1f} | "
                             f"{f / args.realizations:.0f} | {same} |")
                print(lines[-1], flush=True)
    emit(lines, args.out)


if __name__ == "__main__":
    main()
