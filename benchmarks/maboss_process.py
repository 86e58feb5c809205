"""Where a new process's ``distsim maboss`` call spends its time (issue 31: the whole process against
MaBoSS.GPU's).

    python benchmarks/maboss_process.py MODEL.bnd [MODEL.cfg] [distsim maboss options ...]

runs ``distsim maboss MODEL.bnd MODEL.cfg OPTIONS`` in a fresh interpreter (this file re-run as a child,
so nothing is imported beforehand) with timers around its phases, and prints one line per phase (wall and
CPU seconds): interpreter start, the command line (``distsim.cli``), the workload's imports
(``distsim.maboss``: NumPy, xarray, ...; Numba with the first CPU kernel call), the cluster (if one
starts), reading and compiling the model, the backend's start in the first shard (CuPy and the CUDA
context on a GPU), kernel loading, the simulation, the Dataset, the CSV/netCDF files and the exit. The phases are measured by wrapping distsim's functions; the child's output is its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = "DISTSIM_PHASES_CHILD"


def _since_start() -> float:
    """Seconds since this process was created (Linux: /proc), else 0."""
    try:
        with open("/proc/self/stat") as f:
            start = int(f.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime") as f:
            return float(f.read().split()[0]) - start
    except (OSError, ValueError, IndexError):
        return 0.0


def child(argv: list[str]) -> None:
    t_start = _since_start()
    marks: list[tuple[str, float, float]] = []
    spans: dict[str, list[float]] = {}

    def mark(name: str) -> None:
        marks.append((name, time.perf_counter(), time.process_time()))

    def wrap(mod: object, attr: str, name: str) -> None:
        fn = getattr(mod, attr, None)
        if fn is None:
            return

        def timed(*a, **k):
            t, c = time.perf_counter(), time.process_time()
            try:
                return fn(*a, **k)
            finally:
                s = spans.setdefault(name, [0.0, 0.0, 0])
                s[0] += time.perf_counter() - t
                s[1] += time.process_time() - c
                s[2] += 1

        setattr(mod, attr, timed)

    mark("start")
    import distsim.cli as cli

    mark("import distsim.cli")
    import distsim.maboss  # noqa: F401
    from distsim import backends, results
    from distsim.cli import common
    from distsim.engine import executor
    from distsim.maboss import csv, shard, simulate

    mark("import distsim.maboss (numpy, xarray, ...; Numba only with the CPU kernels)")
    wrap(simulate, "load", "read .bnd/.cfg")
    wrap(simulate, "compile_model", "compile the model")
    wrap(common, "_start", "start the Dask cluster")
    wrap(backends, "gpu_available", "backend: CuPy import, CUDA device check")
    wrap(backends, "device_description", "backend: device description")
    wrap(simulate, "build_dataset", "build the Dataset (xarray)")
    wrap(results, "provenance", "provenance attributes")
    wrap(csv, "write_csv", "write the CSV files")
    wrap(results, "write", "write the Dataset file")
    wrap(executor, "execute_shard", "shard tasks run here (all of the simulation)")
    wrap(shard, "run_cpu_chunk", "CPU kernel calls (Numba import, cache load, simulation)")
    try:
        from distsim.maboss import gpu

        wrap(gpu, "_device_model", "GPU: model tables to the device (the first: CUDA context, memory pool)")
        wrap(gpu, "_module", "GPU: kernel module (NVRTC disk cache)")
        wrap(gpu, "run_gpu_chunk", "GPU: kernel launches + reductions")
    except ImportError:
        pass
    # the CLI imports its functions at call time (from ..maboss import ...): patch the package too
    wrap(distsim.maboss, "write_csv", "write the CSV files (via the CLI)")
    mark("patching")
    sys.argv = ["distsim", *argv]
    rc = cli.main()  # as the console script calls it (argv None: the process's own command line)
    mark("distsim.cli.main")
    out = {"t_start": t_start, "marks": marks, "spans": spans, "rc": rc}
    print("DISTSIM_PHASES " + json.dumps(out), file=sys.stderr, flush=True)


def phases(argv: list[str], env: dict | None = None) -> tuple[list[tuple[str, float, float]], float]:
    """Run ``distsim ARGV`` in a new process; its phases as (name, wall s, CPU s) and the whole wall time."""
    t = time.perf_counter()
    r = subprocess.run([sys.executable, os.path.abspath(__file__), *argv], capture_output=True, text=True,
                       env={**os.environ, CHILD: "1", **(env or {})}, cwd=ROOT, timeout=900)
    wall = time.perf_counter() - t
    line = next((ln for ln in r.stderr.splitlines() if ln.startswith("DISTSIM_PHASES ")), None)
    if r.returncode != 0 or line is None:
        raise RuntimeError(f"distsim {' '.join(argv)} failed ({r.returncode}): {(r.stderr or r.stdout)[-800:]}")
    d = json.loads(line.split(" ", 1)[1])
    rows = [("interpreter start (to the first line of the script)", d["t_start"], float("nan"))]
    marks = d["marks"]
    for (_, t0, c0), (name, t1, c1) in zip(marks, marks[1:]):
        rows.append((name, t1 - t0, c1 - c0))
    rows += [(f"  of which: {k} ({n}x)", s, c) for k, (s, c, n) in d["spans"].items()]
    rows.append(("exit (after main returned; the rest of the wall time)",
                 wall - d["t_start"] - (marks[-1][1] - marks[0][1]), float("nan")))
    return rows, wall


def main() -> None:
    if os.environ.get(CHILD):
        os.environ.pop(CHILD)
        sys.path.insert(0, ROOT)  # this checkout's distsim, as `python -m distsim` run from ROOT imports
        child(sys.argv[1:])
        return
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return
    rows, wall = phases(["maboss", *sys.argv[1:]])
    for name, w, c in rows:
        print(f"{w:8.3f} s  {c:8.3f} s CPU  {name}")
    print(f"{wall:8.3f} s  whole process (wall)")


if __name__ == "__main__":
    main()
