"""Parameter sweeps: points, derived seeds, equality with direct calls, worker-count independence,
zarr store resume after a SIGKILL (no finished point recomputed, none lost or duplicated), YAML schema."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import distsim
import distsim.pbn as pbn
import distsim.ssa as ssa
from distsim.engine import DaskExecutor, LocalExecutor
from distsim.rng import derive_seeds
from distsim.sweep import StoreMismatch, as_points, one_at_a_time, sensitivity
from distsim.sweep.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]
MM = ROOT / "examples" / "ssa" / "michaelis_menten.rxn"
SHMULEVICH = ROOT / "examples" / "pbn" / "bnmpy_shmulevich2002_examplePBN_3n.txt"
SSA_FIXED = dict(t_end=20.0, points=5, realizations=128)
GRID = {"k1": [1e-3, 3e-3], "S": [100, 301]}
NONDETERMINISTIC = ("wall_time_s",)


def same(a: xr.Dataset, b: xr.Dataset) -> None:
    assert sorted(a.data_vars) == sorted(b.data_vars)
    for v in a.data_vars:
        if v not in NONDETERMINISTIC:
            assert np.array_equal(a[v].values, b[v].values, equal_nan=a[v].dtype.kind == "f"), v
    for c in ("point", "seed", *[k for k in a.coords if k in GRID]):
        assert np.array_equal(a[c].values, b[c].values), c


@pytest.fixture(scope="module")
def mm():
    return ssa.load(MM)


@pytest.fixture(scope="module")
def mm_sweep(mm):
    return distsim.sweep(ssa.simulate, mm, GRID, seed=9, client=LocalExecutor("cpu"), **SSA_FIXED)


# ---- points and seeds -----------------------------------------------------------------------------

def test_grid_is_cartesian_last_key_fastest():
    pts = as_points({"a": [1, 2], "b": [0.5, 1.5, 2.5]})
    assert pts.n == 6
    assert [pts.point(i) for i in (0, 1, 3)] == [{"a": 1, "b": 0.5}, {"a": 1, "b": 1.5}, {"a": 2, "b": 0.5}]
    assert pts.column("a").dtype == np.int64 and pts.column("b").dtype == np.float64


def test_table_and_dataframe_agree():
    import pandas as pd

    rows = [{"k1": 1e-3, "S": 100}, {"k1": 2e-3, "S": 200}]
    a, b = as_points(rows), as_points(pd.DataFrame(rows))
    assert a.names == b.names and a.columns == b.columns and a.digest() == b.digest()


@pytest.mark.parametrize("points,match", [
    ([{"a": 1}, {"b": 2}], "point 1 has parameters"),
    ({"a": []}, "non-empty list"),
    ({"a": ["x"]}, "expected numbers"),
    ({"a": [float("nan")]}, "finite"),
    ([{"parameter": "k1"}], "go together"),
    ("k1", "must be a dict"),
])
def test_bad_points(points, match):
    with pytest.raises((ValueError, TypeError), match=match):
        as_points(points)


def test_derived_seeds_are_a_permutation_keyed_by_seed():
    idx = np.arange(1 << 17)
    s = derive_seeds(5, idx)
    assert s.dtype == np.uint32 and len(np.unique(s)) == idx.size  # distinct points never share a stream
    assert np.array_equal(s[[7, 99]], derive_seeds(5, [7, 99]))  # depends on the index only, not on batching
    t = derive_seeds(6, idx)
    assert np.mean(s == t) < 1e-3  # another seed, other streams
    # roughly uniform over 32 bits: each of 16 top-nibble buckets near 1/16 (binomial, 6 sigma)
    counts = np.bincount(s >> np.uint32(28), minlength=16)
    sd = np.sqrt(idx.size / 16 * 15 / 16)
    assert np.all(np.abs(counts - idx.size / 16) < 6 * sd)


# ---- results equal direct calls, for any number of workers or chunking ----------------------------

def test_ssa_points_equal_direct_calls(mm, mm_sweep):
    ds = mm_sweep  # a grid: one dimension per parameter, in the grid's order, indexed by its values
    assert ds["mean"].dims[:2] == ("k1", "S") and "point" not in ds.dims
    assert list(ds.k1.values) == [1e-3, 3e-3] and list(ds.S.values) == [100, 301] and ds.S.dtype == np.int64
    seeds = derive_seeds(9, np.arange(4))
    assert ds.point.dims == ("k1", "S") and np.array_equal(ds.point.values.ravel(), np.arange(4))
    assert np.array_equal(ds.seed.values.ravel(), seeds)
    for i, (k1, s) in enumerate([(1e-3, 100), (1e-3, 301), (3e-3, 100), (3e-3, 301)]):
        net = mm.with_parameters(k1=k1).with_initial(S=s)
        ref = ssa.simulate(net, seed=int(seeds[i]), client=LocalExecutor("cpu"), **SSA_FIXED)
        at = ds.sel(k1=k1, S=s)
        assert int(at.point) == i
        for v in ("mean", "variance", "firings", "quantile_value"):
            assert np.array_equal(at[v].values, ref[v].values), (i, v)
        assert int(at.firings_total) == ref.attrs["firings_total"]
    assert ds.attrs["workload"] == "sweep" and ds.attrs["analysis"] == "ssa.simulate"
    assert ds.attrs["sweep_layout"] == "grid" and json.loads(ds.attrs["sweep_parameters"]) == ["k1", "S"]


def test_grid_layout_equals_the_point_layout(mm, mm_sweep):
    """The same points as a table keep `point`; as_grid of it is the grid sweep, and every value of
    the grid is the point layout's value at that point."""
    rows = [{"k1": k1, "S": s} for k1 in GRID["k1"] for s in GRID["S"]]
    table = distsim.sweep(ssa.simulate, mm, rows, seed=9, client=LocalExecutor("cpu"), **SSA_FIXED)
    assert table.sizes["point"] == 4 and table.attrs["sweep_layout"] == "table" and table.k1.dims == ("point",)
    for v in table.data_vars:
        if v in NONDETERMINISTIC:
            continue
        for i in range(4):
            at = mm_sweep[v].sel(k1=rows[i]["k1"], S=rows[i]["S"])
            assert np.array_equal(at.values, table[v].isel(point=i).values), (v, i)
    grid = distsim.sweep.as_grid(table)
    assert grid["mean"].dims == mm_sweep["mean"].dims and grid.attrs["sweep_layout"] == "grid"
    same(grid, mm_sweep)
    for c in ("k1", "S", "point", "seed"):
        assert np.array_equal(grid[c].values, mm_sweep[c].values) and grid[c].dims == mm_sweep[c].dims, c


def test_as_grid_refuses_points_that_are_not_a_grid():
    ds = xr.Dataset({"x": ("point", np.arange(3.0))}, coords={"point": np.arange(3), "a": ("point", [1, 1, 2]),
                                                               "b": ("point", [5, 6, 5])})
    with pytest.raises(ValueError, match="3 points, but the values make 4 combinations"):
        distsim.sweep.as_grid(ds)
    ds = xr.Dataset({"x": ("point", np.arange(4.0))}, coords={"point": np.arange(4), "a": ("point", [1, 2, 1, 2]),
                                                               "b": ("point", [5, 5, 6, 6])})
    with pytest.raises(ValueError, match=r"point 1 \(a=2, b=5\) is out of grid order"):
        distsim.sweep.as_grid(ds)
    g = distsim.sweep.as_grid(ds, ["b", "a"])  # the same points, b slowest
    assert g.x.dims == ("b", "a") and g.x.values.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    with pytest.raises(ValueError, match="listed twice"):
        as_points({"a": [1, 2, 1]})
    oat = xr.Dataset({"x": ("point", np.arange(4.0))},
                     coords={"point": np.arange(4), "parameter": ("point", np.array(["k1", "k1", "k2", "k2"], object)),
                             "factor": ("point", [0.5, 2.0, 0.5, 2.0])},
                     attrs={"sweep_parameters": json.dumps(["parameter", "factor"])})
    g = distsim.sweep.as_grid(oat)  # a one-at-a-time design is a grid of parameter x factor
    assert g.x.dims == ("parameter", "factor") and list(g.parameter.values) == ["k1", "k2"]
    assert g.x.sel(parameter="k2", factor=0.5).item() == 2.0


def test_two_workers_and_other_chunks_give_the_same_result(mm, mm_sweep, dask_client):
    two = distsim.sweep("ssa.simulate", mm, GRID, seed=9, client=DaskExecutor(dask_client, "cpu"), chunk_size=1,
                        **SSA_FIXED)
    assert two.attrs["tasks"] == 4 and "dask" in two.attrs["executor"]
    same(two, mm_sweep)
    three = distsim.sweep(ssa.simulate, mm, GRID, seed=9, client=LocalExecutor("cpu"), chunk_size=3, **SSA_FIXED)
    same(three, mm_sweep)


def test_pbn_points_equal_direct_calls():
    net = pbn.load(SHMULEVICH)
    fixed = dict(target=["x1=1"], precision=0.02, chains=256)
    ds = distsim.sweep(pbn.steady_state, net, [{"perturbation": 0.01, "select.x1.0": 0.3},
                                              {"perturbation": 0.05, "select.x1.0": 0.6}],
                       seed=4, client=LocalExecutor("cpu"), **fixed)
    seeds = derive_seeds(4, [0, 1])
    for i, (p, q) in enumerate([(0.01, 0.3), (0.05, 0.6)]):
        ref = pbn.steady_state(net.with_selection("x1", 0, q), perturbation=p, seed=int(seeds[i]),
                               client=LocalExecutor("cpu"), **fixed)
        for v in ("probability", "half_width", "burn_in", "sample_size"):
            assert np.array_equal(ds[v].values[i], ref[v].values), (i, v)
        assert int(ds.chain_length[i]) == ref.attrs["chain_length"]
    sim = distsim.sweep("pbn.simulate", net, {"perturbation": [0.0, 0.5]}, seed=1, client=LocalExecutor("cpu"),
                        steps=50, trajectories=128, targets="x1=1")
    ref = pbn.simulate(net, steps=50, trajectories=128, targets="x1=1", perturbation=0.5,
                       seed=int(derive_seeds(1, 1)), client=LocalExecutor("cpu"))
    assert np.array_equal(sim.frequency.values[1], ref.frequency.values)
    assert "trajectory" not in sim.dims


def test_selection_probability_is_rescaled():
    net = pbn.load(SHMULEVICH)
    row = net.with_selection("x1", 0, 0.25).predictors[0]
    old = net.predictors[0]
    assert row[0].probability == 0.25 and abs(sum(p.probability for p in row) - 1) < 1e-12
    assert row[1].probability == pytest.approx(old[1].probability * 0.75 / (1 - old[0].probability))
    with pytest.raises(ValueError, match="one predictor"):
        net.with_selection("x2", 0, 0.5)


def test_sensitivity_scales_one_rate_at_a_time(mm):
    factors = [0.5, 2.0]
    ds = sensitivity(ssa.simulate, mm, factors, parameters=["k1", "k3"], seed=3, client=LocalExecutor("cpu"),
                     **SSA_FIXED)
    assert list(ds.parameter.values) == ["k1", "k3"] and list(ds.factor.values) == factors
    assert ds["mean"].dims == ("parameter", "factor", "time", "species")
    i = 3  # point 3: k3 doubled, the others at baseline
    ref = ssa.simulate(mm.with_parameters(k3=mm.params["k3"] * 2.0), seed=int(derive_seeds(3, i)),
                       client=LocalExecutor("cpu"), **SSA_FIXED)
    assert np.array_equal(ds["mean"].sel(parameter="k3", factor=2.0).values, ref["mean"].values)
    assert int(ds.seed.sel(parameter="k3", factor=2.0)) == int(derive_seeds(3, i))
    assert one_at_a_time(["a"], [1, 2]) == [{"parameter": "a", "factor": 1.0}, {"parameter": "a", "factor": 2.0}]


def test_sensitivity_coefficients_match_the_immigration_death_law(tmp_path):
    """0 -> X at lam, X -> 0 at mu X, X(0) = 0: E[X(t)] = lam/mu (1 - exp(-mu t)), so the central
    difference over factors f-, f+ is exactly 1 for lam and (ln E(mu f+) - ln E(mu f-)) / ln(f+/f-) for
    mu. Every estimate (2 parameters x 4 times) lies within z* standard errors of it, z* for 99.9%
    two-sided with a Bonferroni correction over the 8 (independent-seed) estimates; the errors are
    the delta-method ones, checked against the spread of the estimates over 30 seeds."""
    from scipy.stats import chi2, norm

    net = ssa.Builder("immdeath").add_species("X", 0).add_parameter("lam", 20.0).add_parameter("mu", 0.5) \
        .add_reaction("0 -> X", "lam").add_reaction("X -> 0", "mu").build()
    factors, R, t_end = [0.8, 1.25], 4000, 4.0
    ds = sensitivity(ssa.simulate, net, factors, seed=7, client=LocalExecutor("cpu"), t_end=t_end, points=5,
                     realizations=R, quantiles=None, plot=str(tmp_path / "s.png"))
    assert (tmp_path / "s.png").stat().st_size > 10_000
    t = ds.time.values[1:]
    mean = lambda lam, mu: lam / mu * (1 - np.exp(-mu * t))  # noqa: E731
    dlog = np.log(factors[1] / factors[0])
    exact = {"lam": np.ones_like(t), "mu": (np.log(mean(20, 0.5 * factors[1])) - np.log(mean(20, 0.5 * factors[0])))
             / dlog}
    z = norm.ppf(1 - 0.001 / (2 * 8))
    for p in ("lam", "mu"):
        s = ds.sensitivity.sel(parameter=p, species="X").values[1:]
        se = ds.sensitivity_se.sel(parameter=p, species="X").values[1:]
        assert np.all(np.abs(s - exact[p]) < z * se), (p, s, exact[p], se)
    assert np.isnan(ds.sensitivity.sel(species="X").values[:, 0]).all()  # E[X(0)] = 0: undefined
    # the standard error against the spread over n seeds: sd_hat / se ~ sqrt(chi2(n-1) / (n-1)), 99.9% bounds
    n = 30
    runs = [sensitivity(ssa.simulate, net, factors, parameters=["mu"], seed=100 + k, client=LocalExecutor("cpu"),
                        t_end=t_end, points=5, realizations=R, quantiles=None) for k in range(n)]
    est = np.array([r.sensitivity.sel(parameter="mu", species="X").values[-1] for r in runs])
    se = np.mean([r.sensitivity_se.sel(parameter="mu", species="X").values[-1] for r in runs])
    lo, hi = np.sqrt(chi2.ppf([0.0005, 0.9995], n - 1) / (n - 1))
    assert lo < est.std(ddof=1) / se < hi, (est.std(ddof=1), se)


@pytest.mark.parametrize("kwargs,match", [
    ({"realisations": 10}, "'realisations' is not an argument of ssa.simulate"),
    ({"plot": "x.png"}, "'plot' is set by the sweep"),
    ({"params": {"k1": 1.0}}, "'params' is set by the sweep"),
])
def test_bad_fixed_arguments(mm, kwargs, match):
    with pytest.raises(ValueError, match=match):
        distsim.sweep(ssa.simulate, mm, GRID, client=LocalExecutor("cpu"), t_end=1.0, **kwargs)


def test_unknown_parameter_fails_before_any_work(mm):
    with pytest.raises(ValueError, match="'k9' is neither a parameter"):
        distsim.sweep(ssa.simulate, mm, {"k9": [1.0]}, client=LocalExecutor("cpu"), t_end=1.0)
    with pytest.raises(ValueError, match="non-negative integer"):
        distsim.sweep(ssa.simulate, mm, {"S": [10.5]}, client=LocalExecutor("cpu"), t_end=1.0)


# ---- the zarr store: resume, refusal --------------------------------------------------------------

SCRIPT = textwrap.dedent('''
    """Sweep with a compute marker per point (file named <seed>-<pid>-<n>) and a delay per point."""
    import dataclasses, os, sys, time
    import distsim
    from distsim.sweep import adapters

    marks, store, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
    SSA = adapters.SSA_SIMULATE

    def run_chunk(model, points, seeds, fixed, executor):
        from distsim.ssa import simulate
        out = []
        for point, seed in zip(points, seeds):
            n = len(os.listdir(marks))
            open(os.path.join(marks, f"{seed}-{os.getpid()}-{n}"), "w").close()
            out.append(SSA.summarize(simulate(SSA.apply(model, point)[0], seed=seed, client=executor,
                                              progress=False, **fixed)))
            time.sleep(delay)
        return out

    distsim.sweep(dataclasses.replace(SSA, run_chunk=run_chunk), sys.argv[4], {GRID}, seed=9, store=store,
                  chunk_size=2, client=None, backend="cpu", progress=False, **{FIXED})
''')
RESUME_GRID = {"k1": [1e-3, 2e-3, 3e-3], "S": [100, 200, 301, 400]}  # 12 points, 6 chunks of 2


def _marks(folder: Path) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for name in os.listdir(folder):
        seed, pid, _ = name.split("-")
        out.setdefault(int(seed), []).append(int(pid))
    return out


def test_killed_sweep_resumes_without_recomputing(tmp_path, mm):
    import zarr

    script = tmp_path / "sweep_job.py"
    script.write_text(SCRIPT.replace("{GRID}", repr(RESUME_GRID)).replace("{FIXED}", repr(SSA_FIXED)))
    marks, store = tmp_path / "marks", tmp_path / "s.zarr"
    marks.mkdir()
    env = dict(os.environ, DISTSIM_DISABLE_GPU="1", PYTHONPATH=str(ROOT))  # this checkout's distsim
    proc = subprocess.Popen([sys.executable, str(script), str(marks), str(store), "0.25", str(MM)], env=env)
    deadline = time.time() + 60
    while len(os.listdir(marks)) < 7 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the sweep ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    first_pid = proc.pid
    done = np.asarray(zarr.open_group(str(store), mode="r")["done"][:])
    finished = set(np.flatnonzero(done == 1).tolist())
    assert 0 < len(finished) < 12, finished
    assert finished == {i for c in {i // 2 for i in finished} for i in (2 * c, 2 * c + 1)}  # whole chunks

    proc = subprocess.run([sys.executable, str(script), str(marks), str(store), "0", str(MM)], env=env, timeout=120)
    assert proc.returncode == 0
    seeds = derive_seeds(9, np.arange(12))
    marks_by_seed = _marks(marks)
    assert len({pid for pids in marks_by_seed.values() for pid in pids}) == 2
    for i in range(12):
        pids = marks_by_seed.get(int(seeds[i]), [])
        if i in finished:
            assert pids == [first_pid], f"finished point {i} was recomputed: {pids}"
        else:  # computed once by the second run (maybe also by the killed one, before its chunk was done)
            assert len([p for p in pids if p != first_pid]) == 1, f"point {i}: {pids}"
    resumed = distsim.sweep(ssa.simulate, mm, RESUME_GRID, seed=9, store=store, client=LocalExecutor("cpu"),
                            **SSA_FIXED)
    assert resumed.attrs["points_computed"] == 0 and resumed.attrs["points_resumed"] == 12
    fresh = distsim.sweep(ssa.simulate, mm, RESUME_GRID, seed=9, client=LocalExecutor("cpu"), **SSA_FIXED)
    assert list(resumed.point.values.ravel()) == list(range(12))  # none lost, none duplicated
    same(resumed, fresh)


def test_store_of_another_sweep_is_refused(tmp_path, mm):
    store = tmp_path / "a.zarr"
    distsim.sweep(ssa.simulate, mm, {"k1": [1e-3]}, seed=1, store=store, client=LocalExecutor("cpu"), **SSA_FIXED)
    with pytest.raises(StoreMismatch, match="seed: store has 1, this sweep has 2"):
        distsim.sweep(ssa.simulate, mm, {"k1": [1e-3]}, seed=2, store=store, client=LocalExecutor("cpu"), **SSA_FIXED)
    with pytest.raises(StoreMismatch, match="fixed"):
        distsim.sweep(ssa.simulate, mm, {"k1": [1e-3]}, seed=1, store=store, client=LocalExecutor("cpu"),
                      **dict(SSA_FIXED, realizations=64))
    other = tmp_path / "other.zarr"
    xr.Dataset({"x": ("a", [1, 2])}).to_zarr(other)
    with pytest.raises(ValueError, match="not written by distsim.sweep"):
        distsim.sweep(ssa.simulate, mm, {"k1": [1e-3]}, store=other, client=LocalExecutor("cpu"), **SSA_FIXED)


# ---- YAML configuration and CLI -------------------------------------------------------------------

GOOD = f"""\
analysis: ssa.simulate
model: {MM}
seed: 1
fixed:
  t_end: 10
  points: 3
  realizations: 64
grid:
  k1: [0.001, 0.002]
"""


@pytest.mark.parametrize("edit,line,key,problem", [
    (("seed: 1", "seed: -1"), 3, "seed", "integer"),
    (("  points: 3", "  points: 3\n  client: 4"), 7, "fixed.client", "set by the sweep"),
    (("  points: 3", "  pointz: 3"), 6, "fixed.pointz", "not an argument"),
    (("  k1: [0.001, 0.002]", "  k9: [0.001]"), 9, "grid.k9", "neither a parameter"),
    (("  k1: [0.001, 0.002]", "  k1: []"), 9, "grid.k1", "non-empty list"),
    (("  k1: [0.001, 0.002]", "  S: [1.5]"), 9, "grid.S", "non-negative integer"),
    (("analysis: ssa.simulate", "analysis: ssa.nothing"), 1, "analysis", "unknown analysis"),
    (("seed: 1", "seed: 1\nstore: out.nc"), 4, "store", ".zarr"),
    (("seed: 1", "seed: 1\nsede: 2"), 4, "sede", "unknown key"),
])
def test_config_errors_name_file_line_and_key(tmp_path, edit, line, key, problem):
    f = tmp_path / "bad.yaml"
    f.write_text(GOOD.replace(*edit))
    with pytest.raises(ConfigError) as e:
        load_config(f)
    msg = str(e.value)
    assert msg.startswith(f"{f}:{line}: key {key!r}") and problem in msg, msg


def test_config_table_csv_and_one_at_a_time(tmp_path):
    (tmp_path / "t.csv").write_text("k1,S\n0.001,100\n0.002,oops\n")
    f = tmp_path / "c.yaml"
    f.write_text(GOOD.replace("grid:\n  k1: [0.001, 0.002]\n", "table: t.csv\n"))
    with pytest.raises(ConfigError, match=r"t.csv:3: column 'S': 'oops' is not a number"):
        load_config(f)
    f.write_text(GOOD.replace("grid:\n  k1: [0.001, 0.002]\n", "one_at_a_time:\n  factors: [0.5, 2]\n"))
    cfg = load_config(f)
    assert cfg.points.n == 6 and cfg.points.names == ("parameter", "factor")


@pytest.mark.parametrize("example", ["mm_grid.yaml", "mm_sensitivity.yaml", "pbn_grid.yaml", "pbn_knockouts.yaml"])
def test_example_configs_run(tmp_path, monkeypatch, example, capsys):
    from distsim.cli import main

    monkeypatch.chdir(tmp_path)  # store and output land in the working folder
    assert main(["--in-process", "--cpu", "--quiet", "sweep", str(ROOT / "examples" / "sweeps" / example)]) == 0
    cfg = load_config(ROOT / "examples" / "sweeps" / example)
    out = xr.open_dataset(tmp_path / cfg.output.name, engine="h5netcdf")
    dims = cfg.points.names if cfg.points.grid else ("point",)  # a grid: one dimension per parameter
    assert set(dims) <= set(out.dims) and int(np.prod([out.sizes[d] for d in dims])) == cfg.points.n
    assert "computed" in capsys.readouterr().out


def test_grn_points_equal_direct_calls():
    """GA settings as sweep points: each point equals grn.infer with the point's derived seed."""
    import distsim.grn as grn

    problem = grn.load(ROOT / "examples" / "grn" / "mouse_eye.toml")
    fixed = dict(islands=2, generations=12, backend="cpu")
    ds = distsim.sweep(grn.infer, problem, {"population": [32, 48], "link_mutation": [0.3]}, seed=2,
                       client=LocalExecutor("cpu"), islands=2, generations=12)
    seeds = derive_seeds(2, [0, 1])
    for i, pop in enumerate([32, 48]):
        ref = grn.infer(problem, population=pop, link_mutation=0.3, seed=int(seeds[i]),
                        client=LocalExecutor("cpu"), **{k: v for k, v in fixed.items() if k != "backend"})
        at = ds.sel(population=pop, link_mutation=0.3)
        assert float(at.fitness) == ref.attrs["fitness"]
        assert np.array_equal(at.best_links.values, ref.best_links.values)
    with pytest.raises(ValueError, match="GRN sweep parameter"):
        distsim.sweep(grn.infer, problem, {"bogus": [1]}, client=LocalExecutor("cpu"))


@pytest.mark.filterwarnings("ignore::distsim.errors.ConvergenceWarning")  # 12 iterations: not converged
def test_mcmc_prior_points_equal_direct_calls():
    """Prior sensitivity: each point's posterior summary equals mcmc.infer_rates with its prior and seed."""
    import distsim.mcmc as mcmc

    net = ssa.load(ROOT / "examples" / "mcmc" / "michaelis_menten.rxn")
    obs = ROOT / "examples" / "mcmc" / "mm_observations.csv"
    table = [{"prior.k1.shape": 2, "prior.k1.rate": r1, "prior.k2.shape": 2, "prior.k2.rate": 10,
              "prior.k3.shape": 2, "prior.k3.rate": 10} for r1 in (1000, 2000)]
    kw = dict(observations=obs, iterations=12, burn_in=2, chains=2)
    ds = distsim.sweep(mcmc.infer_rates, net, table, seed=5, client=LocalExecutor("cpu"), **kw)
    assert ds.posterior_mean.dims == ("point", "variable")
    seeds = derive_seeds(5, [0, 1])
    for i, r1 in enumerate((1000, 2000)):
        ref = mcmc.infer_rates(net, prior={"k1": (2, r1), "k2": (2, 10), "k3": (2, 10)}, seed=int(seeds[i]),
                               client=LocalExecutor("cpu"), **kw)
        row = mcmc.summary(ref).loc["k1"]
        assert float(ds.posterior_mean.sel(variable="k1")[i]) == row["mean"]
        assert float(ds.ci95_high.sel(variable="k1")[i]) == row["97.5%"]
    with pytest.raises(ValueError, match="k3"):
        distsim.sweep(mcmc.infer_rates, net, [{"prior.k1.shape": 2, "prior.k1.rate": 1, "prior.k2.shape": 2,
                                               "prior.k2.rate": 1}], client=LocalExecutor("cpu"), **kw)


def test_default_chunk_size_fills_gpus_with_batched_points():
    """Four tasks per worker, except a batched analysis on GPU workers: one task per worker (its
    points share each launch); never more than the adapter's max_chunk."""
    from distsim.sweep import default_chunk_size
    from distsim.sweep.adapters import adapter_for

    pbn_ss = adapter_for("pbn.steady_state")
    assert pbn_ss.run_chunk is not None
    assert default_chunk_size(pbn_ss, 87, 1) == 22
    assert default_chunk_size(pbn_ss, 87, 1, gpu=True) == 87
    assert default_chunk_size(pbn_ss, 1000, 2, gpu=True) == pbn_ss.max_chunk
    grn = adapter_for("grn.infer")
    assert grn.run_chunk is None and default_chunk_size(grn, 87, 1, gpu=True) == min(grn.max_chunk, 22)


def test_planned_tasks_are_even_and_a_multiple_of_the_workers():
    """Issue 33: 10,000 points planned 3,000 per task on 2 workers were 3 x 3,000 + 1,000 (one worker
    6,000 points, the other 4,000); the planner evens the tasks out (never above the plan)."""
    from distsim.sweep.core import balanced_chunk_size

    for size, n, W in [(3000, 10000, 2), (5000, 10000, 2), (256, 1000, 3), (64, 10, 4), (1, 5, 2), (7, 7, 1),
                       (4, 3, 8), (100, 10000, 1)]:
        C = balanced_chunk_size(size, n, W)
        tasks = -(-n // C)
        assert 1 <= C <= min(size, n)
        assert tasks % W == 0 or tasks == n  # a multiple of the workers (unless each point is a task)
        assert tasks == -(-n // C) and (tasks - 1) * C < n  # no empty task
        assert C - (n - (tasks - 1) * C) <= tasks  # the last task is at most `tasks` points short of the others
    assert balanced_chunk_size(3000, 10000, 2) == 2500


def test_a_grid_that_cannot_take_its_shape_keeps_its_points():
    """A reshape that fails (here: the recorded parameter is a variable, not a coordinate on `point`)
    keeps the computed points and says why."""
    from distsim.sweep.layout import shaped

    ds = xr.Dataset({"x": ("point", np.arange(2.0)), "y": ("point", np.ones(2))}, coords={"point": [0, 1]},
                    attrs={"sweep_layout": "grid", "sweep_parameters": json.dumps(["y"])})
    with pytest.warns(UserWarning, match="keeps its 'point' dimension: 'y' is not a swept parameter"):
        out = shaped(ds)
    assert out is ds
