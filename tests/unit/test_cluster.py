"""distsim.connect(), Dask configuration and the CLI's --scheduler option."""

import subprocess
import sys

import dask
import psutil  # a dependency of distributed
import pytest

import distsim
from distsim.cli import main
from distsim.cluster import dashboard_link
from distsim.engine import DaskExecutor, LocalExecutor, executor_for


def _listening_hosts(ports: set[int]) -> dict[int, set[str]]:
    """The addresses this process and its children listen on, for the given ports."""
    me = psutil.Process()
    found: dict[int, set[str]] = {}
    for proc in [me, *me.children(recursive=True)]:
        try:
            conns = proc.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        for c in conns:
            if c.status == psutil.CONN_LISTEN and c.laddr.port in ports:
                found.setdefault(c.laddr.port, set()).add(c.laddr.ip)
    return found


def test_connect_local_cpu_cluster():
    client = distsim.connect(gpus=False, n_workers=1)
    try:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        assert len(workers) == 1
        assert all(w["resources"].get("CPU") == 1 for w in workers.values())
        assert client.submit(sum, [1, 2, 3]).result() == 6
        # everything listens on loopback only: scheduler, worker, nanny and both HTTP (dashboard) servers
        link = dashboard_link(client)
        assert link is not None and link.startswith("http://127.0.0.1:") and link.endswith("/status")
        dash = int(link.split(":")[2].split("/")[0])
        ports = {dash, int(client.scheduler.address.rsplit(":", 1)[1])}
        for address, w in workers.items():
            ports |= {int(address.rsplit(":", 1)[1]), int(w["nanny"].rsplit(":", 1)[1]), w["services"]["dashboard"]}
        hosts = _listening_hosts(ports)
        assert set(hosts) == ports and all(ips == {"127.0.0.1"} for ips in hosts.values()), hosts
    finally:
        client.close()
        client.cluster.close()


def test_dashboard_link_config_and_non_clients(dask_client):
    with dask.config.set({"distributed.dashboard.link": "http://localhost:{port}/status"}):  # behind a tunnel
        link = dashboard_link(dask_client)
    assert link == f"http://localhost:{dask_client.scheduler_info()['services']['dashboard']}/status"
    assert dashboard_link(None) is None and dashboard_link(LocalExecutor()) is None


def test_connect_by_address(dask_client):
    client = distsim.connect(dask_client.scheduler.address)
    try:
        assert len(client.scheduler_info(n_workers=-1)["workers"]) == 2
    finally:
        client.close()
    assert dask_client.status == "running"  # closing our client leaves the cluster alone


def test_issue_one_liner_starts_and_exits_cleanly():
    r = subprocess.run([sys.executable, "-c", "import distsim; c = distsim.connect(); print(c)"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Client" in r.stdout


def test_local_workers_keep_glibc_malloc_defaults():
    """distributed's default MALLOC_TRIM_THRESHOLD_=65536 stays out of a local cluster's workers (it turns off
    glibc's dynamic mmap threshold: host arrays over 128 KiB are mapped afresh each time); the workers'
    other pre-spawn settings stay, and so does a value the user chose."""
    code = ("import os, distsim; c = distsim.connect(gpus=False, n_workers=1)\n"
            "print(sorted(c.run(lambda: (os.environ.get('MALLOC_TRIM_THRESHOLD_'), os.environ.get('OMP_NUM_THREADS')))"
            ".values()))\nc.close(); c.cluster.close()")
    env = {k: v for k, v in __import__("os").environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[(None, '1')]", r.stdout
    from distsim.cluster import glibc_malloc_defaults

    key = "distributed.nanny.pre-spawn-environ"
    with glibc_malloc_defaults():
        assert dask.config.get(key)["MALLOC_TRIM_THRESHOLD_"] is None  # None: the nanny leaves it unset
        assert str(dask.config.get(key)["OMP_NUM_THREADS"]) == "1"
    assert str(dask.config.get(key)["MALLOC_TRIM_THRESHOLD_"]) == "65536"  # Dask's own config is left as it was
    with dask.config.set({key + ".MALLOC_TRIM_THRESHOLD_": 131072}), glibc_malloc_defaults():
        assert dask.config.get(key)["MALLOC_TRIM_THRESHOLD_"] == 131072


def test_backend_from_dask_config():
    with dask.config.set({"distsim.backend": "cpu"}):
        ex = executor_for(LocalExecutor(), None)
        assert isinstance(ex, LocalExecutor)
        assert executor_for(None).backend == "cpu"
    assert executor_for(None).backend == "auto"


def test_backend_from_environment():
    code = "import distsim; from distsim.engine import executor_for; print(executor_for(None).backend)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**__import__("os").environ, "DASK_DISTSIM__BACKEND": "cpu"})
    assert r.stdout.strip() == "cpu", r.stderr


def test_cli_with_scheduler_address(dask_client, examples, tmp_path, capsys):
    out = tmp_path / "ss.nc"
    rc = main(["--scheduler", dask_client.scheduler.address, "-q", "pbn", "steady-state",
               str(examples / "bnmpy_shmulevich2002_examplePBN_3n.txt"), "-p", "0.01", "--target", "x1=1",
               "-r", "1e-2", "-o", str(out)])
    assert rc == 0 and out.exists()
    assert "x1=1" in capsys.readouterr().out
    assert dask_client.status == "running"


def test_unknown_backend_is_an_error():
    from distsim import backends

    with pytest.raises(ValueError, match="backend"):
        backends.resolve("tpu")
    assert isinstance(DaskExecutor, type)


def test_a_local_cluster_closes_with_its_client():
    """``with distsim.connect() as client:`` leaves no local cluster running (Client(cluster) alone
    would keep it until the interpreter exits)."""
    import distsim

    with distsim.connect(gpus=False, n_workers=1) as client:
        cluster = client.cluster
        assert len(client.scheduler_info()["workers"]) == 1
    assert cluster.status.name == "closed"


def test_a_closed_client_waits_on_no_lock_when_collected():
    """The garbage collector finalizes a closed client at any allocation, in any thread, which may be
    one starting another cluster while it holds distributed's loop-runner lock (a class-wide, non
    re-entrant lock). A closed client's ``close`` (what ``Client.__del__`` calls) must return at
    once without that lock: it once closed its cluster again, and hung CI in the next cluster start."""
    import threading

    from distributed.utils import LoopRunner

    with distsim.connect(gpus=False, n_workers=1) as client:
        pass
    done = threading.Event()
    with LoopRunner._lock:  # held, as by a loop start the collection interrupts
        threading.Thread(target=lambda: (client.__del__(), done.set()), daemon=True).start()
        assert done.wait(10), "a closed client's finalizer waits on distributed's loop-runner lock"


def test_closing_a_local_cluster_quiets_its_workers(monkeypatch):
    """Before its cluster closes, each worker process raises its own Dask log levels: a heartbeat
    caught by the closing scheduler is logged in the worker, out of reach of the client's levels."""
    import logging

    def level() -> int:
        return logging.getLogger("distributed.worker").getEffectiveLevel()

    client = distsim.connect(gpus=False, n_workers=1)
    before = client.run(level)
    real_run, after = client._run, {}

    async def spy(fn, *args, **kwargs):  # what the workers' levels are once close() has run its function
        out = await real_run(fn, *args, **kwargs)
        after.update(await real_run(level))
        return out

    monkeypatch.setattr(client, "_run", spy)
    client.close()
    assert client.cluster.status.name == "closed"
    assert all(v < logging.CRITICAL for v in before.values())
    assert after and all(v == logging.CRITICAL for v in after.values())
