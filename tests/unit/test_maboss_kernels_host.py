"""CPU == GPU for the maboss kernels without a GPU: ``kernels/ctbn.cu`` compiled for the host by g++
(``cuda_host.h``: CUDA's keywords and intrinsics, IEEE doubles, no contraction) and launched by the
unchanged ``distsim.maboss.gpu`` code with NumPy standing in for CuPy gives the Numba kernel's counts
bit for bit (records, entropy sums, final states, fixed points, events), also when the per-window
record lists overflow and the launch is redone, with the device reduction in dense tables and in the
hash table. The device itself is checked by tests/gpu/test_maboss_gpu.py.
Skipped where g++ is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from distsim.maboss import block, codegen, compile_model, gpu, load, shard

from cuda_on_host import GXX, HostModule, fake_cupy

pytestmark = pytest.mark.skipif(GXX is None, reason="g++ not on PATH")

DATA = Path(__file__).resolve().parents[1] / "data" / "maboss"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pbn"

CASES = {
    "toggle_internal": (DATA / "toggle_internal.bnd", None, {}),
    "absorbing": (DATA / "absorbing.bnd", None, {}),
    "absorbing-discrete": (DATA / "absorbing.bnd", DATA / "discrete.cfg", {}),
    "cellcycle": (DATA / "cellcycle.bnd", DATA / "cellcycle_runcfg.cfg", {}),
    "p53-mutant": (DATA / "p53_Mdm2.bnd", DATA / "p53_Mdm2_runcfg.cfg", {"Dam": 0}),
    "calzone2010": (EXAMPLES / "maboss_calzone2010_cell_fate_28n.bnd", None, {}),
    # every istate fixed (the CPU draws none and computes the start's rates once), mutants among them
    "calzone2010-mutants": (EXAMPLES / "maboss_calzone2010_cell_fate_28n.bnd", None, {"TNF": 1, "CASP3": 0}),
    "montagud133": (DATA / "Montagud2022_Prostate_Cancer.bnd", None, {}),
    "montagud133-mutants": (DATA / "Montagud2022_Prostate_Cancer.bnd", None, {"AKT": 0, "ERK": 1}),
}


@pytest.fixture(params=["generated", "table"])
def kernel(request, monkeypatch):
    """Both kernels: generated for the model (the default) and the table kernel (DISTSIM_MABOSS_KERNEL=table)."""
    monkeypatch.setenv(codegen.KERNEL_ENV, request.param)
    return request.param


@pytest.fixture
def host_gpu(monkeypatch, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("host_kernels")
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    monkeypatch.setattr(gpu, "_module", lambda m=None: HostModule(gpu.source(m), workdir))
    monkeypatch.setattr(gpu, "_DEVICE_MODELS", {})


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("cap", [16, 1])
@pytest.mark.parametrize("tables", ["dense", "hash"])
def test_host_kernel_equals_cpu(name, cap, tables, kernel, host_gpu, monkeypatch):
    """The device reduction (dense tables, or the hash table starting tiny so that it overflows and the
    launch is redone) gives the counts of the CPU's records reduced on the host."""
    if tables == "hash":
        monkeypatch.setattr(block, "DENSE_MAX_VISIBLE", -1)
        monkeypatch.setattr(gpu, "HT_FIRST", 4)
        monkeypatch.setattr(gpu, "_HT_SLOTS", {})
    bnd, cfg, mutants = CASES[name]
    m = load(bnd, cfg, max_time=3.0)
    c = compile_model(m, mutants)
    s = m.settings
    b = shard.Block(c, 77, 0, 300, s.n_windows, s.max_time, s.time_tick, s.discrete_time)
    monkeypatch.setattr(block, "REC_CAP", cap)
    monkeypatch.setattr(block, "WIN_RECS", 0 if cap == 1 else 2)  # cap 1: every trajectory overflows
    want = shard.run_cpu_records(b, 1000, 300)
    got = gpu.run_gpu_chunk(b, 1000, 300)
    assert want["events"] > 0 and want["trajectories"] == 300
    for k in want:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]), err_msg=k)


def test_host_kernel_two_word_states(kernel, host_gpu, tmp_path):
    """Sizek et al. (2019) with all 87 nodes visible: visible states of two 64-bit words."""
    text = "\n".join(line for line in (DATA / "sizek.cfg").read_text().splitlines() if "is_internal" not in line)
    (tmp_path / "sizek.cfg").write_text(text)
    m = load(DATA / "sizek.bnd", tmp_path / "sizek.cfg", max_time=3.0, time_tick=0.5)
    c = compile_model(m)
    assert c.vis_words == 2
    s = m.settings
    b = shard.Block(c, 3, 0, 200, s.n_windows, s.max_time, s.time_tick, s.discrete_time)
    want = shard.run_cpu_chunk(b, 0, 200)
    got = gpu.run_gpu_chunk(b, 0, 200)
    assert want["state"].shape[1] == 2 and (want["state"][:, 1] != 0).any()
    for k in want:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]), err_msg=k)


def test_host_kernel_hash_table_full_halves_the_launch(host_gpu, monkeypatch):
    """More distinct (window, state) keys than the largest hash table: the trajectories run in halves,
    with the same counts."""
    monkeypatch.setattr(block, "DENSE_MAX_VISIBLE", -1)
    monkeypatch.setattr(gpu, "HT_FIRST", 4)
    monkeypatch.setattr(gpu, "HT_MAX_SLOTS", 64)
    monkeypatch.setattr(gpu, "_HT_SLOTS", {})
    m = load(DATA / "p53_Mdm2.bnd", DATA / "p53_Mdm2_runcfg.cfg", max_time=3.0)
    c = compile_model(m)
    s = m.settings
    b = shard.Block(c, 8, 0, 120, s.n_windows, s.max_time, s.time_tick, s.discrete_time)
    want = shard.run_cpu_records(b, 0, 120)
    assert len(want["win"]) > 32  # more keys than 64 slots hold at half load
    got = gpu.run_gpu_chunk(b, 0, 120)
    for k in want:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]), err_msg=k)


def test_host_kernel_hash_copies_and_profile(host_gpu, monkeypatch, capfd):
    """Hot (window, state) keys spread over HT_COPIES slots (the copy in the tag's high bits) give the
    CPU's counts whatever the number of copies, with more slots used than with one copy; the
    DISTSIM_MABOSS_PROFILE=1 line names the phases and the used slots."""
    monkeypatch.setattr(block, "DENSE_MAX_VISIBLE", -1)
    monkeypatch.setenv("DISTSIM_MABOSS_PROFILE", "1")
    m = load(DATA / "cellcycle.bnd", DATA / "cellcycle_runcfg.cfg", max_time=3.0)
    c = compile_model(m)
    s = m.settings
    b = shard.Block(c, 21, 0, 256, s.n_windows, s.max_time, s.time_tick, s.discrete_time)
    want = shard.run_cpu_records(b, 0, 256)
    used = {}
    for copies in (1, 4):
        monkeypatch.setattr(gpu, "HT_COPIES", copies)
        monkeypatch.setattr(gpu, "_HT_SLOTS", {})
        capfd.readouterr()
        got = gpu.run_gpu_chunk(b, 0, 256)
        err = capfd.readouterr().err
        for k in want:
            np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]), err_msg=f"{copies}: {k}")
        line = [x for x in err.splitlines() if x.startswith("[distsim profile] maboss gpu chunk n=256")]
        assert len(line) == 1 and all(p in line[0] for p in ("kernel ", "reduce ", "copy ", "host merge "))
        used[copies] = int(line[0].split(" keys=")[1].split()[0])
    # one copy: one slot per distinct key (records, final states, fixed points)
    assert used[1] == len(want["win"]) + len(want["final_n"]) + len(want["fp_n"])
    assert used[4] > used[1]


@pytest.mark.parametrize("rate,mutants", [("0.5", {}), ("4", {"B": 0})])
@pytest.mark.parametrize("tables", ["dense", "hash"])
def test_host_kernel_unit_rates(rate, mutants, tables, host_gpu, monkeypatch, tmp_path):
    """A model whose rates are all 0 or one power of two other than 1 (codegen.unit_rate: counts and the
    floor(rr / v)-th enabled node) with a hidden node and a mutant: the CPU's counts."""
    from test_maboss_codegen import unit_model

    monkeypatch.setenv(codegen.KERNEL_ENV, "generated")
    if tables == "hash":
        monkeypatch.setattr(block, "DENSE_MAX_VISIBLE", -1)
        monkeypatch.setattr(gpu, "_HT_SLOTS", {})
    m = unit_model(tmp_path, rate)
    c = compile_model(m, mutants)
    assert codegen.unit_rate(c.unmutated or c) == float(rate) and "__popc" in gpu.source(c)
    s = m.settings
    b = shard.Block(c, 5, 0, 400, s.n_windows, s.max_time, s.time_tick, s.discrete_time)
    want = shard.run_cpu_records(b, 0, 400)
    got = gpu.run_gpu_chunk(b, 0, 400)
    assert want["events"] > 400
    for k in want:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]), err_msg=k)
