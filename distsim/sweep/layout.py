"""The shape of a sweep's result: one dimension per swept parameter for a grid, ``point`` otherwise.

A store always holds the point layout (one ``point`` dimension; the swept values and ``seed`` as
coordinates on it: checksums and resume work per point). A grid sweep (points given as a dict of
value lists) is returned, and read back by :func:`distsim.sweep.open_store`, with one dimension per
swept parameter in the grid's order, each indexed by its values as given; ``point`` (the point's
number) and ``seed`` stay as coordinates over those dimensions. A table (list of dicts, DataFrame,
one-at-a-time design, knockout screen) keeps ``point``; :func:`as_grid` reshapes one whose points
happen to form a full grid. The attributes :data:`LAYOUT_ATTR` and :data:`PARAMETERS_ATTR` say which.
"""

from __future__ import annotations

import json
import warnings
from typing import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from .. import results

LAYOUT_ATTR = "sweep_layout"  # "grid" or "table": how the points were given
PARAMETERS_ATTR = "sweep_parameters"  # JSON list of the swept column names, in the points' order
PER_POINT = ("point", "seed")  # coordinates on `point` that are not swept values


def parameters(ds: xr.Dataset) -> list[str]:
    """The swept columns of a point-layout sweep result: its attribute, else every coordinate on
    ``point`` alone other than ``seed`` (and the knockout screen's ``knockout`` label)."""
    if PARAMETERS_ATTR in ds.attrs:
        return [str(n) for n in json.loads(ds.attrs[PARAMETERS_ATTR])]
    return [str(k) for k, c in ds.coords.items() if c.dims == ("point",) and k not in (*PER_POINT, "knockout")]


def as_grid(ds: xr.Dataset, names: Sequence[str] | None = None) -> xr.Dataset:
    """A point-layout sweep result whose points are the full Cartesian product of their values (last
    parameter fastest, as a grid sweep orders them) with one dimension per parameter of ``names``
    (default: :func:`parameters`), indexed by the values in order of first appearance; ``point`` and
    ``seed`` become coordinates over those dimensions. Raises ``ValueError`` (naming the first point
    out of place) when the points are not such a grid."""
    if "point" not in ds.dims:
        raise ValueError("as_grid needs a sweep result with a 'point' dimension (a grid sweep already has one "
                         "dimension per parameter)")
    names = list(parameters(ds) if names is None else names)
    if not names:
        raise ValueError("the result has no swept parameters (coordinates on 'point')")
    for name in names:
        if name not in ds.coords or ds[name].dims != ("point",):
            raise ValueError(f"{name!r} is not a swept parameter of this result (a coordinate on 'point')")
        if name in ds.dims or name in ds.data_vars:
            raise ValueError(f"parameter {name!r} has the name of a dimension or variable of the result")
    n = ds.sizes["point"]
    codes, axes = [], {}
    for name in names:
        c, u = pd.factorize(ds[name].values, use_na_sentinel=False)
        codes.append(c)
        axes[name] = np.asarray(u, dtype=ds[name].dtype)
    shape = tuple(len(u) for u in axes.values())
    expected = np.indices(shape).reshape(len(shape), -1) if int(np.prod(shape)) == n else None
    if expected is None or not np.array_equal(np.stack(codes), expected):
        bad = 0 if expected is None else int(np.flatnonzero((np.stack(codes) != expected).any(axis=0))[0])
        why = (f"{n} points, but the values make {int(np.prod(shape))} combinations" if expected is None
               else f"point {bad} ({', '.join(f'{k}={ds[k].values[bad]}' for k in names)}) is out of grid order")
        raise ValueError(f"the points are not a full grid of {', '.join(names)} (last varying fastest): {why}")
    out = {}
    for key, var in ds.variables.items():
        if key in names or "point" not in var.dims:
            continue
        var = var.transpose("point", ...)
        out[key] = xr.Variable((*names, *var.dims[1:]), var.data.reshape(shape + var.shape[1:]), var.attrs,
                               var.encoding, fastpath=True)  # NumPy data: no dask check (it imports dask.array)
    coords = {k: v for k, v in ds.coords.items() if "point" not in v.dims and k not in names}
    coords.update({k: out.pop(k) for k in list(out) if k in ds.coords})
    coords.update({name: results.coordinate(name, axes[name], ds[name].attrs) for name in names})
    grid = xr.Dataset({k: out.get(k, ds[k].variable) for k in ds.data_vars}, coords=coords, attrs=dict(ds.attrs))
    grid.attrs[LAYOUT_ATTR] = "grid"
    grid.attrs[PARAMETERS_ATTR] = json.dumps(names)
    return grid


def shaped(ds: xr.Dataset) -> xr.Dataset:
    """A sweep result in its layout: :func:`as_grid` when it was given as a grid, else as it is. A
    grid that cannot take that shape (a parameter named like a variable of the result) keeps the
    point layout, with a warning saying why: the computed results are never lost to a reshape."""
    if ds.attrs.get(LAYOUT_ATTR) != "grid" or "point" not in ds.dims:
        return ds
    try:
        return as_grid(ds)
    except ValueError as e:
        warnings.warn(f"the sweep's result keeps its 'point' dimension: {e}", stacklevel=3)
        return ds


__all__ = ["LAYOUT_ATTR", "PARAMETERS_ATTR", "as_grid", "parameters", "shaped"]
