"""results.dataset builds the same Dataset as xarray's ordinary constructor, without importing dask."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from distsim import results

ROOT = Path(__file__).resolve().parents[2]


def test_dataset_equals_xarray_constructor():
    data = {"frequency": ("node", np.array([0.25, 0.5]), {"units": "1"}),
            "final_state": (("trajectory", "node"), np.array([[0, 1], [1, 1]], np.uint8), {"long_name": "s"}),
            "count": ("target", [3, 4])}
    coords = {"node": ["a", "b"], "trajectory": np.arange(2), "target": ("target", ["x", "y"], {"units": "1"}),
              "label": ("node", ["A", "B"])}
    ours = results.dataset(data, coords)
    ref = xr.Dataset(data, coords=coords)
    xr.testing.assert_identical(ours, ref)
    for k in ("node", "trajectory", "target"):
        assert ours.indexes[k].equals(ref.indexes[k])
        assert ours[k].dtype == ref[k].dtype
    assert list(ours.indexes) == list(ref.indexes)


def test_dataset_does_not_import_dask():
    code = ("import sys, numpy as np; from distsim import results; "
            "results.dataset({'f': ('node', np.ones(2))}, {'node': ['a', 'b']}); "
            "print(sorted(m for m in sys.modules if m == 'dask' or m.startswith('dask.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_dataset_of_dimension_coordinates_equals_xarray_constructor():
    """Only dimension coordinates (the Dataset built directly): the constructor's Dataset, its dimensions,
    variables and indexes in the same order; sizes that disagree are the constructor's error."""

    data = {"p": (("b", "a"), np.zeros((2, 3)), {"units": "1"}), "q": ("c", np.arange(4, dtype=np.int8)),
            "r": ("d", np.ones(2))}
    coords = {"a": ("a", [1, 2, 3]), "c": ("c", ["x", "yy", "z", "w"], {"units": "1"}), "b": [0.5, 1.5]}
    ours = results.dataset(data, coords)
    ref = xr.Dataset(data, coords=coords)
    xr.testing.assert_identical(ours, ref)
    assert list(ours.sizes.items()) == list(ref.sizes.items())
    assert list(ours.variables) == list(ref.variables) and list(ours.coords) == list(ref.coords)
    for k in ref.variables:
        assert ours[k].dtype == ref[k].dtype and ours[k].attrs == ref[k].attrs, k
    for k in ref.indexes:
        assert ours.indexes[k].equals(ref.indexes[k]) and ours.indexes[k].name == ref.indexes[k].name == k
        assert type(ours.xindexes[k]) is type(ref.xindexes[k])
        assert ours.xindexes[k].coord_dtype == ref.xindexes[k].coord_dtype
    ours.attrs["x"] = 1  # its own attrs
    assert ref.attrs == {} and results.dataset(data, coords).attrs == {}
    with pytest.raises(ValueError, match="conflicting sizes|size"):
        results.dataset({"p": ("a", np.zeros(2))}, {"a": [1, 2, 3]})


WORKLOAD_CALLS = {
    "ssa": "import distsim.ssa as w; w.simulate(w.load(R / 'examples/ssa/michaelis_menten.rxn'), t_end=1.0, "
           "points=3, realizations=8, seed=1, **kw)",
    "sweep": "import distsim, distsim.ssa as s; distsim.sweep(s.simulate, s.load(R / 'examples/ssa/michaelis_menten.rxn'), "
             "[{'k1': 0.001}, {'k1': 0.002}], seed=1, t_end=1.0, points=3, realizations=4, **kw)",
    "grn": "import distsim.grn as w; w.infer(w.load(R / 'examples/grn/mouse_eye.toml'), islands=1, population=8, "
           "generations=2, seed=1, **kw)",
    "mcmc": "import distsim.ssa as s, distsim.mcmc as w; w.infer_rates(s.load(R / 'examples/mcmc/michaelis_menten.rxn'), "
            "R / 'examples/mcmc/mm_observations.csv', prior={'k1': (2.0, 1000.0), 'k2': (2.0, 10.0), 'k3': (2.0, 10.0)}, "
            "chains=2, iterations=3, burn_in=0, seed=1, **kw)",
    "pmmh": "import distsim.pmmh as w; w.infer(R / 'tests/data/pmmh/immigration_death.rxn', [w.Observable('y', 'X', "
            "'poisson')], w.Experiment([1.0, 2.0], {'y': [3.0, 4.0]}), prior={'k1': ('lognormal', 0.0, 1.0), 'k2': ('lognormal', 0.0, 1.0)}, "
            "initial={'X': 2}, particles=16, chains=2, iterations=3, burn_in=1, seed=1, **kw)",
}


@pytest.mark.parametrize("name", sorted(WORKLOAD_CALLS))
def test_workload_results_do_not_import_dask_array(name):
    """A workload run in-process builds its Dataset (and the coordinates it adds after) without xarray's
    dask check, which imports dask.array (0.3-1.2 s of a new process's first call)."""
    code = ("import sys, warnings; warnings.simplefilter('ignore'); from pathlib import Path; "
            f"R = Path({str(ROOT)!r}); kw = dict(backend='cpu', progress=False); {WORKLOAD_CALLS[name]}; "
            "print('DASK_ARRAY', 'dask.array' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=900,
                       env={**os.environ, "DISTSIM_DISABLE_GPU": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "DASK_ARRAY False" in r.stdout, r.stdout[-2000:]


WRITE_CHECK = """
import filecmp, sys
import numpy as np
from distsim import results
ds = results.dataset({'p': (('time', 'state'), np.array([[0.25, 0.75], [0.5, 0.5]]), {'units': '1'}),
                      'on': ('state', np.array([True, False])), 'n': ('state', np.array([3, 4], np.int64))},
                     {'time': [0.0, 1.0], 'state': ['<nil>', 'A -- B'], 'label': ('state', ['x', 'yy'])})
ds.attrs.update(distsim_version='t', seed=1)
results.write(ds, sys.argv[1] + '/a.nc')
print('IMPORTED', 'dask.array' in sys.modules, 'distributed' in sys.modules)
import dask.array as da
import xarray as xr
ds.to_netcdf(sys.argv[1] + '/b.nc', engine='h5netcdf')  # xarray's own write, dask present
print('SAME', filecmp.cmp(sys.argv[1] + '/a.nc', sys.argv[1] + '/b.nc', shallow=False))
back = results.open_result(sys.argv[1] + '/a.nc').load()
xr.testing.assert_identical(back, xr.open_dataset(sys.argv[1] + '/b.nc', engine='h5netcdf').load())
print('BOOL', back['on'].dtype, back['label'].values.tolist())
lazy = xr.Dataset({'v': ('x', da.ones(10, chunks=5))})  # dask arrays after the write: xarray still sees them
results.write(lazy, sys.argv[1] + '/c.nc')
print('CHUNKED', dict(lazy.chunks), float(results.open_result(sys.argv[1] + '/c.nc')['v'].sum()))
"""


def test_netcdf_write_skips_dask_and_writes_the_same_file(tmp_path):
    """results.write of a NumPy Dataset to netCDF in a new process imports neither dask.array nor
    distributed (0.6-0.8 s, issue 31), writes the bytes xarray's own to_netcdf writes, and leaves xarray
    seeing dask arrays made after it."""
    r = subprocess.run([sys.executable, "-c", WRITE_CHECK, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "IMPORTED False False" in r.stdout, r.stdout
    assert "SAME True" in r.stdout and "BOOL bool ['x', 'yy']" in r.stdout, r.stdout
    assert "CHUNKED {'x': (5, 5)} 10.0" in r.stdout, r.stdout
