"""MaBoSS time courses against the exact CTMC (``distsim.maboss.exact``: matrix exponentials of small models).

Each estimate is an average over N independent trajectories of a per-trajectory value in [0, B]
(B = 1 for probabilities, log2 of the visible node count for TH), so its standard deviation is at most
sqrt(m (B - m) / N) for the exact mean m. Every comparison of a test must hold within z of those
standard deviations, z Bonferroni-corrected for the number of comparisons at a family-wise level of
1e-4; event times are rounded to tick / 2**30, which adds at most 4 / 2**30 to a window average.
Seeds are fixed, so each test is deterministic.
"""

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from distsim.maboss import compile_model, exact, load, maboss

DATA = Path(__file__).resolve().parents[1] / "data" / "maboss"
ALPHA = 1e-4
QUANT = 4 / 2**30


def _check(est: np.ndarray, mean: np.ndarray, n: int, z: float, bound: float = 1.0) -> None:
    tol = z * np.sqrt(np.clip(mean * (bound - mean), 0, None) / n) + QUANT
    bad = np.abs(est - mean) > tol
    assert not bad.any(), (est[bad], mean[bad], tol[bad])


def _compare(ds, model, mutants=None, trajectories=None):
    ref = exact.time_course(model, mutants)
    n = int(ds.attrs["trajectories"])
    win = exact.by_label(model, ref["states"], ref["window"])
    fin = exact.by_label(model, ref["states"], ref["final"])
    labels = sorted(set(win) | set(str(s) for s in ds.state.values))
    got = np.array([ds.probability.sel(state=s).values if s in ds.state.values else np.zeros(ds.time.size)
                    for s in labels]).T
    want = np.array([win.get(s, np.zeros(ds.time.size)) for s in labels]).T
    got_f = np.array([float(ds.final_probability.sel(state=s)) if s in ds.state.values else 0.0 for s in labels])
    want_f = np.array([fin.get(s, 0.0) for s in labels])
    absorbing = ref["rates"].sum(axis=1) == 0
    fp_want = {lab: p for lab, p, a in zip(exact.full_label(model, ref["states"]), ref["final"], absorbing) if a}
    fp_got = dict(zip([str(s) for s in ds.fixed_point.values], ds.fixed_point_probability.values))
    assert set(fp_got) <= set(fp_want)
    fp_labels = sorted(fp_want)
    n_vis = len(ds.node)
    th_bound = np.log2(max(n_vis, 2))
    m = got.size + got_f.size + len(fp_labels) + ds.time.size
    z = stats.norm.isf(ALPHA / (2 * m))
    _check(got, want, n, z)
    _check(got_f, want_f, n, z)
    _check(np.array([fp_got.get(s, 0.0) for s in fp_labels]), np.array([fp_want[s] for s in fp_labels]), n, z)
    _check(ds.TH.values, ref["th"], n, z, th_bound)
    # node probabilities are sums of the state probabilities
    for j, node in enumerate(ds.node.values):
        on = [k for k, s in enumerate(labels) if node in s.split(" -- ")]
        np.testing.assert_allclose(ds.node_probability.values[:, j], got[:, on].sum(axis=1), rtol=0, atol=1e-12)
    np.testing.assert_allclose(ds.probability.sum("state").values, 1.0, rtol=0, atol=1e-12)
    return ref


def test_internal_node_joint_istate_and_variables():
    ds = maboss(DATA / "toggle_internal.bnd", backend="cpu", progress=False)
    model = load(DATA / "toggle_internal.bnd")
    assert ds.attrs["trajectories"] == 20000 and ds.attrs["seed"] == 3
    assert "C" not in list(ds.node.values) and ds.time.size == 8
    assert all("C" not in str(s).split(" -- ") for s in ds.state.values)
    ref = _compare(ds, model)
    assert ref["th"].max() > 0.5  # the entropy check is not vacuous


def test_variable_override_changes_the_chain():
    ds = maboss(DATA / "toggle_internal.bnd", variables={"$ka": 0.25}, trajectories=20000, backend="cpu",
                progress=False)
    _compare(ds, load(DATA / "toggle_internal.bnd", variables={"ka": 0.25}))
    assert ds.attrs["variables"] == "$ka=0.25"


def test_fixed_points_and_final_states():
    ds = maboss(DATA / "absorbing.bnd", backend="cpu", progress=False)
    ref = _compare(ds, load(DATA / "absorbing.bnd"))
    assert ds.fixed_point.size >= 2 and ds.fixed_point_probability.sum() > 0.5
    assert set(ds.fixed_point_state.sel(model_node="S").values) == {0}
    assert (ref["rates"].sum(axis=1) == 0).sum() == 2


def test_mutants_against_exact():
    mut = {"X": 1}
    ds = maboss(DATA / "absorbing.bnd", mutants=mut, backend="cpu", progress=False, seed=7)
    _compare(ds, load(DATA / "absorbing.bnd"), mutants=mut)
    assert float(ds.node_probability.sel(node="X").min()) == 1.0


def test_discrete_time_against_the_jump_chain():
    ds = maboss(DATA / "absorbing.bnd", DATA / "discrete.cfg", backend="cpu", progress=False)
    assert ds.attrs["discrete_time"] == 1
    _compare(ds, load(DATA / "absorbing.bnd", DATA / "discrete.cfg"))


def test_settings_override_and_window_count():
    ds = maboss(DATA / "absorbing.bnd", max_time=2.0, time_tick=0.3, trajectories=500, seed=1, backend="cpu",
                progress=False)
    assert ds.time.size == int(2.0 / 0.3) and ds.attrs["trajectories"] == 500
    np.testing.assert_allclose(ds.time.values, np.arange(6) * 0.3)
    _compare(ds, load(DATA / "absorbing.bnd", max_time=2.0, time_tick=0.3, sample_count=500))


@pytest.mark.parametrize("bad, match", [({"max_time": -1}, "max_time"), ({"time_tick": 0}, "time_tick"),
                                        ({"trajectories": 0}, "sample_count")])
def test_bad_settings(bad, match):
    from distsim.errors import ConfigError

    with pytest.raises(ConfigError, match=match):
        maboss(DATA / "absorbing.bnd", backend="cpu", progress=False, **bad)


@pytest.mark.parametrize("bnd, cfg, mutants", [
    ("toggle_internal.bnd", None, {}), ("absorbing.bnd", None, {"Y": 1}), ("cellcycle.bnd", "cellcycle_runcfg.cfg", {}),
    ("p53_Mdm2.bnd", "p53_Mdm2_runcfg.cfg", {"p53": 0}), ("Four_cycle.bnd", "Four_cycle_FEscape.cfg", {})])
def test_compiled_rate_tables_equal_the_reader_conditions(bnd, cfg, mutants):
    """The kernels' truth tables give, in every state, the flip rates the reader's conditions give."""
    m = load(DATA / bnd, None if cfg is None else DATA / cfg)
    c = compile_model(m, mutants)
    want = exact.flip_rates(m, mutants)
    X = exact._states(len(m.nodes))
    got = np.zeros_like(want)
    for i in range(len(m.nodes)):
        par = c.par_index[c.par_start[i]:c.par_start[i + 1]]
        row = np.zeros(len(X), np.int64)
        for p in par:
            row = (row << 1) | X[:, p]
        got[:, i] = c.vals[c.val_start[i] + c.tt[c.tt_start[i] + row]]
    np.testing.assert_array_equal(got, want)
    assert want.any()


@pytest.mark.parametrize("bnd, cfg, over", [
    ("p53_Mdm2.bnd", "p53_Mdm2_runcfg.cfg", {"max_time": 6, "time_tick": 0.5}),
    ("Four_cycle.bnd", "Four_cycle_FEscape.cfg", {"time_tick": 0.25}),
    ("cellcycle.bnd", "cellcycle_runcfg.cfg", {}),  # discrete_time = 1
    ("cellcycle.bnd", "cellcycle_runcfg.cfg", {"discrete_time": 0}),
])
def test_maboss_examples_against_exact(bnd, cfg, over):
    """MaBoSS's own example models (<= 12 nodes), their .cfg as written, against the exact chain."""
    kw = {k: (bool(v) if k == "discrete_time" else v) for k, v in over.items()}
    ds = maboss(DATA / bnd, DATA / cfg, trajectories=20000, seed=21, backend="cpu", progress=False, **kw)
    _compare(ds, load(DATA / bnd, DATA / cfg, sample_count=20000, **over))
