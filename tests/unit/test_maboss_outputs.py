"""The maboss workload's outputs: same bits for any split, MaBoSS-compatible CSVs, CLI, sweeps, bad input."""

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from distsim.cli import main
from distsim.engine.executor import ShardContext
from distsim.errors import ConfigError, ModelError, OutputError
from distsim.maboss import compile_model, knockout_screen, load, maboss, sweep, write_csv
from distsim.maboss.shard import Block, merge, simulate_block
from distsim.rng import derive_seeds

DATA = Path(__file__).resolve().parents[1] / "data" / "maboss"
BND, CFG = DATA / "toggle_internal.bnd", DATA / "toggle_internal.cfg"


def _same(a: xr.Dataset, b: xr.Dataset) -> None:
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)
    for name in a.coords:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


def test_counts_do_not_depend_on_the_split(monkeypatch):
    m = load(BND)
    c = compile_model(m)
    s = m.settings
    ctx = ShardContext("t", 0, 0, "cpu")

    def run(bounds, chunk):
        monkeypatch.setattr("distsim.maboss.shard.CHUNK", chunk)
        parts = [simulate_block(ctx, Block(c, 9, a, b - a, s.n_windows, s.max_time, s.time_tick, False))
                 for a, b in zip(bounds[:-1], bounds[1:])]
        return merge(parts, s.n_windows, c.n_words, c.vis_words)

    one = run([0, 3000], 8192)
    many = run([0, 64, 1000, 1001, 2048, 3000], 100)
    for k in one:
        np.testing.assert_array_equal(np.asarray(one[k]), np.asarray(many[k]), err_msg=k)
    assert one["trajectories"] == 3000


def test_same_seed_same_result_on_a_dask_cluster(dask_client):
    a = maboss(BND, trajectories=3000, backend="cpu", progress=False)
    b = maboss(BND, trajectories=3000, client=dask_client, backend="cpu", progress=False)
    _same(a, b)
    c = maboss(BND, trajectories=3000, seed=4, backend="cpu", progress=False)
    assert not np.array_equal(a.probability.values, c.probability.values)


def test_time_limit_keeps_a_prefix_of_the_trajectories():
    ds = maboss(BND, trajectories=2**30, time_limit=0.3, backend="cpu", progress=False)  # never all in 0.3 s
    n = ds.attrs["trajectories"]
    assert ds.attrs["stopped_by"] == "time_limit" and 0 < n < 2**30
    _same(ds, maboss(BND, trajectories=n, backend="cpu", progress=False))


def test_csv_layout_is_maboss(tmp_path):
    cmaboss = pytest.importorskip("cmaboss")
    ds = maboss(DATA / "absorbing.bnd", trajectories=20000, backend="cpu", progress=False)
    ours = write_csv(ds, tmp_path / "ours")
    res = cmaboss.MaBoSSSim(network=str(DATA / "absorbing.bnd"), config=str(DATA / "absorbing.cfg")).run()
    res.display_probtraj(str(tmp_path / "theirs_probtraj.csv"))
    res.display_fp(str(tmp_path / "theirs_fp.csv"))

    def rows(path):
        lines = Path(path).read_text().splitlines()
        out = []
        for line in lines[1:]:
            f = line.split("\t")
            out.append((float(f[0]), {f[k]: (float(f[k + 1]), float(f[k + 2])) for k in range(5, len(f), 3)}))
        return lines[0].split("\t")[:8], out

    head_o, ro = rows(ours[0])
    head_t, rt = rows(tmp_path / "theirs_probtraj.csv")
    assert head_o == head_t == ["Time", "TH", "ErrorTH", "H", "HD=0", "State", "Proba", "ErrorProba"]
    assert [t for t, _ in ro] == [t for t, _ in rt]
    for (_, a), (_, b) in zip(ro, rt):
        for s in set(a) & set(b):
            # two estimates of one standard error: for a window average in [0, 1] with mean p in (0.05, 0.95)
            # the kurtosis is < 1 / (p (1 - p)) < 21, each estimate's relative sd < sqrt(20 / (4 N)) = 1.6%,
            # the difference's < 2.3%; 10% is > 4.4 sd for every compared state (level 1e-4 over ~60)
            if 0.05 < b[s][0] < 0.95:
                assert abs(a[s][1] / b[s][1] - 1) < 0.1, (s, a[s], b[s])
    fo, ft = Path(ours[1]).read_text().splitlines(), (tmp_path / "theirs_fp.csv").read_text().splitlines()
    assert fo[0] == ft[0] and fo[1] == ft[1]
    assert sorted(line.split("\t")[2:] for line in fo[2:]) == sorted(line.split("\t")[2:] for line in ft[2:])
    with pytest.raises(OutputError, match="exists"):
        write_csv(ds, tmp_path / "ours")


def test_knockout_screen_points_are_single_runs():
    ds = knockout_screen(DATA / "absorbing.bnd", trajectories=2000, seed=5, backend="cpu", progress=False)
    assert list(ds.point.values) == ["wild type", "S=KO", "X=KO", "Y=KO"]
    seeds = derive_seeds(5, np.arange(4))
    one = maboss(DATA / "absorbing.bnd", mutants={"X": 0}, trajectories=2000, seed=int(seeds[2]), backend="cpu",
                 progress=False)
    got = ds.sel(point="X=KO")
    for s in one.state.values:
        np.testing.assert_array_equal(got.probability.sel(state=s).values, one.probability.sel(state=s).values)
    assert float(got.node_probability.sel(node="X").max()) == 0.0
    v = sweep(BND, points=[{"variables": {"$ka": 0.5}}, {"variables": {"ka": 2.0}, "mutants": {"B": 1}}],
              trajectories=500, backend="cpu", progress=False)
    assert list(v.point.values) == ["$ka=0.5", "B=OE, $ka=2"]


def test_cli(tmp_path):
    out = tmp_path / "r.nc"
    rc = main(["--in-process", "-q", "maboss", str(BND), str(CFG), "--trajectories", "500", "--max-time", "2",
               "--time-tick", "0.25", "--seed", "3", "--var", "ka=0.5", "--mutant", "D=1", "-o", str(out), "--csv",
               str(tmp_path / "r"), "--plot", str(tmp_path / "r.png")])
    assert rc == 0
    ds = xr.open_dataset(out, engine="h5netcdf")
    assert ds.attrs["trajectories"] == 500 and ds.time.size == 8 and ds.attrs["mutants"] == "D=1"
    assert float(ds.node_probability.sel(node="D").min()) == 1.0
    _same(ds.load(), maboss(BND, CFG, trajectories=500, max_time=2, time_tick=0.25, seed=3, variables={"ka": 0.5},
                            mutants={"D": 1}, backend="cpu", progress=False))
    for name in ("r_probtraj.csv", "r_fp.csv", "r.png"):
        assert (tmp_path / name).is_file()


def test_cli_screen(tmp_path):
    out = tmp_path / "screen.nc"
    assert main(["--in-process", "-q", "maboss", str(DATA / "absorbing.bnd"), "--screen", "overexpression",
                 "--trajectories", "300", "-o", str(out)]) == 0
    ds = xr.open_dataset(out, engine="h5netcdf")
    assert list(ds.point.values) == ["wild type", "S=OE", "X=OE", "Y=OE"] and ds.attrs["workload"] == "maboss.sweep"
    assert float(ds.final_probability.sel(point="S=OE", state="<nil>")) == 0.0


@pytest.mark.parametrize("argv, match", [
    (["--mutant", "D=2"], "the value is 0 (knock-out) or 1"),
    (["--mutant", "ZZ=0"], "mutant node 'ZZ' is not in the model"),
    (["--var", "ka"], "expected NAME=VALUE"),
    (["--max-time", "1", "--time-tick", "2"], "time_tick must be > 0 and <= max_time"),
    (["--screen", "knockout", "--time-limit", "5"], "--screen takes neither"),
])
def test_cli_bad_input(argv, match, tmp_path, capsys):
    out = tmp_path / "x.nc"
    assert main(["--in-process", "-q", "maboss", str(BND), "-o", str(out), *argv]) == 2
    assert match in capsys.readouterr().err
    assert not out.exists()


def test_bad_model_files_name_the_line(tmp_path):
    bnd = tmp_path / "m.bnd"
    bnd.write_text("Node A { logic = B; }\nNode B { logic = A; rate_up = $k; }\n")
    (tmp_path / "m.cfg").write_text("$k = 1;\nA.istate = 0.3 [1];\n")
    with pytest.raises(ModelError) as e:
        maboss(bnd, backend="cpu", progress=False)
    assert "m.cfg" in str(e.value) and ":2" in str(e.value)
    (tmp_path / "m.cfg").write_text("$k = -1;\n")
    with pytest.raises(ModelError, match="m.bnd.*rate"):
        maboss(bnd, backend="cpu", progress=False)
    with pytest.raises(ModelError, match="variable override"):
        maboss(bnd, variables={"$k": float("nan")}, backend="cpu", progress=False)
    (tmp_path / "m.cfg").write_text("$k = 1;\nmax_time = 5;\ntime_tick = -0.5;\nsample_count = 2.5;\n")
    with pytest.raises(ConfigError) as e:
        maboss(bnd, backend="cpu", progress=False)
    assert e.value.file.endswith("m.cfg") and e.value.line == 3 and "time_tick" in str(e.value)
    with pytest.raises(ConfigError) as e:
        maboss(bnd, time_tick=0.5, backend="cpu", progress=False)
    assert e.value.line == 4 and "sample_count" in str(e.value)
    with pytest.raises(ConfigError) as e:  # a bad value given in Python names no .cfg line
        maboss(bnd, time_tick=0.5, trajectories=0, backend="cpu", progress=False)
    assert e.value.line is None


@pytest.mark.parametrize("parts, size", [(1, 1 << 12), (3, 1 << 12), (5, 1 << 16)])
def test_hash_tables_sum_exactly(parts, size):
    """Records added to per-part hash tables (``cpu.hash_add``; whole-window runs q = -k: QUANTA in each window
    w .. k-1) and reduced on the host (``block.reduce_chunk``) equal a plain group-by sum of every window's quanta,
    for any number of parts."""
    import numba

    from distsim.maboss import cpu
    from distsim.maboss.block import QUANTA, SQ_SHIFT, _sum_by, reduce_chunk

    @numba.njit
    def add_all(rec_win, rec_state, rec_q, rec_n, kw, ks, sq, sq2, full):
        parts, n = kw.shape[0], rec_n.shape[0]
        for p in range(parts):
            used = 0
            for c in range(n * p // parts, n * (p + 1) // parts):
                for r in range(rec_n[c]):
                    used = cpu.hash_add(kw, ks, sq, sq2, full, p, used, rec_win[c, r], rec_state[c, r], rec_q[c, r])
            if used < 0:
                return False
        return True

    rng = np.random.default_rng(3)
    n, cap, n_win = 500, 9, 40
    rec_n = rng.integers(0, cap + 1, n).astype(np.int32)
    rec_win = rng.integers(0, n_win, (n, cap)).astype(np.int32)
    rec_state = rng.integers(0, 30, (n, cap, 2)).astype(np.uint64) * np.uint64(2**40 + 7)  # two-word states
    rec_q = rng.integers(1, 2**30, (n, cap)).astype(np.int64)
    runs = rng.random((n, cap)) < 0.3
    rec_q[runs] = -rng.integers(rec_win[runs] + 1, n_win + 1)  # runs to the last window included
    while True:
        kw = np.full((parts, size), -1, np.int32)
        ks = np.zeros((parts, size, 2), np.uint64)
        sq, sq2, full = (np.zeros((parts, size), np.int64) for _ in range(3))
        if add_all(rec_win, rec_state, rec_q, rec_n, kw, ks, sq, sq2, full):
            break
        size *= 4
    got = reduce_chunk(kw, ks, sq, sq2, full, np.zeros((parts, 4, n_win + 1), np.int64), np.zeros((0, 2), np.uint64),
                       np.zeros((0, 1), np.uint64), np.zeros(0, np.uint8), np.zeros(0, np.int64))
    mask = np.arange(cap)[None, :] < rec_n[:, None]
    k = np.where(rec_q < 0, -rec_q - rec_win, 1)[mask]  # windows of each record
    w = np.repeat(rec_win[mask], k) + np.arange(k.sum()) - np.repeat(np.cumsum(k) - k, k)
    q = np.repeat(np.where(rec_q < 0, QUANTA, rec_q)[mask], k)
    st = np.repeat(rec_state[mask], k, axis=0)
    want = _sum_by((w, st[:, 0], st[:, 1]), q, (q >> SQ_SHIFT) ** 2)
    assert runs[mask].sum() > 100 and len(want[0]) > 1000
    for a, b in zip((got["win"], got["state"][:, 0], got["state"][:, 1], got["q"], got["q2"]), want):
        np.testing.assert_array_equal(a, b)


def test_more_than_64_visible_nodes(tmp_path):
    """Sizek et al. (2019), 87 nodes, all visible (two-word states): hiding nodes changes only the labels,
    so the visible nodes' probabilities equal those of a run with 60 nodes hidden (same trajectories)."""
    bnd = DATA / "sizek.bnd"
    text = "\n".join(line for line in (DATA / "sizek.cfg").read_text().splitlines() if "is_internal" not in line)
    cfg = tmp_path / "sizek_visible.cfg"
    cfg.write_text(text)
    kw = dict(trajectories=600, max_time=4, time_tick=0.5, seed=2, backend="cpu", progress=False)
    full = maboss(bnd, cfg, **kw)
    assert full.node.size == 87 and compile_model(load(bnd, cfg)).vis_words == 2
    hidden = list(full.node.values[:60])
    part_cfg = tmp_path / "sizek_hidden.cfg"
    part_cfg.write_text(text + "".join(f"\n{nm}.is_internal = 1;" for nm in hidden))
    part = maboss(bnd, part_cfg, **kw)
    assert part.node.size == 27
    keep = list(part.node.values)
    np.testing.assert_allclose(full.node_probability.sel(node=keep).values, part.node_probability.values, rtol=1e-12,
                               atol=1e-15)
    def final_marginal(ds, nm):
        on = [s for s in ds.state.values if nm in str(s).split(" -- ")]
        return float(ds.final_probability.sel(state=on).sum())

    assert any(final_marginal(full, nm) > 0 for nm in full.node.values[64:])  # the second word is used
    for nm in keep:
        assert final_marginal(full, nm) == pytest.approx(final_marginal(part, nm), rel=1e-12, abs=1e-15)
    np.testing.assert_allclose(full.probability.sum("state").values, 1.0, rtol=0, atol=1e-12)
