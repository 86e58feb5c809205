"""SBML reading option ``guard=True`` (issue 30): laws that are no propensities as written -- a constant
flux that fires with nothing left to consume, a net rate whose sign changes in a way the reader cannot
split -- are split by sign (``max(0, v)`` forward, ``max(0, -v)`` backward ``<id>_reverse``) and multiplied
by the indicator of their reactants. Exact references: hand-computed propensities, and the transient
distribution of two one-species CTMCs written down from the stated semantics (not from the reader),
by the matrix exponential of their generators; per-state z limits at alpha = 1e-3 over all states of a
test (Bonferroni)."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import expm
from scipy.stats import norm

from distsim import ssa
from distsim.errors import ModelError
from distsim.models.arith import Param, Species, parse_arith
from distsim.models.formats.sbml import SBMLWarning, read_sbml, read_sbml_string
from distsim.models.mass_action import SIGN_POS, nonnegative, parameter_signs, sign_bits
from distsim.ssa.errors import SimulationError

from test_sbml_semantics import model, par, rx, sp  # (tests/unit is on sys.path: rootdir-less test modules)

ROOT = Path(__file__).resolve().parents[2]
BIOMODELS = ROOT / "tests" / "data" / "biomodels"
NAMES = ["S", "T"]
ALPHA = 1e-3

# A -> 0 at the constant flux k (the law does not read A) and 0 -> A at b: a queue once guarded
LEAK = model(sp("A", 3), par("k", 2.0) + par("b", 1.5), rx("leak", {"A": 1}, {}, "k") + rx("feed", {}, {"A": 1}, "b"))
# 0 -> S with the net rate k (c - S)(d - S): > 0 for S <= 4, < 0 for S = 5 (then S runs backwards); the
# product of two differences is not split by the reader (a falling factorial in disguise, as a law)
NET = model(sp("S", 0), par("k", 0.05) + par("c", 4.5) + par("d", 20),
            rx("R", {}, {"S": 1}, "k * (c - S) * (d - S)"))


def _read(text: str, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SBMLWarning)
        return read_sbml_string(text, **kw)


def _parse(text: str):
    return parse_arith(text, lambda n: Species(NAMES.index(n)) if n in NAMES else Param(n))


# ------------------------------------------------------------------------------------------------
# the sign analysis


@pytest.mark.parametrize("law,expected", [
    ("Vm * S / (K + S)", True),
    ("k * (c - S)", False),  # either sign
    ("-k", True),  # k < 0 for the whole run
    ("-kp", False),
    ("kx * T", False),  # kx: either sign (set by events to either sign)
    ("kp * (1 - F)", True),  # a difference of constants: its value's sign
    ("kp * (F - 1)", False),
    ("exp(-S) * sqrt(T) + abs(S - T)", True),
    ("kp * S ^ 2.5", True),  # a non-whole power: >= 0 (or NaN)
    ("(S - T) ^ 2", True),
    ("(S - T) ^ 3", False),
    ("max(0, S - T)", True),
    ("min(S, T - 4)", False),
    ("log(S)", False),
])
def test_nonnegative(law, expected):
    values = {"Vm": 2.0, "K": 0.5, "c": 3.0, "k": -0.5, "kp": 0.5, "F": 0.2}
    signs = parameter_signs(values, {"kx": [_parse("-1"), _parse("1")]}, {})
    assert nonnegative(_parse(law), signs, values) is expected


def test_parameter_signs_follow_rules_and_events():
    """A parameter set by rules or events has the signs of everything that sets it (and of its initial value
    until its first event), to a fixed point over rules that read each other."""
    signs = parameter_signs({"a": 1.0}, {"p": [_parse("a * S")], "q": [_parse("p + 1")], "e": [_parse("0")],
                                         "n": [_parse("q - 3")]}, {"e": 1.0})
    assert signs["p"] == signs["q"] == signs["e"] == SIGN_POS
    assert sign_bits(_parse("n"), signs) == 3


# ------------------------------------------------------------------------------------------------
# what the reader makes of the laws


def test_constant_flux_is_guarded_by_its_reactant():
    net = _read(LEAK, guard=True)
    assert [r.name for r in net.reactions] == ["leak", "feed"]
    assert dict(net.metadata)["guard"] == "split: none; guarded: leak"
    x = np.array([[0], [1], [2], [7]])
    np.testing.assert_array_equal(net.propensities(x), [[0.0, 1.5], [2.0, 1.5], [2.0, 1.5], [2.0, 1.5]])


def test_sign_changing_law_is_split_and_its_backward_channel_guarded():
    net = _read(NET, guard=True)
    assert [r.name for r in net.reactions] == ["R", "R_reverse"]
    assert [(r.reactants, r.products) for r in net.reactions] == [((), ((0, 1),)), (((0, 1),), ())]
    assert dict(net.metadata)["guard"] == "split: R; guarded: R_reverse"
    s = np.arange(0, 25)
    v = 0.05 * (4.5 - s) * (20 - s)
    np.testing.assert_allclose(net.propensities(s[:, None]), np.stack([np.maximum(v, 0), np.maximum(-v, 0)], 1),
                               rtol=1e-15, atol=0)


def test_concentration_law_consuming_two_is_guarded_below_two():
    """k*A^2 on 2A -> B fires at k x^2 for x >= 2 and not at x = 1 (nor 0)."""
    body = model(sp("A", 5) + sp("B", 0), par("k", 0.3), rx("dim", {"A": 2}, {"B": 1}, "k * A^2"))
    net = _read(body, guard=True)
    assert dict(net.metadata)["guard"] == "split: none; guarded: dim"
    x = np.arange(0, 6)
    np.testing.assert_allclose(net.propensities(np.stack([x, 0 * x], 1))[:, 0], 0.3 * x ** 2 * (x >= 2),
                               rtol=1e-15, atol=0)


def test_laws_that_are_propensities_are_untouched():
    """Mass action, Michaelis-Menten consuming S, a catalyst and a boundary species: nothing to guard."""
    body = model(sp("A", 5) + sp("E", 2) + sp("P", 0) + sp("X", 4).replace('boundaryCondition="false"',
                                                                             'boundaryCondition="true"'),
                 par("k", 0.3) + par("Vm", 2) + par("K", 3),
                 rx("ma", {"A": 1, "E": 1}, {"E": 1, "P": 1}, "k * A * E")
                 + rx("mm", {"A": 1}, {"P": 1}, "Vm * E * A / (K + A)")
                 + rx("cat", {"E": 1}, {"E": 1, "P": 1}, "Vm")  # E is not consumed
                 + rx("src", {"X": 1}, {"A": 1}, "k"))  # X is a boundary species
    plain, guarded = _read(body), _read(body, guard=True)
    assert guarded.reactions == plain.reactions
    assert dict(guarded.metadata)["guard"] == "split: none; guarded: none"


def _flip_event(value: float) -> str:
    """An event setting parameter k to ``value`` at t >= 1."""
    m = "http://www.w3.org/1998/Math/MathML"
    return (f'<listOfEvents><event id="flip" useValuesFromTriggerTime="true"><trigger initialValue="true" '
            f'persistent="true"><math xmlns="{m}"><apply><geq/><csymbol encoding="text" '
            f'definitionURL="http://www.sbml.org/sbml/symbols/time">t</csymbol><cn>1</cn></apply></math></trigger>'
            f'<listOfEventAssignments><eventAssignment variable="k"><math xmlns="{m}"><cn>{value}</cn></math>'
            f"</eventAssignment></listOfEventAssignments></event></listOfEvents>")


@pytest.mark.parametrize("value,split", [(-1.0, True), (3.0, False)])
def test_a_parameter_that_events_set_is_judged_by_every_value(value, split):
    """-k on 0 -> A with k = -0.5 at first (BIOMD0000000540's -k_mal): split when an event can make k
    positive (the law negative), not when every value of k is <= 0."""
    body = model(sp("A", 2), par("k", -0.5, constant=False), rx("R", {}, {"A": 1}, "-k"),
                 _flip_event(-value))
    net = _read(body, guard=True)
    assert [r.name for r in net.reactions] == (["R", "R_reverse"] if split else ["R"])
    assert dict(net.metadata)["guard"] == ("split: R; guarded: R_reverse" if split else "split: none; guarded: none")


def test_mass_action_with_a_negative_rate_runs_backwards():
    """k*A on A -> B with k = -0.5 fixed: a mass-action reaction of negative rate, refused as written;
    guarded it is B -> A at 0.5 x_A while B >= 1 (the forward channel max(0, k x_A) is 0)."""
    body = model(sp("A", 2) + sp("B", 1), par("k", -0.5), rx("R", {"A": 1}, {"B": 1}, "k * A"))
    with pytest.raises(ModelError, match="rate constant must be finite and >= 0"):
        _read(body)
    net = _read(body, guard=True)
    assert [r.name for r in net.reactions] == ["R", "R_reverse"]
    assert dict(net.metadata)["guard"] == "split: R; guarded: R_reverse"
    x = np.array([[0, 0], [0, 3], [2, 0], [2, 1], [5, 4]])
    a, b = x[:, 0].astype(float), x[:, 1]
    np.testing.assert_array_equal(net.propensities(x), np.stack([0 * a, 0.5 * a * (b >= 1)], 1))


# ------------------------------------------------------------------------------------------------
# runs against the exact CTMC of the stated semantics


def _z_check(final: np.ndarray, p: np.ndarray, R: int) -> None:
    """Counts per state against Binomial(R, p_s): states with R p_s < 10 pooled into one bin."""
    counts = np.bincount(final, minlength=len(p))
    assert counts.size == len(p), "a realization left the state space"
    big = R * p >= 10
    observed = np.append(counts[big], counts[~big].sum())
    expected = np.append(p[big], p[~big].sum())
    z = (observed - R * expected) / np.sqrt(R * expected * (1 - expected) + 1e-300)
    limit = float(norm.isf(ALPHA / (2 * z.size)))
    assert np.abs(z).max() < limit, (z, limit)


def test_constant_flux_queue_is_the_exact_ctmc():
    """Guarded, A is a queue: up at b, down at k while A >= 1 (truncated at 80: the lost mass is < 1e-12).
    As written the run stops, and the message suggests guard=True."""
    with pytest.raises(SimulationError, match=r"made a species count negative.*\n.*guard=True \(--guard\)"):
        ssa.simulate(_read(LEAK), t_end=5.0, points=2, realizations=64, seed=3, quantiles=None, backend="cpu")
    N, b, k, t_end, R = 80, 1.5, 2.0, 2.0, 4000
    Q = np.zeros((N + 1, N + 1))
    for s in range(N + 1):
        if s < N:
            Q[s, s + 1] = b
        if s > 0:
            Q[s, s - 1] = k
        Q[s, s] = -Q[s].sum() - (b if s == N else 0.0)  # leaving the box: lost mass
    p = np.eye(N + 1)[3] @ expm(Q * t_end)
    assert 1 - p.sum() < 1e-12
    ds = ssa.simulate(_read(LEAK, guard=True), t_end=t_end, points=2, realizations=R, seed=11, quantiles=None,
                      backend="cpu", keep_final=True)
    assert ds.attrs["model_guard"] == "split: none; guarded: leak"
    _z_check(ds["final_state"].sel(species="A").values, p, R)


def test_sign_changing_law_is_the_exact_ctmc():
    """Guarded, S goes up at k (c - S)(d - S) where that is > 0 and down at its negative where it is < 0
    (never below 0): states 0..5 from S = 0. As written the run stops on the negative propensity."""
    with pytest.raises(SimulationError, match=r"\(negative\).*\n.*guard=True"):
        ssa.simulate(_read(NET), t_end=200.0, points=2, realizations=16, seed=3, quantiles=None, backend="cpu")
    k, c, d, t_end, R = 0.05, 4.5, 20.0, 3.0, 4000
    Q = np.zeros((6, 6))
    for s in range(6):
        v = k * (c - s) * (d - s)
        if v > 0:
            Q[s, s + 1] = v
        elif v < 0 and s > 0:
            Q[s, s - 1] = -v
        Q[s, s] = -Q[s].sum()
    p = np.eye(6)[0] @ expm(Q * t_end)
    ds = ssa.simulate(_read(NET, guard=True), t_end=t_end, points=2, realizations=R, seed=12, quantiles=None,
                      backend="cpu", keep_final=True)
    assert ds.attrs["model_guard"] == "split: R; guarded: R_reverse"
    assert int(ds["firings"].sel(reaction="R_reverse")) > 0
    _z_check(ds["final_state"].sel(species="S").values, p, R)


# ------------------------------------------------------------------------------------------------
# the default, the entry points, bad input


def test_guard_leaves_a_model_that_needs_none_bit_identical():
    """BIOMD0000000012: no law needs guarding: the same reactions, and the same bits for the same seed."""
    path = BIOMODELS / "BIOMD0000000012.xml"
    default, net = read_sbml(path), read_sbml(path, guard=True)
    assert dict(net.metadata)["guard"] == "split: none; guarded: none"
    assert "guard" not in dict(default.metadata)
    assert net.reactions == default.reactions
    kw = dict(t_end=5.0, points=3, realizations=16, seed=2, quantiles=None, backend="cpu", keep_final=True)
    a, b = ssa.simulate(default, **kw), ssa.simulate(net, **kw)
    for v in ("mean", "variance", "firings", "final_state", "events"):
        np.testing.assert_array_equal(a[v].values, b[v].values)


def test_load_and_cli_pass_the_option(tmp_path):
    import xarray as xr

    from distsim.cli import main

    f = tmp_path / "leak.xml"
    f.write_text(LEAK)
    with pytest.warns(SBMLWarning, match="guard=True.*guarded by their reactants: leak"):
        assert dict(ssa.load(f, guard=True).metadata)["guard"] == "split: none; guarded: leak"
    with pytest.warns(SBMLWarning):
        assert dict(ssa.load(LEAK, guard=True).metadata)["guard"] == "split: none; guarded: leak"
    out = tmp_path / "r.nc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SBMLWarning)
        assert main(["ssa", "simulate", str(f), "--guard", "--t-end", "1", "--points", "2", "-n", "8",
                     "--output", str(out)]) == 0
    with xr.open_dataset(out) as ds:
        assert ds.attrs["model_guard"] == "split: none; guarded: leak"


def test_bad_option_is_refused():
    with pytest.raises(ValueError, match="guard must be True or False"):
        read_sbml_string(LEAK, guard="yes")
    with pytest.raises(ValueError, match="guard= applies to SBML models only"):
        ssa.load("A -> B, k=1\nA = 3\n", format="rxn", guard=True)


def test_coverage_retries_with_the_option(tmp_path):
    """benchmarks/biomodels_coverage.py: a 'count negative' stop is retried with guard=True."""
    spec = importlib.util.spec_from_file_location("bc", ROOT / "benchmarks" / "biomodels_coverage.py")
    bc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bc)  # type: ignore[union-attr]
    f = tmp_path / "leak.xml"
    f.write_text(LEAK.replace('value="2.0"', 'value="20"'))  # fast enough to empty A by t = 1
    r = bc.run_one(str(f))
    assert r["outcome"] == bc.GUARD and r["guard"] == "split: none; guarded: leak", r
    assert "made a species count negative" in r["unguarded"]
    assert any(bc.GUARD in line for line in bc.report([r], str(tmp_path), 1.0, None))
