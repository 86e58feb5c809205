"""Sweep points: a grid (dict of value lists, Cartesian product), a table (list of dicts or a pandas
DataFrame), or a one-at-a-time sensitivity design (:func:`one_at_a_time`).

A column whose name starts with one of :data:`UNSET_PREFIXES` (``fix.NODE``: a PBN knockout) may
hold ``None`` (or ``"-"``) in a point: the point leaves that setting alone. Its coordinate is then
NaN.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

SCALE_KEYS = ("parameter", "factor")  # a point {"parameter": "k1", "factor": 2} scales k1 by 2
MAX_POINTS = 2**32
UNSET_PREFIXES = ("fix.",)  # columns that a point may leave unset (None)


@dataclass(frozen=True)
class Points:
    """An ordered table of sweep points: column name -> values (numbers; ``parameter`` may be text)."""

    names: tuple[str, ...]
    columns: tuple[tuple[Any, ...], ...]  # one tuple per name, all of length n
    grid: bool = False  # given as a grid (dict of value lists): the result gets one dimension per name

    @property
    def n(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    def point(self, i: int) -> dict[str, Any]:
        return {k: col[i] for k, col in zip(self.names, self.columns)}

    def dicts(self) -> list[dict[str, Any]]:
        """Every point as a dict, in order."""
        return [dict(zip(self.names, row)) for row in zip(*self.columns)]

    def rows(self, a: int, b: int, step: int = 1) -> Points:
        """Points ``a, a + step, ..`` below ``b`` (a chunk's)."""
        return Points(self.names, tuple(col[a:b:step] for col in self.columns), self.grid)

    def column(self, name: str) -> np.ndarray:
        col = self.columns[self.names.index(name)]
        types = set(map(type, col))  # values are None, str, int or float (as_points)
        if type(None) in types:
            return np.array([np.nan if v is None else v for v in col], dtype=np.float64)
        if types == {str}:
            return np.array(col, dtype=object)
        return np.array(col, dtype=np.int64 if types == {int} else np.float64)

    def digest(self) -> str:
        return hashlib.sha256(json.dumps([self.names, self.columns]).encode()).hexdigest()

    def prefix(self, n: int) -> Points:
        """The first ``n`` points."""
        return Points(self.names, tuple(col[:n] for col in self.columns))

    def swept(self) -> list[str]:
        """Names of the swept columns (``parameter``/``factor`` stand for the scaled parameters)."""
        return [n for n in self.names if n not in SCALE_KEYS]


def _value(name: str, v: Any) -> Any:
    if name.startswith(UNSET_PREFIXES) and (v is None or v == "-" or (isinstance(v, float) and math.isnan(v))):
        return None
    if isinstance(v, (bool, np.bool_)):
        raise ValueError(f"point column {name!r}: expected numbers, got a boolean {v!r}")
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        if not math.isfinite(float(v)):
            raise ValueError(f"point column {name!r}: values must be finite, got {v!r}")
        return float(v)
    if name == "parameter" and isinstance(v, str):
        return v
    raise ValueError(f"point column {name!r}: expected numbers, got {v!r} ({type(v).__name__})")


def as_points(points: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]] | Any) -> Points:
    """Normalise a grid (dict of lists: Cartesian product, last key fastest), a list of dicts (all with
    the same keys), or a pandas DataFrame (one row per point); :class:`Points` are returned as they are."""
    if isinstance(points, Points):
        return points
    if hasattr(points, "to_dict") and hasattr(points, "columns"):  # pandas DataFrame
        points = points.to_dict(orient="records")
    if isinstance(points, Mapping):
        names, columns = _grid_columns(points)
    elif isinstance(points, Sequence) and not isinstance(points, (str, bytes)):
        names, columns = _table_columns(points)
    else:
        raise TypeError("points must be a dict of value lists (grid), a list of dicts or a pandas DataFrame (table)")
    if ("parameter" in names) != ("factor" in names):
        raise ValueError("'parameter' and 'factor' go together: the point scales that parameter by that factor")
    types = {k: set(map(type, col)) for k, col in zip(names, columns)}  # values are None, str, int or float
    if "parameter" in names and not all(issubclass(t, str) for t in types["parameter"]):
        raise ValueError("point column 'parameter' must hold parameter names")
    for k in names:
        if types[k] == {type(None)}:
            raise ValueError(f"point column {k!r} is unset (None) in every point")
        if k != "parameter" and any(issubclass(t, str) for t in types[k]):
            raise ValueError(f"point column {k!r}: expected numbers")
    if len(columns[0]) > MAX_POINTS:
        raise ValueError(f"{len(columns[0])} points: at most 2**32 are supported")
    return Points(names, columns, grid=isinstance(points, Mapping))


_NONE = object()


def _grid_columns(grid: Mapping[str, Sequence[Any]]) -> tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]:
    if not grid:
        raise ValueError("a grid needs at least one parameter")
    names = tuple(str(k) for k in grid)
    lists = []
    for k, vals in grid.items():
        if isinstance(vals, (str, bytes)) or not isinstance(vals, (Sequence, np.ndarray)) or len(vals) == 0:
            raise ValueError(f"grid parameter {k!r}: expected a non-empty list of values")
        values = [_value(str(k), v) for v in vals]
        twice = next((v for i, v in enumerate(values) if v in values[:i]), _NONE)
        if twice is not _NONE:
            raise ValueError(f"grid parameter {k!r}: value {twice!r} is listed twice")
        lists.append(values)
    n = math.prod(len(v) for v in lists)
    if n > MAX_POINTS:
        raise ValueError(f"the grid has {n} points: at most 2**32 are supported")
    return names, tuple(zip(*itertools.product(*lists)))


def _table_columns(table: Sequence[Mapping[str, Any]]) -> tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]:
    if not table:
        raise ValueError("a table needs at least one point")
    if not all(type(r) is dict or isinstance(r, Mapping) for r in table):  # (the ABC check is slow)
        raise ValueError("a table is a list of mappings {parameter: value}")
    names = tuple(str(k) for k in table[0])
    if not names:
        raise ValueError("table point 0 has no parameters")
    fast = _numeric_columns(table, names)
    if fast is not None:
        return names, fast
    rows = []
    for i, r in enumerate(table):
        if set(map(str, r)) != set(names):
            raise ValueError(f"table point {i} has parameters {sorted(map(str, r))}, point 0 has {sorted(names)}")
        rows.append(tuple(_value(k, r[k]) for k in names))
    return names, tuple(zip(*rows))


def _numeric_columns(table: Sequence[Mapping[str, Any]], names: tuple[str, ...]) -> tuple[tuple[Any, ...], ...] | None:
    """The columns of a table whose rows all have exactly ``names`` (str keys) and whose values are all
    Python floats (finite) or ints (``parameter``: str), column by column in C loops; None where any row or value is
    otherwise (:func:`_table_columns` then goes row by row, naming what is wrong, or converting)."""
    keys = table[0].keys()
    if not all(type(k) is str for k in keys) or any(r.keys() != keys for r in table):
        return None
    cols = []
    for k in names:
        col = tuple(r[k] for r in table)
        types = set(map(type, col))
        if not types <= ({str} if k == "parameter" else {float, int}):
            return None
        if float in types and not np.isfinite(np.asarray(col, dtype=np.float64)).all():
            return None
        cols.append(col)
    return tuple(cols)


def one_at_a_time(parameters: Sequence[str], factors: Sequence[float]) -> list[dict[str, Any]]:
    """One-at-a-time sensitivity design: every parameter scaled by every factor, the others at their
    baseline (seed 001's study: 9 factors x 1,029 reaction rates). Returns table points
    ``{"parameter": name, "factor": f}``, parameter-major. Use :func:`distsim.sweep.sensitivity` to
    default ``parameters`` to every rate of a model."""
    if not parameters:
        raise ValueError("one_at_a_time needs at least one parameter")
    if not factors:
        raise ValueError("one_at_a_time needs at least one factor")
    for f in factors:
        if isinstance(f, bool) or not isinstance(f, (int, float, np.integer, np.floating)) or not f >= 0 \
                or not math.isfinite(f):
            raise ValueError(f"factors must be finite numbers >= 0, got {f!r}")
    if len(set(parameters)) != len(parameters):
        raise ValueError("one_at_a_time: a parameter is listed twice")
    return [{"parameter": str(p), "factor": float(f)} for p in parameters for f in factors]
