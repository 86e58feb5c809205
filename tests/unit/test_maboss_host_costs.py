"""The host's share of a ``distsim maboss`` call (issues 31 and 33): state and fixed-point labels built
in bulk and remembered per model, one kernel call's counts passed through ``merge`` as they are, the
GPU hash table sized so that a launch is redone at most once, the call's phases under
DISTSIM_MABOSS_PROFILE=1, a summary that prints the most frequent fixed points only, and a GPU
process that never imports Numba. Each keeps the result's bits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from distsim.maboss import block, compile_model, gpu, load, maboss, model, shard

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "maboss"
MONTAGUD = (DATA / "Montagud2022_Prostate_Cancer.bnd", DATA / "Montagud2022_Prostate_Cancer.cfg")


def _label(words: np.ndarray, names, bits) -> str:
    """The label of one state, one node at a time (the reference)."""
    on = [nm for nm, b in zip(names, bits) if (int(words[b // 64]) >> (b % 64)) & 1]
    return " -- ".join(on) or "<nil>"


def test_state_labels_equal_one_at_a_time(monkeypatch):
    """Bulk labels over three 64-bit words, bits in any order, the empty state, memo hits, and the memo
    cleared when full: each label is the node-by-node join."""
    monkeypatch.setattr(model, "_LABELS", {})
    rng = np.random.default_rng(3)
    names = tuple(f"N{i}" for i in range(150))
    bits = tuple(int(b) for b in rng.permutation(150))
    words = rng.integers(0, 2**63, size=(40, 3), dtype=np.uint64) & rng.integers(0, 2**63, size=(40, 3),
                                                                                   dtype=np.uint64)
    words[0] = 0
    want = [_label(w, names, bits) for w in words]
    assert want[0] == "<nil>" and all(lab.count(" -- ") > 5 for lab in want[1:])
    assert model.state_labels(words, names, bits) == want
    assert model.state_labels(words[::-1], names, bits) == want[::-1]  # from the memo
    assert len(model._LABELS[(names, bits)][1]) == 40
    monkeypatch.setattr(model, "LABELS_MAX", 50)
    more = rng.integers(0, 2**63, size=(20, 3), dtype=np.uint64)
    assert model.state_labels(more, names, bits) == [_label(w, names, bits) for w in more]
    assert len(model._LABELS[(names, bits)][1]) == 20  # cleared, then these
    assert model.state_labels(np.zeros((0, 3), np.uint64), names, bits) == []


def test_one_kernel_calls_counts_are_already_merged(monkeypatch):
    """merge() of one part returns it: every kernel call's counts (dense tables, records) are those the
    general merge gives, that part merged with an empty one."""
    m = load(*MONTAGUD, max_time=20.0, time_tick=1.0)
    c = compile_model(m)
    s = m.settings
    b = shard.Block(c, 9, 0, 500, s.n_windows, s.max_time, s.time_tick, s.discrete_time)
    empty = block._empty(s.n_windows, c.n_words, c.vis_words)
    for part in (shard.run_cpu_chunk(b, 0, 500), shard.run_cpu_records(b, 0, 500)):
        assert block.merge([part], s.n_windows, c.n_words, c.vis_words) is part
        both = block.merge([part, empty], s.n_windows, c.n_words, c.vis_words)
        assert len(part["fp_n"]) > 3
        for k in both:
            np.testing.assert_array_equal(np.asarray(part[k]), np.asarray(both[k]), err_msg=k)


def test_hash_table_sizes():
    """The first table of a dense model holds one key per trajectory at most half full; after an overflow
    a table that is not full gets 2 * used slots (the same keys come again), a full one 4 times its slots."""
    for n in (1, 2, 3, 100, 1000, 40000):
        s = gpu.first_slots(True, n)
        assert s & (s - 1) == 0 and (s >= 2 * n or s == gpu.HT_FIRST)
    assert gpu.first_slots(True, 100) == 256 and gpu.first_slots(False, 100) == gpu.HT_FIRST
    assert gpu.first_slots(True, 10**6) == gpu.HT_FIRST
    for slots, used, need in ((16, 9, 32), (16, 15, 32), (64, 40, 128), (1 << 12, 3000, 8192), (1 << 12, 2049, 8192),
                              (1 << 12, 4095, 8192)):
        assert gpu.slots_after_overflow(slots, used) == need
    assert gpu.slots_after_overflow(4096, 4096) == 16384


@pytest.mark.skipif(not __import__("shutil").which("g++"), reason="g++ not on PATH")
@pytest.mark.parametrize("dense", [True, False])
def test_host_kernel_redone_at_most_once(dense, monkeypatch, tmp_path):
    """``kernels/ctbn.cu`` compiled for the host (tests/unit/cuda_on_host.py): a dense model's fixed points
    never overflow its first table (2n slots); records and states that overflow a table without filling it
    are redone once, with as many slots as they need, remembered for the next call; the counts are the CPU
    kernel's."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cuda_on_host import HostModule, fake_cupy

    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    launches = []

    class Counted(HostModule):
        def get_function(self, name):
            fn = super().get_function(name)
            if name != "ctbn_simulate":
                return fn
            return lambda *a: (launches.append(1), fn(*a))

    monkeypatch.setattr(gpu, "_module", lambda m=None: Counted(gpu.source(m), tmp_path))
    monkeypatch.setattr(gpu, "_DEVICE_MODELS", {})
    monkeypatch.setattr(gpu, "_HT_SLOTS", {})
    monkeypatch.setattr(gpu, "HT_COPIES", 1)  # one slot per distinct key
    if not dense:
        monkeypatch.setattr(block, "DENSE_MAX_VISIBLE", -1)
    m = load(DATA / "p53_Mdm2.bnd", DATA / "p53_Mdm2_runcfg.cfg", max_time=3.0)
    c = compile_model(m)
    s = m.settings
    b = shard.Block(c, 4, 0, 300, s.n_windows, s.max_time, s.time_tick, s.discrete_time)
    want = shard.run_cpu_records(b, 0, 300)
    keys = (0 if dense else len(want["win"]) + len(want["final_n"])) + len(want["fp_n"])
    first = 1 << keys.bit_length()  # more slots than keys: the table is never full
    monkeypatch.setattr(gpu, "HT_FIRST", 1 << 20 if dense else first)
    got = gpu.run_gpu_chunk(b, 0, 300)
    for k in want:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]), err_msg=k)
    if dense:  # at most one key per trajectory: 2 * 300 slots, never redone
        assert gpu.first_slots(True, 300) == 1024 and launches == [1] and c.digest not in gpu._HT_SLOTS
        return
    assert keys > 8 and 2 * keys > first  # more than half full: redone once, with 2 * keys slots
    assert launches == [1, 1] and gpu._HT_SLOTS[c.digest] == 2 * first
    launches.clear()
    gpu.run_gpu_chunk(b, 0, 300)  # the model's size is remembered
    assert launches == [1]


def test_profile_names_the_phases_of_a_call(monkeypatch, capfd):
    monkeypatch.setenv(block.PROFILE_ENV, "1")
    maboss(DATA / "toggle_internal.bnd", trajectories=300, seed=2, backend="cpu", progress=False)
    line = [x for x in capfd.readouterr().err.splitlines() if x.startswith("[distsim profile] maboss call n=300")]
    assert len(line) == 1, line
    for phase in ("read ", "compile ", "run start ", "shards (1) ", "merge ", "run end ", "dataset "):
        assert phase in line[0], (phase, line[0])


def test_summary_prints_the_most_frequent_fixed_points(capsys):
    from distsim.cli.maboss import SHOWN_FIXED_POINTS, _print_summary

    ds = maboss(*MONTAGUD, trajectories=400, max_time=20.0, seed=1, backend="cpu", progress=False)
    n = ds.sizes["fixed_point"]
    assert n > SHOWN_FIXED_POINTS
    _print_summary(ds)
    out = capsys.readouterr().out.splitlines()
    shown = [x for x in out if x.startswith("fixed point ")]
    labels = ds.fixed_point.values[:SHOWN_FIXED_POINTS]
    p = ds.fixed_point_probability.values
    assert shown == [f"fixed point {lab}: {q:.5f}" for lab, q in zip(labels, p)]
    assert out[-1] == f"... {n - SHOWN_FIXED_POINTS} more fixed points (probability " \
                      f"{p[SHOWN_FIXED_POINTS:].sum():.5f} in all)"


GPU_CHILD = """
import sys
sys.path.insert(0, {unit!r})
from cuda_on_host import HostModule, fake_cupy
sys.modules["cupy"] = fake_cupy()
from pathlib import Path
import distsim.cli, distsim.cli.maboss
from distsim.engine import ShardContext
from distsim.maboss import compile_model, gpu, load, shard, simulate
gpu._module = lambda m=None: HostModule(gpu.source(m), Path({tmp!r}))
m = load({bnd!r}, max_time=2.0, sample_count=200)
c = compile_model(m)
s = m.settings
b = shard.Block(c, 1, 0, 200, s.n_windows, s.max_time, s.time_tick, s.discrete_time)
res = shard.simulate_block(ShardContext("r", 0, 0, "gpu"), b)
ds = simulate.build_dataset(m, c, res, {{}})
print("NUMBA", "numba" in sys.modules, ds.sizes["state"] > 0)
"""


@pytest.mark.skipif(not __import__("shutil").which("g++"), reason="g++ not on PATH")
def test_gpu_process_never_imports_numba(tmp_path):
    """The command line, the GPU shard task (its kernel on the host, NumPy for CuPy) and the Dataset: no
    Numba in the process (it is the CPU kernels' compiler; its import took 0.2-0.5 s)."""
    code = GPU_CHILD.format(unit=str(Path(__file__).resolve().parent), tmp=str(tmp_path),
                            bnd=str(DATA / "toggle_internal.bnd"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "NUMBA False True" in r.stdout, r.stdout[-2000:]


def test_compile_listener_waits_for_numbas_import():
    """Importing the engine does not import Numba; Numba's first import installs the compile listener."""
    code = ("import sys; from distsim.backends import compiles; import distsim.engine; "
            "a = ('numba' in sys.modules, compiles._installed); import numba; "
            "print('WATCH', a, compiles._installed)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "WATCH (False, False) True" in r.stdout, r.stdout


GPU_PROCESS = """
import os, sys
os.environ["DISTSIM_MABOSS_PROFILE"] = "1"
from distsim.cli import main
rc = main(["-q", "maboss", {bnd!r}, {cfg!r}, "-n", "100000", "--csv", {prefix!r}])
print("RC", rc, "numba" in sys.modules)
"""


@pytest.mark.gpu
def test_gpu_process_imports_no_numba_and_launches_once(tmp_path):
    """On a GPU: ``distsim maboss`` on Montagud's model in a new process imports no Numba, and its first
    launch is not redone (the dense tables' fixed points fit the first hash table)."""
    code = GPU_PROCESS.format(bnd=str(MONTAGUD[0]), cfg=str(MONTAGUD[1]), prefix=str(tmp_path / "m"))
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "RC 0 False" in r.stdout, r.stdout[-2000:]
    chunk = [x for x in r.stderr.splitlines() if x.startswith("[distsim profile] maboss gpu chunk")]
    assert chunk and all("kernel redone" not in x for x in chunk), r.stderr[-3000:]
    assert (tmp_path / "m_probtraj.csv").stat().st_size > 0
