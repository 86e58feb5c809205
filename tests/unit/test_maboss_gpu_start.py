"""``distsim maboss`` on a GPU starts CuPy, the device check and the CUDA context in a background thread
while it imports NumPy/xarray and reads the model (issue 31): only for an in-process run that may use the
GPU; harmless without a GPU or CuPy (the thread finds none, says nothing); the same result."""

from __future__ import annotations

import subprocess
import sys
import threading
import types
from pathlib import Path

import dask
import numpy as np
import pytest
import xarray as xr

from distsim import backends
from distsim.cli import common, main
from distsim.engine import executor

ROOT = Path(__file__).resolve().parents[2]
BND = ROOT / "tests" / "data" / "maboss" / "toggle_internal.bnd"


@pytest.fixture
def started(monkeypatch):
    """The threads start_gpu started (and the backend each was asked for)."""
    threads: list[tuple[str | None, threading.Thread]] = []
    real = executor.start_gpu

    def spy(backend):
        t = real(backend)
        threads.append((backend, t))
        return t

    monkeypatch.setattr(executor, "start_gpu", spy)
    return threads


def _argv(tmp_path: Path, name: str, *extra: str) -> list[str]:
    return ["-q", "maboss", str(BND), "-n", "300", "--seed", "2", "-o", str(tmp_path / name), *extra]


def test_in_process_run_starts_the_gpu_meanwhile_and_joins_it(tmp_path, started, monkeypatch, capfd):
    monkeypatch.setattr(backends, "count_gpus", lambda: 1)  # one GPU (or none): this process runs it
    monkeypatch.delenv("DISTSIM_DISABLE_GPU", raising=False)  # (--cpu sets it for the process: undone after)
    hooks: list = []
    monkeypatch.setattr(threading, "excepthook", lambda a: hooks.append(a))
    assert main(_argv(tmp_path, "auto.nc")) == 0
    assert [b for b, _ in started] == [None] and not started[0][1].is_alive()  # joined when the command ended
    auto = capfd.readouterr()
    assert main(_argv(tmp_path, "cpu.nc", "--cpu")) == 0
    assert len(started) == 1  # --cpu: no thread
    cpu = capfd.readouterr()
    assert auto.err == cpu.err == "" and not hooks
    if not backends.gpu_available():  # here: the CPU run, the same answer and output
        lines = [out.replace(name, "X").splitlines() for out, name in ((auto.out, "auto.nc"), (cpu.out, "cpu.nc"))]
        assert lines[0][:-1] == lines[1][:-1] and lines[0][-1].startswith("total ")  # (but the time taken)
    with xr.open_dataset(tmp_path / "auto.nc") as a, xr.open_dataset(tmp_path / "cpu.nc") as c:
        for k in c.data_vars:
            np.testing.assert_array_equal(a[k].values, c[k].values)  # CPU and GPU: the same bits


@pytest.mark.parametrize("extra", [("--workers", "2"), ("--scheduler", "tcp://127.0.0.1:1")])
def test_no_thread_under_dask(tmp_path, started, monkeypatch, extra):
    from distsim.errors import UsageError

    def no_cluster(*a, **k):
        raise UsageError("no cluster in this test")

    monkeypatch.setattr(common, "_start", no_cluster)
    assert main(_argv(tmp_path, "d.nc", *extra)) == 2
    assert started == []


def test_the_thread_says_nothing_of_its_errors(monkeypatch, capfd):
    hooks: list = []
    monkeypatch.setattr(threading, "excepthook", lambda a: hooks.append(a))

    def broken():
        raise RuntimeError("CUDA driver version is insufficient")

    monkeypatch.setattr(backends, "gpu_available", broken)
    executor.start_gpu(None).join()
    monkeypatch.setitem(sys.modules, "cupy", None)  # CuPy not installed: the import fails
    monkeypatch.setattr(backends, "gpu_available", lambda: True)
    executor.start_gpu("gpu").join()
    assert not hooks and capfd.readouterr() == ("", "")


class _FakeCupy(types.ModuleType):
    """What the thread does with CuPy, recorded."""

    def __init__(self):
        super().__init__("cupy")
        self.calls: list = []
        self.uint8 = np.uint8
        fake = self

        class Device:
            def __init__(self, i):
                self.i = i

            def __enter__(self):
                fake.calls.append(("device", self.i))

            def __exit__(self, *exc):
                fake.calls.append(("left", self.i))

        self.cuda = types.SimpleNamespace(Device=Device)

    def empty(self, n, dtype=None):
        self.calls.append(("empty", n, dtype))


@pytest.mark.parametrize("backend, config, expected", [
    (None, "auto", True), ("gpu", "cpu", True), ("auto", "cpu", True),
    (None, "cpu", False),  # DASK_DISTSIM__BACKEND=cpu: the GPU is not touched
    ("cpu", "auto", False),
    (None, "bogus", False),  # (the run itself names the bad value)
])
def test_which_backend_starts_the_gpu(monkeypatch, backend, config, expected):
    asked: list = []
    monkeypatch.setattr(backends, "gpu_available", lambda: asked.append(1) or True)
    fake = _FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with dask.config.set({"distsim.backend": config}):
        executor.start_gpu(backend).join()
    if expected:
        # the device a shard in this process uses (executor._gpu_index: 0 outside a Dask worker), then a first array
        assert asked == [1] and fake.calls == [("device", 0), ("empty", 1, np.uint8), ("left", 0)]
    else:
        assert asked == [] and fake.calls == []


@pytest.mark.gpu
def test_gpu_process_same_answer_as_the_cpu(tmp_path):
    """On a GPU: the console-script run (GPU started in the background) gives the CPU run's bits."""
    runs = {}
    for tag, extra in (("gpu", []), ("cpu", ["--cpu"])):
        out = tmp_path / f"{tag}.nc"
        r = subprocess.run([sys.executable, "-m", "distsim", "maboss", str(BND), "-n", "20000", "--seed", "9",
                            "-o", str(out), *extra], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        runs[tag] = out
    with xr.open_dataset(runs["gpu"]) as g, xr.open_dataset(runs["cpu"]) as c:
        assert g.attrs["backend"] == "gpu" and c.attrs["backend"] == "cpu"
        for k in c.data_vars:
            np.testing.assert_array_equal(g[k].values, c[k].values)
