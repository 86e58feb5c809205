"""Issue 3: a local cluster that only its owner can use (mutual TLS with a temporary certificate),
and the sizing and reach of clusters (issue 32): usable CPUs, --scheduler-file, an unreachable
scheduler answered within the connect timeout."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
import time
from typing import Any

import pytest
from distributed import Client
from distributed.security import Security

import distsim
from distsim import cluster
from distsim.cli import main


@pytest.fixture(scope="module")
def owned():
    """distsim's default local cluster (what every command and ``distsim.connect()`` start)."""
    client = distsim.connect(gpus=False, n_workers=1)
    yield client
    client.close()


def test_the_owner_runs_code_on_the_default_cluster(owned):
    assert owned.scheduler.address.startswith("tls://127.0.0.1:")
    assert owned.submit(sum, [1, 2, 3]).result() == 6
    assert list(owned.run(os.getpid).values()) != [os.getpid()]  # ran in the worker process
    workers = owned.scheduler_info(n_workers=-1)["workers"]
    assert workers and all(a.startswith("tls://") for a in workers)


def _refused(error: type[Exception], match: str | None, *args: Any, **kwargs: Any) -> None:
    """``Client(*args, **kwargs)`` fails with ``error``; the failed client is finalized at once, as
    distsim.connect does (cluster.collect_failed_clients), not inside the next client's start."""
    with pytest.raises(error, match=match):
        Client(*args, **kwargs)
    cluster.collect_failed_clients()


def _handshake(address: str, security: Security | None) -> None:
    """Open one Dask connection to ``address`` and ask who is there."""
    from distributed.comm import connect

    async def go() -> None:
        args = security.get_connection_args("client") if security else {}
        comm = await connect(address, timeout=3, **args)
        try:
            await comm.write({"op": "identity", "reply": True})
            assert (await comm.read())["type"] in ("Scheduler", "Worker", "Nanny")
        finally:
            await comm.close()

    asyncio.run(go())


def test_a_client_without_the_clusters_certificate_is_refused(owned):
    """Another local account has no copy of the cluster's key: a plain client, one with a certificate
    of its own, or plain TCP to the TLS ports, reach neither the scheduler nor a worker nor a nanny."""
    workers = owned.scheduler_info(n_workers=-1)["workers"]
    addresses = [owned.scheduler.address, *workers, *(w["nanny"] for w in workers.values())]
    own = owned.security
    for address in addresses:
        _handshake(address, own)  # the owner's certificate opens every port
        with pytest.raises(TypeError, match="TLS"):  # no certificate at all: Dask will not even try
            _handshake(address, None)
        t0 = time.perf_counter()
        with pytest.raises(OSError):  # a certificate the cluster's key did not sign (CommClosedError)
            _handshake(address, Security.temporary())
        assert time.perf_counter() - t0 < 10
        with pytest.raises(OSError):
            _handshake(address.replace("tls://", "tcp://"), None)
    _refused(OSError, "certificate", owned.scheduler.address, security=Security.temporary(), timeout=3)
    assert owned.submit(sum, [4]).result() == 4  # the owner is still served


def test_a_refused_connect_leaves_no_client_to_the_garbage_collector(owned):
    """A Client whose start failed is garbage that ``Client.__del__`` closes, taking distributed's
    class-wide LoopRunner lock: collected inside another client's start (which holds it), it hangs.
    distsim.connect finalizes it before raising, so a later collection finds nothing to close."""
    import gc
    import threading

    from distributed.utils import LoopRunner

    gc.collect()  # what earlier tests left
    with pytest.raises(ValueError, match="speaks TLS"):
        distsim.connect(owned.scheduler.address, timeout=3)  # no certificates
    done = threading.Event()
    with LoopRunner._lock:  # held, as by a client's start that the collection interrupts
        threading.Thread(target=lambda: (gc.collect(), done.set()), daemon=True).start()
        assert done.wait(10), "a failed client was left for the garbage collector"


def test_tls_without_a_client_certificate_is_refused_by_the_server(owned):
    """A TLS client that skips checking the server and shows no certificate of its own gets no
    session: the scheduler requires a certificate signed by the cluster's own key."""
    host, port = owned.scheduler.address.removeprefix("tls://").rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            with ctx.wrap_socket(raw) as tls:  # TLS 1.3: the refusal arrives with the first read
                tls.sendall(b"\0" * 64)
                if not tls.recv(1):
                    raise ConnectionError("closed by the scheduler")


def test_an_open_cluster_only_on_request():
    with distsim.connect(gpus=False, n_workers=1, security=False) as client:
        assert client.scheduler.address.startswith("tcp://")
        with Client(client.scheduler.address, timeout=5) as other:  # anyone on this machine: the old default
            assert other.submit(sum, [1]).result() == 1


def test_a_shared_cluster_with_given_certificates():
    """A cluster shared on purpose: its certificates are given, and a client holding them connects."""
    sec = Security.temporary()
    with distsim.connect(gpus=False, n_workers=1, security=sec) as client:
        with distsim.connect(client.scheduler.address, security=sec) as other:
            assert other.submit(sum, [2, 3]).result() == 5


# ---- sizing ---------------------------------------------------------------------------------------

def test_usable_cpus_follow_affinity_and_cgroup_quota(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(os, "cpu_count", lambda: 128)
    monkeypatch.setattr(cluster, "_cgroup_cpu_quota", lambda: None)
    assert cluster.usable_cpus() == 4  # a 4-core SLURM allocation on a 128-core node
    monkeypatch.setattr(cluster, "_cgroup_cpu_quota", lambda: 2.5)
    assert cluster.usable_cpus() == 3  # a container limited to 2.5 CPUs: 3 workers
    monkeypatch.setattr(cluster, "_cgroup_cpu_quota", lambda: 0.2)
    assert cluster.usable_cpus() == 1


def test_cgroup_quota_v2_and_v1(tmp_path):
    proc = tmp_path / "cgroup"
    proc.write_text("0::/job_42/step_0\n")
    group = tmp_path / "job_42" / "step_0"
    group.mkdir(parents=True)
    (group / "cpu.max").write_text("400000 100000\n")
    assert cluster._cgroup_cpu_quota(tmp_path, proc) == 4.0
    (group / "cpu.max").write_text("max 100000\n")
    assert cluster._cgroup_cpu_quota(tmp_path, proc) is None
    v1 = tmp_path / "v1"
    proc.write_text("4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n")
    (v1 / "cpu,cpuacct" / "docker" / "abc").mkdir(parents=True)
    (v1 / "cpu,cpuacct" / "docker" / "abc" / "cpu.cfs_quota_us").write_text("150000\n")
    (v1 / "cpu,cpuacct" / "docker" / "abc" / "cpu.cfs_period_us").write_text("100000\n")
    assert cluster._cgroup_cpu_quota(v1, proc) == 1.5
    (v1 / "cpu,cpuacct" / "docker" / "abc" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cluster._cgroup_cpu_quota(v1, proc) is None


def test_connect_sizes_cpu_workers_by_usable_cpus(monkeypatch):
    seen = {}

    class Fake:
        def __init__(self, **kw):
            seen.update(kw)
            raise RuntimeError("stop here")

    monkeypatch.setattr(cluster, "usable_cpus", lambda: 3)
    monkeypatch.setattr(cluster, "LocalCluster", Fake)
    with pytest.raises(RuntimeError, match="stop here"):
        distsim.connect(gpus=False)
    assert seen["n_workers"] == 3 and isinstance(seen["security"], Security)


# ---- reaching a scheduler -------------------------------------------------------------------------

def test_an_unreachable_scheduler_answers_within_the_timeout():
    t0 = time.perf_counter()
    with pytest.raises(ConnectionError, match="cannot reach the Dask scheduler at tcp://192.0.2.1:8786 within 2 s"):
        distsim.connect("tcp://192.0.2.1:8786", timeout=2)  # TEST-NET-1: never answers
    assert time.perf_counter() - t0 < 6


def test_scheduler_file(dask_client, tmp_path, capsys):
    f = tmp_path / "scheduler.json"
    f.write_text(json.dumps({"address": dask_client.scheduler.address, "type": "Scheduler"}))
    with distsim.connect(scheduler_file=f) as client:
        assert client.submit(sum, [1, 1]).result() == 2
    with pytest.raises(FileNotFoundError, match="scheduler file .*nope.json does not exist"):
        distsim.connect(scheduler_file=tmp_path / "nope.json")
    net = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "ssa", "michaelis_menten.rxn")
    out = tmp_path / "r.nc"
    rc = main(["--scheduler-file", str(f), "-q", "ssa", "simulate", net, "--t-end", "1", "-n", "64", "--cpu",
               "-o", str(out)])
    assert rc == 0 and out.exists(), capsys.readouterr().err
    assert main(["--scheduler-file", str(tmp_path / "nope.json"), "-q", "ssa", "simulate", net, "--t-end", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.json does not exist" in err
    assert dask_client.status == "running"


# ---- every GPU: distsim info and provenance (without a GPU: NVML and CuPy stand-ins) --------------

class _FakeNVML:
    """What ``distsim info`` reads of NVML, for two H200s."""

    def __init__(self):
        self.inits = 0

    def nvmlInit(self):
        self.inits += 1

    def nvmlShutdown(self):
        self.inits -= 1

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlSystemGetDriverVersion(self):
        return "580.65.06"

    def nvmlSystemGetCudaDriverVersion(self):
        return 13000

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return (9, 0)

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA H200"

    def nvmlDeviceGetMemoryInfo(self, h):
        return type("Mem", (), {"total": 141 * 2**30})()

    def nvmlDeviceGetPciInfo(self, h):
        return type("Pci", (), {"busId": f"00000000:{0x19 + h:02X}:00.0"})()


def test_info_lists_every_gpu(monkeypatch, capsys):
    import sys

    from distsim import backends

    fake = _FakeNVML()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.delenv("DISTSIM_DISABLE_GPU", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(backends, "resolve", lambda b="auto": "cpu")  # no CuPy asked
    monkeypatch.setattr(cluster, "_gpu_stack_usable", lambda: False)
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "GPUs seen (NVML): 2" in out and "driver 580.65.06, CUDA 13.0" in out
    for i, bus in ((0, "00000000:19:00.0"), (1, "00000000:1A:00.0")):
        assert f"GPU {i}: NVIDIA H200, 141.0 GiB, compute capability 9.0, PCI {bus}" in out
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert [g["index"] for g in cluster.gpu_inventory()] == [1]
    assert fake.inits == 0  # every nvmlInit shut down


def test_provenance_lists_every_gpu_that_ran(monkeypatch):
    """Two dask-cuda workers each see their own GPU as CUDA device 0: provenance names the physical
    GPUs (their index in CUDA_VISIBLE_DEVICES, and PCI bus), so a 2-GPU run lists two devices."""
    import sys
    import types

    from distsim import backends, results

    buses = {"0": "0000:19:00.0", "1": "0000:2A:00.0"}

    def fake_cupy():
        class Device:
            id = 0

            @property
            def pci_bus_id(self):
                return buses[os.environ["CUDA_VISIBLE_DEVICES"].split(",")[0]]

        runtime = types.SimpleNamespace(getDeviceProperties=lambda i: {"name": b"NVIDIA H200"})
        return types.SimpleNamespace(cuda=types.SimpleNamespace(Device=Device, runtime=runtime))

    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    backends._gpu_description.cache_clear()  # asked once per device and process: forget any real GPU
    devices = []
    for visible in ("0,1", "1,0"):  # dask-cuda's rotation: worker k lists GPU k first
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        devices.append(backends.device_description("gpu"))
    assert devices[0].startswith("NVIDIA H200 (GPU 0, PCI 0000:19:00.0") and "GPU 1, PCI 0000:2A:00.0" in devices[1]
    backends._gpu_description.cache_clear()  # the fake GPUs' names stay in this test
    attrs = results.provenance(workload="ssa.simulate", devices=devices * 2)
    assert attrs["devices"] == ", ".join(sorted(devices))


def test_the_cli_answers_an_unreachable_scheduler_within_10_s(tmp_path):
    """The issue: 40 s before an answer. The default connect timeout is 10 s (plus the start of Python)."""
    import subprocess
    import sys

    net = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "ssa", "michaelis_menten.rxn")
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "distsim", "--scheduler", "tcp://192.0.2.1:8786", "-q", "ssa",
                           "simulate", net, "--t-end", "1"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": os.path.join(os.path.dirname(__file__), "..", "..")})
    elapsed = time.perf_counter() - t0
    assert done.returncode == 2 and elapsed < 10 + 5, (elapsed, done.stderr)
    assert done.stderr.count("\n") == 1 and "cannot reach the Dask scheduler at tcp://192.0.2.1:8786 within 10 s" \
        in done.stderr, done.stderr


@pytest.mark.gpu
def test_the_default_gpu_cluster_is_the_owners_alone():
    """On a GPU machine ``connect()`` starts dask-cuda's LocalCUDACluster (or pinned LocalCluster workers)
    with the same temporary-certificate TLS: the owner runs GPU work, a plain client is refused."""
    from distsim import backends

    with distsim.connect() as client:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        assert client.scheduler.address.startswith("tls://") and all(a.startswith("tls://") for a in workers)
        assert all(w["resources"].get("GPU") == 1 for w in workers.values())
        def device() -> str:  # as a shard task sees it (engine.executor)
            import cupy

            from distsim.engine.executor import _gpu_index

            with cupy.cuda.Device(_gpu_index()):
                return backends.device_description("gpu")

        assert len(set(client.run(device).values())) == len(workers)  # provenance tells the GPUs apart
        _refused(TypeError, "TLS", client.scheduler.address, timeout=3)
        _refused(OSError, None, client.scheduler.address, security=Security.temporary(), timeout=3)
