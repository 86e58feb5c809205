"""Sweep stores that verify themselves: each damage of the issue (flipped bytes in a chunk, a deleted
chunk, a deleted variable's zarr.json, a truncated chunk) is recomputed, naming its points and file,
or refused naming the store and the file -- never a NaN or a missing variable; one sweep per store
(the lock names its holder; a dead holder's lock is taken over); reruns and grown grids."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import distsim
import distsim.ssa as ssa
from distsim.engine import LocalExecutor
from distsim.sweep import StoreDamaged, StoreLocked, StoreMismatch, StoreRepaired, open_store
from distsim.sweep.store import locked

ROOT = Path(__file__).resolve().parents[2]
MM = ROOT / "examples" / "ssa" / "michaelis_menten.rxn"
FIXED = dict(t_end=10.0, points=3, realizations=64)
GRID = {"k1": [1e-3, 3e-3], "S": [100, 301]}  # 4 points, 2 chunks of 2
NONDETERMINISTIC = ("wall_time_s",)


def same(a: xr.Dataset, b: xr.Dataset) -> None:
    """Equal variables (bit for bit, NaN where NaN) and per-point coordinates."""
    assert sorted(a.data_vars) == sorted(b.data_vars)
    for v in a.data_vars:
        if v not in NONDETERMINISTIC:
            assert np.array_equal(a[v].values, b[v].values, equal_nan=a[v].dtype.kind == "f"), v
    for c in ("point", "seed", "k1", "S", "time", "species"):
        assert np.array_equal(a[c].values, b[c].values), c


def run(store: Path, grid: dict = GRID, **kw) -> xr.Dataset:
    return distsim.sweep(ssa.simulate, MM, grid, seed=9, store=store, chunk_size=2, client=LocalExecutor("cpu"),
                         **FIXED, **kw)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> tuple[Path, xr.Dataset]:
    """A finished store of GRID and the same sweep without a store."""
    store = tmp_path_factory.mktemp("finished") / "s.zarr"
    run(store)
    fresh = distsim.sweep(ssa.simulate, MM, GRID, seed=9, chunk_size=2, client=LocalExecutor("cpu"), **FIXED)
    return store, fresh


@pytest.fixture
def store(tmp_path, finished) -> Path:
    path = tmp_path / "s.zarr"
    shutil.copytree(finished[0], path)
    return path


def rerun_repairs(store: Path, fresh: xr.Dataset, file: str, why: str) -> None:
    """The rerun warns that points 2-3 (chunk 1) are recomputed, naming ``file`` and ``why``; it
    computes those two points only, and the result and the store read back equal the fresh sweep."""
    with pytest.warns(StoreRepaired) as record:
        ds = run(store)
    text = " ".join(str(w.message) for w in record)
    assert f"{store} is damaged; recomputing points 2-3 ({file} {why}" in text, text
    assert ds.attrs["points_computed"] == 2 and ds.attrs["points_repaired"] == 2 and ds.attrs["points_resumed"] == 2
    same(ds, fresh)
    assert not np.isnan(ds["mean"].values).any()
    same(open_store(store), fresh)


# ---- damage: recomputed, naming the points and the file; refused by a read ---------------------------

def test_flipped_bytes_in_a_chunk(store, finished):
    chunk = store / "mean" / "c" / "1" / "0" / "0"
    data = bytearray(chunk.read_bytes())
    for i in (len(data) // 3, len(data) // 2, 2 * len(data) // 3):
        data[i] ^= 0xFF
    chunk.write_bytes(bytes(data))
    with pytest.raises(StoreDamaged, match=rf"^{store}: chunk 1 \(points 2-3\): mean/c/1/0/0 "):
        open_store(store)
    with pytest.warns(StoreRepaired) as record:
        ds = run(store)
    text = str(record[0].message)
    # zstd may fail to decode the flipped frame or decode other numbers: either way, named and recomputed
    assert ("mean/c/1/0/0 cannot be read" in text or "mean/c/1/0/0 does not match its checksum" in text), text
    assert "recomputing points 2-3" in text and ds.attrs["points_computed"] == 2
    same(ds, finished[1])
    same(open_store(store), finished[1])


def test_other_numbers_in_a_chunk(store, finished):
    """Numbers that decode but are not those written (a bit rot below the compression)."""
    import zarr

    group = zarr.open_group(str(store), mode="r+")
    group["variance"][2:4] = group["variance"][2:4] + 1.0
    with pytest.raises(StoreDamaged, match=r"variance/c/1/0/0 does not match its checksum"):
        open_store(store)
    rerun_repairs(store, finished[1], "variance/c/1/0/0", "does not match its checksum")


def test_deleted_chunk(store, finished):
    (store / "mean" / "c" / "1" / "0" / "0").unlink()
    with pytest.raises(StoreDamaged, match=rf"^{store}: chunk 1 \(points 2-3\): mean/c/1/0/0 is missing"):
        open_store(store)
    rerun_repairs(store, finished[1], "mean/c/1/0/0", "is missing")


def test_truncated_chunk(store, finished):
    chunk = store / "mean" / "c" / "1" / "0" / "0"
    chunk.write_bytes(chunk.read_bytes()[:10])
    with pytest.raises(StoreDamaged, match=r"mean/c/1/0/0 cannot be read"):
        open_store(store)
    rerun_repairs(store, finished[1], "mean/c/1/0/0", "cannot be read")


def test_deleted_checksums_of_a_done_chunk(store, finished):
    (store / "chunk_digest" / "c" / "1" / "0").unlink()
    rerun_repairs(store, finished[1], "chunk_digest/c/1/0", "holds no checksums, though its points are marked done")


def test_deleted_variable_metadata_is_restored(store, finished):
    """A deleted mean/zarr.json is rewritten from the store's record: its chunks verify, nothing is lost."""
    (store / "mean" / "zarr.json").unlink()
    with pytest.warns(StoreRepaired, match=r"restored mean/zarr.json from the store's record"):
        ds = run(store)
    assert ds.attrs["points_computed"] == 0 and "mean" in ds
    same(ds, finished[1])
    (store / "variance" / "zarr.json").write_text("{not json")
    with pytest.warns(StoreRepaired, match="restored variance/zarr.json"):
        same(open_store(store), finished[1])


def test_damaged_coordinates(store, finished):
    """A per-point coordinate is rewritten from the sweep's points; any other is refused, naming it."""
    (store / "k1" / "c" / "0").unlink()
    with pytest.raises(StoreDamaged, match=r"coordinate 'k1' does not match its checksum \(k1/c/0 is missing\)"):
        open_store(store)  # a read alone does not know the points
    with pytest.warns(StoreRepaired, match=r"coordinate 'k1' does not match its checksum \(k1/c/0 is missing\); "
                                           "rewritten"):
        ds = run(store)
    assert ds.attrs["points_computed"] == 0
    same(ds, finished[1])
    chunk = store / "time" / "c" / "0"
    chunk.write_bytes(chunk.read_bytes()[:5])
    with pytest.raises(StoreDamaged, match=rf"^{store}: coordinate 'time' does not match its checksum \(time/c/0 "
                                           r"cannot be read: .*\); restore it or remove the store"):
        run(store)


def test_unreadable_root_and_old_stores_are_refused(store, tmp_path):
    import zarr

    old = tmp_path / "old.zarr"
    shutil.copytree(store, old)
    group = zarr.open_group(str(old), mode="r+")
    del group.attrs["distsim_sweep_record"]
    with pytest.raises(StoreDamaged, match=rf"^{old}: was written by an older distsim, without checksums"):
        run(old)
    (store / "zarr.json").unlink()
    with pytest.raises(StoreDamaged, match=rf"^{store}: exists and is not a readable zarr store"):
        run(store)


def test_a_kill_during_creation_leaves_no_store(tmp_path, finished):
    """The store is laid out in a hidden folder and renamed into place: a leftover is replaced."""
    store = tmp_path / "s.zarr"
    (tmp_path / ".s.zarr.creating").mkdir()
    (tmp_path / ".s.zarr.creating" / "junk").write_text("x")
    same(run(store), finished[1])
    assert not (tmp_path / ".s.zarr.creating").exists()


# ---- one sweep per store ------------------------------------------------------------------------------

def test_second_sweep_on_a_store_is_refused_naming_the_holder(store):
    with locked(store):
        with pytest.raises(StoreLocked) as e:
            run(store)
        with pytest.raises(StoreLocked):
            open_store(store)  # a store being written is not read
    msg = str(e.value)
    assert msg.startswith(f"{store}: in use by another sweep: process {os.getpid()} on host "
                          f"{socket.gethostname()}, since 20"), msg
    assert not Path(f"{store}.lock").exists()  # released
    run(store)  # and free again


def test_lock_of_a_dead_sweep_is_taken_over(store):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    Path(f"{store}.lock").write_text(json.dumps({"host": socket.gethostname(), "pid": dead.pid,
                                                 "since": "2026-01-01T00:00:00Z"}))
    with pytest.warns(StoreRepaired, match=rf"took over the lock of a sweep that is no longer running \(process "
                                           rf"{dead.pid} on host"):
        ds = run(store)
    assert ds.attrs["points_computed"] == 0


def test_lock_held_by_another_process(store):
    code = ("import sys, time; from distsim.sweep.store import locked\n"
            "with locked(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(store)], stdout=subprocess.PIPE, text=True,
                              cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreLocked, match=rf"process {holder.pid} on host {socket.gethostname()}, since"):
            run(store)
    finally:
        holder.kill()
        holder.wait()
    with warnings.catch_warnings(record=True) as w:  # killed: the kernel released its lock
        warnings.simplefilter("always")
        assert run(store).attrs["points_computed"] == 0
    assert any("took over the lock" in str(x.message) for x in w)


def test_grn_sweep_with_a_store(tmp_path):
    """GRN results hold text (each gene's rule name): the store keeps it; a rerun computes nothing."""
    import distsim.grn as grn

    problem = grn.load(ROOT / "examples" / "grn" / "mouse_eye.toml")
    kw = dict(seed=2, client=LocalExecutor("cpu"), islands=2, generations=4)
    grid = {"population": [32, 48], "link_mutation": [0.3]}
    ref = distsim.sweep(grn.infer, problem, grid, **kw)
    ds = distsim.sweep(grn.infer, problem, grid, store=tmp_path / "g.zarr", chunk_size=1, **kw)
    assert ds.best_rule_name.dtype.kind in "OT"  # grid (population, link_mutation, gene)
    assert ds.best_rule_name.values[0, 0, 0] == ref.best_rule_name.values[0, 0, 0]
    for v in ("fitness", "best_links", "best_rule_name"):
        assert np.array_equal(ds[v].values.astype(ref[v].dtype), ref[v].values), v
    again = distsim.sweep(grn.infer, problem, grid, store=tmp_path / "g.zarr", **kw)
    assert again.attrs["points_computed"] == 0 and again.attrs["tasks"] == 0
    assert np.array_equal(again.best_rule_name.values, ds.best_rule_name.values)


# ---- the YAML file: checked as a run checks it, numbers as written, bounded -----------------------------

GRN_YAML = f"""\
analysis: grn.infer
model: {ROOT / "examples" / "grn" / "mouse_eye.toml"}
fixed:
  generations: 4
  islands: 2
grid:
  population: [32]
  link_mutation: [0.3]
"""


@pytest.mark.parametrize("edit,line,key,problem", [
    (("  islands: 2", "  islands: 2\n  selection: tournament"), 6, "fixed.selection", "selection must be one of"),
    (("[0.3]", "[0.3, 2.0]"), 8, "grid.link_mutation", "link_mutation must be a probability in [0, 1], got 2.0"),
    (("[32]", "[32, 33]"), 7, "grid.population", "population must be even"),
])
def test_check_runs_the_checks_of_a_run(tmp_path, capsys, edit, line, key, problem):
    """Values that grn.infer refuses fail `distsim sweep --check` (and the run, before any work), naming
    the file, the line and the key."""
    from distsim.cli import main

    f = tmp_path / "grn.yaml"
    f.write_text(GRN_YAML)
    assert main(["sweep", str(f), "--check"]) == 0
    f.write_text(GRN_YAML.replace(*edit))
    assert main(["sweep", str(f), "--check"]) == 2
    err = capsys.readouterr().err
    assert f"distsim: error: {f}:{line}: key {key!r}: {problem}" in err, err
    import distsim.grn as grn

    fixed = {"generations": 4, "islands": 2}
    grid = {"population": [32], "link_mutation": [0.3]}
    if key == "fixed.selection":
        fixed["selection"] = "tournament"
    else:
        grid[key.split(".")[1]] = [32, 33] if key == "grid.population" else [0.3, 2.0]
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        distsim.sweep(grn.infer, ROOT / "examples" / "grn" / "mouse_eye.toml", grid, client=LocalExecutor("cpu"),
                      store=tmp_path / "never.zarr", **fixed)
    assert not (tmp_path / "never.zarr").exists()


def test_missing_required_argument_is_named(tmp_path):
    from distsim.sweep.config import ConfigError, load_config

    f = tmp_path / "mm.yaml"
    f.write_text(f"analysis: ssa.simulate\nmodel: {MM}\nfixed:\n  points: 3\ngrid:\n  k1: [0.001]\n")
    with pytest.raises(ConfigError, match=rf"^{f}:3: key 'fixed': 't_end' is a required argument of ssa.simulate"):
        load_config(f)
    f.write_text(f"analysis: ssa.simulate\nmodel: {MM}\nfixed:\n  t_end: -1\ngrid:\n  k1: [0.001]\n")
    with pytest.raises(ConfigError, match=rf"^{f}:4: key 'fixed.t_end': t_end must be positive"):
        load_config(f)


def test_yaml_numbers_as_scientists_write_them(tmp_path):
    """2e-3, 1E5 and .5 are numbers (YAML 1.1 reads the first two as text); whole numbers written so
    are integers where the analysis takes an integer."""
    from distsim.sweep.config import load_config

    f = tmp_path / "mm.yaml"
    f.write_text(f"analysis: ssa.simulate\nmodel: {MM}\nfixed:\n  t_end: 1E1\n  points: 3\n  realizations: 6.4e1\n"
                 f"grid:\n  k1: [2e-3, .5e-3, 1.0e-3]\n  S: [1e2, 3E+2]\n")
    cfg = load_config(f)
    assert cfg.fixed == {"t_end": 10.0, "points": 3, "realizations": 64}
    assert isinstance(cfg.fixed["realizations"], int)
    assert list(cfg.points.column("k1")) == [2e-3, 2e-3, 0.5e-3, 0.5e-3, 1e-3, 1e-3]
    assert list(cfg.points.column("S")) == [100.0, 300.0] * 3


def test_yaml_size_and_line_length_are_bounded(tmp_path):
    """A 10 MB comment is refused from the file's size, before any parsing; a very long line by number."""
    import time

    from distsim.sweep.config import MAX_BYTES, MAX_LINE, ConfigError, load_config

    f = tmp_path / "big.yaml"
    f.write_text(f"analysis: ssa.simulate\nmodel: {MM}\n# " + "x" * 10_000_000 + "\n")
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=rf"^{f}: the file has 10,000,\d+ bytes; a sweep configuration has at most "
                                          f"{MAX_BYTES:,}"):
        load_config(f)
    assert time.perf_counter() - t0 < 5
    f.write_text(f"analysis: ssa.simulate\nmodel: {MM}\n# " + "x" * MAX_LINE + "\n")
    with pytest.raises(ConfigError, match=rf"^{f}:3: line of {MAX_LINE + 2:,} characters; a line has at most"):
        load_config(f)
    t = tmp_path / "t.csv"
    t.write_text("k1,S\n0.001," + "1" * MAX_LINE + "\n")
    f.write_text(f"analysis: ssa.simulate\nmodel: {MM}\nfixed:\n  t_end: 1\ntable: t.csv\n")
    with pytest.raises(ConfigError, match=rf"^{t}:2: line of {MAX_LINE + 6:,} characters"):
        load_config(f)


# ---- reruns and grown sweeps ----------------------------------------------------------------------------

def test_rerun_of_a_finished_sweep_computes_nothing(tmp_path, capsys):
    """`distsim sweep` run twice: the second run reads the store back (verified) and says so."""
    from distsim.cli import main

    f = tmp_path / "mm.yaml"
    f.write_text(f"analysis: ssa.simulate\nmodel: {MM}\nseed: 9\nchunk_size: 2\nfixed:\n  t_end: 10\n  points: 3\n"
                 f"  realizations: 64\ngrid:\n  k1: [1e-3, 3e-3]\n  S: [100, 301]\nstore: {tmp_path / 's.zarr'}\n")
    assert main(["--in-process", "--cpu", "--quiet", "sweep", str(f)]) == 0
    assert "4 points: 4 computed, 0 resumed" in capsys.readouterr().out
    assert main(["--in-process", "--cpu", "--quiet", "sweep", str(f), "-o", str(tmp_path / "out.nc")]) == 0
    assert f"4 points: every one is in the store {tmp_path / 's.zarr'}, verified; nothing computed" in \
        capsys.readouterr().out
    out = xr.open_dataset(tmp_path / "out.nc", engine="h5netcdf")
    assert dict(out.point.sizes) == {"k1": 2, "S": 2} and out.attrs["points_computed"] == 0


def test_grown_grid_computes_only_the_new_points(store, finished):
    """A grid that grows in its first parameter keeps every old point at its index (and seed): only
    the new points are computed, and the result equals a fresh sweep of the grown grid."""
    grown = {"k1": [1e-3, 3e-3, 5e-3], "S": [100, 301]}
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreRepaired)  # nothing is damaged, no old point recomputed
        ds = run(store, grown)
    assert ds.attrs["points_computed"] == 2 and ds.attrs["points_resumed"] == 4 and ds.sizes["k1"] == 3
    fresh = distsim.sweep(ssa.simulate, MM, grown, seed=9, chunk_size=2, client=LocalExecutor("cpu"), **FIXED)
    same(ds, fresh)
    same(open_store(store), fresh)
    assert run(store, grown).attrs["points_computed"] == 0
    with pytest.raises(StoreMismatch, match=r"holds a different sweep \(n_points: store has 6, this sweep has 4; "):
        run(store)  # a store does not shrink


def test_grown_table_recomputes_the_partial_last_chunk(tmp_path):
    """Old points in a partial last chunk are recomputed with the new points of that chunk (said so)."""
    rows = [{"k1": 1e-3, "S": s} for s in (100, 150, 200, 250, 300)]
    store = tmp_path / "t.zarr"
    kw = dict(seed=3, client=LocalExecutor("cpu"), chunk_size=3, **FIXED)
    distsim.sweep(ssa.simulate, MM, rows[:4], store=store, **kw)  # chunks: points 0-2, 3
    with pytest.warns(StoreRepaired, match=rf"{store} grows to 5 points; its last chunk was partial, so points 3 "
                                           "are recomputed"):
        ds = distsim.sweep(ssa.simulate, MM, rows, store=store, **kw)
    assert ds.attrs["points_computed"] == 2 and ds.attrs["points_resumed"] == 3
    same_points = distsim.sweep(ssa.simulate, MM, rows, seed=3, client=LocalExecutor("cpu"), chunk_size=3, **FIXED)
    for v in ("mean", "variance", "firings"):
        assert np.array_equal(ds[v].values, same_points[v].values), v
    assert np.array_equal(ds.S.values, [100, 150, 200, 250, 300])


def test_grid_grown_elsewhere_is_refused_with_the_reason(store):
    with pytest.raises(StoreMismatch, match=r"a sweep may extend a store only by adding points after its points: "
                                            r"a grid by new values of its first parameter"):
        run(store, {"k1": [1e-3, 3e-3], "S": [100, 301, 500]})


def test_check_says_what_the_store_holds(tmp_path, store, capsys):
    """`sweep --check` reports the store's verified points, its damage, and a store of another sweep,
    and changes nothing (a grown grid is not grown)."""
    from distsim.cli import main

    f = tmp_path / "mm.yaml"
    text = (f"analysis: ssa.simulate\nmodel: {MM}\nseed: 9\nchunk_size: 2\nfixed:\n  t_end: 10\n  points: 3\n"
            f"  realizations: 64\ngrid:\n  k1: [1e-3, 3e-3]\n  S: [100, 301]\nstore: {store}\n")
    f.write_text(text)
    assert main(["sweep", str(f), "--check"]) == 0
    assert f"store {store}: 4 of 4 points done and verified; the sweep computes 0\nconfiguration ok" in \
        capsys.readouterr().out
    (store / "mean" / "c" / "1" / "0" / "0").unlink()
    with pytest.warns(StoreRepaired, match=r"recomputing points 2-3 \(mean/c/1/0/0 is missing\)"):
        assert main(["sweep", str(f), "--check"]) == 0
    assert "2 of 4 points done and verified; the sweep computes 2, 2 of them damaged" in capsys.readouterr().out
    f.write_text(text.replace("k1: [1e-3, 3e-3]", "k1: [1e-3, 3e-3, 5e-3]"))
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    assert main(["sweep", str(f), "--check"]) == 0
    assert "holds this sweep's first 4 points (verified when it runs); the sweep adds 2" in capsys.readouterr().out
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before
    f.write_text(text.replace("seed: 9", "seed: 8"))
    assert main(["sweep", str(f), "--check"]) == 2
    assert "holds a different sweep (seed: store has 9, this sweep has 8)" in capsys.readouterr().err


def test_deleted_done_flags_are_rewritten_from_verified_data(store, finished):
    (store / "done" / "c" / "1").unlink()
    ds = run(store)
    assert ds.attrs["points_computed"] == 0
    same(ds, finished[1])
    assert (store / "done" / "c" / "1").exists()


@pytest.mark.parametrize("analysis,fixed,key,problem", [
    ("pbn.steady_state", "  target: [x9=1]\n  precision: 0.05", "fixed.target", "x9"),
    ("pbn.steady_state", "  target: [x1=1]\n  precision: 0.7", "fixed.precision", "precision must be in (0, 0.5)"),
    ("pbn.simulate", "  steps: 0\n  trajectories: 64", "fixed.steps", "steps"),
    ("pbn.simulate", "  steps: 10\n  trajectories: 64\n  targets: x7=1", "fixed.targets", "x7"),
])
def test_check_runs_the_pbn_checks(tmp_path, analysis, fixed, key, problem):
    from distsim.sweep.config import ConfigError, load_config

    model = ROOT / "examples" / "pbn" / "bnmpy_shmulevich2002_examplePBN_3n.txt"
    f = tmp_path / "pbn.yaml"
    f.write_text(f"analysis: {analysis}\nmodel: {model}\nfixed:\n{fixed}\ngrid:\n  perturbation: [0.01]\n")
    with pytest.raises(ConfigError) as e:
        load_config(f)
    msg = str(e.value)
    assert msg.startswith(f"{f}:") and f"key {key!r}" in msg and problem in msg, msg
