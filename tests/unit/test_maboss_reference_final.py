"""distsim's ``final_probability`` (the visible state at ``max_time``) against MaBoSS's own, from cmaboss
``run(only_last_state=True)`` (MaBoSS's probtraj "last" row is the last window's average, not this).

Each side is the fraction of N independent trajectories in a state, so the difference of the two has
standard deviation sqrt(p (1 - p) (2 / N)), p the pooled fraction (kept 1/(2N) from 0 and 1). Each model's
states hold within the two-sided Bonferroni bound at a family-wise level 1e-4. Skipped without cmaboss."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from distsim.maboss import maboss

cmaboss = pytest.importorskip("cmaboss")

DATA = Path(__file__).resolve().parents[1] / "data" / "maboss"
ALPHA = 1e-4
N = 20000

MODELS = {  # bnd, cfg, overrides
    "cellcycle-discrete": (DATA / "cellcycle.bnd", DATA / "cellcycle_runcfg.cfg", {}),
    "cellcycle-continuous": (DATA / "cellcycle.bnd", DATA / "cellcycle_runcfg.cfg", {"discrete_time": 0}),
    "p53_Mdm2": (DATA / "p53_Mdm2.bnd", DATA / "p53_Mdm2_runcfg.cfg", {"max_time": 10}),
    "metastasis": (DATA / "metastasis.bnd", DATA / "metastasis.cfg", {"max_time": 30}),
    "absorbing": (DATA / "absorbing.bnd", DATA / "absorbing.cfg", {}),
    "toggle_internal": (DATA / "toggle_internal.bnd", DATA / "toggle_internal.cfg", {}),
}


def _label(s: str) -> str:
    return " -- ".join(sorted(s.split(" -- ")))


@pytest.mark.parametrize("name", list(MODELS))
def test_final_states_against_maboss(name, tmp_path):
    bnd, cfg, over = MODELS[name]
    c = tmp_path / cfg.name
    c.write_text(cfg.read_text() + "\n" + "".join(f"{k} = {v};\n" for k, v in {"sample_count": N, **over}.items()))
    res = cmaboss.MaBoSSSim(network=str(bnd), config=str(c)).run(only_last_state=True)
    table, times, states = res.get_last_probtraj()[:3]
    ds = maboss(bnd, cfg, trajectories=N, seed=2024, backend="cpu", progress=False,
                **{k: (bool(v) if k == "discrete_time" else v) for k, v in over.items()})
    assert times[0] == pytest.approx(ds.attrs["max_time"])
    theirs = {_label(s): float(p) for s, p in zip(states, table[0])}
    ours = {_label(str(s)): float(p) for s, p in zip(ds.state.values, ds.final_probability.values) if p > 0}
    assert sum(theirs.values()) == pytest.approx(1.0) and sum(ours.values()) == pytest.approx(1.0)
    labels = sorted(set(theirs) | set(ours))
    a = np.array([ours.get(s, 0.0) for s in labels])
    b = np.array([theirs.get(s, 0.0) for s in labels])
    p = np.clip((a + b) / 2, 1 / (2 * N), 1 - 1 / (2 * N))
    z = np.abs(a - b) / np.sqrt(p * (1 - p) * 2 / N)
    crit = stats.norm.isf(ALPHA / (2 * len(labels)))
    assert (z <= crit).all(), [(s, a[i], b[i], z[i]) for i, s in enumerate(labels) if z[i] > crit]
