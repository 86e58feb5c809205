"""Issue 29, Ctrl-C that stops: ``distsim --in-process`` runs sized to last minutes end within a few
seconds of SIGINT (exit 130, one line, no output file), and so does a local cluster interrupted
while it starts, leaving no worker process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil  # a dependency of distributed
import pytest
from test_stops import GRACE_S, ROOT, _Command  # the subprocess harness of the other stop tests

EX = ROOT / "examples"
FAURE = EX / "pbn" / "bbm023_faure2006_mammalian_cell_cycle_10n.bnet"

RUNS = {  # each would run for minutes; the line that says it started
    "ssa": (["ssa", "simulate", str(EX / "ssa" / "michaelis_menten.rxn"), "--t-end", "50", "-n", str(10**8)],
            "[ssa simulate] 100000000 realizations"),
    "pbn simulate": (["pbn", "simulate", str(FAURE), "-p", "0.01", "--steps", str(10**9), "--trajectories",
                      str(2**20)], "[pbn simulate] 1048576 trajectories"),
    "pbn steady-state": (["pbn", "steady-state", str(FAURE), "-p", "0.01", "--target", "v_CycE=1", "--precision",
                          "1e-5", "--chains", str(2**16), "--max-length", str(2**40)], "[pbn steady-state] 1 target"),
    "grn": (["grn", "infer", str(EX / "grn" / "mouse_eye.toml"), "--islands", "8", "--population", "4096",
             "--generations", str(10**6)], "[grn infer] island GA"),
}


@pytest.mark.parametrize("what", list(RUNS))
def test_ctrl_c_stops_an_in_process_run(what, tmp_path):
    args, started_line = RUNS[what]
    out = tmp_path / "out.nc"
    cmd = _Command(["--in-process", *args, "--progress", "-o", str(out)], tmp_path)
    started = cmd.wait_for(started_line)
    time.sleep(max(0.0, started + 2.0 - time.perf_counter()))  # inside the long kernel calls
    assert cmd.proc.poll() is None, cmd.lines
    t0 = time.perf_counter()
    cmd.proc.send_signal(signal.SIGINT)
    rc, t1, lines = cmd.finish()
    assert rc == 130 and t1 - t0 < GRACE_S, (rc, t1 - t0, lines)
    assert lines[-1] == "distsim: interrupted" and not any("Traceback" in ln for ln in lines), lines
    assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())  # no output, no temporary file


def _workers(proc: subprocess.Popen) -> list[psutil.Process]:
    """The local cluster's worker processes (multiprocessing's spawn children, not its resource tracker)."""
    try:
        return [c for c in psutil.Process(proc.pid).children(recursive=True) if "spawn_main" in " ".join(c.cmdline())]
    except psutil.Error:
        return []


@pytest.mark.parametrize("delay", [0.0, pytest.param(0.4, marks=pytest.mark.slow), pytest.param(1.0, marks=pytest.mark.slow)])
def test_ctrl_c_while_a_local_cluster_starts(delay, tmp_path):
    """SIGINT once the worker processes are spawned (and a little later), while the cluster starts:
    exit 130 within a few seconds, no worker left running, no output."""
    out = tmp_path / "out.nc"
    cmd = _Command(["--cpu", "--workers", "2", *RUNS["ssa"][0], "-o", str(out)], tmp_path)
    seen: dict[int, psutil.Process] = {}
    end = time.perf_counter() + 120
    while len(seen) < 2 and time.perf_counter() < end and cmd.proc.poll() is None:
        seen.update((p.pid, p) for p in _workers(cmd.proc))
        time.sleep(0.01)
    assert len(seen) == 2, cmd.lines
    time.sleep(delay)
    started = any("[distsim] cluster:" in ln for _, ln in cmd.lines)  # (for the message: usually not yet)
    seen.update((p.pid, p) for p in _workers(cmd.proc))
    t0 = time.perf_counter()
    cmd.proc.send_signal(signal.SIGINT)
    rc, t1, lines = cmd.finish()
    assert rc == 130 and t1 - t0 < GRACE_S, (rc, t1 - t0, started, lines)
    assert lines[-1] == "distsim: interrupted" and not any("Traceback" in ln for ln in lines), lines
    gone, alive = psutil.wait_procs(list(seen.values()), timeout=2)
    assert not alive, alive
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("what", ["ssa", pytest.param("pbn steady-state", marks=pytest.mark.slow)])
def test_ctrl_c_with_an_external_scheduler_frees_its_workers(what, dask_client, tmp_path):
    """The client goes at once; its cancelled tasks see that between two slices and leave the workers."""
    args, started_line = RUNS[what]
    cmd = _Command(["--scheduler", dask_client.scheduler.address, "--cpu", *args, "--progress"], tmp_path)
    started = cmd.wait_for(started_line)
    time.sleep(max(0.0, started + 2.0 - time.perf_counter()))  # the workers busy with their shards
    cmd.proc.send_signal(signal.SIGINT)
    t0 = time.perf_counter()
    rc, t1, lines = cmd.finish()
    assert rc == 130 and t1 - t0 < GRACE_S, (rc, t1 - t0, lines)
    workers = list(dask_client.scheduler_info(n_workers=-1)["workers"])
    futures = [dask_client.submit(os.getpid, workers=[w], pure=False) for w in workers]
    assert len({f.result(timeout=GRACE_S) for f in futures}) == len(workers)


def _command_line_runs(tmp_path: Path, before: str, after: str) -> dict[str, subprocess.CompletedProcess]:
    """``distsim maboss model.bnd`` as the process's own command line (``cli.main()``) in a new process whose
    command raises KeyboardInterrupt ("interrupt") or returns 0 ("normal"); ``before`` and ``after`` are
    lines run around it (``rc`` holds main's status, which the process exits with)."""
    code = ("import os, signal, sys, distsim.cli as cli\n" + before +
            "def interrupted(args):\n"
            "    raise KeyboardInterrupt\n"
            "import distsim.cli.maboss as command\n"
            "command.run = interrupted if sys.argv[1] == 'interrupt' else (lambda args: 0)\n"
            "sys.argv = ['distsim', 'maboss', 'model.bnd']\n"
            "rc = cli.main()\n" + after + "sys.exit(rc)\n")
    return {k: subprocess.run([sys.executable, "-c", code, k], capture_output=True, text=True, timeout=120,
                              cwd=tmp_path) for k in ("interrupt", "normal")}


def test_an_interrupted_command_line_prints_no_finalizer_errors(tmp_path):
    """After "distsim: interrupted" (the process's own command line), an object that Ctrl-C left half-built
    (an LLVM value of a stopped Numba compile, whose __del__ fails) prints nothing as the interpreter exits;
    the same object after a normal run still reports its error."""
    runs = _command_line_runs(tmp_path, "class HalfBuilt:\n"
                                        "    def __del__(self):\n"
                                        "        raise AttributeError('no _as_parameter_')\n"
                                        "keep = HalfBuilt()\n",
                              "del keep\n")  # its finalizer fails after the run, as a half-built LLVM object's at exit
    assert runs["interrupt"].returncode == 130
    assert runs["interrupt"].stderr == "distsim: interrupted\n", runs["interrupt"].stderr
    assert runs["normal"].returncode == 0 and "no _as_parameter_" in runs["normal"].stderr, runs["normal"].stderr


def test_a_further_sigint_does_not_kill_an_interrupted_command_line(tmp_path):
    """Once "distsim: interrupted" is printed (the process's own command line), one more SIGINT (a second
    Ctrl-C) while the process exits leaves its status 130; it killed the process by signal (-2) in a CI
    rehearsal. The same SIGINT during a normal run's exit still interrupts it."""
    runs = _command_line_runs(tmp_path, "", "os.kill(os.getpid(), signal.SIGINT)\n"  # a second Ctrl-C as it exits
                                            "signal.getsignal(signal.SIGINT)\n")  # (its handler: the next bytecode)
    assert runs["interrupt"].returncode == 130, runs["interrupt"]
    assert runs["interrupt"].stderr == "distsim: interrupted\n", runs["interrupt"].stderr
    assert runs["normal"].returncode != 0 and "KeyboardInterrupt" in runs["normal"].stderr, runs["normal"]


_SWALLOWED = """
import gc, os, signal, sys, time
from distsim.cli import common
if sys.argv[1] == "ours":
    common.catch_sigint()

def callback(phase, info):  # as distributed's scheduler hooks one into every collection
    if phase == "start" and not sent:
        sent.append(1)
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs here, inside the callback: Python drops its exception
            pass

sent = []
gc.callbacks.append(callback)
t0 = time.perf_counter()
try:
    gc.collect()
    while time.perf_counter() - t0 < 5:
        time.sleep(0.01)
    print("not interrupted")
except KeyboardInterrupt:
    common.sigint_met()
    print(f"interrupted after {time.perf_counter() - t0:.2f} s")
"""


def test_a_ctrl_c_dropped_by_a_garbage_collector_callback_is_raised_again():
    """Python drops an exception raised in a gc callback; the command line's handler raises it again (and
    prints no "Exception ignored" report), where Python's own lets the run go on."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = {how: subprocess.run([sys.executable, "-c", _SWALLOWED, how], capture_output=True, text=True, timeout=60,
                                env=env) for how in ("python", "ours")}
    assert runs["python"].stdout.strip() == "not interrupted" and "KeyboardInterrupt" in runs["python"].stderr
    out = runs["ours"].stdout.strip()
    assert out.startswith("interrupted after") and float(out.split()[2]) < 2.0, runs["ours"]
    assert runs["ours"].stderr == "", runs["ours"].stderr
