"""SBML semantics beyond the DSMTS files: mass-action recognition, reversible splitting, lenient
defaults, events and assignment rules as data, and the limits on math."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from distsim.models.arith import BinOp, Num, Param, Species, Time, compile_stack, parse_arith
from distsim.errors import ModelError
from distsim.models.events import (CMP_CODES, LOGIC_CODES, Compare, Logic, Truth, compile_condition,
                                   condition_text, condition_value)
from distsim.models.formats.sbml import MAX_MATH_DEPTH, SBMLWarning, read_sbml_string
from distsim.models.mass_action import mass_action_shape, split_difference

MATHML = "http://www.w3.org/1998/Math/MathML"


def doc(body: str, *, level: int = 3, version: int = 1) -> str:
    ns = f"http://www.sbml.org/sbml/level{level}/version{version}" + ("/core" if level == 3 else "")
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<sbml xmlns="{ns}" level="{level}" version="{version}">\n'
            f'<model id="m">\n{body}\n</model>\n</sbml>\n')


def model(species: str, params: str, reactions: str, extra: str = "", size: float = 1.0) -> str:
    return doc(f'<listOfCompartments><compartment id="V" spatialDimensions="3" size="{size}" constant="true"/>'
               f"</listOfCompartments><listOfSpecies>{species}</listOfSpecies>"
               f"<listOfParameters>{params}</listOfParameters>{extra}<listOfReactions>{reactions}</listOfReactions>")


def sp(sid: str, amount: float, hosu: bool = True) -> str:
    return (f'<species id="{sid}" compartment="V" initialAmount="{amount}" hasOnlySubstanceUnits="{str(hosu).lower()}"'
            ' boundaryCondition="false" constant="false"/>')


def par(pid: str, value: float, constant: bool = True) -> str:
    return f'<parameter id="{pid}" value="{value}" constant="{str(constant).lower()}"/>'


def rx(rid: str, reac: dict, prod: dict, formula: str, reversible: bool = False) -> str:
    import libsbml

    ast = libsbml.parseL3Formula(formula)
    assert ast is not None, formula
    math = libsbml.writeMathMLToString(ast).split("?>", 1)[-1]

    def refs(tag: str, side: dict) -> str:
        items = "".join(f'<speciesReference species="{s}" stoichiometry="{n}" constant="true"/>'
                        for s, n in side.items())
        return f"<{tag}>{items}</{tag}>" if side else ""

    return (f'<reaction id="{rid}" reversible="{str(reversible).lower()}" fast="false">'
            f'{refs("listOfReactants", reac)}{refs("listOfProducts", prod)}<kineticLaw>{math}</kineticLaw></reaction>')


# ------------------------------------------------------------------------------------------------
# mass-action recognition


K, K2 = 0.3, 2.0
CASES = [  # law, reactants, compartment size, hasOnlySubstanceUnits, recognised rate, propensity(A, B, V) by hand
    ("k * A * B", {"A": 1, "B": 1}, 1, True, "k", lambda A, B, V: K * A * B),
    ("B * k * A", {"A": 1, "B": 1}, 1, True, "k", lambda A, B, V: K * A * B),
    ("k * A * (A - 1) / 2", {"A": 2}, 1, True, "k", lambda A, B, V: K * A * (A - 1) / 2),
    ("0.5 * k * (A - 1) * A", {"A": 2}, 1, True, "k", lambda A, B, V: K * A * (A - 1) / 2),
    ("k * A * (A - 1) * (A - 2) / 6", {"A": 3}, 1, True, "k", lambda A, B, V: K * A * (A - 1) * (A - 2) / 6),
    ("k", {}, 1, True, "k", lambda A, B, V: K + 0 * A),
    ("V * k * A * B", {"A": 1, "B": 1}, 1, False, "k", lambda A, B, V: K * A * B),  # concentrations, size 1
    ("V * k * A * B", {"A": 1, "B": 1}, 2.5, False, None, lambda A, B, V: K * A * B / V),  # general law
    ("k * A^2", {"A": 2}, 1, True, None, lambda A, B, V: K * A * A),  # k x^2 != theta C(x, 2)
    ("k * A * A", {"A": 2}, 1, True, None, lambda A, B, V: K * A * A),
    ("k * A * (A - 1)", {"A": 2}, 1, True, None, lambda A, B, V: K * A * (A - 1)),  # = 2k C(A, 2)
    ("k * A", {"A": 1, "B": 1}, 1, True, None, lambda A, B, V: K * A),  # B is a reactant the law ignores
    ("k * k2 * A", {"A": 1}, 1, True, None, lambda A, B, V: K * K2 * A),  # two parameters
    ("k * A / (1 + A)", {"A": 1}, 1, True, None, lambda A, B, V: K * A / (1 + A)),
    ("0.25 * A", {"A": 1}, 1, True, 0.25, lambda A, B, V: 0.25 * A),  # numbers only: numeric rate
]


@pytest.mark.parametrize("law,reac,size,hosu,rate,prop", CASES)
def test_mass_action_recognition(law, reac, size, hosu, rate, prop):
    body = model(sp("A", 7, hosu) + sp("B", 4, hosu), par("k", K) + par("k2", K2), rx("R", reac, {}, law), size=size)
    net = read_sbml_string(body)
    r = net.reactions[0]
    assert (r.rate if r.mass_action else None) == rate
    # either way the propensity is the law's value (the hand-written forms take counts)
    x = np.random.default_rng(3).integers(0, 50, size=(20, 2)).astype(float)
    np.testing.assert_allclose(net.propensities(x)[:, 0], prop(x[:, 0], x[:, 1], size), rtol=1e-12)


def test_shape_and_split_helpers():
    p = parse_arith("V * (kf * A * B - kr * C)", lambda n: Species("ABC".index(n)) if n in "ABC" else Param(n))
    f, b = split_difference(p)
    assert mass_action_shape(f, {"V": 1.0}, {"kf", "kr"}).orders == {0: 1, 1: 1}
    assert mass_action_shape(b, {"V": 1.0}, {"kf", "kr"}).param == "kr"
    conc = BinOp("*", Param("k"), BinOp("-", BinOp("/", Species(0), Param("V")), Num(1.0)))
    x_over_v = BinOp("/", Species(0), Param("V"))
    assert mass_action_shape(BinOp("*", x_over_v, conc), {"V": 1.0}, {"k"}).orders == {0: 2}
    # (x/2)(x/2 - 1) = x (x - 2) / 4 is not a falling factorial
    assert mass_action_shape(BinOp("*", x_over_v, conc), {"V": 2.0}, {"k"}) is None
    assert split_difference(parse_arith("k * A", lambda n: Param(n))) is None


# ------------------------------------------------------------------------------------------------
# reversible reactions


def test_reversible_split_with_stoichiometry_two():
    body = model(sp("A", 10) + sp("A2", 0), par("kf", 0.2) + par("kr", 0.05),
                 rx("D", {"A": 2}, {"A2": 1}, "kf * A * (A - 1) / 2 - kr * A2", reversible=True))
    net = read_sbml_string(body)
    assert [(r.name, r.rate, r.reactants, r.products) for r in net.reactions] == [
        ("D_f", "kf", ((0, 2),), ((1, 1),)), ("D_r", "kr", ((1, 1),), ((0, 2),))]
    fwd = read_sbml_string(body, reversible="forward")
    assert fwd.n_reactions == 1 and not fwd.reactions[0].mass_action


def test_reversible_general_law_is_forward_with_one_warning():
    body = model(sp("A", 10) + sp("B", 0), par("v", 2) + par("K", 5),
                 rx("R1", {"A": 1}, {"B": 1}, "v * A / (K + A)", reversible=True)
                 + rx("R2", {"B": 1}, {"A": 1}, "v * B / (K + B)", reversible=True))
    with pytest.warns(SBMLWarning, match="'R1', 'R2'") as rec:
        net = read_sbml_string(body)
    assert len([w for w in rec if issubclass(w.category, SBMLWarning)]) == 1
    assert net.n_reactions == 2
    with pytest.raises(ModelError, match="reaction 'R1' is reversible"):
        read_sbml_string(body, reversible="error")
    with pytest.raises(ValueError, match="unknown reversible policy"):
        read_sbml_string(body, reversible="both")


def test_lenient_missing_attributes_are_warnings():
    body = model(sp("A", 3), par("k", 1), rx("R", {"A": 1}, {}, "k * A"))
    body = body.replace(' fast="false"', "").replace(' reversible="false"', "")
    body = body.replace('<parameter id="k" value="1" constant="true"/>', '<parameter id="k" value="1"/>')
    body = body.replace('size="1.0" constant="true"', 'size="1.0"')
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        net = read_sbml_string(body)
    msgs = " | ".join(str(w.message) for w in rec)
    for attr in ("'fast'", "'reversible'", "'constant'"):
        assert attr in msgs
    assert net.reactions[0].rate == "k"  # missing reversible = true, and k*A is one-directional mass action
    # attributes whose default would change the stochastic reading stay errors
    bad = body.replace(' hasOnlySubstanceUnits="true"', "")
    with warnings.catch_warnings(), pytest.raises(ModelError, match="hasOnlySubstanceUnits"):
        warnings.simplefilter("ignore", SBMLWarning)
        read_sbml_string(bad)


# ------------------------------------------------------------------------------------------------
# events and rules


EVENTS = """<listOfEvents>
  <event id="boost" useValuesFromTriggerTime="false">
    <trigger initialValue="true" persistent="false"><math xmlns="{m}"><apply><and/>
      <apply><lt/><ci>A</ci><cn>5</cn></apply><apply><geq/><csymbol encoding="text"
        definitionURL="http://www.sbml.org/sbml/symbols/time">t</csymbol><cn>1</cn></apply></apply></math></trigger>
    <priority><math xmlns="{m}"><cn>2</cn></math></priority>
    <listOfEventAssignments>
      <eventAssignment variable="C"><math xmlns="{m}"><apply><times/><cn>2</cn><ci>A</ci></apply></math>
      </eventAssignment>
      <eventAssignment variable="k"><math xmlns="{m}"><cn>0.5</cn></math></eventAssignment>
    </listOfEventAssignments>
  </event>
</listOfEvents>""".format(m=MATHML)
RULES = """<listOfRules>
  <assignmentRule variable="total"><math xmlns="{m}"><apply><plus/><ci>A</ci><ci>double</ci></apply></math>
  </assignmentRule>
  <assignmentRule variable="double"><math xmlns="{m}"><apply><times/><cn>2</cn><ci>A</ci></apply></math>
  </assignmentRule>
</listOfRules>""".format(m=MATHML)


def test_events_and_rules_data():
    species = sp("A", 8) + sp("C", 3, hosu=False) + sp("total", 0)
    params = par("k", 0.1, constant=False) + par("double", 0, constant=False)
    net = read_sbml_string(model(species, params, rx("R", {"A": 1}, {}, "k * A"), RULES + EVENTS, size=2.0))
    (ev,) = net.events
    assert ev.id == "boost" and ev.initial_value and not ev.persistent and not ev.use_values_from_trigger_time
    assert ev.priority == Num(2.0)
    assert ev.trigger == Logic("and", (Compare("<", Species(0), Num(5.0)), Compare(">=", Time(), Num(1.0))))
    c, k = ev.assignments
    assert (c.target, c.species, k.target, k.species) == ("C", 1, "k", -1)
    assert c.expr == BinOp("*", BinOp("*", Num(2.0), Species(0)), Param("V"))  # concentration x size = count
    # rules sorted by dependency: 'double' first; the species 'total' starts at its rule's value
    assert [r.target for r in net.rules] == ["double", "total"]
    assert net.initial == (8, 3, 8 + 16)
    assert net.params["double"] == 16.0
    # the rate constant assigned by the event is not folded into mass action (it changes over time)
    assert not net.reactions[0].mass_action
    x = np.array([[4.0, 0, 0], [6.0, 0, 0]])
    assert condition_value(ev.trigger, x, net.params, t=2.0).tolist() == [True, False]
    assert condition_value(ev.trigger, x, net.params, t=0.5).tolist() == [False, False]
    assert condition_text(ev.trigger, net.species) == "(A < 5.0) and (time >= 1.0)"
    prog = compile_condition(ev.trigger, net.params)
    assert [op for op, _ in prog][-1] == LOGIC_CODES["and"] and (CMP_CODES["<"], 0.0) in prog
    assert compile_stack(Time(), {})[0] == [(8, 0.0)]
    assert compile_condition(Truth(False), {}) == [(compile_condition(Truth(True), {})[0][0], 0.0)]
    with pytest.raises(ModelError, match="events 'boost' and assignment rules 'double'"):
        net.require_plain("SSA simulation")
    from distsim.models.formats.reaction_text import to_reaction_text

    with pytest.raises(ModelError, match="the reaction text format does not support"):
        to_reaction_text(net)


@pytest.mark.parametrize("extra,phrase", [
    (RULES.replace("assignmentRule", "algebraicRule").replace(' variable="total"', "")
     .replace(' variable="double"', ""),
     "algebraic rules are not supported"),
    (RULES.replace('<apply><times/><cn>2</cn><ci>A</ci></apply>', "<ci>total</ci>"), "cycle"),
    # (events and rate rules for compartments are read: tests/unit/test_sbml_reach.py)
])
def test_unsupported_events_and_rules(extra, phrase):
    species = sp("A", 8) + sp("C", 3, hosu=False) + sp("total", 0)
    params = par("k", 0.1, constant=False) + par("double", 0, constant=False)
    with pytest.raises(ModelError, match=phrase):
        read_sbml_string(model(species, params, rx("R", {"A": 1}, {}, "k * A"), extra))


def test_time_in_a_kinetic_law_makes_a_hybrid_network():
    body = model(sp("A", 3), par("k", 1), rx("R", {"A": 1}, {}, "k * A * time"))
    net = read_sbml_string(body)  # simulated by the SSA's hybrid loop (tests/unit/test_ssa_time_dependent.py)
    assert net.hybrid and net.reactions[0].law is not None
    delay = model(sp("A", 3), par("k", 1), rx("R", {"A": 1}, {}, "k * delay(A, 1)"))
    with pytest.raises(ModelError, match=r"reaction 'R': the math uses delay\(\)"):
        read_sbml_string(delay)


def test_math_depth_limit_names_the_reaction():
    deep = "A" + " + A" * (MAX_MATH_DEPTH + 5)
    body = model(sp("A", 3), par("k", 1), rx("Rdeep", {"A": 1}, {}, deep))
    with pytest.raises(ModelError, match=f"reaction 'Rdeep': the expression nests more than {MAX_MATH_DEPTH}"):
        read_sbml_string(body)
