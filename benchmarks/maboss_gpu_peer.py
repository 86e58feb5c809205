"""The two halves of ``benchmarks/maboss_gpu_peer.sh`` (run that script; this file is its helper).

    python benchmarks/maboss_gpu_peer.py --patch SRC
        apply the CUDA 13 / offline fixes to an unpacked MaBoSS.GPU source tree (each one checked)
    python benchmarks/maboss_gpu_peer.py --peer-bin BIN --data DIR --models M ... --trajectories N ...
        time MaBoSS.GPU (BIN; skipped if empty) and distsim's GPU backend on DIR/M.bnd + DIR/M.cfg with
        sample_count = N, and print one table

Times (the best of --repeats runs each): MaBoSS.GPU's own "main> simulation" timer (its diagnostics,
switched on by the patch) and its whole process (parse, NVRTC compile, simulate, write the CSVs);
distsim's warm ``maboss()`` call in this process (after a warm-up call that compiles the kernel) and a
whole new process ``python3 -m distsim maboss M.bnd M.cfg -n N --csv ... -q`` (on one GPU it runs in its
process by default; the NVRTC and Numba disk caches filled by the warm-up), and once per model that
process's phases (imports, backend start, kernels, Dataset, files, exit: ``maboss_process.py``) on stderr.
Ratios are distsim / MaBoSS.GPU (issue 31's goals:
warm <= 0.5 at 1e6 on sizek and Montagud, <= 1 at 1e5; process <= 1). The last column compares the two
time courses: the largest difference of a state's probability over all windows, and the largest z of a
difference over a bound of its standard deviation that holds for any window average (``compare``), beside
the Bonferroni bound at level 1e-3 (MaBoSS.GPU writes no errors; distsim's own error column is no basis for
rare states); the cells where each occurs are printed on stderr.

What MaBoSS.GPU (this commit) computes differently from MaBoSS and distsim, read from its source:
* ``src/jit_kernels/simulation.cu`` keeps 100 records per trajectory and launch; when they fill (every 99
  transitions) the kernel stops after recording an event's time but before its flip, and the next launch
  draws a new waiting time in the same state: one transition in 99 becomes an extra exponential holding time
  (per trajectory: sizek ~5, Montagud ~1.5, metastasis 0.005, cellcycle 0).
* window sums are float32 ``atomicAdd``s (``window_average_small.cu``), time and rates float32, the CSV holds 6
  significant digits; ErrorProba and ErrorTH are written as 0. With a time_tick that is not a binary fraction
  the sums are biased: a trajectory's whole window adds 0.1f, rounded to the sum's float32 spacing, so at 1e6
  trajectories p = 0.5 reads 0.50177 and p = 0.8 reads 0.80646. Montagud (time_tick 0.1, its 500 x 8 tables
  in global memory): up to +0.0017 (``<nil>``, p ~ 0.5, t ~ 7); sizek (5), metastasis (0.5) and cellcycle
  (integer counts) add exact values.
* ``discrete_time = 1``: a trajectory that reaches a fixed point jumps to max_time with one record, counted in
  the window where it arrived only (later windows miss it); none of the four shipped models has one.
* ceil(max_time / time_tick) windows (MaBoSS: int), time_tick as a float32; at most 20 visible nodes."""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _report import emit  # noqa: E402
from maboss_process import phases  # noqa: E402

# (file, old text or regex, new text, is a regex): the fixes MaBoSS.GPU needs here
PATCHES = [
    # the GPU is named on the command line (-DMABOSS_ARCH=90): no FindCUDA detection (gone from new CMake)
    ("CMakeLists.txt", "include(FindCUDA/select_compute_arch)\n"
                       "CUDA_DETECT_INSTALLED_GPUS(INSTALLED_GPU_CCS_1)\n"
                       "string(STRIP \"${INSTALLED_GPU_CCS_1}\" INSTALLED_GPU_CCS_2)\n"
                       "string(REPLACE \" \" \";\" INSTALLED_GPU_CCS_3 \"${INSTALLED_GPU_CCS_2}\")\n"
                       "string(REPLACE \".\" \"\" CUDA_ARCH_LIST \"${INSTALLED_GPU_CCS_3}\")\n"
                       "SET(CMAKE_CUDA_ARCHITECTURES ${CUDA_ARCH_LIST})",
     "set(CUDA_ARCH_LIST ${MABOSS_ARCH})\nset(CMAKE_CUDA_ARCHITECTURES ${CUDA_ARCH_LIST})", False),
    # CUDA 13 + new CMake list include/ and include/cccl in CMAKE_CUDA_TOOLKIT_INCLUDE_DIRECTORIES: the ';'
    # splits this definition in two, leaving an unterminated quote in every compile line (dumpbin.c first;
    # "/bin/sh: Syntax error: Unterminated quoted string"). MaBoSS.GPU never reads CUDA_INC_DIR: join the list.
    ("CMakeLists.txt", 'add_compile_definitions(CUDA_INC_DIR="${CMAKE_CUDA_TOOLKIT_INCLUDE_DIRECTORIES}")',
     'list(JOIN CMAKE_CUDA_TOOLKIT_INCLUDE_DIRECTORIES ":" MABOSS_CUDA_INC_DIRS)\n'
     'add_compile_definitions(CUDA_INC_DIR="${MABOSS_CUDA_INC_DIRS}")', False),
    # offline: the unit tests download googletest
    ("CMakeLists.txt", r"### Target unit_MaBoSS\.GPU ###\n.*?### Target unit_MaBoSS\.GPU ###\n", "", True),
    ("CMakeLists.txt", "foreach(target MaBoSS.GPU unit_MaBoSS.GPU MaBoSSGCore)",
     "foreach(target MaBoSS.GPU MaBoSSGCore)", False),
    # CUDA 13 (CCCL 3) removed cub::TransformInputIterator
    ("src/statistics/fixed_states.cu", "#include <cub/iterator/transform_input_iterator.cuh>",
     "#include <thrust/iterator/transform_iterator.h>", False),
    ("src/statistics/fixed_states.cu",
     r"cub::TransformInputIterator<bool, select_ftor, trajectory_status\*>"
     r"\(([^()]*(?:\([^()]*\))?[^()]*), select_ftor\(\)\)",
     r"thrust::make_transform_iterator(\1, select_ftor())", True),
    # CUDA 13: cuCtxCreate takes creation parameters (cuCtxCreate_v4)
    ("src/kernel_compiler.cpp", "\tCU_CHECK(cuCtxCreate(&cuContext_, 0, cuDevice_));",
     "#if CUDA_VERSION >= 13000\n\tCU_CHECK(cuCtxCreate(&cuContext_, nullptr, 0, cuDevice_));\n#else\n"
     "\tCU_CHECK(cuCtxCreate(&cuContext_, 0, cuDevice_));\n#endif", False),
    # the run-time compile targets the same architecture as the precompiled LTO parts
    ("src/kernel_compiler.cpp", '{ "-dlto", "--relocatable-device-code=true" }',
     '{ "-dlto", "--relocatable-device-code=true", "-arch=compute_" CUDA_CC }', False),
    # its timers (main> simulation, ...) printed on stderr
    ("src/timer.cpp", "constexpr bool print_diags = false;", "constexpr bool print_diags = true;", False),
]


def patch(src: Path) -> None:
    for name, old, new, is_re in PATCHES:
        f = src / name
        text = f.read_text()
        if is_re:
            out, k = re.subn(old, new, text, flags=re.S)
        else:
            k = text.count(old)
            out = text.replace(old, new)
        if k == 0:
            raise SystemExit(f"patch failed: {name}: {old[:70]!r} not found")
        f.write_text(out)
        print(f"[maboss_gpu_peer] patched {name} ({k}x): {old.splitlines()[0][:70]}")


def with_samples(cfg: Path, n: int, folder: Path) -> Path:
    """A copy of the .cfg with sample_count = n (its own uncommented sample_count lines dropped)."""
    lines = [ln for ln in cfg.read_text().splitlines() if not re.match(r"\s*sample_count\s*=", ln)]
    out = folder / cfg.name
    out.write_text("\n".join(lines) + f"\nsample_count = {n};\n")
    return out


def probtraj(path: Path) -> dict[float, dict[str, tuple[float, float]]]:
    """Time -> state (nodes sorted) -> (probability, error) of a MaBoSS probtraj CSV."""
    rows = {}
    for line in path.read_text().splitlines()[1:]:
        f = line.split("\t")
        if len(f) < 5:
            continue
        rows[round(float(f[0]), 6)] = {_label(f[i]): (float(f[i + 1]), float(f[i + 2]))
                                       for i in range(5, len(f) - 2, 3)}
    return rows


def _label(state: str) -> str:
    """A state's label with its nodes sorted (the two tools may list them in different orders)."""
    return " -- ".join(sorted(state.split(" -- ")))


def compare(ds_csv: Path, peer_csv: Path, n_ds: int, n_peer: int) -> dict:
    """Every (window, state) of two probtraj CSVs of n_ds and n_peer trajectories, two-sample tests.

    A window average is the mean of per-trajectory values in [0, 1], whose variance is at most p (1 - p):
    ``z`` = |dp| / sqrt(p (1 - p) (1/n_ds + 1/n_peer)), p pooled and kept 1/(n_ds + n_peer) from 0 and 1,
    never exceeds the true z, so a large one is a real difference. ``z_se`` uses the written standard
    errors (the peer's, or distsim's scaled to n_peer where the peer writes 0, as MaBoSS.GPU does): tighter,
    but no basis for rare states (a state one trajectory visits briefly has an error about its probability:
    z in the hundreds between two correct runs). ``crit``: the two-sided Bonferroni bound at a family-wise
    level 1e-3 over the cells compared. Returns the largest of each, the cells where they occur (time, state,
    p and error of each side), ``all`` cells and ``text``, the table's cell."""
    from scipy import stats

    a, b = probtraj(ds_csv), probtraj(peer_csv)
    cells = []
    for t in sorted(set(a) & set(b)):
        for s in sorted(set(a[t]) | set(b[t])):
            pa, ea = a[t].get(s, (0.0, 0.0))
            pb, eb = b[t].get(s, (0.0, 0.0))
            eps = 1.0 / (n_ds + n_peer)
            p = min(max((pa * n_ds + pb * n_peer) * eps, eps), 1.0 - eps)
            z = abs(pa - pb) / math.sqrt(p * (1.0 - p) * (1 / n_ds + 1 / n_peer))
            se = math.hypot(ea, eb if eb > 0 else ea * math.sqrt(n_ds / n_peer))
            z_se = abs(pa - pb) / se if se > 0 else 0.0
            cells.append({"time": t, "state": s, "p_ds": pa, "err_ds": ea, "p_peer": pb, "err_peer": eb,
                          "dp": abs(pa - pb), "z": z, "z_se": z_se})
    if not cells:
        return {"text": "no common windows", "cells": 0}
    crit = float(stats.norm.isf(1e-3 / (2 * len(cells))))
    out: dict = {"cells": len(cells), "crit": crit, "peer_errors": any(c["err_peer"] > 0 for c in cells),
                 "all": cells}
    for key in ("dp", "z", "z_se"):
        out["worst_" + key] = max(cells, key=lambda c: c[key])
    out["dp"], out["z"], out["z_se"] = (out["worst_" + k][k] for k in ("dp", "z", "z_se"))
    out["text"] = f"{out['dp']:.2g} (z {out['z']:.1f}{' > ' if out['z'] > crit else ' <= '}{crit:.1f})"
    return out


def float32_bias(p: float, n: int, tick: float) -> float:
    """What MaBoSS.GPU reads for a window probability p of n trajectories if each adds one whole window to a
    float32 sum (its ``atomicAdd``): the sum of k = round(p n) adds of float32(tick), each rounded to the running
    sum's spacing, over n float32(tick), minus k / n. Per binade of the sum every add moves it by the same rounded
    step, so the loop runs once per binade."""
    x = np.float32(tick)
    k, s, i = int(round(p * n)), np.float32(0.0), 0
    while i < k:
        step = np.float32(s + x) - s  # the rounded step while the sum stays in this binade
        if s == 0 or step <= 0:
            s, i = np.float32(s + x), i + 1
            continue
        top = 2.0 ** (math.floor(math.log2(float(s))) + 1)
        m = max(1, min(k - i, int((top - float(s)) // float(step))))
        s, i = np.float32(float(s) + m * float(step)), i + m
    return float(s / (np.float32(n) * x)) - k / n  # k / n, not p: no rounding of p n in the bias


def describe_cell(c: dict) -> str:
    return (f"t={c['time']:g} {c['state']!r}: distsim {c['p_ds']:.6g} +- {c['err_ds']:.2g}, peer {c['p_peer']:.6g}"
            f" +- {c['err_peer']:.2g} (dp {c['dp']:.3g}, z {c['z']:.2f}, z_se {c['z_se']:.1f})")


def run_peer(bin_: str, bnd: Path, cfg: Path, prefix: Path) -> tuple[float, float]:
    """(simulation seconds by MaBoSS.GPU's own timer, whole-process seconds)."""
    t = time.perf_counter()
    r = subprocess.run([bin_, "-o", str(prefix), str(bnd), str(cfg)], capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError(f"MaBoSS.GPU failed ({r.returncode}): {(r.stderr or r.stdout)[-800:]}")
    agg = r.stderr.split("Aggregate stats:")[-1]
    m = re.search(r"main> simulation\s*:\s*(\d+) us", agg)
    return (int(m.group(1)) * 1e-6 if m else math.nan), wall


def run_distsim_process(bnd: Path, cfg: Path, n: int, prefix: Path) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "distsim", "maboss", str(bnd), str(cfg), "-n", str(n), "--csv", str(prefix),
                    "-q", "--overwrite"], check=True, cwd=ROOT, capture_output=True, timeout=600)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--patch", type=Path, default=None, metavar="SRC")
    ap.add_argument("--peer-bin", default="")
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--models", nargs="+", default=["sizek", "Montagud2022_Prostate_Cancer", "metastasis", "cellcycle"])
    ap.add_argument("--trajectories", nargs="+", type=int, default=[100000, 1000000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.patch is not None:
        patch(args.patch)
        return
    if args.data is None:
        ap.error("--data is needed (MaBoSS.GPU's data folder)")

    from distsim.maboss import load, maboss

    lines = ["| model | N | MaBoSS.GPU sim s | distsim warm s | warm ratio | MaBoSS.GPU process s | "
             "distsim process s | process ratio | max abs dp (z vs bound) |", "|---|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name in args.models:
            bnd = args.data / f"{name}.bnd"
            maboss(bnd, args.data / f"{name}.cfg", trajectories=1000, backend="gpu", progress=False)  # compile
            for n in args.trajectories:
                cfg = with_samples(args.data / f"{name}.cfg", n, tmp)
                warm = min(_timed(lambda: maboss(bnd, cfg, backend="gpu", progress=False))
                           for _ in range(args.repeats))
                # one more warm run, untimed, with distsim's phases on stderr (the call's and each chunk's)
                os.environ["DISTSIM_MABOSS_PROFILE"] = "1"
                try:
                    maboss(bnd, cfg, backend="gpu", progress=False)
                finally:
                    del os.environ["DISTSIM_MABOSS_PROFILE"]
                proc = min(run_distsim_process(bnd, cfg, n, tmp / f"ds_{name}") for _ in range(args.repeats))
                if n == args.trajectories[0]:  # where the new process's time goes (maboss_process.py)
                    try:
                        rows, wall = phases(["maboss", str(bnd), str(cfg), "-n", str(n), "--csv",
                                             str(tmp / f"ph_{name}"), "-q", "--overwrite"])
                        for what, w, c in rows:
                            print(f"[maboss_gpu_peer] {name} N={n:.0e} phase {w:7.3f} s ({c:6.3f} s CPU) {what}",
                                  file=sys.stderr)
                        print(f"[maboss_gpu_peer] {name} N={n:.0e} phase {wall:7.3f} s whole process", file=sys.stderr)
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        print(f"[maboss_gpu_peer] phases failed: {str(e)[-300:]}", file=sys.stderr)
                sim = wall = math.nan
                cmp = "-"
                if args.peer_bin:
                    try:
                        runs = [run_peer(args.peer_bin, bnd, cfg, tmp / f"peer_{name}") for _ in range(args.repeats)]
                        sim, wall = min(r[0] for r in runs), min(r[1] for r in runs)
                        res = compare(tmp / f"ds_{name}_probtraj.csv", tmp / f"peer_{name}_probtraj.csv", n, n)
                        cmp = res["text"]
                        st = load(bnd, cfg).settings
                        for key, what in (("dp", "largest |dp|"), ("z", "largest z"), ("z_se", "largest z_se")):
                            if key in res:
                                c = res["worst_" + key]
                                bias = "" if st.discrete_time else (
                                    f"; MaBoSS.GPU's float32 sums of whole windows move it by "
                                    f"{float32_bias(c['p_ds'], n, st.time_tick):+.2g}")
                                print(f"[maboss_gpu_peer] {name} N={n:.0e} {what}: {describe_cell(c)}{bias}",
                                      file=sys.stderr, flush=True)
                    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
                        cmp = f"peer failed: {str(e)[-200:]}".replace("\n", " ").replace("|", "/")
                lines.append(f"| {name} | {n:.0e} | {sim:.3f} | {warm:.3f} | {warm / sim:.2f} | {wall:.3f} | "
                             f"{proc:.3f} | {proc / wall:.2f} | {cmp} |")
                print(lines[-1], file=sys.stderr, flush=True)
    emit(lines, args.out)


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
