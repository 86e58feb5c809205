"""maboss on a GPU: the CUDA kernel reproduces the CPU kernel bit for bit, and a seed gives the same
result on one GPU, on every GPU of the machine (a Dask GPU cluster) and on the CPU (run on a lent GPU).
The exact and MaBoSS references are checked on the CPU (tests/unit/test_maboss_*.py); the host-compiled
twin of this kernel in tests/unit/test_maboss_kernels_host.py."""

from pathlib import Path

import numpy as np
import pytest

from distsim.maboss import block, codegen, compile_model, gpu, load, maboss, shard

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "maboss"
CALZONE = ROOT / "examples" / "pbn" / "maboss_calzone2010_cell_fate_28n.bnd"
CASES = {
    "toggle_internal": (DATA / "toggle_internal.bnd", None, {}),
    "absorbing-discrete": (DATA / "absorbing.bnd", DATA / "discrete.cfg", {}),
    "cellcycle": (DATA / "cellcycle.bnd", DATA / "cellcycle_runcfg.cfg", {}),
    "p53-mutant": (DATA / "p53_Mdm2.bnd", DATA / "p53_Mdm2_runcfg.cfg", {"Dam": 0}),
    "calzone2010": (CALZONE, None, {}),
    "montagud133": (DATA / "Montagud2022_Prostate_Cancer.bnd", None, {"AKT": 0}),
    "sizek": (DATA / "sizek.bnd", DATA / "sizek.cfg", {}),
}


@pytest.fixture(params=["generated", "table"])
def kernel(request, monkeypatch):
    """Both kernels: generated for the model (the default) and DISTSIM_MABOSS_KERNEL=table."""
    monkeypatch.setenv(codegen.KERNEL_ENV, request.param)
    return request.param


def _same(a, b):
    for name in list(a.data_vars) + list(a.coords):
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("cap", [16, 1])
@pytest.mark.parametrize("tables", ["dense", "hash"])
def test_kernel_cpu_equals_gpu(case, cap, tables, kernel, monkeypatch):
    """The device reduction (dense tables with their copies, or the hash table, starting small so that it
    overflows) equals the CPU's records reduced on the host, bit for bit."""
    if tables == "hash":
        monkeypatch.setattr(block, "DENSE_MAX_VISIBLE", -1)
        monkeypatch.setattr(gpu, "HT_FIRST", 64)
        monkeypatch.setattr(gpu, "_HT_SLOTS", {})
    bnd, cfg, mutants = CASES[case]
    m = load(bnd, cfg, max_time=5.0)
    c = compile_model(m, mutants)
    s = m.settings
    b = shard.Block(c, 5, 0, 20000, s.n_windows, s.max_time, s.time_tick, s.discrete_time)
    monkeypatch.setattr(block, "REC_CAP", cap)
    monkeypatch.setattr(block, "WIN_RECS", 0 if cap == 1 else 2)  # cap 1: every trajectory overflows
    want = shard.run_cpu_records(b, 123, 20000)
    got = gpu.run_gpu_chunk(b, 123, 20000)
    for k in want:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]), err_msg=k)


def test_maboss_gpu_equals_cpu_and_any_gpu_count():
    import distsim

    kw = dict(trajectories=100000, max_time=10, seed=9, progress=False)
    a = maboss(CALZONE, backend="cpu", **kw)
    b = maboss(CALZONE, backend="gpu", **kw)
    assert b.attrs["backend"] == "gpu"
    _same(a, b)
    client = distsim.connect()  # one worker per GPU of the machine
    try:
        c = maboss(CALZONE, client=client, **kw)
    finally:
        client.close()
    assert c.attrs["backend"] == "gpu"
    _same(a, c)


def test_two_word_states_cpu_equals_gpu(kernel, tmp_path):
    """Sizek et al. (2019) with all 87 nodes visible (states of two 64-bit words), 5,000 trajectories (157,332
    distinct states: the hash table grows and the launch is redone; 50,000 took 6 minutes on an H200)."""
    text = "\n".join(line for line in (DATA / "sizek.cfg").read_text().splitlines() if "is_internal" not in line)
    (tmp_path / "sizek.cfg").write_text(text)
    kw = dict(trajectories=5000, max_time=10, seed=4, progress=False)
    _same(maboss(DATA / "sizek.bnd", tmp_path / "sizek.cfg", backend="cpu", **kw),
          maboss(DATA / "sizek.bnd", tmp_path / "sizek.cfg", backend="gpu", **kw))


@pytest.mark.parametrize("maxreg", ["0", "64"])
def test_generated_kernel_register_caps(maxreg, monkeypatch):
    """The generated kernel without a register cap and with a tight one (spilling) gives the same bits."""
    monkeypatch.setenv(codegen.MAXREG_ENV, maxreg)
    m = load(DATA / "sizek.bnd", DATA / "sizek.cfg", max_time=20.0)
    c = compile_model(m, {"PI3K": 0, "RAF": 1})
    s = m.settings
    b = shard.Block(c, 6, 0, 20000, s.n_windows, s.max_time, s.time_tick, s.discrete_time)
    want = shard.run_cpu_records(b, 0, 20000)
    got = gpu.run_gpu_chunk(b, 0, 20000)
    for k in want:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]), err_msg=k)


@pytest.mark.parametrize("rate", ["0.5", "4"])
def test_unit_rate_kernel_cpu_equals_gpu(rate, tmp_path, monkeypatch):
    """A model whose rates are all 0 or one power of two other than 1 (the generated kernel's counting
    path, codegen.unit_rate), with a hidden node and a mutant: the CPU's bits."""
    monkeypatch.setenv(codegen.KERNEL_ENV, "generated")
    bnd = "\n".join(f"Node {a} {{ logic = {g}; rate_up = @logic ? {rate} : 0; rate_down = @logic ? 0 : {rate}; }}"
                    for a, g in (("A", "!B"), ("B", "A"), ("C", "A & B"), ("D", "A | C")))
    (tmp_path / "u.bnd").write_text(bnd)
    (tmp_path / "u.cfg").write_text("C.is_internal = 1;\nmax_time = 3; time_tick = 0.5;\n")
    m = load(tmp_path / "u.bnd", tmp_path / "u.cfg")
    c = compile_model(m, {"B": 0} if rate == "4" else {})
    assert codegen.unit_rate(c.unmutated or c) == float(rate)
    s = m.settings
    b = shard.Block(c, 5, 0, 20000, s.n_windows, s.max_time, s.time_tick, s.discrete_time)
    want = shard.run_cpu_records(b, 0, 20000)
    got = gpu.run_gpu_chunk(b, 0, 20000)
    for k in want:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]), err_msg=k)
