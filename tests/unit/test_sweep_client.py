"""The sweep's client-side work is column by column (issue 33): every fast path gives what the
point-by-point reference gives, and bad input still fails with the same message."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

import distsim.ssa as ssa
from distsim.models.compile_reactions import _columns, compile_network, point_tables
from distsim.rng import MAX_SEED, check_seed, check_seeds, derive_seeds
from distsim.sweep import adapters, as_points, one_at_a_time
from distsim.sweep.core import _check_values, _plan, distinct_singles
from distsim.sweep.points import SCALE_KEYS

ROOT = Path(__file__).resolve().parents[2]
MM = ROOT / "examples" / "ssa" / "michaelis_menten.rxn"
FIXED = dict(t_end=20.0, points=5, realizations=16)


@pytest.fixture(scope="module")
def mm():
    return ssa.load(MM)


def _reference_singles(pts):
    """The point-by-point walk that distinct_singles replaces."""
    seen, out = set(), []
    for i in range(pts.n):
        point = pts.point(i)
        singles = [{k: v} for k, v in point.items() if k not in SCALE_KEYS]
        if "parameter" in point:
            singles.append({"parameter": point["parameter"], "factor": point["factor"]})
        for single in singles:
            token = tuple(single.items())
            if token not in seen:
                seen.add(token)
                out.append((i, single))
    return out


def test_distinct_singles_walk_order_with_repeats():
    rng = np.random.default_rng(3)
    table = [{"k1": float(rng.choice([1e-3, 2e-3, 3e-3])), "S": int(rng.choice([100, 200])),
              "k3": float(rng.choice([0.1, 0.2, 0.3, 0.4]))} for _ in range(200)]
    pts = as_points(table)
    got = distinct_singles(pts)
    assert got == _reference_singles(pts)
    assert len(got) == 3 + 2 + 4
    oat = as_points(one_at_a_time(["k1", "k2", "k3"], [0.5, 1.0, 2.0]) * 2)  # every pair twice
    assert distinct_singles(oat) == _reference_singles(oat) and len(distinct_singles(oat)) == 9


def test_first_bad_point_is_named_as_point_by_point(mm):
    # point 2 has a bad count in column S; point 5 an earlier column's bad value: point 2 is named
    table = [{"k1": 1e-3, "S": 100}] * 2 + [{"k1": 1e-3, "S": 1.5}] + [{"k1": 1e-3, "S": 100}] * 2 + \
        [{"k1": -1.0, "S": 100}]
    with pytest.raises(ValueError, match=r"point 2 \{'k1': 0.001, 'S': 1.5\}: 'S': an initial count"):
        _check_values(adapters.SSA_SIMULATE, mm, as_points(table), FIXED)
    with pytest.raises(ValueError, match=r"point 1 .*'k1'"):
        _check_values(adapters.SSA_SIMULATE, mm, as_points([{"k1": 1e-3, "S": 100}, {"k1": -1.0, "S": 100}]),
                      FIXED)


def test_table_fast_path_equals_converted_values():
    rows = [{"a": float(x), "b": int(y)} for x, y in itertools.product(np.geomspace(1e-3, 1, 7), range(5))]
    fast = as_points(rows)
    slow = as_points([{"a": np.float64(r["a"]), "b": np.int64(r["b"])} for r in rows])  # converted value by value
    assert fast == slow
    assert [fast.point(i) for i in range(fast.n)] == rows and fast.dicts() == rows
    assert fast.column("a").dtype == np.float64 and fast.column("b").dtype == np.int64
    assert fast.rows(3, 9).dicts() == rows[3:9]
    reordered = as_points([dict(reversed(list(r.items()))) for r in rows])  # keys in another order: same table
    assert [reordered.point(i) for i in range(reordered.n)] == [dict(reversed(list(r.items()))) for r in rows]


@pytest.mark.parametrize("rows, message", [
    ([{"a": 1.0}, {"a": float("inf")}], "values must be finite"),
    ([{"a": 1.0}, {"a": True}], "got a boolean"),
    ([{"a": 1.0}, {"b": 2.0}], "table point 1 has parameters"),
    ([{"a": 1.0}, {"a": 1.0, "b": 2.0}], "table point 1 has parameters"),
    ([{"a": 1.0}, {"a": "x"}], "expected numbers"),
    ([{"parameter": "k1", "factor": 1.0}, {"parameter": 2, "factor": 1.0}], "must hold parameter names"),
])
def test_table_errors_unchanged(rows, message):
    with pytest.raises(ValueError, match=message):
        as_points(rows)


def test_column_types():
    pts = as_points([{"fix.x": 0, "k": 1}, {"fix.x": None, "k": 2.5}])
    assert np.array_equal(pts.column("fix.x"), [0.0, np.nan], equal_nan=True)
    assert pts.column("k").dtype == np.float64 and pts.column("k").tolist() == [1.0, 2.5]
    oat = as_points(one_at_a_time(["k1"], [0.5, 2.0]))
    assert oat.column("parameter").dtype == object and oat.column("factor").tolist() == [0.5, 2.0]


def test_check_seeds_equals_check_seed():
    seeds = [0, 1, MAX_SEED, 12345]
    assert check_seeds(seeds).tolist() == [check_seed(s) for s in seeds]
    assert check_seeds(np.asarray(seeds, dtype=np.int64)).dtype == np.uint32
    assert check_seeds(derive_seeds(5, np.arange(10))).tolist() == derive_seeds(5, np.arange(10)).tolist()
    for bad in ([1, -1], [1, MAX_SEED + 1], [1, True], [1, 2.0], np.asarray([3, -2])):
        with pytest.raises((TypeError, ValueError), match="seed must be"):
            check_seeds(bad)


def test_point_tables_fast_columns_equal_value_by_value(mm):
    c = compile_network(mm)
    params = [{"k1": 1e-3 * (i + 1), "k3": 0.1 + i} for i in range(6)]
    initial = [{"S": 100 + i} for i in range(6)]
    fast = point_tables(mm, c, params, initial)
    # numpy scalars take the value-by-value path
    slow = point_tables(mm, c, [{k: np.float64(v) for k, v in p.items()} for p in params],
                        [{k: np.int64(v) for k, v in p.items()} for p in initial])
    for a, b in zip((fast.x0, fast.theta, fast.law_arg), (slow.x0, slow.theta, slow.law_arg)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    # rows that set different names: value by value, each name only in its rows
    mixed = _columns([{"k1": 1.0}, {"k3": 2.0}, {"k1": 3.0, "k3": 4.0}], float)
    assert {k: (r.tolist(), v.tolist()) for k, (r, v) in mixed.items()} == {"k1": ([0, 2], [1.0, 3.0]),
                                                                            "k3": ([1, 2], [2.0, 4.0])}


def test_chunk_carries_columns_and_seeds(mm):
    pts = as_points({"k1": [1e-3, 2e-3, 3e-3], "S": [100, 200]})
    seeds = derive_seeds(4, np.arange(pts.n))
    plan = _plan(adapters.SSA_SIMULATE, mm, FIXED, pts, seeds, 4, None)  # no store: every 2nd point
    assert [t.start for t in plan.tasks] == [0, 1] and [t.points.n for t in plan.tasks] == [3, 3]
    assert plan.tasks[1].index().tolist() == [1, 3, 5]
    assert plan.tasks[1].points.dicts() == [pts.point(1), pts.point(3), pts.point(5)]
    assert plan.tasks[1].seeds.tolist() == seeds[1::2].tolist()


def test_store_chunks_are_consecutive_points(mm, tmp_path):
    """A store's chunks are its regions: consecutive points."""
    from distsim.sweep.core import _config, _open_store

    pts = as_points({"k1": [1e-3, 2e-3, 3e-3], "S": [100, 200]})
    seeds = derive_seeds(4, np.arange(pts.n))
    config, coords = _config(adapters.SSA_SIMULATE, mm, pts, 4, FIXED, True, seeds)
    st = _open_store(tmp_path / "s.zarr", config, coords, pts, 4)
    plan = _plan(adapters.SSA_SIMULATE, mm, FIXED, pts, seeds, 4, st)
    assert [t.index().tolist() for t in plan.tasks] == [[0, 1, 2, 3], [4, 5]]
    assert plan.tasks[1].seeds.tolist() == seeds[4:].tolist()


def test_splitter_classifies_as_before(mm):
    split = adapters._ssa_splitter(mm)
    assert split({"k1": 2e-3, "S": 300, "init.E": 7}) == ({"k1": 2e-3}, {"S": 300, "E": 7})
    assert adapters._ssa_splitter(mm) is split  # kept for the network
    with pytest.raises(ValueError, match="unknown species 'Q'"):
        split({"init.Q": 1})
    with pytest.raises(ValueError, match="neither a parameter"):
        split({"zz": 1.0})
    with pytest.raises(ValueError, match="non-negative integer"):
        split({"S": -2})
