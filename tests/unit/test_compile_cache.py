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
               PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
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
    env = dict(os.environ, DISTSIM_CACHE_DIR=str(tmp_path), PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))

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


class _FakeNVRTC:
    """Stands in for CuPy's NVRTC binding on a machine without CUDA: records each compile's options."""

    class NVRTCError(Exception):
        pass

    def __init__(self):
        self.compiled: list[list[str]] = []

    def getVersion(self):
        return (13, 0)

    def createProgram(self, src, name, headers, include_names):
        return 1

    def compileProgram(self, prog, options):
        self.compiled.append(list(options))
        if "#error" in self.src:
            raise self.NVRTCError("NVRTC_ERROR_COMPILATION (6)")

    def getCUBIN(self, prog):
        return b"\x7fELF cubin of " + self.src.encode()

    def getProgramLog(self, prog):
        return "kernel.cu(1): error: boom"

    def destroyProgram(self, prog):
        pass


def _fake_cuda(monkeypatch, tmp_path):
    import types

    nv = _FakeNVRTC()
    loaded = []

    class RawModule:
        def __init__(self, code=None, *, path=None, options=(), backend="nvrtc"):
            loaded.append(path)
            self.path = path

    cupy = types.SimpleNamespace(
        __version__="14.2.0", RawModule=RawModule,
        cuda=types.SimpleNamespace(Device=lambda: types.SimpleNamespace(id=0, compute_capability="90"),
                                   runtime=types.SimpleNamespace(runtimeGetVersion=lambda: 13000,
                                                                 driverGetVersion=lambda: 13000)))
    libs = types.SimpleNamespace(nvrtc=nv)
    for name, mod in {"cupy": cupy, "cupy_backends": types.SimpleNamespace(cuda=types.SimpleNamespace(libs=libs)),
                      "cupy_backends.cuda": types.SimpleNamespace(libs=libs), "cupy_backends.cuda.libs": libs,
                      "cupy_backends.cuda.libs.nvrtc": nv}.items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setenv("DISTSIM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cuda, "_MODULES", {})
    return nv, loaded


def test_load_module_compiles_once_per_machine_as_cupy_would(monkeypatch, tmp_path):
    nv, loaded = _fake_cuda(monkeypatch, tmp_path)
    nv.src = "extern \"C\" __global__ void k() {}"
    n0 = compiles.count()
    mod = cuda.load_module(nv.src, ("--fmad=false",))
    assert cuda.load_module(nv.src, ("--fmad=false",)) is mod  # once per process
    assert compiles.count() - n0 == 1 and len(nv.compiled) == 1
    opts = nv.compiled[0]
    assert opts[:2] == ["-std=c++17", f"-I{cuda.kernels_dir()}"]
    assert opts[2:] == ["--fmad=false", "-ftz=true", "--device-as-default-execution-space", "-arch=sm_90"]
    [entry] = (tmp_path / "nvrtc").iterdir()
    assert entry.suffix == ".cubin" and entry.read_bytes() == nv.getCUBIN(1) and loaded == [str(entry)]
    monkeypatch.setattr(cuda, "_MODULES", {})  # a new process: loaded from disk, no compile
    cuda.load_module(nv.src, ("--fmad=false",))
    assert len(nv.compiled) == 1 and compiles.count() - n0 == 1 and loaded == [str(entry)] * 2
    cuda.load_module(nv.src, ("--fmad=true",))  # other options: another entry
    assert len(nv.compiled) == 2 and len(list((tmp_path / "nvrtc").iterdir())) == 2


def test_a_failed_compile_names_the_log_and_caches_nothing(monkeypatch, tmp_path):
    nv, _ = _fake_cuda(monkeypatch, tmp_path)
    nv.src = "#error no"
    with pytest.raises(RuntimeError, match="(?s)NVRTC could not compile.*boom"):
        cuda.load_module(nv.src)
    assert not (tmp_path / "nvrtc").exists() or not list((tmp_path / "nvrtc").iterdir())


def test_a_compile_outside_tasks_is_announced_each_time(capsys):
    """E.g. the histogram pilot an SSA run simulates on the client before its tasks."""
    for _ in range(2):
        with compiles.compiling("cpu", "Numba distsim.ssa.cpu._simulate"):
            with compiles.compiling("cpu", "Numba distsim.ssa.cpu.run_realization"):
                pass
    err = capsys.readouterr().err
    assert err.count("compiling CPU (Numba) kernels on first use (Numba distsim.ssa.cpu._simulate)") == 2, err
    assert "run_realization" not in err
    with compiles.announce(None):
        with compiles.compiling("cpu", "x"):
            pass
    assert capsys.readouterr().err == ""
