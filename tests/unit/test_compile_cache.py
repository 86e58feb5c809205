"""Cold starts: compiled kernels are kept on disk across processes, and a compile is announced exactly
when one happens (never on a cached run).

* CPU: every ``njit`` of distsim has ``cache=True``; a second process loads every kernel from Numba's
  cache index (no compile event, no notice) and gives the same numbers.
* GPU (``gpu`` mark): a second process loads the NVRTC output from ``$DISTSIM_CACHE_DIR`` (no compile).
* The NVRTC cache key holds the source, every kernel file, the options (not the machine's ``-I`` path),
  the compute capability and the toolchain versions.
* A compile in a Dask worker reaches the client at once (event topic), and in-process tasks print it.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from distsim.backends import compiles, cuda
from distsim.engine import executor

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys, time
from distsim.backends import compiles
import distsim.pbn as pbn
net = pbn.load(sys.argv[1], perturbation=1e-3)
t = time.perf_counter()
ds = pbn.simulate(net, steps=50, trajectories=128, seed=3, keep_states=False, backend="cpu", progress=False)
print(json.dumps({"compiles": compiles.count(), "seconds": time.perf_counter() - t,
                  "frequency": ds["frequency"].values.ravel().tolist()}))
"""


def _child(tmp: Path) -> tuple[dict, str]:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp / "numba"), DISTSIM_CACHE_DIR=str(tmp / "distsim"),
               PYTHONPATH=str(ROOT))
    net = ROOT / "examples/pbn/bbm023_faure2006_mammalian_cell_cycle_10n.bnet"
    p = subprocess.run([sys.executable, "-c", CHILD, str(net)], env=env, capture_output=True, text=True, timeout=900,
                       cwd=tmp)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def test_every_numba_function_of_distsim_is_cached_on_disk():
    missing = []
    for path in (ROOT / "distsim").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for d in node.decorator_list:
                    name = ast.unparse(d.func if isinstance(d, ast.Call) else d)
                    if name.split(".")[-1] in ("njit", "jit") and not (
                            isinstance(d, ast.Call) and any(k.arg == "cache" and ast.unparse(k.value) == "True"
                                                            for k in d.keywords)):
                        missing.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not missing, missing


def test_a_second_process_loads_every_cpu_kernel_from_the_cache(tmp_path):
    cold, cold_err = _child(tmp_path)
    assert cold["compiles"] > 0
    assert cold_err.count("compiling CPU (Numba) kernels on first use") == 1, cold_err  # once, at the first compile
    index = list((tmp_path / "numba").rglob("*.nbi"))
    assert index, "no Numba cache index written"
    stamps = {p: p.stat().st_mtime_ns for p in index}
    warm, warm_err = _child(tmp_path)
    assert warm["compiles"] == 0 and "compiling" not in warm_err, warm_err
    assert warm["frequency"] == cold["frequency"]
    assert {p: p.stat().st_mtime_ns for p in index} == stamps  # read, not rewritten


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DISTSIM_CACHE_DIR", str(tmp_path / "d"))
    assert cuda.cache_dir() == tmp_path / "d"
    monkeypatch.delenv("DISTSIM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cuda.cache_dir() == tmp_path / "x" / "distsim"


def test_the_key_holds_source_options_headers_arch_and_toolchain(monkeypatch, tmp_path):
    kdir = tmp_path / "kernels"
    shutil.copytree(cuda.kernels_dir(), kdir)
    monkeypatch.setattr(cuda, "kernels_dir", lambda: kdir)
    tool = ((13, 0), 13000, 13000, "14.2.0")
    opts = ("-std=c++17", f"-I{kdir}", "--fmad=false")
    k = cuda.module_key("src", opts, "90", tool)
    assert k == cuda.module_key("src", ("-std=c++17", "-I/elsewhere", "--fmad=false"), "90", tool)  # not the path
    others = [cuda.module_key("src2", opts, "90", tool), cuda.module_key("src", opts[:2], "90", tool),
              cuda.module_key("src", opts, "80", tool), cuda.module_key("src", opts, "90", ((12, 9),) + tool[1:])]
    assert len({k, *others}) == 5
    time.sleep(0.01)
    (kdir / "philox.cuh").write_text((kdir / "philox.cuh").read_text() + "\n// edited\n")
    assert cuda.module_key("src", opts, "90", tool) != k  # a header edit is a new key


def test_cache_entries_are_written_whole(tmp_path):
    path = tmp_path / "nvrtc" / "abc.cubin"
    cuda._store(path, b"\x7fELF" + bytes(100))
    cuda._store(path, b"\x7fELF" + bytes(50))  # a second writer replaces it whole
    assert path.read_bytes() == b"\x7fELF" + bytes(50)
    assert [p.name for p in path.parent.iterdir()] == ["abc.cubin"]  # no temporary left


def test_a_compile_is_announced_once_per_task_and_counted(capsys):
    def task(ctx, p):
        for _ in range(2):
            with compiles.compiling("cpu", "Numba test.kernel"):
                with compiles.compiling("cpu", "Numba test.inner"):  # nested: one compile
                    time.sleep(0.01)
        return p

    n0 = compiles.count()
    _, meta = executor.execute_shard(task, "notice", 0, 0, 1, "cpu")
    err = capsys.readouterr().err
    assert err.count("compiling CPU (Numba) kernels on first use (Numba test.kernel)") == 1, err
    assert compiles.count() - n0 == 2 and meta["compile_s"] >= 0.02
    _, meta = executor.execute_shard(lambda ctx, p: p, "notice", 0, 0, 1, "cpu")
    assert "compiling" not in capsys.readouterr().err and meta["compile_s"] == 0.0


def test_a_worker_compile_reaches_the_client(dask_client, capsys):
    def task(ctx, p):
        with compiles.compiling("gpu", "NVRTC"):
            pass
        return p

    ex = executor.DaskExecutor(dask_client, "cpu")
    out = ex.run_round(task, "notice-run", 0, [1])
    assert out[0][0] == 1
    deadline = time.monotonic() + 10
    err = ""
    while time.monotonic() < deadline and "compiling GPU (NVRTC)" not in err:
        time.sleep(0.1)
        err += capsys.readouterr().err
    assert f"[distsim] {out[0][1]['worker']}: compiling GPU (NVRTC) kernels on first use (NVRTC)" in err, err


NVRTC_CHILD = """
import json, sys
import numpy as np, cupy as cp
from distsim.backends import compiles
from distsim.ssa import gpu
x = cp.asarray(np.arange(3 * 5000, dtype=np.int32).reshape(3, 5000) % 97)
s1, s2 = gpu.row_moments(x)
h = x.get().astype(np.int64)
assert (s1.get() == h.sum(axis=1)).all() and (s2.get() == (h * h).sum(axis=1)).all()
print(json.dumps({"compiles": compiles.count()}))
"""


@pytest.mark.gpu
def test_a_second_process_loads_the_nvrtc_output_from_disk(tmp_path):
    env = dict(os.environ, DISTSIM_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))

    def run() -> tuple[dict, str]:
        p = subprocess.run([sys.executable, "-c", NVRTC_CHILD], env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr

    first, _ = run()
    assert first["compiles"] >= 1
    entries = list((tmp_path / "nvrtc").iterdir())
    assert entries and all(e.suffix in (".cubin", ".ptx") for e in entries)
    second, _ = run()
    assert second["compiles"] == 0
    assert sorted((tmp_path / "nvrtc").iterdir()) == sorted(entries)
