"""The CPU kernel's dense tables (``cpu.simulate_dense``: each trajectory's current window only, whole-window
stretches as differences) give the counts of the per-trajectory records summed in hash tables
(``shard.run_cpu_records``) bit for bit, also when a window's record list, a trajectory's record slab or a hash
table overflows and the call is redone;
and the dense tables are chosen by the number of visible nodes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from distsim.maboss import block, compile_model, load, shard

DATA = Path(__file__).resolve().parents[1] / "data" / "maboss"

CASES = {
    "toggle_internal": (DATA / "toggle_internal.bnd", None, {}),
    "absorbing": (DATA / "absorbing.bnd", None, {}),
    "absorbing-discrete": (DATA / "absorbing.bnd", DATA / "discrete.cfg", {}),
    "cellcycle": (DATA / "cellcycle.bnd", DATA / "cellcycle_runcfg.cfg", {}),
    "p53-mutant": (DATA / "p53_Mdm2.bnd", DATA / "p53_Mdm2_runcfg.cfg", {"Dam": 0}),
    "metastasis": (DATA / "metastasis.bnd", DATA / "metastasis.cfg", {}),
    "montagud133": (DATA / "Montagud2022_Prostate_Cancer.bnd", DATA / "Montagud2022_Prostate_Cancer.cfg", {}),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("cap", [16, 1])
def test_dense_tables_equal_records(name, cap, monkeypatch):
    bnd, cfg, mutants = CASES[name]
    m = load(bnd, cfg, max_time=4.0)
    c = compile_model(m, mutants)
    s = m.settings
    assert block.dense_states(c, s.n_windows) == 1 << len(c.visible)
    b = shard.Block(c, 31, 0, 700, s.n_windows, s.max_time, s.time_tick, s.discrete_time)
    monkeypatch.setattr(block, "REC_CAP", cap)  # 1: windows with two visible states overflow the list
    if cap == 1:  # the records: a slab of one record and tables of 4 slots overflow, and the call is redone
        monkeypatch.setattr(block, "WIN_RECS", 0)
        monkeypatch.setattr(shard, "HT_FIRST", 4)
    got = shard.run_cpu_chunk(b, 500, 700)
    want = shard.run_cpu_records(b, 500, 700)
    assert want["trajectories"] == 700 and want["events"] > 0 and len(want["win"]) > 0
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]), err_msg=k)
        assert np.asarray(got[k]).dtype == np.asarray(want[k]).dtype, k


def test_dense_only_for_few_visible_nodes(tmp_path):
    """Sizek et al. (2019) with all 87 nodes visible takes the records; windows x states bound the tables."""
    text = "\n".join(line for line in (DATA / "sizek.cfg").read_text().splitlines() if "is_internal" not in line)
    (tmp_path / "sizek.cfg").write_text(text)
    m = load(DATA / "sizek.bnd", tmp_path / "sizek.cfg")
    assert block.dense_states(compile_model(m), 20) == 0
    small = compile_model(load(DATA / "cellcycle.bnd", DATA / "cellcycle_runcfg.cfg"))
    assert block.dense_states(small, 25) == 16
    assert block.dense_states(small, block.DENSE_MAX_ENTRIES // 16 + 1) == 0
