"""Host-side fixed costs that do not shrink with more GPUs (issue 33), on the CPU: no GPU needed.

    python benchmarks/host_overhead.py [--sections sweep rounds steady] [--points 10000] [--reps 15] [--out t.md]

* ``sweep``: the client's own work in a ``distsim.sweep`` of ``--points`` Michaelis-Menten points
  (a k1 x k3 table, as ``benchmarks/scaling.py --workloads sweep``) before any task runs: reading the
  points, checking every value, seeds, the sweep record, the plan of 2 chunks and pickling their
  payloads. Best of ``--reps`` (milliseconds).
* ``rounds``: rounds of a 20 ms task through ``DaskExecutor`` on a local cluster of one CPU worker
  (as ``distsim.connect()`` starts it, TLS included), 3 ms of client work between rounds, as a
  steady-state run's rounds are: the time from the submit to the task's start and from the task's
  end to its result on the client (medians over 3 x 40 rounds).
* ``steady``: Sizek's steady state (``v_Casp3=1``, r = 3e-3, 1,024 chains, 6 rounds) through the same
  one-worker cluster, each round cut into: submit to task start, the task, task end to its result on
  the client, and the client's own work before the next submit; with the wall time of the run through
  Dask and in-process (``LocalExecutor``: this process's Numba threads; ``NUMBA_NUM_THREADS=1`` matches the
  worker's one thread). Medians over ``--reps`` runs.

Run it on an idle machine, or compare two checkouts in turn (``--baseline DIR`` imports that
checkout's distsim).
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import emit  # noqa: E402


def sweep_phases(points: int, reps: int) -> dict[str, float]:
    import numpy as np

    import distsim.ssa as ssa
    import distsim.sweep.core as core
    from distsim.rng import derive_seeds
    from distsim.sweep.adapters import SSA_SIMULATE

    net = ssa.load(ROOT / "examples" / "ssa" / "michaelis_menten.rxn")
    side = int(np.ceil(np.sqrt(points)))
    table = [{"k1": float(a), "k3": float(b)} for a in np.geomspace(2.5e-4, 4e-3, side)
             for b in np.geomspace(0.025, 0.4, side)][:points]
    fixed = dict(t_end=100.0, points=11, realizations=1000, quantiles=None, method="tree")
    best: dict[str, float] = {}

    def timed(name: str, fn: Any) -> Any:
        t = time.perf_counter()
        out = fn()
        best[name] = min(best.get(name, float("inf")), time.perf_counter() - t)
        return out

    for _ in range(reps):
        pts = timed("points", lambda: core.as_points(table))
        timed("checks", lambda: core._check_arguments(SSA_SIMULATE, net, pts, fixed, None))
        seeds = timed("seeds", lambda: derive_seeds(1, np.arange(pts.n)))
        timed("record", lambda: _record(core, SSA_SIMULATE, net, pts, fixed, seeds))
        plan = timed("plan", lambda: core._plan(SSA_SIMULATE, net, fixed, pts, seeds, -(-pts.n // 2), None))
        timed("payloads", lambda: [pickle.dumps(t) for t in plan.tasks])
    return {k: v * 1e3 for k, v in best.items()}


def _record(core: Any, adapter: Any, net: Any, pts: Any, fixed: dict, seeds: Any) -> Any:
    """The sweep record and coordinates of a sweep without a store (older checkouts: their one form)."""
    try:
        return core._config(adapter, net, pts, 1, fixed, False, seeds)
    except TypeError:
        return core._config(adapter, net, pts, 1, fixed)


def _task(ctx: Any, payload: Any) -> tuple[float, float]:
    t = time.time()
    time.sleep(0.02)
    return t, time.time()


def round_trips() -> dict[str, float]:
    import distsim
    from distsim.engine import DaskExecutor

    client = distsim.connect(gpus=False, n_workers=1, threads_per_worker=1)
    try:
        ex = DaskExecutor(client, "cpu")
        ex.run_round(_task, "warm-up", 0, [0])
        to_start, to_client = [], []
        for rep in range(3):
            for r in range(40):
                t = time.time()
                (((start, end), _),) = ex.run_round(_task, f"rounds-{rep}", r, [0])
                to_client.append(time.time() - end)
                to_start.append(start - t)
                time.sleep(0.003)
            ex.release(f"rounds-{rep}", cached=False)
    finally:
        client.close()
    return {"submit to task start": statistics.median(to_start) * 1e3,
            "task end to result": statistics.median(to_client) * 1e3}


def _stamped(fn: Any, ctx: Any, payload: Any) -> Any:
    """A shard task that adds its start and end (epoch s) to its result (a dict; others unchanged)."""
    t = time.time()
    out = fn(ctx, payload)
    return dict(out, _start=t, _end=time.time()) if isinstance(out, dict) else out


def steady_phases(reps: int) -> dict[str, float]:
    import functools

    import distsim
    from distsim.engine import DaskExecutor, LocalExecutor
    from distsim.pbn import load, steady_state

    phases: dict[str, list[float]] = {k: [] for k in ("submit to task start", "task", "task end to result",
                                                      "client before the next submit")}

    class Stamps(DaskExecutor):
        last: float | None = None  # when the last round's results came back

        def run_round(self, fn, run_id, round_no, payloads, on_done=None):  # type: ignore[no-untyped-def]
            t = time.time()
            if self.last is not None:
                phases["client before the next submit"].append(t - self.last)
            out = super().run_round(fn, run_id, round_no, payloads, on_done)
            self.last = back = time.time()
            starts = [r["_start"] for r, _ in out if isinstance(r, dict)]
            ends = [r["_end"] for r, _ in out if isinstance(r, dict)]
            if starts:
                phases["submit to task start"].append(min(starts) - t)
                phases["task"].append(max(ends) - min(starts))
                phases["task end to result"].append(back - max(ends))
            return out

    net = load(ROOT / "examples" / "pbn" / "bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet", perturbation=1e-3)
    kw = dict(target="v_Casp3=1", precision=3e-3, seed=1)
    client = distsim.connect(gpus=False, n_workers=1, threads_per_worker=1)
    walls: dict[str, list[float]] = {"run through Dask": [], "run in-process": []}
    try:
        ex = Stamps(client, "cpu", wrap=lambda fn: functools.partial(_stamped, fn))
        for c in (ex, LocalExecutor("cpu")):
            steady_state(net, client=c, **dict(kw, precision=1e-2))  # warm-up: kernels loaded
        for v in phases.values():
            v.clear()
        for _ in range(reps):
            for name, c in (("run through Dask", ex), ("run in-process", LocalExecutor("cpu"))):
                ex.last = None
                t = time.perf_counter()
                steady_state(net, client=c, **kw)
                walls[name].append(time.perf_counter() - t)
    finally:
        client.close()
    out = {k: statistics.median(v) * 1e3 for k, v in phases.items()}
    out.update({k: statistics.median(v) * 1e3 for k, v in walls.items()})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sections", nargs="+", default=["sweep", "rounds"], choices=["sweep", "rounds", "steady"])
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--baseline", help="another checkout whose distsim to time")
    ap.add_argument("--out")
    args = ap.parse_args()
    code = Path(args.baseline).resolve() if args.baseline else ROOT
    sys.path.insert(0, str(code))
    lines = [f"distsim from {code}", "", "| section | phase | ms |", "|---|---|---|"]
    if "sweep" in args.sections:
        phases = sweep_phases(args.points, args.reps)
        for k, v in phases.items():
            print(f"sweep {k}: {v:.2f} ms", flush=True)
            lines.append(f"| sweep, {args.points} points | {k} | {v:.2f} |")
        lines.append(f"| sweep, {args.points} points | total | {sum(phases.values()):.2f} |")
    if "rounds" in args.sections:
        for k, v in round_trips().items():
            print(f"round {k}: {v:.2f} ms", flush=True)
            lines.append(f"| Dask round (CPU worker) | {k} | {v:.2f} |")
    if "steady" in args.sections:
        for k, v in steady_phases(args.reps).items():
            print(f"steady {k}: {v:.2f} ms", flush=True)
            lines.append(f"| Sizek steady state, r = 3e-3 (1 CPU worker) | {k} | {v:.2f} |")
    emit(lines, args.out)


if __name__ == "__main__":
    main()
