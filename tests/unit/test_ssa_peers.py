"""Peer SSA adapters (benchmarks/ssa_peers.py): every installed peer simulates the same process.

* Michaelis-Menten, 20 realizations to t = 10: conservation laws hold in every realization and the
  peers' mean final states agree pairwise within 5 pooled standard errors.
* Propensity convention: 2A -> B (A = 2), 3A -> B (A = 3) and A + B -> C (1 + 1), theta = 1, each fire
  once with probability 1 - exp(-t); a peer that used x(x-1) instead of C(x, 2) would give
  1 - exp(-2t). Also a fixed species is read but never changed.

Each peer is skipped when it is not installed (``pip install -r benchmarks/requirements-peers.txt``;
GillesPy2 also needs g++).
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from distsim.models.arith import Species as SpeciesNode
from distsim.models.reactions import Reaction, ReactionNetwork

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("ssa_peers", ROOT / "benchmarks" / "ssa_peers.py")
sp = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("ssa_peers", sp)
_spec.loader.exec_module(sp)

MODULE = {"gillespy2": "gillespy2", "roadrunner": "roadrunner", "rebop": "rebop"}
R_MM = 20
# GillesPy2 1.8.3 parses propensities with ast.NodeVisitor.visit_Num (deprecated since Python 3.8)
pytestmark = pytest.mark.filterwarnings("ignore:visit_Num is deprecated:DeprecationWarning")
R_CONV = 400


def need(peer: str) -> None:
    pytest.importorskip(MODULE[peer])
    v = sp.available()[peer]
    if v.startswith(sp.UNAVAILABLE):
        pytest.skip(f"{peer} {v}")


@lru_cache(maxsize=None)
def mm_result(peer: str) -> dict:
    net, _, _ = sp.michaelis_menten()
    return sp.run_peer(peer, net, t_end=10.0, points=11, realizations=R_MM, seed=3)


def convention_network() -> ReactionNetwork:
    return ReactionNetwork.create(
        ["A2", "B2", "A3", "B3", "C", "D", "E", "F", "G"], {"A2": 2, "A3": 3, "C": 1, "D": 1, "F": 1},
        [Reaction(((0, 2),), ((1, 1),), 1.0),          # 2A -> B: C(2,2) = 1
         Reaction(((2, 3),), ((3, 1),), "k"),          # 3A -> B: C(3,3) = 1 (GillesPy2: custom propensity)
         Reaction(((4, 1), (5, 1)), ((6, 1),), 1.0),   # C + D -> E
         Reaction(((7, 1),), ((8, 1), (7, 1)), 0.5)],  # F -> G + F with F fixed (and listed as product)
        {"k": 1.0}, fixed=["F"], name="convention")


@pytest.mark.parametrize("peer", sp.PEERS)
def test_mm_runs_and_conserves(peer):
    need(peer)
    r = mm_result(peer)
    x = r["final_states"]
    assert x.shape == (R_MM, 4) and r["realizations"] == R_MM
    E, S, ES, P = x.T
    assert np.all(x >= 0)
    assert np.all(E + ES == 120) and np.all(S + ES + P == 301)
    assert np.allclose(r["mean_final"], x.mean(axis=0))
    assert P.mean() > 10  # ~1,650 firings in 100 time units; by t = 10 some product exists
    assert r["cpu_seconds"] > 0 and r["realizations_per_cpu_second"] > 0 and r["setup_seconds"] >= 0
    assert sp.firings_per_second(r, 100.0) == pytest.approx(100.0 * r["realizations_per_cpu_second"])


@pytest.mark.parametrize("a,b", list(itertools.combinations(sp.PEERS, 2)))
def test_mm_peers_agree(a, b):
    need(a)
    need(b)
    ra, rb = mm_result(a), mm_result(b)
    se = np.sqrt(ra["std_final"] ** 2 / ra["realizations"] + rb["std_final"] ** 2 / rb["realizations"])
    diff = np.abs(ra["mean_final"] - rb["mean_final"])
    assert np.all(diff < 5 * se + 1e-9), (a, ra["mean_final"], b, rb["mean_final"], se)


@pytest.mark.parametrize("peer", sp.PEERS)
def test_homodimer_convention(peer):
    need(peer)
    net = convention_network()
    r = sp.run_peer(peer, net, t_end=0.5, points=2, realizations=R_CONV, seed=5, warmup=0)
    m, x = r["mean_final"], r["final_states"]
    p = 1 - math.exp(-0.5)  # right convention; x(x-1) for 2A would give 1 - exp(-1) = 0.63
    se = math.sqrt(p * (1 - p) / R_CONV)
    for i, what in ((1, "2A"), (3, "3A"), (6, "A+B")):
        assert abs(m[i] - p) < 5 * se, (peer, what, m[i])
    assert np.all(x[:, 7] == 1)  # fixed species never changes
    assert abs(m[8] - 0.25) < 5 * math.sqrt(0.25 / R_CONV)  # G ~ Poisson(0.5 * 1 * 0.5)


@pytest.mark.parametrize("peer", ("roadrunner", "rebop"))
def test_seeded_runs_reproduce(peer):
    need(peer)
    net, _, _ = sp.michaelis_menten()
    a = sp.run_peer(peer, net, t_end=5.0, points=6, realizations=5, seed=9, warmup=0)
    b = sp.run_peer(peer, net, t_end=5.0, points=6, realizations=5, seed=9, warmup=2)
    assert np.array_equal(a["final_states"], b["final_states"])


def test_rebop_variants_identical():
    need("rebop")
    net, _, _ = sp.michaelis_menten()
    out = [sp.run_peer("rebop", net, t_end=5.0, points=6, realizations=5, seed=2, variant=v)["final_states"]
           for v in sp.VARIANTS["rebop"]]
    for o in out[1:]:
        assert np.array_equal(out[0], o)


def test_bad_input():
    net, _, _ = sp.michaelis_menten()
    with pytest.raises(ValueError, match="unknown peer"):
        sp.run_peer("stochkit", net, t_end=1.0, points=2, realizations=1)
    law = ReactionNetwork.create(["A"], [5], [Reaction(((0, 1),), (), law=SpeciesNode(0))])
    for peer in sp.PEERS:
        with pytest.raises(ValueError, match="mass-action"):
            sp.run_peer(peer, law, t_end=1.0, points=2, realizations=1)


def test_sbml_kinetic_law_is_binomial():
    doc = sp.sbml_document(convention_network())
    assert doc.count("<divide/>") == 2  # 2A: /2, 3A: /6
    assert '<cn type="integer"> 6 </cn>' in doc and 'stoichiometry="3"' in doc
    assert set(sp.available()) == set(sp.PEERS)
