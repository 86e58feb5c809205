"""Deployments: a loopback `dask scheduler` + 2 `dask worker` processes (plain TCP) and the dask-cli TLS
recipe's own scripts (role certificates, dashboards on loopback) run distsim through `--scheduler`; the
SLURM job script is built by dask-jobqueue; the Kubernetes manifest is parsed and checked."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.request import urlopen

import dask
import numpy as np
import psutil  # a dependency of distributed
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
def certs(tmp_path_factory) -> dict[str, Path]:
    return _load(DEPLOY / "tls" / "make_certs.py", "make_certs").make_certs(tmp_path_factory.mktemp("tls"))


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def _host(address: str) -> str:
    return address.split("://")[1].rsplit(":", 1)[0]


def _listening(pids: list[int]) -> dict[int, set[str]]:
    """port -> addresses, for every socket the processes ``pids`` and their children listen on."""
    found: dict[int, set[str]] = {}
    for pid in pids:
        root = psutil.Process(pid)
        for proc in [root, *root.children(recursive=True)]:
            for c in proc.net_connections(kind="inet"):
                if c.status == psutil.CONN_LISTEN:
                    found.setdefault(c.laddr.port, set()).add(c.laddr.ip)
    return found


def _wait_for_file(path: Path, log: Path, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while not path.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert path.exists(), log.read_text()


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs[::-1]:
        os.killpg(p.pid, signal.SIGKILL)  # throw-away process groups (nannies and their workers)
    for p in procs:
        p.wait(timeout=20)


def _start(cmd: list, env: dict, log: Path) -> subprocess.Popen:
    return subprocess.Popen([str(c) for c in cmd], env=env, stdout=subprocess.DEVNULL, stderr=open(log, "w"),
                            start_new_session=True)


@contextlib.contextmanager
def loopback_cluster(tmp: Path):
    """`dask scheduler` and 2 single-threaded `dask worker` processes on 127.0.0.1 (plain TCP); yields the address."""
    env = dict(os.environ, DISTSIM_DISABLE_GPU="1", DASK_DISTSIM__BACKEND="cpu")
    sfile = tmp / "scheduler.json"
    dask = [sys.executable, "-m", "dask"]
    local = ["--host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0"]  # --no-dashboard still serves HTTP
    procs = [_start(dask + ["scheduler", "--port", "0", "--scheduler-file", sfile, *local], env, tmp / "scheduler.log")]
    try:
        _wait_for_file(sfile, tmp / "scheduler.log")
        address = json.loads(sfile.read_text())["address"]
        for i in range(2):
            procs.append(_start(dask + ["worker", address, "--nthreads", "1", "--name", f"w{i}", "--resources",
                                        "CPU=1", *local], env, tmp / f"worker{i}.log"))
        yield address
    finally:
        _stop(procs)


@contextlib.contextmanager
def tls_recipe_cluster(tmp: Path, certs: dict[str, Path]):
    """The dask-cli recipe as documented: start-scheduler.sh CERTS, then start-workers.sh CERTS ADDRESS cpu 2.

    Only the ports change (the scheduler's and the dashboard's are free ones). Yields the scheduler
    address and the two process groups."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    assert shutil.which("dask", path=path), "the `dask` command (distributed's console script) is needed"
    env = dict(os.environ, DISTSIM_DISABLE_GPU="1", PATH=path, DASHBOARD_PORT="0",
               SCHEDULER_FILE=str(tmp / "scheduler.json"))
    scripts = DEPLOY / "dask-cli"
    procs = [_start([scripts / "start-scheduler.sh", certs["ca"].parent, "0"], env, tmp / "scheduler.log")]
    try:
        _wait_for_file(tmp / "scheduler.json", tmp / "scheduler.log")
        address = json.loads((tmp / "scheduler.json").read_text())["address"]
        procs.append(_start([scripts / "start-workers.sh", certs["ca"].parent, address, "cpu", "2"], env,
                            tmp / "workers.log"))
        yield address, procs
    finally:
        _stop(procs)


def _security(certs: dict[str, Path], role: str = "client"):
    """Client-side TLS settings presenting the ``role``'s certificate."""
    from distributed.security import Security

    return Security(tls_ca_file=str(certs["ca"]), tls_client_cert=str(certs[f"{role}_cert"]),
                    tls_client_key=str(certs[f"{role}_key"]), require_encryption=True)


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


def _tls_refusal(host: str, port: int, ctx: ssl.SSLContext) -> ssl.SSLError | None:
    """Open a TLS connection with ``ctx``; the server's refusal (an SSLError), or None if it let us in."""
    with socket.create_connection((host, port), timeout=10) as raw:
        try:
            with ctx.wrap_socket(raw) as conn:
                conn.recv(1)  # TLS 1.3: the server's verdict on our certificate arrives after the handshake
        except ssl.SSLError as e:
            return e
    return None


def test_tls_recipe(tmp_path, certs, reference):
    """start-scheduler.sh + start-workers.sh: mutual TLS with the role certificates, every dashboard on
    loopback, clients without a certificate of this CA refused; the CLI gets the client certificate
    from dask-tls.yaml."""
    from distributed import Client

    from distsim.cluster import dashboard_link

    other_ca = _load(DEPLOY / "tls" / "make_certs.py", "make_certs").make_certs(tmp_path / "other")
    no_cert = ssl.create_default_context(cafile=str(certs["ca"]))
    no_cert.check_hostname = False  # as Dask: the certificate must be signed by the CA, names are not checked
    foreign = ssl.create_default_context(cafile=str(certs["ca"]))
    foreign.check_hostname = False
    foreign.load_cert_chain(other_ca["client_cert"], other_ca["client_key"])
    config = (DEPLOY / "tls" / "dask-tls.yaml").read_text().replace("/etc/dask/tls", str(certs["ca"].parent))
    (tmp_path / "dask-config").mkdir()
    (tmp_path / "dask-config" / "dask-tls.yaml").write_text(config)

    with tls_recipe_cluster(tmp_path, certs) as (address, procs):
        assert address.startswith("tls://")
        client = _client(address, _security(certs, "client"))
        try:
            info = client.scheduler_info(n_workers=-1)
            workers = info["workers"]
            http = {info["services"]["dashboard"]} | {w["services"]["dashboard"] for w in workers.values()}
            tls = {_port(address)} | {_port(a) for a in workers} | {_port(w["nanny"]) for w in workers.values()}
            listening = _listening([p.pid for p in procs])
            assert set(listening) == http | tls, listening
            for port in http:  # scheduler and worker dashboards: loopback only
                assert listening[port] == {"127.0.0.1"}, (port, listening)
            dashboard = info["services"]["dashboard"]
            with urlopen(f"http://127.0.0.1:{dashboard}/health", timeout=10) as r:  # the tunnel's end point
                assert r.read() == b"ok"
            host = _host(address)
            if not host.startswith("127."):  # the scheduler's network address: only TLS listens there
                for port in http:
                    with pytest.raises(ConnectionRefusedError):
                        socket.create_connection((host, port), timeout=10).close()
            tunnel_link = yaml.safe_load(config)["distributed"]["dashboard"]["link"]
            with dask.config.set({"distributed.dashboard.link": tunnel_link}):
                assert dashboard_link(client) == f"http://localhost:{dashboard}/status"

            # without a certificate, or with one from another CA: refused by the scheduler, workers, nannies
            first = next(iter(workers))
            for port in (_port(address), _port(first), _port(workers[first]["nanny"])):
                assert "CERTIFICATE_REQUIRED" in str(_tls_refusal(host, port, no_cert))
                assert _tls_refusal(host, port, foreign) is not None
            # Dask checks the CA's signature, not the role: the worker's certificate is accepted from a
            # client (deployments/tls/README.md says so)
            with Client(address, security=_security(certs, "worker"), set_as_default=False, timeout=30) as c:
                assert len(c.scheduler_info(n_workers=-1)["workers"]) == 2
        finally:
            client.close()
        _run_cli(address, tmp_path / "tls.nc", {"DASK_CONFIG": str(tmp_path / "dask-config")})
    out = xr.open_dataset(tmp_path / "tls.nc", engine="h5netcdf")
    assert np.array_equal(out["mean"].values, reference["mean"].values)


def test_role_certificates(certs):
    """The client certificate may only connect (its extended key usage): a server presenting it is rejected;
    the worker's and the scheduler's serve. Dask's own TLS contexts, no cluster."""
    from distributed.security import Security

    def serve_with(role: str) -> ssl.SSLError | None:
        server = Security(tls_ca_file=str(certs["ca"]), tls_worker_cert=str(certs[f"{role}_cert"]),
                          tls_worker_key=str(certs[f"{role}_key"])).get_listen_args("worker")["ssl_context"]
        client = _security(certs, "client").get_connection_args("client")["ssl_context"]
        with socket.create_server(("127.0.0.1", 0)) as listener:
            out = {}

            def accept():
                conn, _ = listener.accept()
                with conn, contextlib.suppress(ssl.SSLError, OSError), server.wrap_socket(conn, server_side=True) as s:
                    s.sendall(b"k")

            t = threading.Thread(target=accept)
            t.start()
            try:
                out["error"] = _tls_refusal(*listener.getsockname()[:2], client)
            finally:
                t.join(timeout=10)
        return out["error"]

    assert serve_with("scheduler") is None and serve_with("worker") is None
    assert "unsuitable certificate purpose" in str(serve_with("client"))
    assert not os.stat(certs["client_key"]).st_mode & 0o077 and not os.stat(certs["ca_key"]).st_mode & 0o077


def test_slurm_job_script(certs):
    pytest.importorskip("dask_jobqueue")
    mod = _load(DEPLOY / "slurm" / "slurm_cluster.py", "slurm_cluster")
    cluster = mod.make_cluster("gpu", certs=certs["ca"].parent, scheduler_options={"host": "127.0.0.1"})
    try:
        script = cluster.job_script()
        assert cluster.scheduler_address.startswith("tls://")
        # the profile's dashboard address survives the override; the scheduler (in this process) listens on loopback
        assert cluster.scheduler_spec["options"]["dashboard_address"] == "127.0.0.1:8787"
        assert cluster.scheduler_spec["options"]["host"] == "127.0.0.1"
        dashboard = cluster.scheduler_info["services"]["dashboard"]
        assert _listening([os.getpid()])[dashboard] == {"127.0.0.1"}
    finally:
        cluster.close()
    assert script.startswith("#!/usr/bin/env bash")
    assert "#SBATCH --gres=gpu:4" in script and "#SBATCH -p gpu" in script and "#SBATCH -t 04:00:00" in script
    assert "-m dask_cuda.cli tls://" in script and "--resources GPU=1" in script
    assert "--dashboard-address 127.0.0.1:0" in script  # each worker's dashboard on its node's loopback
    # the worker jobs get the worker's certificate, never the scheduler's or the client's
    assert f"--tls-ca-file {certs['ca']}" in script
    assert f"--tls-cert {certs['worker_cert']}" in script and f"--tls-key {certs['worker_key']}" in script
    assert not any(name in script for name in ("scheduler.pem", "scheduler-key.pem", "client.pem", "client-key.pem"))
    assert "source $HOME/distsim/.venv/bin/activate" in script
    cpu = mod.make_cluster("cpu", scheduler_options={"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"})
    try:
        cpu_script = cpu.job_script()
    finally:
        cpu.close()
    assert "distributed.cli.dask_worker" in cpu_script and "--nworkers 32" in cpu_script
    assert "DASK_DISTSIM__BACKEND=cpu" in cpu_script and "--dashboard-address 127.0.0.1:0" in cpu_script
    tls = mod.client_config(certs["ca"].parent)  # what the sweep's CLI client uses
    assert tls["distributed.comm.tls.client.cert"] == str(certs["client_cert"]) and tls[
        "distributed.comm.require-encryption"]


def test_kubernetes_manifest():
    docs = list(yaml.safe_load_all((DEPLOY / "kubernetes" / "daskcluster.yaml").read_text()))
    (doc,) = [d for d in docs if d["kind"] == "DaskCluster"]
    (policy,) = [d for d in docs if d["kind"] == "NetworkPolicy"]
    assert doc["apiVersion"] == "kubernetes.dask.org/v1" and policy["apiVersion"] == "networking.k8s.io/v1"
    name = doc["metadata"]["name"]
    worker, sched = doc["spec"]["worker"], doc["spec"]["scheduler"]
    assert isinstance(worker["replicas"], int) and worker["replicas"] >= 1
    (w,) = worker["spec"]["containers"]
    (s,) = sched["spec"]["containers"]
    assert w["image"] == s["image"]
    assert w["args"][:3] == ["dask", "cuda", "worker"] and w["args"][3].startswith(f"tls://{name}-scheduler.")
    assert "GPU=1" in w["args"] and w["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert s["args"][:2] == ["dask", "scheduler"] and s["args"][s["args"].index("--protocol") + 1] == "tls"
    # TLS: each role's own secret, mounted where its arguments point; the client's key is in neither
    for role, c, spec in (("worker", w, worker["spec"]), ("scheduler", s, sched["spec"])):
        args = c["args"]
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        vols = {v["name"]: v for v in spec["volumes"]}
        for flag, file in (("--tls-ca-file", "ca.pem"), ("--tls-cert", f"{role}.pem"), ("--tls-key", f"{role}-key.pem")):
            assert args[args.index(flag) + 1] == f"{mounts['tls']}/{file}"
        assert vols["tls"]["secret"]["secretName"] == f"distsim-dask-tls-{role}"
    # dashboards: each worker's on its pod's loopback and not a container port; the scheduler's behind a
    # ClusterIP Service, its port named as the operator's scale-down looks for it
    assert w["args"][w["args"].index("--dashboard-address") + 1].startswith("127.0.0.1:")
    assert not w.get("ports")
    assert sched["service"]["type"] == "ClusterIP"
    ports = {p["name"]: p["port"] for p in sched["service"]["ports"]}
    assert ports == {"tls-comm": 8786, "http-dashboard": 8787}
    assert sched["service"]["selector"] == {"dask.org/cluster-name": name, "dask.org/component": "scheduler"}
    container_ports = {p["name"]: p["containerPort"] for p in s["ports"]}
    assert {p["targetPort"] for p in sched["service"]["ports"]} <= set(container_ports)
    # the NetworkPolicy: the scheduler's TLS port open, its dashboard only to the operator's namespace
    assert policy["spec"]["podSelector"]["matchLabels"] == sched["service"]["selector"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    rules = policy["spec"]["ingress"]
    assert {p["port"] for r in rules if "from" not in r for p in r["ports"]} == {container_ports["tls-comm"]}
    (dash,) = [r for r in rules if "from" in r]
    assert [p["port"] for p in dash["ports"]] == [container_ports["http-dashboard"]]
    assert dash["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "dask-operator"}}}]
    docker = (DEPLOY / "kubernetes" / "Dockerfile").read_text()
    assert "FROM nvidia/cuda:" in docker and '".[gpu]"' in docker and "dask==2026.7.1" in docker


def _slurm_bytes(text: str) -> float:
    """A SLURM --mem value (K, M, G, T: binary units; bare: MB) in bytes."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    text = text.upper().removesuffix("B")
    return float(text[:-1]) * units[text[-1]] if text[-1] in units else float(text) * 2**20


def _job(script: str) -> dict:
    """The booking (#SBATCH) and the per-worker settings of a dask-jobqueue worker job script."""
    from dask.utils import parse_bytes

    directives = dict(line.split(None, 1)[1].partition("=")[::2] for line in script.splitlines()
                      if line.startswith("#SBATCH --") and "=" in line)
    words = [ln for ln in script.splitlines() if " --nthreads " in ln][0].split()
    gres = directives.get("--gres", "gpu:0").split(":")[-1]
    return {"cpus": int(directives["--cpus-per-task"]), "mem": _slurm_bytes(directives["--mem"]),
            "gpus": int(gres), "nthreads": int(words[words.index("--nthreads") + 1]),
            "memory_limit": parse_bytes(words[words.index("--memory-limit") + 1]),
            "nworkers": int(words[words.index("--nworkers") + 1]) if "--nworkers" in words else 1}


def test_slurm_workers_share_their_job():
    """Issue 32: a `dask cuda worker` job starts one worker per GPU and gives each the --nthreads and
    --memory-limit of the job script, so those must be per GPU worker: together the workers fit the
    job's booking (it was 4 workers x the whole job's memory and 16 threads each on 16 CPUs)."""
    pytest.importorskip("dask_jobqueue")
    mod = _load(DEPLOY / "slurm" / "slurm_cluster.py", "slurm_cluster")
    scripts = {}
    for kind in ("gpu", "cpu"):
        cluster = mod.make_cluster(kind, scheduler_options={"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"})
        try:
            scripts[kind] = _job(cluster.job_script())
        finally:
            cluster.close()
    gpu, cpu = scripts["gpu"], scripts["cpu"]
    assert gpu["gpus"] == 4 and gpu["nworkers"] == 1  # dask-cuda: one worker per GPU of the job
    assert gpu["nthreads"] == 1 and gpu["gpus"] * gpu["nthreads"] <= gpu["cpus"]
    assert gpu["gpus"] * gpu["memory_limit"] <= gpu["mem"] and gpu["memory_limit"] >= 0.8 * gpu["mem"] / gpu["gpus"]
    assert cpu["gpus"] == 0 and cpu["nthreads"] == 1 and cpu["nworkers"] * cpu["nthreads"] <= cpu["cpus"]
    assert cpu["nworkers"] * cpu["memory_limit"] <= cpu["mem"] * 1.001


def test_kubernetes_pods_read_their_tls_keys():
    """The image runs as a non-root user; the TLS secrets are mounted group-readable with that user's
    group as fsGroup (a 0400 root-owned key was unreadable to it)."""
    docker = (DEPLOY / "kubernetes" / "Dockerfile").read_text()
    uid = int(docker.split("--uid", 1)[1].split()[0])
    (doc,) = [d for d in yaml.safe_load_all((DEPLOY / "kubernetes" / "daskcluster.yaml").read_text())
              if d["kind"] == "DaskCluster"]
    for role in ("worker", "scheduler"):
        spec = doc["spec"][role]["spec"]
        ctx = spec["securityContext"]
        assert ctx["runAsNonRoot"] is True and ctx["runAsUser"] == uid and ctx["fsGroup"] == ctx["runAsGroup"]
        mode = {v["name"]: v for v in spec["volumes"]}["tls"]["secret"]["defaultMode"]
        assert mode & 0o040 and not mode & 0o007, oct(mode)  # group-readable (fsGroup), nobody else
