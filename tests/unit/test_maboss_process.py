"""A new process's ``distsim maboss`` (issue 31): what is not the user's answer stays out of it, and the
answer is unchanged -- the Dataset built on xarray's fast path is the one xarray builds from the same data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from distsim.maboss import maboss

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "maboss"


def _rebuilt(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` built again the ordinary way: (dims, values, attrs) tuples, coordinates as lists."""
    data = {k: (v.dims, v.values, v.attrs) for k, v in ds.data_vars.items()}
    coords = {k: (v.dims, v.values.tolist() if v.dtype.kind == "U" else v.values, v.attrs)
              for k, v in ds.coords.items()}
    out = xr.Dataset(data, coords=coords)
    out.attrs = ds.attrs
    return out


@pytest.mark.parametrize("name, cfg, n", [("sizek", "sizek", 200), ("toggle_internal", "toggle_internal", 300),
                                          ("absorbing", "absorbing", 100)])
def test_fast_path_dataset_is_xarrays(name, cfg, n):
    ds = maboss(DATA / f"{name}.bnd", DATA / f"{cfg}.cfg", trajectories=n, seed=5, backend="cpu", progress=False)
    ref = _rebuilt(ds)
    xr.testing.assert_identical(ds, ref)
    for k, v in ref.variables.items():
        assert ds[k].dtype == v.dtype, k
        assert type(ds.variables[k]._data) is type(v._data), k
        np.testing.assert_array_equal(ds[k].values, v.values)
    assert list(ds.indexes) == list(ref.indexes)
    for k, index in ref.indexes.items():
        assert ds.indexes[k].equals(index) and ds.indexes[k].dtype == index.dtype, k
        assert ds.xindexes[k].coord_dtype == ref.xindexes[k].coord_dtype, k


def test_cli_process_imports_no_dask_array(tmp_path):
    """The CPU run of a new process neither imports dask.array (xarray would, checking each Variable for
    dask arrays) nor starts Dask."""
    prefix = tmp_path / "tg"
    code = ("import sys; from distsim.cli import main; "
            f"rc = main(['-q', 'maboss', {str(DATA / 'toggle_internal.bnd')!r}, '--cpu', '-n', '200', "
            f"'--csv', {str(prefix)!r}]); "
            "print('RC', rc, 'dask.array' in sys.modules, 'distributed' in sys.modules, 'dask' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "RC 0 False False False" in r.stdout, r.stdout[-2000:]
    assert (tmp_path / "tg_probtraj.csv").stat().st_size > 0


def test_provenance_names_dasks_version_without_importing_it():
    code = ("import sys; from distsim.results import provenance; v = provenance(workload='x')['dask_version']; "
            "print('IMPORTED', 'dask' in sys.modules); import dask; print('SAME', v == dask.__version__)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "IMPORTED False" in r.stdout and "SAME True" in r.stdout, r.stdout


@pytest.mark.parametrize("name", ["sizek", "Montagud2022_Prostate_Cancer", "toggle_internal"])
def test_reader_same_tables_with_satisfiable_remembered(name):
    """The reader's rate tables are the same whether ``satisfiable`` answers from its memo or computes."""
    from distsim.models import logic
    from distsim.models.boolean import truth_table
    from distsim.models.formats.maboss import read_rates

    files = (DATA / f"{name}.bnd", DATA / f"{name}.cfg")
    logic._SAT.clear()
    cold = read_rates(*files)
    assert logic._SAT  # the reader asked
    warm = read_rates(*files)
    assert cold.nodes == warm.nodes and cold.maboss_order == warm.maboss_order
    assert cold.rates == warm.rates
    logic._SAT.clear()
    for e in {g for r in cold.rates if r is not None for table in r for g in table.values()}:
        over = logic.variables(e)
        assert logic.satisfiable(e) == (len(over) > logic.MAX_EXACT_VARS or bool(truth_table(e).any()))
