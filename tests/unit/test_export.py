"""Results as tidy tables (distsim.export / results.to_table, `distsim export`): every workload's
summary, one variable at a time (never the cross product of every dimension), read back equal to
the Dataset."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import distsim
from distsim.cli import main
from distsim.results import open_result, to_table, write

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
RUNS = {
    "ssa": ["ssa", "simulate", str(EX / "ssa" / "michaelis_menten.rxn"), "--t-end", "10", "--points", "3", "-n", "100"],
    "steady": ["pbn", "steady-state", str(EX / "pbn" / "bnmpy_shmulevich2002_examplePBN_3n.txt"), "-p", "0.01",
               "--target", "x1=1", "--target", "x1=0,x2=1", "-r", "1e-2"],
    "simulate": ["pbn", "simulate", str(EX / "pbn" / "bnmpy_shmulevich2002_examplePBN_3n.txt"), "-p", "0.01",
                 "--steps", "50", "--trajectories", "128", "--target", "x1=1"],
    "grn": ["grn", "infer", str(EX / "grn" / "mouse_eye.toml"), "-g", "8", "--population", "32"],
    "mcmc": ["mcmc", "rates", str(EX / "mcmc" / "michaelis_menten.rxn"), "--data", str(EX / "mcmc" / "mm_observations.csv"),
             "--iterations", "6", "--burn-in", "2", "--chains", "2", "--prior", "k1=gamma:2,1000", "--prior",
             "k2=gamma:2,10", "--prior", "k3=gamma:2,10"],
}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("results")
    out = {}
    for name, args in RUNS.items():
        out[name] = folder / f"{name}.nc"
        with warnings.catch_warnings():  # 6 MCMC draws do not converge, and a warning says so
            warnings.simplefilter("ignore")
            assert main(["--in-process", "-q", *args, "--seed", "3", "-o", str(out[name])]) == 0
    return out


def _check_long(table: pd.DataFrame, ds: xr.Dataset, names: list[str]) -> None:
    """Every value of every named variable is in the table, at its coordinates."""
    assert sorted(set(table["name"])) == sorted(names)
    for name in names:
        rows = table[table["name"] == name]
        da = ds[name]
        assert len(rows) == da.size
        for _, row in rows.iterrows():
            expected = da.sel({d: row[d] for d in da.dims}).item()
            got = row["text"] if "text" in row and isinstance(expected, str) else row["value"]
            assert got == expected or (np.isnan(got) and np.isnan(expected)), (name, dict(row))


def test_every_workloads_summary(results):
    for name in ("ssa", "steady", "simulate", "grn"):
        ds = open_result(results[name]).load()
        table = distsim.export(results[name])
        summary = [str(n) for n in ds.data_vars if not {"realization", "trajectory", "bin"} & set(ds[n].dims)]
        assert summary
        _check_long(table, ds, summary)
        assert list(table.columns[:1]) == ["name"] and table.columns[-1] in ("value", "text")


def test_posterior_summary(results):
    ds = open_result(results["mcmc"]).load()
    table = to_table(ds)
    wide = table.pivot(index="variable", columns="name", values="value")
    for v in ("k1", "k2", "k3"):
        x = ds[v].values.ravel()
        assert wide.loc[v, "mean"] == pytest.approx(x.mean(), rel=1e-12)
        assert wide.loc[v, "sd"] == pytest.approx(x.std(ddof=1), rel=1e-12)
        assert wide.loc[v, "q50"] == pytest.approx(np.median(x), rel=1e-12)
        assert wide.loc[v, "q05"] == pytest.approx(np.quantile(x, 0.05), rel=1e-12)
        for diag in ("rhat", "ess_bulk", "ess_tail"):
            assert wide.loc[v, diag] == float(ds[diag].sel(variable=v))
    draws = to_table(ds, ["k1"])  # named: the draws themselves
    assert len(draws) == ds["k1"].size and set(draws.columns) >= {"chain", "draw", "value"}


def test_no_cross_product_of_dimensions(tmp_path):
    """Dataset.to_dataframe() of this asks for 2000^3 x 10^6 rows; the summary has 6,000."""
    n = 2000
    ds = xr.Dataset({"a": ("x", np.arange(n)), "b": ("y", np.arange(n) * 0.5), "c": ("z", np.ones(n)),
                     "per_realization": ("realization", np.zeros(10**6, dtype=np.int8))})
    path = write(ds, tmp_path / "big.nc")
    table = to_table(path)
    assert len(table) == 3 * n and set(table["name"]) == {"a", "b", "c"}
    assert table.loc[table["name"] == "b", "value"].tolist() == (np.arange(n) * 0.5).tolist()
    assert str(table["x"].dtype) == "Int64"  # integer coordinates stay integers


def test_sweep_parameters_are_columns():
    ds = xr.Dataset({"mean": (("point", "time"), np.arange(6.0).reshape(3, 2))},
                    coords={"point": [0, 1, 2], "time": [0.0, 1.0], "k1": ("point", [1e-3, 2e-3, 4e-3])})
    table = to_table(ds)
    assert table[["point", "k1", "time", "value"]].values.tolist() == [
        [p, k, t, 2 * p + i] for p, k in enumerate([1e-3, 2e-3, 4e-3]) for i, t in enumerate([0.0, 1.0])]
    wide = to_table(ds, wide=True)
    assert wide.columns.tolist() == ["point", "time", "k1", "mean"]


def test_wide_and_errors(results):
    ds = open_result(results["ssa"])
    wide = to_table(ds, ["mean", "variance"], wide=True)
    assert wide.columns.tolist() == ["time", "species", "mean", "variance"]
    assert wide["mean"].tolist() == ds["mean"].values.ravel().tolist()
    with pytest.raises(ValueError, match=r"same dimensions; choose among .*\(species, time\): mean, variance"):
        to_table(ds, wide=True)
    with pytest.raises(KeyError, match=r"ssa\.nc: no variable 'meen' in this result \(did you mean 'mean'"):
        to_table(results["ssa"], ["meen"])


def test_cli_export(results, tmp_path, capsys):
    assert main(["export", str(results["ssa"])]) == 0
    printed = pd.read_csv(io.StringIO(capsys.readouterr().out))
    expected = to_table(results["ssa"])
    np.testing.assert_array_equal(printed["value"], expected["value"])
    assert printed["name"].tolist() == expected["name"].tolist()
    for suffix in (".csv", ".tsv", ".parquet"):
        out = tmp_path / f"t{suffix}"
        assert main(["export", str(results["steady"]), "-o", str(out)]) == 0
        back = (pd.read_parquet(out) if suffix == ".parquet" else pd.read_csv(out, sep="\t" if suffix == ".tsv" else ","))
        np.testing.assert_array_equal(back["value"], to_table(results["steady"])["value"])  # NaN where NaN
        assert main(["export", str(results["steady"]), "-o", str(out)]) == 2  # never replaced without --overwrite
        assert "exists" in capsys.readouterr().err
    assert main(["export", str(results["ssa"]), "-o", str(tmp_path / "t.xlsx")]) == 2
    assert main(["export", str(tmp_path / "missing.nc")]) == 2
    assert "missing.nc: no such result" in capsys.readouterr().err
    model = EX / "ssa" / "michaelis_menten.rxn"
    assert main(["export", str(model)]) == 2
    assert f"{model}: not a result (.h5, .nc, .nc4, .zarr)" in capsys.readouterr().err
    fake = tmp_path / "fake.nc"
    fake.write_text("not netCDF")
    assert main(["export", str(fake)]) == 2
    assert f"{fake}: cannot be read as a result (" in capsys.readouterr().err
    fake.unlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.parquet", "t.tsv"]


def test_parquet_without_pyarrow_says_what_to_install(results, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(__import__("sys").modules, "pyarrow", None)  # import pyarrow -> ImportError
    out = tmp_path / "t.parquet"
    assert main(["export", str(results["ssa"]), "-o", str(out)]) == 2
    assert 'needs pyarrow: pip install "distsim-bio[parquet]"' in capsys.readouterr().err
    assert not out.exists()


def test_grid_sweep_table_has_the_same_rows_as_the_point_layout():
    """A grid sweep (one dimension per parameter) exports the rows of its point layout, parameters as columns."""
    from distsim.sweep import as_grid

    ds = xr.Dataset({"mean": (("point", "time"), np.arange(8.0).reshape(4, 2))},
                    coords={"point": [0, 1, 2, 3], "time": [0.0, 1.0], "k1": ("point", [1e-3, 1e-3, 2e-3, 2e-3]),
                            "S": ("point", [100, 301, 100, 301])})
    cols = ["point", "k1", "S", "time", "value"]
    flat = to_table(ds)[cols].sort_values(["point", "time"]).values.tolist()
    grid = as_grid(ds)
    assert grid["mean"].dims == ("k1", "S", "time")
    assert to_table(grid)[cols].sort_values(["point", "time"]).values.tolist() == flat


def test_export_of_a_sweep_store_reads_it_verified_in_its_layout(tmp_path, capsys):
    """`distsim export STORE.zarr`: the sweep's variables (not the store's checksums and done flags), a
    grid's parameters as columns, the same rows as the returned Dataset's table."""
    import distsim
    import distsim.ssa as ssa
    from distsim.cli import main
    from distsim.engine import LocalExecutor

    store = tmp_path / "s.zarr"
    ds = distsim.sweep(ssa.simulate, ssa.load(EX / "ssa" / "michaelis_menten.rxn"), {"k1": [1e-3, 2e-3], "S": [100]},
                       seed=1, store=store, client=LocalExecutor("cpu"), t_end=5.0, points=3, realizations=16,
                       quantiles=None)
    out = tmp_path / "s.csv"
    assert main(["export", str(store), "-o", str(out), "--variable", "mean"]) == 0
    import pandas as pd

    got = pd.read_csv(out)
    assert set(got["name"]) == {"mean"} and {"k1", "S", "time", "species"} <= set(got.columns)
    want = to_table(ds, ["mean"])
    assert len(got) == len(want) and sorted(got["value"]) == sorted(want["value"])
    assert main(["export", str(store), "-o", str(tmp_path / "all.csv")]) == 0
    names = set(pd.read_csv(tmp_path / "all.csv")["name"])
    assert "mean" in names and not {"done", "chunk_digest"} & names
