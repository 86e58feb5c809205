"""Batched SSA (many parameter points per launch or loop): every point's reductions equal, bit for
bit, those of a run of that point alone (the per-point loop that sweeps used), for every method,
with and without histograms, for rate parameters, law constants and initial counts; errors and
truncation warnings are those of the per-point loop; the default sweep path is the batched one."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest

import distsim
import distsim.ssa as ssa
from distsim.engine import LocalExecutor
from distsim.models.compile_reactions import compile_network, point_tables
from distsim.models.formats.reaction_text import parse_reactions
from distsim.rng import derive_seeds
from distsim.ssa.batch import simulate_batch
from distsim.ssa.errors import SimulationError
from distsim.sweep import adapters

ROOT = Path(__file__).resolve().parents[2]
MM = ROOT / "examples" / "ssa" / "michaelis_menten.rxn"
LAWS = ROOT / "tests" / "data" / "dsmts" / "00011" / "00011-sbml-l3v1.xml"  # kinetic laws with parameters
CPU = LocalExecutor("cpu")
REDUCED = ("mean", "variance", "firings")


def per_point(net, params, initial, seeds, **kw):
    return [ssa.simulate(net.with_parameters(**p).with_initial(**i), seed=s, client=CPU, **kw)
            for p, i, s in zip(params, initial, seeds)]


def assert_equal_points(ds, refs, quantiles=True):
    names = REDUCED + (("quantile_value", "bin_width") if quantiles else ())
    for p, ref in enumerate(refs):
        for v in names:
            assert np.array_equal(ds[v].values[p], ref[v].values), (p, v)
        assert int(ds.firings_total[p]) == ref.attrs["firings_total"]
        assert float(ds.mean_firings_per_realization[p]) == ref.attrs["mean_firings_per_realization"]
        assert int(ds.truncated_realizations[p]) == ref.attrs["truncated_realizations"]


def test_point_tables_equal_compiling_each_point():
    for net in (ssa.load(MM), ssa.load(LAWS)):
        c = compile_network(net)
        names = list(net.params)
        params = [{names[0]: 0.5 * net.params[names[0]]}, {}, {n: 2.0 * v for n, v in net.params.items()}]
        initial = [{}, {net.species[0]: 7}, {net.species[-1]: 0}]
        t = point_tables(net, c, params, initial)
        for p in range(3):
            cp = compile_network(net.with_parameters(**params[p]).with_initial(**initial[p]))
            for name in ("x0", "theta", "law_arg"):
                assert np.array_equal(getattr(t, name)[p], getattr(cp, name)), (p, name)
    with pytest.raises(KeyError, match="unknown parameter 'k9'"):
        point_tables(ssa.load(MM), compile_network(ssa.load(MM)), [{"k9": 1.0}], [{}])


@pytest.mark.parametrize("method", ["direct", "tree", "ar", "warp"])
@pytest.mark.parametrize("quantiles", [(0.05, 0.5, 0.95), None])
def test_batch_equals_per_point_runs(method, quantiles):
    net = ssa.load(MM)
    params = [{"k1": 1e-3}, {"k1": 3e-3, "k3": 0.05}, {}, {"k2": 0.4}, {"k3": 0.0}]
    initial = [{"S": 100}, {}, {"S": 250, "E": 30}, {}, {"E": 0}]
    seeds = [int(s) for s in derive_seeds(9, np.arange(5))]
    kw = dict(t_end=20.0, points=5, realizations=300, method=method, quantiles=quantiles)
    ds = simulate_batch(net, params, seeds, initial=initial, client=CPU, **kw)
    assert ds.sizes["point"] == 5 and ds.attrs["workload"] == "ssa.simulate_batch"
    assert_equal_points(ds, per_point(net, params, initial, seeds, **kw), quantiles is not None)


def test_batch_equals_per_point_runs_with_kinetic_laws_and_truncation():
    """Parameters folded into kinetic-law constants; realizations cut at max_events warn point by point."""
    net = ssa.load(LAWS)
    params = [{"Lambda": 2 * net.params["Lambda"]}, {"Mu": 0.5 * net.params["Mu"]}, {}]
    initial = [{}, {}, {net.species[0]: 3}]
    seeds = [11, 12, 13]
    kw = dict(t_end=30.0, points=7, realizations=200, max_events=40)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        ds = simulate_batch(net, params, seeds, initial=initial, client=CPU, **kw)
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        refs = per_point(net, params, initial, seeds, **kw)
    assert [str(w.message) for w in got] == [str(w.message) for w in want] and got
    assert_equal_points(ds, refs)
    assert int(ds.truncated_realizations.sum()) > 0


BAD = parse_reactions("0 -> X; law: k * (3 - X)\nX -> 0; law: d\nparam k = 1\nparam d = 0\ninit: X = 2",
                      name="bad")


@pytest.mark.parametrize("point,quantiles", [({"X": 5}, None), ({"d": 40.0}, None), ({"d": 40.0}, (0.5,))])
def test_errors_are_those_of_the_per_point_loop(point, quantiles):
    """The first failing point raises the per-point call's error (negative propensity, a negative count;
    found by the histogram pilot when there is one), after the points before it ran."""
    pts = [{}, point, {"X": 5, "d": 40.0}]
    split = [adapters._ssa_split(BAD, p) for p in pts]
    kw = dict(t_end=10.0, points=3, realizations=300, quantiles=quantiles)
    with pytest.raises(SimulationError) as want:
        per_point(BAD, [p for p, _ in split], [i for _, i in split], [1, 2, 3], **kw)
    with pytest.raises(SimulationError) as got:
        simulate_batch(BAD, [p for p, _ in split], [1, 2, 3], initial=[i for _, i in split], client=CPU, **kw)
    assert str(got.value) == str(want.value)


def test_sweep_default_path_is_batched_and_equals_the_loop():
    """A sweep's chunks run batched (one call per chunk) and give the per-point loop's numbers, for
    any chunking, with a resolved one-at-a-time design."""
    net = ssa.load(MM)
    grid = {"k1": [5e-4, 2e-3], "S": [120, 301], "k3": [0.05, 0.2]}
    fixed = dict(t_end=15.0, points=4, realizations=64)
    loop = dataclasses.replace(adapters.SSA_SIMULATE, run_chunk=None)
    a = distsim.sweep(loop, net, grid, seed=5, client=CPU, chunk_size=3, **fixed)
    b = distsim.sweep(ssa.simulate, net, grid, seed=5, client=CPU, **fixed)
    assert b.attrs["tasks"] == 1
    for v in a.data_vars:
        if v != "wall_time_s":
            assert np.array_equal(a[v].values, b[v].values), v
    sens = distsim.sweep.sensitivity(ssa.simulate, net, [0.5, 2.0], seed=2, client=CPU, chunk_size=4, **fixed)
    ref = distsim.sweep.sensitivity(loop, net, [0.5, 2.0], seed=2, client=CPU, chunk_size=1, **fixed)
    assert np.array_equal(sens["mean"].values, ref["mean"].values)


@pytest.mark.parametrize("point", [{"k1": -1.0}, {"k9": 1.0}, {"S": 2.5}, {"init.Q": 1}, {"k2": 0.3, "E": 4}])
def test_the_sweeps_quick_check_raises_what_applying_the_point_raises(point):
    """The sweep checks every distinct value before any work with a check that visits only the
    reactions a parameter reaches (a 9,261-point design on 1,029 reactions: seconds, not minutes)."""
    net = ssa.load(MM)
    errors = []
    for fn in (adapters._ssa_apply, adapters._ssa_check):
        try:
            fn(net, point)
            errors.append(None)
        except (ValueError, KeyError) as e:
            errors.append((type(e), str(e)))
    assert errors[0] == errors[1]
    assert (errors[0] is None) == (point == {"k2": 0.3, "E": 4})


def test_points_too_large_to_batch_run_one_by_one(monkeypatch):
    """A point whose realizations alone fill a device (more than BATCH_MAX_REALIZATIONS) runs as its
    own simulate() call, with the default chunking: the same numbers."""
    import distsim.ssa.batch as batch

    net = ssa.load(MM)
    grid = {"k1": [5e-4, 2e-3]}
    fixed = dict(t_end=10.0, points=3, realizations=64)
    a = distsim.sweep(ssa.simulate, net, grid, seed=8, client=CPU, **fixed)
    monkeypatch.setattr(batch, "BATCH_MAX_REALIZATIONS", 10)
    b = distsim.sweep(ssa.simulate, net, grid, seed=8, client=CPU, **fixed)
    assert a.attrs["tasks"] == 1 and b.attrs["tasks"] == 2  # default_chunk_size: about 4 tasks per worker
    for v in a.data_vars:
        if v != "wall_time_s":
            assert np.array_equal(a[v].values, b[v].values), v


def test_networks_with_events_run_point_by_point_in_sweeps():
    """SBML events and rules are not batched: simulate_batch refuses them by name, and a sweep of
    such a network runs its points one by one, each equal to its own simulate call."""
    from distsim.errors import ModelError

    net = ssa.load(ROOT / "tests" / "data" / "dsmts" / "00028" / "00028-sbml-l3v1.xml")  # time-triggered event
    assert net.events
    with pytest.raises(ModelError, match="events"):
        simulate_batch(net, [{}], [1], t_end=30, points=4, realizations=8, client=CPU)
    name = next(iter(net.params))
    values = [net.params[name], 2 * net.params[name]]
    kw = dict(t_end=30, points=4, realizations=200, quantiles=None)
    ds = distsim.sweep(ssa.simulate, net, {name: values}, seed=5, client=CPU, **kw)
    seeds = [int(s) for s in derive_seeds(5, np.arange(2))]
    refs = per_point(net, [{name: v} for v in values], [{}, {}], seeds, **kw)
    for p, ref in enumerate(refs):
        for v in REDUCED:
            np.testing.assert_array_equal(ds[v].isel({name: p}).values, ref[v].values)  # a grid: dim `name`
