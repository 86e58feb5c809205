"""distsim against MaBoSS itself (cmaboss, the MaBoSS engine's Python module) on real models.

Both are Monte Carlo estimates from N independent trajectories each; for a window average (a
per-trajectory value in [0, 1]) the difference has standard deviation at most
sqrt(p (1 - p) (1/N + 1/N)), p taken as the mean of the two estimates (plus 1/N, so that a state seen
once by one side only is not a failure at any z). Each test's comparisons hold within z standard
deviations, Bonferroni-corrected at a family-wise level 1e-4. The test is skipped without cmaboss.
"""

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from distsim.maboss import maboss

cmaboss = pytest.importorskip("cmaboss")

DATA = Path(__file__).resolve().parents[1] / "data" / "maboss"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pbn"
ALPHA = 1e-4
N = 20000

MODELS = {  # bnd, cfg, overrides
    "cellcycle-discrete": (DATA / "cellcycle.bnd", DATA / "cellcycle_runcfg.cfg", {}),
    "cellcycle-continuous": (DATA / "cellcycle.bnd", DATA / "cellcycle_runcfg.cfg", {"discrete_time": 0}),
    "p53_Mdm2": (DATA / "p53_Mdm2.bnd", DATA / "p53_Mdm2_runcfg.cfg", {"max_time": 10}),
    "four_cycle": (DATA / "Four_cycle.bnd", DATA / "Four_cycle_FEscape.cfg", {"time_tick": 0.1}),
    "calzone2010": (EXAMPLES / "maboss_calzone2010_cell_fate_28n.bnd",
                    EXAMPLES / "maboss_calzone2010_cell_fate_28n.cfg", {"max_time": 5, "time_tick": 0.25}),
    "metastasis": (DATA / "metastasis.bnd", DATA / "metastasis.cfg", {"max_time": 20}),
    "absorbing": (DATA / "absorbing.bnd", DATA / "absorbing.cfg", {}),
    "toggle_internal": (DATA / "toggle_internal.bnd", DATA / "toggle_internal.cfg", {}),
}


def _run_maboss(bnd: Path, cfg: Path, overrides: dict, tmp_path: Path):
    text = cfg.read_text() + "\n" + "".join(f"{k} = {v};\n" for k, v in {"sample_count": N, **overrides}.items())
    c = tmp_path / cfg.name
    c.write_text(text)
    return cmaboss.MaBoSSSim(network=str(bnd), config=str(c)).run()


def _close(a: np.ndarray, b: np.ndarray, z: float) -> None:
    p = (a + b) / 2 + 1.0 / N
    tol = z * np.sqrt(np.clip(p * (1 - p), 0, None) * 2 / N) + 1e-9  # + time rounding and float sums
    bad = np.abs(a - b) > tol
    assert not bad.any(), (a[bad], b[bad], tol[bad])


@pytest.mark.parametrize("name", list(MODELS))
def test_against_maboss(name, tmp_path):
    bnd, cfg, over = MODELS[name]
    ds = maboss(bnd, cfg, trajectories=N, seed=12345, backend="cpu", progress=False,
                **{k: (bool(v) if k == "discrete_time" else v) for k, v in over.items()})
    res = _run_maboss(bnd, cfg, over, tmp_path)
    table, times, states = res.get_probtraj()[:3]
    np.testing.assert_allclose(ds.time.values, times, rtol=0, atol=1e-9)
    labels = sorted(set(states) | {str(s) for s in ds.state.values})
    theirs = np.array([table[:, states.index(s)] if s in states else np.zeros(len(times)) for s in labels]).T
    ours = np.array([ds.probability.sel(state=s).values if s in ds.state.values else np.zeros(len(times))
                     for s in labels]).T
    fp = res.get_fp_table()
    fp_theirs = {lab: p for p, lab in fp.values()}
    fp_ours = dict(zip([str(s) for s in ds.fixed_point.values], ds.fixed_point_probability.values))
    fps = sorted(set(fp_theirs) | set(fp_ours))
    ent, _, cols = res.get_entropy_trajectory()
    m = ours.size + len(fps)
    z = stats.norm.isf(ALPHA / (2 * m))
    _close(ours, theirs, z)
    _close(np.array([fp_ours.get(s, 0.0) for s in fps]), np.array([fp_theirs.get(s, 0.0) for s in fps]), z)
    # MaBoSS's H is the same function of the window's distribution: equal up to the noise of p
    h_theirs = ent[:, cols.index("H")]
    h_from_theirs = -np.sum(np.where(table > 0, table * np.log2(np.where(table > 0, table, 1)), 0), axis=1)
    np.testing.assert_allclose(h_theirs, h_from_theirs, rtol=1e-4, atol=1e-6)
    assert np.abs(ds.H.values - h_theirs).max() < 0.1
    th_theirs = ent[:, cols.index("TH")]
    bound = np.log2(max(len(ds.node), 2))
    p = (ds.TH.values + th_theirs) / 2 / bound
    tol = z * bound * np.sqrt(np.clip(p * (1 - p), 0, None) * 2 / N) + 1e-9
    assert (np.abs(ds.TH.values - th_theirs) <= tol).all(), (ds.TH.values, th_theirs)
    # ErrorTH: two estimates of one standard error. For a value in [0, B] with mean fraction m in [0.05, 0.95]
    # the kurtosis is at most 1 / (m (1 - m)) < 21, so each estimate's relative sd is < sqrt(20 / (4 N)) = 1.6%
    # and their difference's < 2.3%: 15% is > 6 sd, a bound that holds for every window at level 1e-4.
    e_theirs = ent[:, cols.index("ErrorTH")]
    mid = (p > 0.05) & (p < 0.95) & (e_theirs > 1e-6)  # below: round-off of a zero variance (a constant TH)
    np.testing.assert_allclose(ds.ErrorTH.values[mid], e_theirs[mid], rtol=0.15)
