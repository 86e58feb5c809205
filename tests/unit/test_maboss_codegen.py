"""The generated MaBoSS GPU kernel's code (distsim/maboss/codegen.py): its decision diagrams equal the truth
tables they come from, mutants share the unmutated model's kernel, too large a model and
DISTSIM_MABOSS_KERNEL=table give the table kernel. Its bits are checked against the CPU in
test_maboss_kernels_host.py (host-compiled) and tests/gpu/test_maboss_gpu.py."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from distsim.backends import cuda
from distsim.errors import ConfigError
from distsim.maboss import codegen, compile_model, gpu, load

DATA = Path(__file__).resolve().parents[1] / "data" / "maboss"


def _evaluate(nodes, root, K):
    """The diagram's value on every row (variable k: bit K-1-k of the row)."""
    rows = np.arange(1 << K)
    val = {0: np.zeros(rows.size, bool), 1: np.ones(rows.size, bool)}
    for j, (k, lo, hi) in enumerate(nodes):
        bit = ((rows >> (K - 1 - k)) & 1).astype(bool)
        val[j + 2] = np.where(bit, val[hi], val[lo])
    return val[root]


@pytest.mark.parametrize("K", [0, 1, 2, 5, 9, 12])
def test_diagram_equals_table_and_is_reduced(K):
    rng = np.random.default_rng(K)
    tables = [rng.integers(0, 2, 1 << K), np.zeros(1 << K, int), np.ones(1 << K, int)]
    if K >= 2:  # structured: x0 & !x1 | parity of the last two
        r = np.arange(1 << K)
        tables.append((((r >> (K - 1)) & 1) & ~((r >> (K - 2)) & 1)) | ((r ^ (r >> 1)) & 1))
    for t in tables:
        nodes, root = codegen.diagram(t)
        np.testing.assert_array_equal(_evaluate(nodes, root, K), t.astype(bool))
        assert all(lo != hi for _, lo, hi in nodes)  # no redundant test
        assert len(set(nodes)) == len(nodes)  # no duplicate sub-diagram
        assert all(lo < j + 2 and hi < j + 2 for j, (_, lo, hi) in enumerate(nodes))  # children first
    assert codegen.diagram(np.zeros(1 << K, int)) == ([], 0)


def test_diagram_of_a_read_variable_is_one_node():
    r = np.arange(1 << 6)
    assert codegen.diagram((r >> 3) & 1) == ([(2, 0, 1)], 2)  # bit 3 of a row of 6 variables: variable 2


def test_models_get_generated_kernels_and_mutants_share_one():
    m = load(DATA / "Montagud2022_Prostate_Cancer.bnd")
    base = compile_model(m)
    src = gpu.source(base)
    assert "ctbn_picked" in src and "#define CTBN_VW_OF(a) 1" in src
    # a knock-out screen: every mutant runs the unmutated model's kernel (its rates masked by fix_mask)
    for mut in ({"AKT": 0}, {"ERK": 1}, {"AKT": 0, "ERK": 1}):
        c = compile_model(m, mut)
        assert c.unmutated is not None and c.unmutated.digest == base.digest
        assert gpu.source(c) == src
    for bnd, cfg in (("sizek.bnd", "sizek.cfg"), ("cellcycle.bnd", "cellcycle_runcfg.cfg")):
        assert codegen.regions(compile_model(load(DATA / bnd, DATA / cfg))) is not None


def test_table_kernel_when_too_large_or_asked(monkeypatch):
    c = compile_model(load(DATA / "cellcycle.bnd", DATA / "cellcycle_runcfg.cfg"))
    table = gpu.source(None)
    assert "ctbn_picked" not in table
    monkeypatch.setenv(codegen.KERNEL_ENV, "table")
    assert gpu.source(c) == table
    monkeypatch.setenv(codegen.KERNEL_ENV, "generated")
    monkeypatch.setattr(codegen, "MAX_DIAGRAM_NODES", 3)
    monkeypatch.setattr(gpu, "_SOURCES", {})
    assert gpu.source(c) == table
    monkeypatch.setenv(codegen.KERNEL_ENV, "fast")
    with pytest.raises(ConfigError, match="DISTSIM_MABOSS_KERNEL must be 'generated' or 'table', got 'fast'"):
        gpu.source(c)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("bnd,cfg,mutants", [("sizek.bnd", "sizek.cfg", {}),
                                             ("Montagud2022_Prostate_Cancer.bnd", None, {"AKT": 0}),
                                             ("cellcycle.bnd", "cellcycle_runcfg.cfg", {})])
def test_generated_kernel_compiles_with_nvcc(bnd, cfg, mutants, tmp_path):
    """The generated source builds for sm_90 with the options the GPU path gives NVRTC (no GPU needed)."""
    c = compile_model(load(DATA / bnd, DATA / cfg if cfg else None), mutants)
    src = gpu.source(c)
    assert "ctbn_picked" in src
    (tmp_path / "k.cu").write_text(src)
    opts = [o.replace("--maxrregcount=", "-maxrregcount=") for o in (*gpu.OPTIONS, *codegen.options(src))]
    r = subprocess.run([shutil.which("nvcc"), "-std=c++17", "-arch=sm_90", "--cubin", *opts, "-I",
                        str(cuda.kernels_dir()), "-o", str(tmp_path / "k.cubin"), str(tmp_path / "k.cu")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr


def test_register_cap_option(monkeypatch):
    src = gpu.source(compile_model(load(DATA / "cellcycle.bnd", DATA / "cellcycle_runcfg.cfg")))
    assert codegen.options(src) == (f"--maxrregcount={codegen.MAXREG}",)
    assert codegen.options(gpu.source(None)) == ()  # the table kernel: ptxas's choice
    monkeypatch.setenv(codegen.MAXREG_ENV, "0")
    assert codegen.options(src) == ()
    monkeypatch.setenv(codegen.MAXREG_ENV, "96")
    assert codegen.options(src) == ("--maxrregcount=96",)
    for bad in ("many", "16", "300"):
        monkeypatch.setenv(codegen.MAXREG_ENV, bad)
        with pytest.raises(ConfigError, match="DISTSIM_MABOSS_MAXREG must be 0"):
            codegen.options(src)


UNIT_BND = """Node A { logic = !B; rate_up = @logic ? R : 0; rate_down = @logic ? 0 : R; }
Node B { logic = A; rate_up = @logic ? R : 0; rate_down = @logic ? 0 : R; }
Node C { logic = A & B; rate_up = @logic ? R : 0; rate_down = @logic ? 0 : R; }
Node D { logic = A | C; rate_up = @logic ? R : 0; rate_down = @logic ? 0 : S; }
"""
UNIT_CFG = "C.is_internal = 1;\nmax_time = 3; time_tick = 0.5;\n"


def unit_model(tmp_path, r: str, s: str | None = None):
    (tmp_path / "u.bnd").write_text(UNIT_BND.replace("R", r).replace("S", s or r))
    (tmp_path / "u.cfg").write_text(UNIT_CFG)
    return load(tmp_path / "u.bnd", tmp_path / "u.cfg")


def test_unit_rate(tmp_path):
    """Unit-rate models (every rate 0 or one power of two) get the counting kernel, its entropy read from a
    per-block table and the flip's word picked without branches; others the sums and the cached entropy."""
    for bnd, cfg in (("sizek.bnd", "sizek.cfg"), ("Montagud2022_Prostate_Cancer.bnd", None)):
        c = compile_model(load(DATA / bnd, DATA / cfg if cfg else None))
        assert codegen.unit_rate(c) == 1.0
        r = codegen.regions(c)
        assert "__popc" in r["rates"] and "ctbn_select32" in r["select"] and "goto" not in r["select"]
        assert f"ctbn_th_tab[{len(c.visible) + 1}]" in r["setup"] and "ds_log" in r["setup"]
        assert "ctbn_th_tab[" in r["entropy"] and "ds_log" not in r["entropy"]
    c = compile_model(load(DATA / "cellcycle.bnd", DATA / "cellcycle_runcfg.cfg"))
    assert codegen.unit_rate(c) is None
    r = codegen.regions(c)
    assert r["setup"] == "" and "th_val = th" in r["entropy"] and "goto ctbn_picked" in r["select"]
    for r, s, want in (("0.5", None, 0.5), ("4", None, 4.0), ("0.3", None, None), ("1", "2", None)):
        assert codegen.unit_rate(compile_model(unit_model(tmp_path, r, s))) == want, (r, s)
    assert "__popc" not in codegen.regions(compile_model(unit_model(tmp_path, "1", "2")))["rates"]


def test_compile_model_once_per_rates_and_mutants():
    """compile_model is cached per rates object and mutants (the same arrays), not across mutants."""
    m = load(DATA / "sizek.bnd", DATA / "sizek.cfg")
    a, b = compile_model(m), compile_model(load(DATA / "sizek.bnd", DATA / "sizek.cfg", max_time=7.0))
    assert a is b
    k = compile_model(m, {m.nodes[0]: 0})
    assert k is not a and k.fix_mask[0] == 1 and a.fix_mask[0] == 0 and k.unmutated is a
    assert compile_model(m, {m.nodes[0]: 0}) is k
