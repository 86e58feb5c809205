"""Deployments: a loopback `dask scheduler` + 2 `dask worker` processes (plain TCP and mutual TLS) run
distsim through `--scheduler`; the SLURM job script is built by dask-jobqueue; the Kubernetes
DaskCluster manifest is parsed and checked."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deployments"
MM = ROOT / "examples" / "ssa" / "michaelis_menten.rxn"
SSA_ARGS = ["ssa", "simulate", str(MM), "--t-end", "20", "--points", "5", "-n", "256", "--seed", "3"]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    out = tmp_path_factory.mktemp("tls")
    return _load(DEPLOY / "tls" / "make_certs.py", "make_certs").make_certs(out, ["127.0.0.1"])


def _tls_flags(certs: dict) -> list[str]:
    return ["--tls-ca-file", str(certs["ca"]), "--tls-cert", str(certs["cert"]), "--tls-key", str(certs["key"])]


@contextlib.contextmanager
def loopback_cluster(tmp: Path, tls: dict | None = None):
    """`dask scheduler` and 2 single-threaded `dask worker` processes on 127.0.0.1; yields the address."""
    env = dict(os.environ, DISTSIM_DISABLE_GPU="1", DASK_DISTSIM__BACKEND="cpu")
    sfile = tmp / "scheduler.json"
    extra = _tls_flags(tls) if tls else []
    dask = [sys.executable, "-m", "dask"]
    procs = [subprocess.Popen(dask + ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                      "--scheduler-file", str(sfile)] + (["--protocol", "tls"] if tls else []) + extra,
                              env=env, stdout=subprocess.DEVNULL, stderr=open(tmp / "scheduler.log", "w"))]
    try:
        deadline = time.time() + 60
        while not sfile.exists() and time.time() < deadline:
            time.sleep(0.05)
        assert sfile.exists(), (tmp / "scheduler.log").read_text()
        address = json.loads(sfile.read_text())["address"]
        for i in range(2):
            procs.append(subprocess.Popen(dask + ["worker", address, "--nthreads", "1", "--no-dashboard",
                                                  "--name", f"w{i}", "--resources", "CPU=1"] + extra,
                                          env=env, stdout=subprocess.DEVNULL,
                                          stderr=open(tmp / f"worker{i}.log", "w")))
        yield address
    finally:
        for p in procs[::-1]:
            p.kill()  # throw-away processes: no graceful shutdown needed
        for p in procs:
            p.wait(timeout=20)


def _client(address: str, security=None):
    from distributed import Client

    client = Client(address, security=security, set_as_default=False, timeout=30)
    client.wait_for_workers(2, timeout=60)
    return client


def _run_cli(address: str, out: Path, env_extra: dict | None = None) -> None:
    env = dict(os.environ, DISTSIM_DISABLE_GPU="1", **(env_extra or {}))
    r = subprocess.run([sys.executable, "-m", "distsim", "--scheduler", address, "--quiet", *SSA_ARGS, "-o", str(out)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.fixture(scope="module")
def reference():
    import distsim.ssa as ssa
    from distsim.engine import LocalExecutor

    return ssa.simulate(ssa.load(MM), t_end=20, points=5, realizations=256, seed=3, client=LocalExecutor("cpu"))


def test_loopback_scheduler_and_workers(tmp_path, reference):
    import distsim
    import distsim.ssa as ssa
    from distsim.engine import LocalExecutor

    with loopback_cluster(tmp_path) as address:
        client = _client(address)
        try:
            _run_cli(address, tmp_path / "cli.nc")  # the CLI through --scheduler
            grid = {"k1": [1e-3, 2e-3], "S": [100, 301]}
            ds = distsim.sweep(ssa.simulate, ssa.load(MM), grid, seed=2, client=client, chunk_size=1,
                               t_end=10.0, points=3, realizations=64)
        finally:
            client.close()
    out = xr.open_dataset(tmp_path / "cli.nc", engine="h5netcdf")
    assert "dask (2 workers" in out.attrs["executor"]
    assert np.array_equal(out["mean"].values, reference["mean"].values)
    assert np.array_equal(out["final_state"].values, reference["final_state"].values)
    ref = distsim.sweep(ssa.simulate, ssa.load(MM), grid, seed=2, client=LocalExecutor("cpu"), t_end=10.0, points=3,
                        realizations=64)
    assert np.array_equal(ds["mean"].values, ref["mean"].values)


def test_loopback_tls(tmp_path, certs, reference):
    from distributed.security import Security

    with loopback_cluster(tmp_path, tls=certs) as address:
        assert address.startswith("tls://")
        sec = Security(tls_ca_file=str(certs["ca"]), tls_client_cert=str(certs["cert"]),
                       tls_client_key=str(certs["key"]), require_encryption=True)
        client = _client(address, sec)
        client.close()
        env = {"DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True",
               "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(certs["ca"]),
               "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": str(certs["cert"]),
               "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": str(certs["key"])}
        _run_cli(address, tmp_path / "tls.nc", env)  # the CLI gets its certificates from the Dask config
    out = xr.open_dataset(tmp_path / "tls.nc", engine="h5netcdf")
    assert np.array_equal(out["mean"].values, reference["mean"].values)


def test_slurm_job_script(certs):
    pytest.importorskip("dask_jobqueue")
    mod = _load(DEPLOY / "slurm" / "slurm_cluster.py", "slurm_cluster")
    cluster = mod.make_cluster("gpu", certs=certs["ca"].parent, scheduler_options={"host": "127.0.0.1"})
    try:
        script = cluster.job_script()
        assert cluster.scheduler_address.startswith("tls://")
    finally:
        cluster.close()
    assert script.startswith("#!/usr/bin/env bash")
    assert "#SBATCH --gres=gpu:4" in script and "#SBATCH -p gpu" in script and "#SBATCH -t 04:00:00" in script
    assert "-m dask_cuda.cli tls://" in script and "--resources GPU=1" in script
    for flag in ("--tls-ca-file", "--tls-cert", "--tls-key"):
        assert flag in script
    assert "source $HOME/distsim/.venv/bin/activate" in script
    cpu = mod.make_cluster("cpu", scheduler_options={"host": "127.0.0.1"})
    try:
        cpu_script = cpu.job_script()
    finally:
        cpu.close()
    assert "distributed.cli.dask_worker" in cpu_script and "--nworkers 32" in cpu_script
    assert "DASK_DISTSIM__BACKEND=cpu" in cpu_script


def test_kubernetes_manifest():
    doc = yaml.safe_load((DEPLOY / "kubernetes" / "daskcluster.yaml").read_text())
    assert doc["apiVersion"] == "kubernetes.dask.org/v1" and doc["kind"] == "DaskCluster"
    name = doc["metadata"]["name"]
    worker, sched = doc["spec"]["worker"], doc["spec"]["scheduler"]
    assert isinstance(worker["replicas"], int) and worker["replicas"] >= 1
    (w,) = worker["spec"]["containers"]
    (s,) = sched["spec"]["containers"]
    assert w["image"] == s["image"]
    assert w["args"][:3] == ["dask", "cuda", "worker"] and w["args"][3].startswith(f"tls://{name}-scheduler.")
    assert "GPU=1" in w["args"] and w["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert s["args"][:2] == ["dask", "scheduler"] and s["args"][s["args"].index("--protocol") + 1] == "tls"
    for c, spec in ((w, worker["spec"]), (s, sched["spec"])):
        args = c["args"]
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        vols = {v["name"]: v for v in spec["volumes"]}
        for flag in ("--tls-ca-file", "--tls-cert", "--tls-key"):
            assert args[args.index(flag) + 1].startswith(mounts["tls"] + "/")
        assert vols["tls"]["secret"]["secretName"] == "distsim-dask-tls"
    ports = {p["name"]: p["port"] for p in sched["service"]["ports"]}
    assert ports["tls-comm"] == 8786
    assert sched["service"]["selector"] == {"dask.org/cluster-name": name, "dask.org/component": "scheduler"}
    container_ports = {p["name"] for p in s["ports"]}
    assert {p["targetPort"] for p in sched["service"]["ports"]} <= container_ports
    docker = (DEPLOY / "kubernetes" / "Dockerfile").read_text()
    assert "FROM nvidia/cuda:" in docker and '".[gpu]"' in docker and "dask==2026.7.1" in docker
