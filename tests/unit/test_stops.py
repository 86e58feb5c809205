"""Issue 4: stops that stop. The MCMC rejection loop runs in slices (the same draws) so that a time
limit, Ctrl-C and a cancelled task are seen inside an interval needing ~forever; an interval past
its attempt budget is named; Ctrl-C ends a run within a few seconds in process, on a local cluster
(whose workers are killed) and on an external scheduler (whose workers are freed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import psutil  # a dependency of distributed
import pytest

import distsim.mcmc as mcmc
from distsim.engine import LocalExecutor
from distsim.mcmc import shard
from distsim.mcmc.block import MCMCBlock
from distsim.mcmc.observations import as_observations
from distsim.mcmc.priors import rate_model
from distsim.mcmc.sampler import build_problem
from distsim.models.sources import load_network

ROOT = Path(__file__).resolve().parents[2]
NET = ROOT / "examples" / "ssa" / "immigration_death.rxn"  # 0 -> X (Alpha = 1), X -> 0 (Mu = 0.1)
PRIOR = {"Alpha": (2, 2), "Mu": (2, 20)}
FEASIBLE = "time,X\n0,0\n1,1\n2,2\n3,2\n"
# X from 1 to 60 in half a unit of time: about 0.5 immigrations expected; no path gets there
IMPOSSIBLE = "time,X\n0,0\n1,1\n1.5,60\n"
GRACE_S = 5.0  # a stop is honoured within this long
CPU = LocalExecutor("cpu")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("stops")
    out = {}
    for name, text in (("feasible", FEASIBLE), ("impossible", IMPOSSIBLE)):
        out[name] = d / f"{name}.csv"
        out[name].write_text(text)
    return out


def _infer(data: Path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short chains: the convergence warning
        return mcmc.infer_rates(NET, data, prior=PRIOR, chains=2, seed=3, **kw)


def test_slices_give_the_same_draws(data, monkeypatch):
    """The rejection loop cut into slices of one attempt per thread (iterations resumed mid-way, many
    times) gives the draws and accepted attempts of one uncut call."""
    net = load_network(NET)
    rm = rate_model(net, PRIOR, False)
    pr = build_problem(net, as_observations(net, data["feasible"]), rm)
    block = MCMCBlock(pr, 3, np.arange(3, dtype=np.int64), np.tile(rm.initial, (3, 1)), 0, 6, np.ones((3, 3)))
    whole = shard.run_block_cpu(block)
    monkeypatch.setattr(shard, "FIRST_SLICE", 1)
    monkeypatch.setattr(shard, "SLICE_SECONDS", 0.0)  # every later slice: one attempt per thread
    calls = []
    real = shard.cpu.run_chains

    def counted(*args):
        calls.append(args[5])  # step0
        return real(*args)

    monkeypatch.setattr(shard.cpu, "run_chains", counted)
    cut = shard.run_block_cpu(block)
    assert len(calls) > 2 * block.n_iter and calls.count(calls[-1]) > 1  # resumed inside iterations
    assert whole["done"] == cut["done"] == 6
    for k in ("draws", "best", "err"):
        np.testing.assert_array_equal(whole[k], cut[k])
    assert (whole["best"] > 0).any()  # some intervals needed more than one attempt


def test_an_impossible_interval_is_named(data):
    with pytest.raises(RuntimeError, match=r"interval 2 \(t=1 to 1.5\): no forward path hit the observation in "
                                           r"20000 attempts \(chain 0, iteration 0.*effectively impossible"):
        _infer(data["impossible"], iterations=3, burn_in=0, max_attempts=20_000, client=CPU)


@pytest.mark.parametrize("where", ["in-process", "local cluster"])
def test_a_time_limit_inside_a_rejection_loop(data, where, request):
    """No budget to end it: the time limit stops the interval that never ends, and names it."""
    client = CPU if where == "in-process" else request.getfixturevalue("dask_client")
    _infer(data["feasible"], iterations=2, burn_in=0, client=client)  # kernels compiled or loaded
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match=r"time limit \(1 s\) ended the run after 0 iterations.*interval 2 "
                                           r"\(t=1 to 1.5\) had run \d+ attempts without a path hitting"):
        _infer(data["impossible"], iterations=100, burn_in=10, max_attempts=2**31, time_limit=1.0, client=client)
    assert time.perf_counter() - t0 < 1.0 + GRACE_S


# ---- Ctrl-C and --time-limit of the command line --------------------------------------------------

class _Command:
    """``python -m distsim ...`` with stderr read line by line (each line's arrival time kept)."""

    def __init__(self, args: list[str], cwd: Path):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-m", "distsim", *args], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)
        self.lines: list[tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append((time.perf_counter(), line.rstrip("\n")))

    def wait_for(self, text: str, timeout: float = 240) -> float:
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            for t, line in self.lines:
                if text in line:
                    return t
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.proc.kill()
        raise AssertionError(f"no {text!r} in stderr: {self.lines}")

    def finish(self, timeout: float = 60) -> tuple[int, float, list[str]]:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"still running {timeout} s later: {self.lines}") from None
        t = time.perf_counter()
        self._reader.join(5)
        return self.proc.returncode, t, [line for _, line in self.lines]


def _rates(data: Path, *extra: str) -> list[str]:
    return ["mcmc", "rates", str(NET), "--data", str(data), "--prior", "Alpha=gamma:2,2", "--prior",
            "Mu=gamma:2,20", "--chains", "2", "--iterations", "100", "--burn-in", "10", "--max-attempts",
            str(2**31), "--progress", *extra]


@pytest.mark.parametrize("where", [["--in-process"], ["--cpu", "--workers", "2"]])
def test_ctrl_c_stops_a_rejection_loop(data, where, tmp_path):
    _infer(data["feasible"], iterations=2, burn_in=0, client=CPU)  # kernels compiled (the workers load them)
    cmd = _Command([*where, *_rates(data["impossible"])], tmp_path)
    started = cmd.wait_for("[mcmc rates] 2 chains x 100 iterations")
    time.sleep(max(0.0, started + 3.0 - time.perf_counter()))  # inside the loop (workers: kernels loaded)
    t0 = time.perf_counter()
    cmd.proc.send_signal(signal.SIGINT)
    rc, t1, lines = cmd.finish()
    assert rc == 130, lines
    assert t1 - t0 < GRACE_S, (t1 - t0, lines)
    assert lines[-1] == "distsim: interrupted" and not any("Traceback" in ln for ln in lines), lines


def test_time_limit_on_a_local_cluster_cli(data, tmp_path):
    _infer(data["feasible"], iterations=2, burn_in=0, client=CPU)
    cmd = _Command(["--cpu", "--workers", "2", *_rates(data["impossible"], "--time-limit", "2")], tmp_path)
    started = cmd.wait_for("[mcmc rates] 2 chains x 100 iterations")
    rc, t1, lines = cmd.finish()
    assert rc == 2 and "interval 2 (t=1 to 1.5) had run" in lines[-1], lines
    assert t1 - started < 2.0 + GRACE_S, (t1 - started, lines)


def test_ctrl_c_with_an_external_scheduler_frees_its_workers(data, dask_client, tmp_path):
    """The client goes at once; its tasks, cancelled, leave the workers within a slice or two."""
    _infer(data["feasible"], iterations=2, burn_in=0, client=dask_client)  # the workers' kernels loaded
    cmd = _Command(["--scheduler", dask_client.scheduler.address, "--cpu", *_rates(data["impossible"])], tmp_path)
    started = cmd.wait_for("[mcmc rates] 2 chains x 100 iterations")
    time.sleep(max(0.0, started + 2.0 - time.perf_counter()))
    cmd.proc.send_signal(signal.SIGINT)
    t0 = time.perf_counter()
    rc, t1, lines = cmd.finish()
    assert rc == 130 and t1 - t0 < GRACE_S, (t1 - t0, lines)
    workers = list(dask_client.scheduler_info(n_workers=-1)["workers"])
    futures = [dask_client.submit(os.getpid, workers=[w], pure=False) for w in workers]
    assert len(set(f.result(timeout=GRACE_S) for f in futures)) == len(workers)


def test_ctrl_c_stops_an_ssa_ensemble_on_a_local_cluster(tmp_path):
    """The issue's case: `ssa simulate` on a 2-worker local cluster kept running after Ctrl-C."""
    cmd = _Command(["--cpu", "--workers", "2", "ssa", "simulate", str(ROOT / "examples" / "ssa" / "michaelis_menten.rxn"),
                    "--t-end", "50", "-n", str(10**8)], tmp_path)
    started = cmd.wait_for("[distsim] cluster:")
    time.sleep(max(0.0, started + 3.0 - time.perf_counter()))  # the workers busy with their shards
    t0 = time.perf_counter()
    cmd.proc.send_signal(signal.SIGINT)
    rc, t1, lines = cmd.finish()
    assert rc == 130 and t1 - t0 < GRACE_S, (t1 - t0, lines)
    assert lines[-1] == "distsim: interrupted" and not any("Traceback" in ln for ln in lines), lines


@pytest.mark.gpu
def test_gpu_time_limit_and_attempt_budget(data):
    """On a GPU each group of blocks halts after the iteration that passes the time limit; the result
    is the CPU's for the iterations done, bit for bit. An impossible interval ends at the default
    attempt budget (10^7, named) within seconds."""
    from distsim.engine import LocalExecutor

    gpu = LocalExecutor("gpu")
    _infer(data["feasible"], iterations=2, burn_in=0, client=gpu)  # kernel compiled
    t0 = time.perf_counter()
    a = _infer(data["feasible"], iterations=10**6, burn_in=0, time_limit=1.0, client=gpu)
    assert time.perf_counter() - t0 < 1.0 + GRACE_S and a.attrs["stopped_by"] == "time_limit"
    n = a.attrs["iterations"]
    b = _infer(data["feasible"], iterations=n, burn_in=0, client=CPU)
    for v in ("Alpha", "Mu", "attempts"):
        np.testing.assert_array_equal(a[v].values, b[v].values)
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match=r"interval 2 \(t=1 to 1.5\): no forward path hit the observation in "
                                           r"10000000 attempts"):
        _infer(data["impossible"], iterations=3, burn_in=0, client=gpu)
    assert time.perf_counter() - t0 < 30


def test_ctrl_c_in_a_python_with_block_stops_the_local_cluster(data, tmp_path):
    """``with distsim.connect() as client:`` left by Ctrl-C kills the local workers at once."""
    script = tmp_path / "run.py"
    script.write_text(
        "import sys, distsim, distsim.mcmc as mcmc\n"
        "if __name__ == '__main__':\n"
        "    with distsim.connect(gpus=False, n_workers=2) as client:\n"
        "        print('started', file=sys.stderr, flush=True)\n"
        f"        mcmc.infer_rates({str(NET)!r}, {str(data['impossible'])!r}, prior={PRIOR!r}, chains=2,\n"
        "                         iterations=100, burn_in=10, max_attempts=2**31, client=client)\n")
    _infer(data["feasible"], iterations=2, burn_in=0, client=CPU)  # kernels compiled (the workers load them)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    assert proc.stderr.readline().strip() == "started"
    time.sleep(3.0)
    workers = [c for c in psutil.Process(proc.pid).children(recursive=True)
               if "spawn_main" in " ".join(c.cmdline())]  # not multiprocessing's resource tracker
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    try:
        err = proc.communicate(timeout=60)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("still running a minute after Ctrl-C") from None
    assert time.perf_counter() - t0 < GRACE_S and "KeyboardInterrupt" in err, err
    gone, alive = psutil.wait_procs(workers, timeout=1)
    assert len(workers) == 2 and not alive, alive
