"""BioModels reach (issue 30): net-rate kinetic laws split by sign, real-valued assignment-rule
species, and triggers linear in time. Exact references: independent two-state molecules (binomial
counts), Poisson birth processes; z limits at alpha = 1e-3 over all checks of a test (Bonferroni)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from distsim import ssa
from distsim.errors import ModelError, SBMLWarning
from distsim.models.arith import Param, Species, Time, evaluate, parse_arith, to_text
from distsim.models.events import Compare
from distsim.models.formats.sbml import read_sbml_string
from distsim.models.mass_action import signed_parts, vanishes_without
from distsim.ssa.errors import SimulationError

from test_sbml_semantics import model, par, rx, sp  # (tests/unit is on sys.path: rootdir-less test modules)

BIOMODELS = Path(__file__).resolve().parents[1] / "data" / "biomodels"
NAMES = ["A", "B", "C", "D", "L"]


def _parse(text: str):
    return parse_arith(text, lambda n: Species(NAMES.index(n)) if n in NAMES else Param(n))


def _text(node) -> str | None:
    return None if node is None else to_text(node, NAMES)


def _z_limit(checks: int, alpha: float = 1e-3) -> float:
    return float(norm.isf(alpha / (2 * checks)))


def _boundary(sid: str, amount: float) -> str:
    return (f'<species id="{sid}" compartment="V" initialAmount="{amount}" hasOnlySubstanceUnits="true"'
            ' boundaryCondition="true" constant="false"/>')


# ------------------------------------------------------------------------------------------------
# signed parts of a law


@pytest.mark.parametrize("law,pos,neg", [
    ("V * (kf * A / (K + A) - kr * B)", "V * (kf * A / (K + A))", "V * (kr * B)"),
    ("-Vm * (A * B - C / Keq) / (1 + A / K)", "Vm * (C / Keq) / (1 + A / K)", "Vm * (A * B) / (1 + A / K)"),
    ("kon * A * L / nva - koff * B", "kon * A * L / nva", "koff * B"),
    ("k * (B - A)", "k * B", "k * A"),
    ("k * A * (A - 1) / 2", "k * A * (A - 1) / 2", None),  # a falling factorial is one factor
    ("k * (A - C) / (K - B)", "k * A / (K - B)", "k * C / (K - B)"),  # a denominator of both signs stays whole
    ("kneg * A", None, "-kneg * A"),  # a parameter known to be negative
    ("(A - B) * (C - D)", "A * C + B * D", "A * D + B * C"),
])
def test_signed_parts(law, pos, neg):
    parts = signed_parts(_parse(law), {"kneg"})
    assert parts is not None
    assert (_text(parts[0]), _text(parts[1])) == (_text(_parse(pos)) if pos else None,
                                                  _text(_parse(neg)) if neg else None)


def test_signed_parts_values_and_limits():
    rng = np.random.default_rng(5)
    law = _parse("c * (kf * A * L / (K + A) - kr * B * (1 - C / D)) / (1 + B)")
    p, q = signed_parts(law)
    x = rng.uniform(1, 9, size=(50, len(NAMES)))
    env = {"c": 2.0, "kf": 0.7, "K": 3.0, "kr": 0.4}
    assert np.allclose(evaluate(p, x, env) - evaluate(q, x, env), evaluate(law, x, env), rtol=1e-13)
    big = _parse(" * ".join(f"(A - {k} * B)" for k in range(1, 13)))  # 2^12 terms: refused, not built
    assert signed_parts(big) is None
    assert vanishes_without(_parse("k * B / (K + A) + k2 * B ^ 2"), 1)
    assert not vanishes_without(_parse("k * B + k2"), 1) and not vanishes_without(_parse("k / B"), 1)


# ------------------------------------------------------------------------------------------------
# the split in the reader

TWO_STATE = model(sp("A", 40) + sp("B", 0) + _boundary("L", 6) + sp("C", 30) + sp("D", 0),
                  par("kon", 0.5) + par("nva", 4) + par("koff", 1.25) + par("Dc", 0.8),
                  rx("bind", {"A": 1}, {"B": 1}, "kon * A * L / nva - koff * B", reversible=True)
                  + rx("diffusion", {"C": 1}, {"D": 1}, "Dc * (C - D)", reversible=False))


def test_net_rate_laws_split_into_two_channels():
    """BIOMD0000000332's form (a modifier and a parameter divisor) on a reversible reaction, and
    BIOMD0000000058's (a net-rate law on an irreversible reaction): each becomes two channels."""
    with pytest.warns(SBMLWarning, match=r"split by sign .*: bind, diffusion \(irreversible\)"):
        net = read_sbml_string(TWO_STATE)
    names = [r.name for r in net.reactions]
    assert names == ["bind_f", "bind_r", "diffusion_f", "diffusion_r"]
    r = {x.name: x for x in net.reactions}
    assert r["bind_f"].reactants == ((0, 1),) and r["bind_r"].reactants == ((1, 1),) and r["bind_r"].products == ((0, 1),)
    assert r["bind_r"].mass_action and r["bind_r"].rate == "koff" and not r["bind_f"].mass_action
    assert r["diffusion_f"].rate == "Dc" and r["diffusion_r"].rate == "Dc"
    assert dict(net.metadata)["net_rate_split"] == "bind, diffusion (irreversible)"
    assert net.species == ("A", "B", "L", "C", "D")
    x = np.array([[7, 3, 6, 6, 11], [0, 0, 6, 0, 0]], dtype=float)
    a = net.propensities(x)
    assert np.allclose(a[:, 0] - a[:, 1], 0.5 * x[:, 0] * 6 / 4 - 1.25 * x[:, 1])
    assert np.allclose(a[:, 2] - a[:, 3], 0.8 * (x[:, 3] - x[:, 4])) and (a >= 0).all()
    whole = read_sbml_string(TWO_STATE, reversible="forward")  # never split: the law as one propensity
    assert [r.name for r in whole.reactions] == ["bind", "diffusion"] and "net_rate_split" not in dict(whole.metadata)
    with pytest.warns(SBMLWarning):
        assert read_sbml_string(TWO_STATE, reversible="error").n_reactions == 4  # a split is a two-way reading


def test_net_rate_split_mean_and_variance_are_exact():
    """Each molecule flips independently (A -> B at kon L / nva = 0.75, back at koff = 1.25; C <-> D at
    0.8 both ways), so B(t) ~ Binomial(40, p(t)) with p(t) = a / (a + b) (1 - exp(-(a + b) t)): the
    CME whose drift is the law's. SSA mean and variance of B and D against it."""
    with pytest.warns(SBMLWarning):
        net = read_sbml_string(TWO_STATE)
    t_end, points, R = 2.0, 5, 2000
    ds = ssa.simulate(net, t_end=t_end, points=points, realizations=R, seed=11, quantiles=None, backend="cpu")
    t = ds["time"].values[1:]
    checks = []
    for s, n, a, b in (("B", 40, 0.75, 1.25), ("D", 30, 0.8, 0.8)):
        p = a / (a + b) * (1 - np.exp(-(a + b) * t))
        mean = ds["mean"].sel(species=s).values[1:]
        var = ds["variance"].sel(species=s).values[1:]
        sd = np.sqrt(n * p * (1 - p))
        checks.append((mean - n * p) / (sd / np.sqrt(R)))
        mu4 = n * p * (1 - p) * (1 + 3 * (n - 2) * p * (1 - p))  # binomial fourth central moment
        checks.append((var - sd ** 2) / np.sqrt((mu4 - sd ** 4 * (R - 3) / (R - 1)) / R))
    z = np.abs(np.concatenate(checks))
    assert z.max() < _z_limit(z.size), (z.max(), _z_limit(z.size))
    assert ds.attrs["model_net_rate_split"] == "bind, diffusion (irreversible)"
    assert int(ds["mean"].sel(species="L").values[-1]) == 6


def test_irreversible_net_rate_left_whole_where_the_backward_channel_is_undefined():
    """k - g * C on an irreversible 0 -> A: a backward channel A -> 0 at g * C would fire without
    A, so the law stays whole (and the run stops, naming it, when it becomes negative)."""
    body = model(sp("A", 0) + sp("C", 5), par("k", 1) + par("g", 2),
                 rx("R", {}, {"A": 1}, "k - g * C"))
    net = read_sbml_string(body)
    assert [r.name for r in net.reactions] == ["R"]
    assert dict(net.metadata)["net_rate_not_split"] == "R (its negative terms do not vanish when 'A' is absent)"
    with pytest.raises(SimulationError, match=r"reaction 0 'R' \(law: k - g \* C\) is -9 \(negative\)"):
        ssa.simulate(net, t_end=1.0, points=2, realizations=4, seed=1, quantiles=None, backend="cpu")


def test_split_channel_going_negative_still_stops_the_run():
    """A split piece whose parameter an event makes negative: the run stops naming the channel."""
    events = ('<listOfEvents><event id="flip" useValuesFromTriggerTime="true"><trigger initialValue="false" '
              'persistent="true"><math xmlns="http://www.w3.org/1998/Math/MathML"><apply><geq/><csymbol '
              'encoding="text" definitionURL="http://www.sbml.org/sbml/symbols/time">t</csymbol><cn>0.5</cn>'
              '</apply></math></trigger><listOfEventAssignments><eventAssignment variable="kr"><math '
              'xmlns="http://www.w3.org/1998/Math/MathML"><cn>-1</cn></math></eventAssignment>'
              '</listOfEventAssignments></event></listOfEvents>')
    body = model(sp("A", 20) + sp("B", 20) + _boundary("L", 2), par("kf", 1) + par("kr", 1, constant=False),
                 rx("R", {"A": 1}, {"B": 1}, "kf * A * L / (1 + A) - kr * B", reversible=True), extra=events)
    with pytest.warns(SBMLWarning, match="split by sign"):
        net = read_sbml_string(body)
    assert [r.name for r in net.reactions] == ["R_f", "R_r"]
    with pytest.raises(SimulationError, match=r"'R_r' \(law: kr \* B\) is -\d+ \(negative\)"):
        ssa.simulate(net, t_end=1.0, points=2, realizations=4, seed=1, quantiles=None, backend="cpu")


# ------------------------------------------------------------------------------------------------
# assignment-rule species with fractional values

RULE_MODEL = model(sp("M", 12) + sp("S", 0) + sp("P", 0) + sp("T", 0),
                   par("k", 2) + par("d", 0.5) + par("c", 0.3),
                   rx("decay", {"M": 1}, {}, "d * M") + rx("birth", {}, {"P": 1}, "k * S"),
                   extra=f'<listOfRules><assignmentRule variable="S"><math xmlns="http://www.w3.org/1998/Math/MathML">'
                         f'<apply><times/><ci>c</ci><ci>M</ci></apply></math></assignmentRule>'
                         f'<assignmentRule variable="T"><math xmlns="http://www.w3.org/1998/Math/MathML">'
                         f'<apply><plus/><ci>M</ci><ci>P</ci></apply></math></assignmentRule></listOfRules>')


def test_fractional_rule_species_is_real_valued():
    """S = c * M (0.3 x 12 = 3.6 at t = 0) is read by the birth law as a real; T = M + P (whole for
    whole counts) stays a species. M decays at d, so E[P(t)] = k c M0 (1 - exp(-d t)) / d exactly."""
    with pytest.warns(SBMLWarning, match=r"real-valued parameters .*: S$"):
        net = read_sbml_string(RULE_MODEL)
    assert net.species == ("M", "P", "T") and net.params["S"] == pytest.approx(3.6)
    assert [(r.target, r.species) for r in net.rules] == [("S", -1), ("T", 2)] and net.initial == (12, 0, 12)
    assert dict(net.metadata)["real_valued_species"] == "S"
    R, t_end, points = 4000, 2.0, 5
    ds = ssa.simulate(net, t_end=t_end, points=points, realizations=R, seed=7, quantiles=None, backend="cpu")
    t = ds["time"].values[1:]
    exact = 2 * 0.3 * 12 * (1 - np.exp(-0.5 * t)) / 0.5
    mean, var = ds["mean"].sel(species="P").values[1:], ds["variance"].sel(species="P").values[1:]
    z = np.abs((mean - exact) / np.sqrt(var / R))  # the sample variance's SE (P is not Poisson: M is random)
    assert z.max() < _z_limit(z.size), (z, _z_limit(z.size))
    total = ds["mean"].sel(species="T").values - ds["mean"].sel(species="M").values
    assert np.allclose(total, ds["mean"].sel(species="P").values)  # T = M + P in every realization
    assert ds.attrs["model_real_valued_species"] == "S"


def test_boundary_rule_species_leaves_the_reactions():
    """A boundary species set by a fractional rule and listed as a reactant (reactions never change
    it) is real-valued: it leaves the reaction's sides; the law reads its value."""
    body = model(sp("A", 5) + _boundary("E", 0), par("k", 1.5) + par("c", 0.25),
                 rx("R", {"E": 1}, {"A": 1}, "k * E"),
                 extra=f'<listOfRules><assignmentRule variable="E"><math xmlns="http://www.w3.org/1998/Math/MathML">'
                       f'<apply><times/><ci>c</ci><ci>A</ci></apply></math></assignmentRule></listOfRules>')
    with pytest.warns(SBMLWarning, match="real-valued"):
        net = read_sbml_string(body)
    assert net.species == ("A",) and net.reactions[0].reactants == () and net.reactions[0].products == ((0, 1),)
    assert net.propensities(np.array([6.0]))[0] == pytest.approx(1.5 * 0.25 * 5)  # E = 1.25 from the start


# ------------------------------------------------------------------------------------------------
# triggers linear in time

def _trigger_model(trigger: str) -> str:
    import libsbml

    ast = libsbml.parseL3Formula(trigger)
    assert ast is not None, trigger
    math = libsbml.writeMathMLToString(ast).split("?>", 1)[-1]
    events = (f'<listOfEvents><event id="stop" useValuesFromTriggerTime="true"><trigger initialValue="false" '
              f'persistent="true">{math}</trigger><listOfEventAssignments><eventAssignment variable="k"><math '
              f'xmlns="http://www.w3.org/1998/Math/MathML"><cn>0</cn></math></eventAssignment>'
              f'</listOfEventAssignments></event></listOfEvents>')
    return model(sp("A", 0), par("k", 30, constant=False) + par("T", 0.75), rx("birth", {}, {"A": 1}, "k"),
                 extra=events)


@pytest.mark.parametrize("trigger,op,threshold", [
    ("T - time <= 0", ">=", 0.75),  # BIOMD0000000096's form
    ("time - T >= 0", ">=", 0.75),
    ("2 * time - 3 * T > 0", ">", 1.125),
    ("-(time / 4) + 1 < T", ">", 1.0),
    ("T <= time", "<=", 0.75),  # (time alone already: kept as written)
])
def test_trigger_linear_in_time_becomes_a_time_comparison(trigger, op, threshold):
    net = read_sbml_string(_trigger_model(trigger))
    c = net.events[0].trigger
    assert isinstance(c, Compare) and Time() in (c.left, c.right)
    side = c.right if c.left == Time() else c.left
    assert c.op == op and float(evaluate(side, np.zeros((1, 1)), net.params)[0]) == pytest.approx(threshold, rel=1e-15)


@pytest.mark.parametrize("trigger", ["time * time > 4", "A * time > 3", "exp(time) > 2", "k * time > 1"])
def test_trigger_with_time_otherwise_is_refused_at_load(trigger):
    with pytest.raises(ModelError, match=r"event 'stop': the trigger compares .*linear in time") as e:
        read_sbml_string(_trigger_model(trigger))
    assert e.value.line is not None


def test_rewritten_trigger_fires_at_the_exact_instant():
    """Births at k = 30 until the event 'T - time <= 0' sets k = 0 at T = 0.75: A(1) ~ Poisson(22.5),
    and the run is bit for bit the one with the trigger written 'time >= T'."""
    kw = dict(t_end=1.0, points=3, realizations=2000, seed=5, quantiles=None, backend="cpu")
    ds = ssa.simulate(read_sbml_string(_trigger_model("T - time <= 0")), **kw)
    same = ssa.simulate(read_sbml_string(_trigger_model("time >= T")), **kw)
    assert np.array_equal(ds["mean"].values, same["mean"].values)
    assert np.array_equal(ds["variance"].values, same["variance"].values)
    lam, R = np.array([15.0, 22.5]), 2000
    mean, var = ds["mean"].values[1:, 0], ds["variance"].values[1:, 0]
    z = np.concatenate([(mean - lam) / np.sqrt(lam / R), (var - lam) / np.sqrt((lam + 2 * lam ** 2) / R)])
    assert np.abs(z).max() < _z_limit(z.size), z


# ------------------------------------------------------------------------------------------------
# curated BioModels of each class (tests/data/biomodels/PROVENANCE.md): load and a short run

@pytest.mark.parametrize("model_id,system_size,key,expect,t_end", [
    ("BIOMD0000000057", 1e3, "net_rate_split", "v1, v2, v5", 1.0),
    ("BIOMD0000000060", 1e3, "net_rate_split", "Closed_state_1, Open_state_2", 0.01),  # fast channel gating
    ("BIOMD0000000115", 1e3, "net_rate_split", "reaction_0000002 (irreversible), reaction_0000004 (irreversible)",
     1.0),
    ("BIOMD0000000056", 333.0, "real_valued_species", "BCK2, CLN3, MCM1, SBF", 1.0),
    ("BIOMD0000000144", 1e3, "real_valued_species", "Wee1Pc", 1.0),
    ("BIOMD0000000096", 20.3, None, "time >= Day_in_hours", 1.0),
    ("BIOMD0000000097", 66.7, None, "time >= Day_in_hours", 1.0),
])
def test_curated_biomodels_of_the_classes_load_and_run(model_id, system_size, key, expect, t_end):
    """Each stopped before (negative propensity, a non-whole rule count, a trigger with time inside
    an expression); system_size as in the coverage run (the largest initial amount near 1000)."""
    from distsim.models.events import condition_text

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SBMLWarning)
        net = ssa.load(BIOMODELS / f"{model_id}.xml", system_size=system_size, rounding="nearest")
    if key is None:
        assert condition_text(net.events[0].trigger, net.species) == expect
    else:
        assert dict(net.metadata)[key] == expect
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # (reaching max_events would warn)
        ds = ssa.simulate(net, t_end=t_end, points=3, realizations=4, seed=1, quantiles=None, backend="cpu",
                          max_events=200_000)
    assert ds["mean"].shape == (3, net.n_species) and np.isfinite(ds["mean"].values).all()


def test_gram_substance_unit_asks_for_system_size():
    """A species in gram (BIOMD0000000244, 353) is refused with the system_size= hint, and reads with it."""
    body = model(sp("A", 2.5), par("k", 1), rx("R", {"A": 1}, {}, "k * A"))
    body = body.replace('<species id="A"', '<species id="A" substanceUnits="gram"')
    with pytest.raises(ModelError, match=r"species 'A': substance unit 'gram' .*pass system_size="):
        read_sbml_string(body)
    assert read_sbml_string(body, system_size=4.0).initial == (10,)


def test_a_factor_of_constants_has_one_sign_and_is_not_split():
    """BIOMD0000000321's clearance ``ka*A*(1 - F)``, F from an assignment rule of constants (0.25): the law
    is positive, so it is one channel A -> (nothing) -- a split into ``ka*A - ka*A*F`` made a channel
    producing A from nothing (variance of A too large). A is then a pure death process: at t,
    Binomial(A0, exp(-ka t)) exactly (mean and variance z-tested at alpha = 1e-3, Bonferroni)."""
    import libsbml

    rule = libsbml.writeMathMLToString(libsbml.parseL3Formula("Fa / (Fa + Fb)")).split("?>", 1)[-1]
    doc_ = model(sp("A", 400), par("ka", 0.7) + par("Fa", 1.0) + par("Fb", 3.0) + par("F", 0.0, constant=False),
                 rx("clear", {"A": 1}, {}, "ka * A * (1 - F)", reversible=False),
                 extra=f'<listOfRules><assignmentRule variable="F">{rule}</assignmentRule></listOfRules>')
    net = read_sbml_string(doc_)
    assert [r.name for r in net.reactions] == ["clear"]
    assert "net_rate_split" not in dict(net.metadata)
    R, t = 4000, 1.0
    ds = ssa.simulate(net, t_end=t, points=2, realizations=R, seed=3, backend="cpu", progress=False)
    p = np.exp(-0.7 * 0.75 * t)
    mu, var = 400 * p, 400 * p * (1 - p)
    m4 = var * (1 + 3 * (400 - 2) * p * (1 - p))
    m, v = float(ds["mean"].sel(species="A").isel(time=-1)), float(ds["variance"].sel(species="A").isel(time=-1))
    lim = norm.isf(1e-3 / 4)
    assert abs(m - mu) / np.sqrt(var / R) <= lim
    assert abs(v - var) / np.sqrt((m4 - var ** 2) / R) <= lim
