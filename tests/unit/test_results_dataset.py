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


def test_dataset_of_dimension_coordinates_equals_xarray_constructor():
    """Only dimension coordinates (the Dataset built directly): the constructor's Dataset, its dimensions,
    variables and indexes in the same order; sizes that disagree are the constructor's error."""
    import pytest

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
