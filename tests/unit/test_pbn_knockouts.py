"""Mutations and knockouts: PBN.with_fixed, load(fixed=), fix.NODE sweep points, distsim.sweep.knockouts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import distsim
import distsim.pbn as pbn
from distsim.models.boolean import evaluate
from distsim.models.formats import load
from distsim.models.pbn import random_pbn
from distsim.pbn.reference import all_states, stationary_distribution
from distsim.rng import derive_seeds
from distsim.sweep import as_points

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "pbn"
SHMULEVICH = EXAMPLES / "bnmpy_shmulevich2002_examplePBN_3n.txt"
SIZEK = EXAMPLES / "bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet"
RUN = {"backend": "cpu", "progress": False}


def test_with_fixed():
    net = load(SHMULEVICH).with_perturbation(0.01)
    m = net.with_fixed({"x1": 0, "x3": True})
    assert m.fixed == frozenset({0, 2}) and len(m.predictors[0]) == 1 and len(m.predictors[1]) == len(net.predictors[1])
    X = all_states(3)
    assert not evaluate(m.predictors[0][0].expr, X).any() and evaluate(m.predictors[2][0].expr, X).all()
    assert m.digest() != net.digest() and net.with_fixed({}).digest() == net.digest()
    with pytest.raises(ValueError, match="cannot fix 'TP53'"):
        net.with_fixed({"TP53": 0})
    with pytest.raises(ValueError, match="fixed to 0 or 1, not 2"):
        net.with_fixed({"x1": 2})
    dep = random_pbn(5, seed=3, multi_fraction=1.0, contexts=4)
    d = dep.with_fixed({"x0": 1})
    assert d.dependent and all(c[0] == 0 for c, _ in d.contexts) and abs(sum(p for _, p in d.contexts) - 1) < 1e-12
    loaded = pbn.load(SHMULEVICH, perturbation=0.01, fixed={"x1": 0, "x3": 1})
    assert loaded.digest() == m.digest()
    # the exact reference: x1 knocked out is 0 in the stationary distribution
    pi = stationary_distribution(m.with_perturbation(0.01), "sync")
    assert pi[all_states(3)[:, 0]].sum() < 1e-15


def test_with_fixed_states():
    """A fixed node in a random network: the stationary mass sits where the node has its value."""
    net = random_pbn(6, seed=11, perturbation=0.02)
    for value in (0, 1):
        pi = stationary_distribution(net.with_fixed({"x2": value}), "async")
        assert abs(pi[all_states(6)[:, 2] == bool(value)].sum() - 1.0) < 1e-12


# ---- sweeps --------------------------------------------------------------------------------------

def test_knockout_screen_equals_runs_by_hand():
    net = load(SHMULEVICH).with_perturbation(0.05)
    kw = {"target": "x1=1", "precision": 0.05, "seed": 7, **RUN}
    ds = distsim.sweep.knockouts(pbn.steady_state, net, **kw)
    assert list(ds.knockout.values) == ["wild type", "x1", "x2", "x3"]
    assert np.isnan(ds["fix.x1"].values[[0, 2, 3]]).all() and ds["fix.x1"].values[1] == 0
    seeds = derive_seeds(7, np.arange(4))
    assert np.array_equal(ds.seed.values, seeds)
    for i, label in enumerate(ds.knockout.values):
        model = net if i == 0 else net.with_fixed({str(label): 0})
        one = pbn.steady_state(model, "x1=1", precision=0.05, seed=int(seeds[i]), **RUN)
        assert float(ds["probability"].values[i, 0]) == float(one["probability"].values[0])
    assert float(ds["probability"].values[1, 0]) == 0.0  # x1 knocked out is never 1
    # the same screen as a plain sweep over a table of fix.NODE points
    rows = [{f"fix.{n}": (0 if n == m else None) for n in net.nodes} for m in (None,) + net.nodes]
    plain = distsim.sweep(pbn.steady_state, net, rows, **kw)
    assert np.array_equal(plain["probability"].values, ds["probability"].values)


def test_knockout_screen_of_sizek_nodes():
    """A few nodes of the 87-node Sizek network at low precision (the full screen: see
    docs, ``distsim.sweep.knockouts(pbn.steady_state, SIZEK, target=..., model_options=...)``)."""
    nodes = ["v_Casp3", "v_Myc", "v_Casp8"]
    ds = distsim.sweep.knockouts(pbn.steady_state, SIZEK, nodes, target="v_Casp3=1", precision=0.05, seed=1,
                                 model_options={"perturbation": 0.01}, **RUN)
    assert list(ds.knockout.values) == ["wild type"] + nodes and ds.sizes["point"] == 4
    p = ds["probability"].values[:, 0]
    assert p[1] == 0.0 and np.all((p >= 0) & (p <= 1)) and int(ds["converged"].values.min()) == 1
    over = distsim.sweep.knockouts(pbn.steady_state, SIZEK, ["v_Casp3"], value=1, wild_type=False, target="v_Casp3=1",
                                   precision=0.05, seed=1, model_options={"perturbation": 0.01}, **RUN)
    assert float(over["probability"].values[0, 0]) == 1.0


def test_fix_points_checked():
    net = load(SHMULEVICH).with_perturbation(0.05)
    kw = {"target": "x1=1", "precision": 0.05, **RUN}
    with pytest.raises(ValueError, match="unknown node 'TP53'"):
        distsim.sweep(pbn.steady_state, net, [{"fix.TP53": 0}], **kw)
    with pytest.raises(ValueError, match="fixed to 0 or 1"):
        distsim.sweep(pbn.steady_state, net, [{"fix.x1": 2}], **kw)
    with pytest.raises(ValueError, match="not nodes of"):
        distsim.sweep.knockouts(pbn.steady_state, net, ["x1", "TP53"], **kw)
    with pytest.raises(ValueError, match="value must be 0"):
        distsim.sweep.knockouts(pbn.steady_state, net, value=2, **kw)
    pts = as_points([{"fix.x1": 0, "fix.x2": "-"}, {"fix.x1": None, "fix.x2": 1}])
    assert pts.point(0) == {"fix.x1": 0, "fix.x2": None}
    assert np.isnan(pts.column("fix.x1")[1]) and pts.column("fix.x2")[1] == 1
    with pytest.raises(ValueError, match="expected numbers"):
        as_points([{"k1": None}])
    with pytest.raises(ValueError, match="unset"):
        as_points([{"fix.x1": None}])
