"""results.dataset builds the same Dataset as xarray's ordinary constructor, without importing dask."""

import subprocess
import sys

import numpy as np
import xarray as xr

from distsim import results


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
