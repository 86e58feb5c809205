"""distsim.connect(), Dask configuration and the CLI's --scheduler option."""

import subprocess
import sys

import dask
import pytest

import distsim
from distsim.cli import main
from distsim.engine import DaskExecutor, LocalExecutor, executor_for


def test_connect_local_cpu_cluster():
    client = distsim.connect(gpus=False, n_workers=1)
    try:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        assert len(workers) == 1
        assert all(w["resources"].get("CPU") == 1 for w in workers.values())
        assert client.submit(sum, [1, 2, 3]).result() == 6
    finally:
        client.close()
        client.cluster.close()


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
