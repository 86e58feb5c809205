"""The fixed host cost of a warm ``maboss()`` call (issue 31): the visible states made unique by a lexsort,
label coordinates taken by row from one table per model, and the Dataset of a warm call (labels from the
memo) identical to a cold one's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from distsim import results
from distsim.maboss import block, maboss, model

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "maboss"
MONTAGUD = (DATA / "Montagud2022_Prostate_Cancer.bnd", DATA / "Montagud2022_Prostate_Cancer.cfg")


@pytest.mark.parametrize("vw", [1, 2, 3])
def test_unique_rows_equals_numpy_unique(vw):
    rng = np.random.default_rng(vw)
    pool = rng.integers(0, 2**64, size=(30, vw), dtype=np.uint64, endpoint=False)
    pool[:5, 0] = pool[5, 0]  # rows equal in word 0, told apart by later words (vw > 1)
    pool[6] = 0
    rows = pool[rng.integers(0, 30, 500)]
    want, winv = np.unique(rows, axis=0, return_inverse=True)
    got, inv = block.unique_rows(rows)
    np.testing.assert_array_equal(got, want.reshape(-1, vw))
    np.testing.assert_array_equal(inv, np.asarray(winv).reshape(-1))
    np.testing.assert_array_equal(got[inv], rows)
    e, ei = block.unique_rows(rows[:0])
    assert e.shape == (0, vw) and e.dtype == np.uint64 and ei.shape == (0,)


def _same_coordinate(got, want) -> None:
    got, want = xr.Variable(*got) if isinstance(got, tuple) else got, xr.Variable(*want) if isinstance(
        want, tuple) else want
    assert got.identical(want) and got.dtype == want.dtype
    if isinstance(want, xr.IndexVariable):
        assert got.to_index().equals(want.to_index()) and got.to_index().dtype == want.to_index().dtype


def test_labels_coordinate_equals_index_of_the_labels():
    """Rows in any order, repeated, a subset shorter than the table's longest label, after the table grew
    (its Index appended), and none: each the coordinate results.coordinate makes of the same labels."""
    rng = np.random.default_rng(5)
    t = results.Labels()
    t.extend(["<nil>", "A -- B", "C" * 40])
    _same_coordinate(t.coordinate("s", [2, 0, 1], {"units": "1"}), results.coordinate("s", ["C" * 40, "<nil>", "A -- B"],
                                                                                   {"units": "1"}))
    t.extend([f"N{i} -- " * int(k) + "Z" for i, k in enumerate(rng.integers(0, 30, 50))])
    for rows in (rng.permutation(53), rng.integers(0, 53, 80), np.array([0, 1]), np.array([5])):
        _same_coordinate(t.coordinate("s", rows), results.coordinate("s", [t.text[i] for i in rows]))
    _same_coordinate(t.coordinate("s", np.zeros(0, int)), results.coordinate("s", []))
    assert t._built == 53
    t.extend(["new", "N -- " * 40])  # fewer than a quarter of the Index: rows of them built directly
    for rows in (np.array([54, 0, 53, 7]), np.array([3, 4])):
        _same_coordinate(t.coordinate("s", rows), results.coordinate("s", [t.text[i] for i in rows]))
    assert t._built == 53
    t.extend([f"M{i}" for i in range(12)])  # a quarter more: the Index rebuilt
    _same_coordinate(t.coordinate("s", np.arange(67)[::-1]), results.coordinate("s", t.text[::-1]))
    assert t._built == 67
    assert t.coordinate("s", [0, 1]).dtype == np.dtype("<U6")


def test_dataset_passes_a_ready_coordinate_through():
    t = results.Labels()
    t.extend(["x", "yy"])
    data = {"p": ("state", np.array([0.5, 0.5]), {"units": "1"})}
    ours = results.dataset(data, {"state": t.coordinate("state", [1, 0])})
    xr.testing.assert_identical(ours, xr.Dataset(data, coords={"state": ["yy", "x"]}))
    assert isinstance(ours.indexes["state"], pd.Index) and ours.state.dtype == np.dtype("<U2")


def test_warm_call_equals_a_cold_one(monkeypatch):
    """Calls whose fixed points and states were partly labelled by earlier calls (other seeds, counts) give
    the Dataset of a process that labels them afresh, dtypes and indexes included."""
    kw = dict(max_time=20.0, backend="cpu", progress=False)
    warm = [maboss(*MONTAGUD, trajectories=n, seed=s, **kw) for n, s in ((300, 1), (200, 2), (300, 3))]
    for ds, (n, s) in zip(warm, ((300, 1), (200, 2), (300, 3))):
        monkeypatch.setattr(model, "_LABELS", {})
        cold = maboss(*MONTAGUD, trajectories=n, seed=s, **kw)
        assert ds.sizes["fixed_point"] > 10
        for d in (ds, cold):
            d.attrs.pop("created"), d.attrs.pop("wall_time_s")
        xr.testing.assert_identical(ds, cold)
        for k in ds.indexes:
            assert ds.indexes[k].equals(cold.indexes[k]) and ds.indexes[k].dtype == cold.indexes[k].dtype, k
        for k in ds.variables:
            assert ds[k].dtype == cold[k].dtype, k
