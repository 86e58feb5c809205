"""Reaction-network readers for SSA: the text format, SBML (DSMTS cases) and format selection."""

from __future__ import annotations

import math
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from distsim.errors import ModelError
from distsim.models.formats.reaction_formats import detect_reaction_format, load_reactions
from distsim.models.formats.reaction_text import law_text, parse_reactions, read_reactions, to_reaction_text
from distsim.models.formats.sbml import read_sbml
from distsim.models.reactions import ReactionNetwork

ROOT = Path(__file__).resolve().parents[2]
RXN = ROOT / "tests" / "data" / "reactions"
DSMTS = ROOT / "tests" / "data" / "dsmts"
EXAMPLES = ROOT / "examples" / "ssa"

MM = """\
# comments start with #; blank lines ignored
# Michaelis-Menten (Niemi & Wheeler; seed 003): propensities theta * h(x)
E + S -> ES      ; k1 = 0.001        # mass action; defines parameter k1
ES -> E + S      ; k2 = 0.2
ES -> E + P      ; k3 = 0.1
init: E = 120, S = 301                # initial counts (unlisted species start at 0)
"""


def states(net: ReactionNetwork, n: int = 64, high: int = 40, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, high, size=(n, net.n_species))


def assert_same_network(a: ReactionNetwork, b: ReactionNetwork) -> None:
    assert a.species == b.species
    assert a.initial == b.initial
    assert a.params == b.params
    assert a.fixed == b.fixed
    assert [r.name for r in a.reactions] == [r.name for r in b.reactions]
    assert [(r.reactants, r.products) for r in a.reactions] == [(r.reactants, r.products) for r in b.reactions]
    np.testing.assert_array_equal(a.stoichiometry(), b.stoichiometry())
    x = states(a)
    np.testing.assert_allclose(a.propensities(x), b.propensities(x), rtol=1e-12, atol=0)


# ------------------------------------------------------------------------------------------------
# text format


def test_michaelis_menten_example():
    net = parse_reactions(MM, name="mm")
    assert net.species == ("E", "S", "ES", "P")
    assert net.n_reactions == 3
    assert net.params == {"k1": 0.001, "k2": 0.2, "k3": 0.1}
    assert net.initial == (120, 301, 0, 0)
    assert net.name == "mm" and net.source == "<string>"
    assert all(r.mass_action for r in net.reactions)
    assert net.reactions[0].reactants == ((0, 1), (1, 1)) and net.reactions[0].products == ((2, 1),)
    x = np.array([120, 301, 5, 7])
    np.testing.assert_allclose(net.propensities(x), [0.001 * 120 * 301, 0.2 * 5, 0.1 * 5])
    # the same file in examples/ reads the same
    assert_same_network(net, read_reactions(EXAMPLES / "michaelis_menten.rxn"))


@pytest.mark.parametrize("line", ["2A -> B ; k = 0.5", "2 A -> B ; k = 0.5", "A + A -> B ; k = 0.5",
                                  "A+A->B;k=0.5", "r: 2A -> 1 B ; 0.5"])
def test_dimerisation_mass_action(line):
    net = parse_reactions(line)
    assert net.reactions[0].reactants == ((0, 2),)
    x = np.arange(0, 12, dtype=float)[:, None] * np.ones((1, net.n_species))
    np.testing.assert_allclose(net.propensities(x)[:, 0], 0.5 * x[:, 0] * (x[:, 0] - 1) / 2)


def test_empty_sides_and_coefficients():
    net = parse_reactions("0 -> A ; 1\nA -> ; 2\n∅ -> 3B + A ; 3\n 2A+3B -> 0 ; 4\n")
    assert [(r.reactants, r.products) for r in net.reactions] == [
        ((), ((0, 1),)), (((0, 1),), ()), ((), ((1, 3), (0, 1))), (((0, 2), (1, 3)), ())]
    x = np.array([[5.0, 4.0]])
    np.testing.assert_allclose(net.propensities(x)[0], [1, 2 * 5, 3, 4 * math.comb(5, 2) * math.comb(4, 3)])


def test_reversible_lines():
    net = parse_reactions("bind: A + B <-> C ; kon = 0.01, koff = 2\nA <-> D ; 1.5, law: kd * D ^ 2\nkd = 0.3\n"
                          "init: A = 10, B = 20, C = 3, D = 4")
    assert [r.name for r in net.reactions] == ["bind_f", "bind_r", "", ""]
    f, r, f2, r2 = net.reactions
    assert f.reactants == r.products == ((0, 1), (1, 1))
    assert f.products == r.reactants == ((2, 1),)
    assert f.rate == "kon" and r.rate == "koff" and f2.rate == 1.5 and r2.law is not None
    np.testing.assert_allclose(net.propensities(np.array(net.initial)), [0.01 * 10 * 20, 2 * 3, 1.5 * 10, 0.3 * 16])
    # a comma inside a law's parentheses does not split the two rates
    net = parse_reactions("A <-> B ; law: max(A, B) * 2, k = 3\ninit: A = 4, B = 7")
    np.testing.assert_allclose(net.propensities(np.array([4, 7])), [14, 21])


def test_general_laws_evaluate():
    text = """
    species: E                                         # enzyme, read by the law only
    mm: S -> P ; law: vmax * E * S / (Km + S)
    hill: 0 -> S ; law: a / (1 + (P / K) ^ n) + 0.5 * exp(-P) + log(1 + S) + sqrt(S) + max(P, 2)
    param vmax = 0.8
    Km = 30
    a = 10
    K = 5
    n = 2
    init: E = 4, S = 100
    """
    net = parse_reactions(text)
    assert net.species == ("E", "S", "P")
    assert not net.reactions[0].mass_action and not net.reactions[1].mass_action
    for E, S, P in [(4, 100, 0), (1, 0, 3), (7, 13, 20)]:
        a = net.propensities(np.array([E, S, P]))
        np.testing.assert_allclose(a, [0.8 * E * S / (30 + S),
                                       10 / (1 + (P / 5) ** 2) + 0.5 * math.exp(-P) + math.log(1 + S)
                                       + math.sqrt(S) + max(P, 2)])


def test_fixed_species_and_parameter_forms():
    net = read_reactions(RXN / "good_features.rxn")
    assert net.species == ("A", "B", "C", "D")
    assert net.initial == (10, 3, 10, 0)
    assert net.fixed == frozenset({3})
    assert net.params == {"k0": 2.5, "k": 0.5, "kon": 0.01, "koff": 0.1, "vmax": 10.0, "K": 4.0, "kdeg": 0.3}
    assert [r.name for r in net.reactions] == ["make", "dimer", "bind_f", "bind_r", "", "hill", ""]
    assert net.reactions[4].reactants == ((1, 2),)
    V = net.stoichiometry()
    assert not V[:, 3].any()  # D is fixed: no reaction changes it
    A, B, C, D = 6.0, 5.0, 2.0, 3.0
    np.testing.assert_allclose(net.propensities(np.array([A, B, C, D])), [
        2.5, 0.5 * A * (A - 1) / 2, 0.01 * A * C, 0.1 * D, 0.25 * B * (B - 1) / 2,
        10 * A ** 2 / (16 + A ** 2), min(C, 3) * 0.3])


def test_parameter_may_be_defined_after_use_and_redefined_with_same_value():
    net = parse_reactions("A -> B ; k\nB -> A ; k = 2\nparam k = 2.0\n")
    assert net.params == {"k": 2.0}


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.rxn")) + [RXN / "good_features.rxn"],
                         ids=lambda p: p.name)
def test_round_trip(path):
    net = read_reactions(path)
    text = to_reaction_text(net)
    again = parse_reactions(text, name=net.name)
    assert_same_network(net, again)
    assert to_reaction_text(again) == text


def test_round_trip_of_sbml_laws():
    net = read_sbml(DSMTS / "00011" / "00011-sbml-l3v1.xml")
    again = parse_reactions(to_reaction_text(net))
    assert_same_network(net, again)


def test_law_text_keeps_negative_operands():
    net = parse_reactions("A -> ; law: (-A) ^ 2 + 2 ^ -A - -(A - 1) / -2\ninit: A = 3")
    law = net.reactions[0].law
    txt = law_text(law, net.species)
    again = parse_reactions(f"A -> ; law: {txt}\ninit: A = 3")
    assert again.reactions[0].law == law
    x = np.array([[3.0]])
    np.testing.assert_allclose(net.propensities(x), [[9 + 2 ** -3 + (2 / -2)]])


BAD = [  # file, line, column (None: not checked), phrase
    ("missing_arrow.rxn", 3, 1, "missing '->'"),
    ("bad_coefficient.rxn", 3, 1, "bad coefficient '1.5'"),
    ("zero_coefficient.rxn", 2, 1, "bad coefficient '0'"),
    ("bad_term.rxn", 2, 5, "bad term '*'"),
    ("unknown_parameter.rxn", 3, 10, "unknown parameter 'kk'"),
    ("missing_rate.rxn", 3, None, "missing rate"),
    ("empty_rate.rxn", 1, 9, "missing rate"),
    ("bad_number.rxn", 2, 11, "bad number '1.2.3'"),
    ("law_syntax.rxn", 2, 23, "expression ends"),
    ("law_unknown_name.rxn", 3, 19, "unknown name 'C'"),
    ("duplicate_parameter.rxn", 3, 10, "redefined with a different value"),
    ("negative_init.rxn", 2, 18, "negative initial count"),
    ("noninteger_init.rxn", 2, 11, "whole number"),
    ("duplicate_init.rxn", 3, 7, "given twice"),
    ("unknown_init_species.rxn", 2, 14, "unknown species 'Z'"),
    ("unknown_fixed.rxn", 2, 8, "unknown species 'Q'"),
    ("reversible_one_rate.rxn", 1, None, "needs two rates"),
    ("two_rates_irreversible.rxn", 1, 13, "more than one rate"),
    ("negative_rate.rxn", 2, 10, ">= 0"),
    ("negative_param_rate.rxn", 2, 10, ">= 0"),
    ("species_parameter_clash.rxn", 2, 7, "both a species and a parameter"),
    ("duplicate_reaction_name.rxn", 2, 1, "duplicate reaction name 'r1'"),
    ("unreadable_line.rxn", 2, 1, "cannot read this line"),
]


@pytest.mark.parametrize("name,line,column,phrase", BAD, ids=[b[0] for b in BAD])
def test_bad_text_files(name, line, column, phrase):
    path = RXN / name
    with pytest.raises(ModelError) as info:
        read_reactions(path)
    err = info.value
    assert err.file == str(path)
    assert err.line == line
    if column is not None:
        assert err.column == column
    assert phrase in err.message
    assert str(err).startswith(f"{path}:{line}")
    assert name in str(err)


def test_empty_model():
    with pytest.raises(ModelError, match="empty model") as info:
        read_reactions(RXN / "empty_model.rxn")
    assert info.value.file == str(RXN / "empty_model.rxn")
    with pytest.raises(ModelError, match="empty model"):
        parse_reactions("# nothing\n\n")


def test_every_bad_fixture_is_tested():
    tested = {b[0] for b in BAD} | {"empty_model.rxn", "good_features.rxn"}
    assert {p.name for p in RXN.glob("*.rxn")} == tested


def test_not_utf8(tmp_path):
    p = tmp_path / "bin.rxn"
    p.write_bytes(b"A -> B ; 1\n\xff\xfe\n")
    with pytest.raises(ModelError, match="UTF-8"):
        read_reactions(p)


# ------------------------------------------------------------------------------------------------
# SBML: DSMTS cases

LOADS = {  # case: (species, initial, fixed, propensities at the initial state by hand from NNNNN-model.m)
    "00001": (("X",), (100,), frozenset(), [0.1 * 100, 0.11 * 100]),
    "00003": (("X",), (100,), frozenset(), [1 * 100, 1.1 * 100]),
    "00011": (("X",), (100,), frozenset(), [0.1 * 100 / 2, 0.11 * 100 / 2]),  # concentration X/Cell, Cell = 2
    "00020": (("X",), (0,), frozenset(), [1.0, 0.0]),
    "00030": (("P", "P2"), (100, 0), frozenset(), [0.001 * 100 * 99 / 2, 0.0]),
    "00031": (("P", "P2"), (1000, 0), frozenset(), [0.0002 * 1000 * 999 / 2, 0.0]),
}
EVENTS_AND_RULES = {"00019": "assignment rules 'y' (for 'y')", "00028": "events 'reset'"}

def dsmts(case: str) -> Path:
    return DSMTS / case / f"{case}-sbml-l3v1.xml"


@pytest.mark.parametrize("case", sorted(LOADS))
def test_dsmts_cases_load(case):
    species, initial, fixed, a0 = LOADS[case]
    net = read_sbml(dsmts(case))
    assert net.species == species
    assert net.initial == initial
    assert net.fixed == fixed
    assert net.source == str(dsmts(case))
    np.testing.assert_allclose(net.propensities(np.array(net.initial)), a0, rtol=1e-12)
    # results.csv starts at the same initial state
    results = DSMTS / case / f"{case}-results.csv"
    if results.exists():
        header = results.read_text().splitlines()[:2]
        cols = dict(zip(header[0].split(","), map(float, header[1].split(","))))
        for s, x in zip(species, initial):
            assert cols[f"{s}-mean"] == x


def test_dsmts_propensities_on_random_states():
    x = np.random.default_rng(1).integers(0, 500, size=(100, 1)).astype(float)
    for case, lam, mu, vol in [("00001", 0.1, 0.11, 1), ("00003", 1, 1.1, 1), ("00011", 0.1, 0.11, 2)]:
        a = read_sbml(dsmts(case)).propensities(x)
        np.testing.assert_allclose(a, np.c_[lam * x[:, 0] / vol, mu * x[:, 0] / vol], rtol=1e-12)
    P = np.random.default_rng(2).integers(0, 500, size=(100, 2)).astype(float)
    a = read_sbml(dsmts("00030")).propensities(P)
    np.testing.assert_allclose(a, np.c_[0.001 * P[:, 0] * (P[:, 0] - 1) / 2, 0.01 * P[:, 1]], rtol=1e-12)


@pytest.mark.parametrize("case,text", [("00001", "birth_death.rxn"), ("00020", "immigration_death.rxn"),
                                       ("00030", "dimerisation.rxn")])
def test_text_examples_match_sbml(case, text):
    sb = read_sbml(dsmts(case))
    tx = read_reactions(EXAMPLES / text)
    assert sb.species == tx.species and sb.initial == tx.initial
    np.testing.assert_array_equal(sb.stoichiometry(), tx.stoichiometry())
    x = states(sb, high=300)
    np.testing.assert_allclose(sb.propensities(x), tx.propensities(x), rtol=1e-12)


def test_dsmts_event_and_rule_cases_load_and_rate_inference_refuses_them():
    """00019 (assignment rule y = 2 X) and 00028 (event X = 50 at t >= 25) are read into net.rules /
    net.events; the SSA simulates them (tests/unit/test_ssa.py), rate inference names them in its error."""
    from distsim.mcmc.priors import rate_model
    from distsim.models.arith import BinOp, Num, Time
    from distsim.models.arith import Species as Sp
    from distsim.models.events import Assignment, AssignmentRule, Compare, Event

    rule = read_sbml(dsmts("00019"))
    assert rule.rules == (AssignmentRule("y", "y", 1, BinOp("*", Num(2.0), Sp(0))),)
    assert rule.initial == (100, 200)  # the rule's value at t = 0, not the file's initialAmount 0
    event = read_sbml(dsmts("00028"))
    assert event.events == (Event("reset", Compare(">=", Time(), Num(25.0)), (Assignment("X", 0, Num(50.0)),),
                                  initial_value=False, persistent=True, use_values_from_trigger_time=True),)
    assert rule.digest() != read_sbml(dsmts("00001")).digest()
    for case, net in (("00019", rule), ("00028", event)):
        with pytest.raises(ModelError) as info:
            rate_model(net, None)
        assert "rate inference does not support SBML events or assignment rules" in info.value.message
        assert EVENTS_AND_RULES[case] in info.value.message
        assert info.value.file == str(dsmts(case))


# ------------------------------------------------------------------------------------------------
# SBML: hand-written models

def sbml(tmp_path: Path, body: str, *, level: int = 3, version: int = 1, name: str = "m.xml") -> Path:
    ns = f"http://www.sbml.org/sbml/level{level}/version{version}/core" if level == 3 else \
        f"http://www.sbml.org/sbml/level{level}/version{version}"
    p = tmp_path / name
    p.write_text(f'<?xml version="1.0" encoding="UTF-8"?>\n<sbml xmlns="{ns}" level="{level}" version="{version}">\n'
                 f'<model id="m" name="test model">\n{body}\n</model>\n</sbml>\n')
    return p


def ci(x: str) -> str:
    return f"<ci> {x} </ci>"


def apply(op: str, *args: str) -> str:
    return f"<apply><{op}/>{''.join(args)}</apply>"


def law(math_xml: str, local: str = "") -> str:
    lp = f"<listOfLocalParameters>{local}</listOfLocalParameters>" if local else ""
    return (f'<kineticLaw><math xmlns="http://www.w3.org/1998/Math/MathML">{math_xml}</math>{lp}</kineticLaw>')


def reaction(rid: str, reactants: str, products: str, kinetic: str,
             extra: str = 'reversible="false" fast="false"') -> str:
    def refs(tag, spec):
        if not spec:
            return ""
        items = "".join(f'<speciesReference species="{s}" stoichiometry="{n}" constant="true"/>'
                        for s, n in (p.split(":") for p in spec.split()))
        return f"<{tag}>{items}</{tag}>"

    return (f'<reaction id="{rid}" {extra}>{refs("listOfReactants", reactants)}'
            f'{refs("listOfProducts", products)}{kinetic}</reaction>')


COMP = ('<listOfCompartments><compartment id="V" spatialDimensions="3" size="{size}" constant="true"/>'
        '</listOfCompartments>')


def species(sid: str, *, amount: float | None = None, conc: float | None = None, hosu: bool = True,
            boundary: bool = False, constant: bool = False) -> str:
    init = f'initialAmount="{amount}"' if amount is not None else (
        f'initialConcentration="{conc}"' if conc is not None else "")
    return (f'<species id="{sid}" compartment="V" {init} hasOnlySubstanceUnits="{str(hosu).lower()}" '
            f'boundaryCondition="{str(boundary).lower()}" constant="{str(constant).lower()}"/>')


def model(size: float, species_xml: str, params: str, reactions: str, extra: str = "") -> str:
    ps = f"<listOfParameters>{params}</listOfParameters>" if params else ""
    return (COMP.format(size=size) + f"<listOfSpecies>{species_xml}</listOfSpecies>{ps}{extra}"
            f"<listOfReactions>{reactions}</listOfReactions>")


def param(pid: str, value: float) -> str:
    return f'<parameter id="{pid}" value="{value}" constant="true"/>'


def test_concentration_substitution_in_non_unit_compartment(tmp_path):
    """hasOnlySubstanceUnits=false in a compartment of size 5: the symbol A means A/5 (a concentration),
    the law's value is the propensity; initial concentration 2 x size 5 = 10 molecules."""
    body = model(5, species("A", conc=2, hosu=False) + species("B", amount=3, hosu=True),
                 param("k", 0.7),
                 reaction("R1", "A:2", "B:1", law(apply("times", ci("k"), ci("A"), ci("A"), ci("B"))))
                 + reaction("R2", "B:1", "", law(apply("times", ci("k"), ci("V")))))
    net = read_sbml(sbml(tmp_path, body))
    assert net.initial == (10, 3)
    assert net.params == {"V": 5.0, "k": 0.7}
    x = np.array([[10.0, 3.0], [4.0, 0.0], [7.0, 2.0]])
    A, B = x[:, 0], x[:, 1]
    np.testing.assert_allclose(net.propensities(x), np.c_[0.7 * (A / 5) * (A / 5) * B, np.full(3, 0.7 * 5)])
    assert net.reactions[0].reactants == ((0, 2),) and net.reactions[0].products == ((1, 1),)


def test_same_model_written_with_libsbml(tmp_path):
    libsbml = pytest.importorskip("libsbml")
    doc = libsbml.SBMLDocument(3, 1)
    m = doc.createModel()
    m.setId("built")
    c = m.createCompartment()
    c.setId("cell"), c.setSize(2.5), c.setConstant(True), c.setSpatialDimensions(3)
    for sid, conc in [("S", 4.0), ("P", 0.0)]:
        s = m.createSpecies()
        s.setId(sid), s.setCompartment("cell"), s.setInitialConcentration(conc)
        s.setHasOnlySubstanceUnits(False), s.setBoundaryCondition(False), s.setConstant(False)
    r = m.createReaction()
    r.setId("conv"), r.setReversible(False), r.setFast(False)
    sr = r.createReactant()
    sr.setSpecies("S"), sr.setStoichiometry(1), sr.setConstant(True)
    sr = r.createProduct()
    sr.setSpecies("P"), sr.setStoichiometry(1), sr.setConstant(True)
    kl = r.createKineticLaw()
    lp = kl.createLocalParameter()
    lp.setId("kcat"), lp.setValue(3.0)
    kl.setMath(libsbml.parseL3Formula("kcat * cell * S"))  # = kcat * amount(S)
    path = tmp_path / "built.xml"
    assert libsbml.writeSBMLToFile(doc, str(path))
    net = read_sbml(path)
    assert net.initial == (10, 0)
    # kcat * cell * (S / cell) = kcat * S: mass action with theta = kcat, the compartment folds away
    assert net.params == {"conv__kcat": 3.0}
    assert net.reactions[0].rate == "conv__kcat"
    np.testing.assert_allclose(net.propensities(np.array([[10.0, 0.0], [3.0, 1.0]])), [[30.0], [9.0]])


def test_local_parameters_renamed_and_shadow_globals(tmp_path):
    body = model(1, species("A", amount=4), param("k", 100),
                 reaction("R1", "A:1", "", law(apply("times", ci("k"), ci("A")),
                                               '<localParameter id="k" value="0.5"/>'))
                 + reaction("R2", "", "A:1", law(ci("k"))))
    net = read_sbml(sbml(tmp_path, body))
    assert net.params == {"k": 100.0, "R1__k": 0.5}
    np.testing.assert_allclose(net.propensities(np.array([4.0])), [2.0, 100.0])


def test_boundary_and_constant_species_are_fixed(tmp_path):
    body = model(1, species("S", amount=50, boundary=True) + species("E", amount=2, constant=True)
                 + species("P", amount=0),
                 param("k", 0.1), reaction("R", "S:1", "P:1", law(apply("times", ci("k"), ci("E"), ci("S")))))
    net = read_sbml(sbml(tmp_path, body))
    assert net.fixed == frozenset({0, 1})
    np.testing.assert_array_equal(net.stoichiometry(), [[0, 0, 1]])
    np.testing.assert_allclose(net.propensities(np.array(net.initial)), [0.1 * 2 * 50])


def test_function_definitions_are_inlined_and_math_functions(tmp_path):
    fdef = ('<listOfFunctionDefinitions><functionDefinition id="hill"><math xmlns="http://www.w3.org/1998/Math/'
            'MathML"><lambda><bvar><ci>x</ci></bvar><bvar><ci>n</ci></bvar>'
            + apply("divide", apply("power", ci("x"), ci("n")),
                    apply("plus", "<cn>1</cn>", apply("power", ci("x"), ci("n"))))
            + "</lambda></math></functionDefinition></listOfFunctionDefinitions>")
    call = "<apply><ci>hill</ci><ci>A</ci><cn>2</cn></apply>"
    fancy = apply("plus", apply("exp", "<cn>0</cn>"), apply("ln", "<exponentiale/>"), apply("log", ci("A")),
                  "<apply><log/><logbase><cn>2</cn></logbase><cn>8</cn></apply>",
                  apply("root", "<cn>9</cn>"), "<apply><root/><degree><cn>3</cn></degree><cn>27</cn></apply>",
                  apply("abs", apply("minus", "<cn>2</cn>")), apply("floor", "<cn>2.5</cn>"),
                  apply("ceiling", "<cn>2.5</cn>"), '<cn type="rational">1<sep/>4</cn>',
                  '<cn type="e-notation">1<sep/>-1</cn>', apply("minus", "<pi/>", "<pi/>"))
    body = model(1, species("A", amount=10), "",
                 reaction("R1", "A:1", "", law(call)) + reaction("R2", "", "A:1", law(fancy)), extra="")
    body = fdef + body
    net = read_sbml(sbml(tmp_path, body))
    A = 10.0
    expected = [A ** 2 / (1 + A ** 2),
                1 + 1 + math.log10(A) + 3 + 3 + 3 + 2 + 2 + 3 + 0.25 + 0.1 + 0]
    np.testing.assert_allclose(net.propensities(np.array([A])), expected, rtol=1e-12)


@pytest.mark.parametrize("what,body_parts,phrase", [
    # piecewise, time, sin and cos in laws are read (the SSA's hybrid loop: test_ssa_time_dependent.py)
    ("delay", apply("times", ci("k"), '<apply><csymbol encoding="text" definitionURL="http://www.sbml.org/sbml/'
                                      'symbols/delay"> delay </csymbol><ci>A</ci><cn>1</cn></apply>'), "delay"),
    ("arctan", apply("arctan", ci("A")), "inverse trigonometric"),
    ("unknown id", apply("times", ci("k"), ci("Z")), "'Z'"),
])
def test_unsupported_math(tmp_path, what, body_parts, phrase):
    body = model(1, species("A", amount=1), param("k", 1), reaction("R9", "A:1", "", law(body_parts)))
    with pytest.raises(ModelError) as info:
        read_sbml(sbml(tmp_path, body))
    assert "reaction 'R9'" in info.value.message
    assert phrase in info.value.message
    assert info.value.line is not None


@pytest.mark.parametrize("case,phrase", [
    ("noninteger_amount", "not a whole number"),
    ("negative_amount", "negative"),
    ("noninteger_stoichiometry", "neither a whole number nor a fraction p/q with q <= 1000"),
    ("no_kinetic_law", "has no kinetic law"),
    ("fast", "fast reactions"),
    ("reversible", "is reversible and its kinetic law"),
    ("initial_assignment_cycle", "initial assignments depend on each other in a cycle"),
    ("rate_rule", "reactant 'A' has a rate rule but no boundaryCondition"),
    ("no_size", "has no size"),
])
def test_unsupported_or_invalid_models(tmp_path, case, phrase):
    k = param("k", 1)
    lw = law(apply("times", ci("k"), ci("A")))
    sp = species("A", amount=3)
    rx = reaction("R", "A:1", "", lw)
    size = 1
    extra = ""
    policy = "split"
    if case == "noninteger_amount":
        sp = species("A", amount=2.5)
    elif case == "negative_amount":
        sp = species("A", amount=-2)
    elif case == "noninteger_stoichiometry":
        rx = reaction("R", "A:0.1234567", "", lw)
    elif case == "no_kinetic_law":
        rx = reaction("R", "A:1", "", "")
    elif case == "fast":
        rx = reaction("R", "A:1", "", lw, 'reversible="false" fast="true"')
    elif case == "reversible":
        rx = reaction("R", "A:1", "", law(apply("times", ci("k"), ci("A"), ci("A"))), 'reversible="true" fast="false"')
        policy = "error"
    elif case == "initial_assignment_cycle":
        extra = ('<listOfInitialAssignments><initialAssignment symbol="A"><math xmlns="http://www.w3.org/1998/'
                 'Math/MathML"><ci>k</ci></math></initialAssignment><initialAssignment symbol="k"><math xmlns="'
                 'http://www.w3.org/1998/Math/MathML"><ci>A</ci></math></initialAssignment></listOfInitialAssignments>')
    elif case == "rate_rule":
        extra = ('<listOfRules><rateRule variable="A"><math xmlns="http://www.w3.org/1998/Math/MathML"><cn>1</cn>'
                 '</math></rateRule></listOfRules>')
    elif case == "no_size":
        sp = species("A", conc=3, hosu=False)
        size = None
    body = model(size if size is not None else 1, sp, k, rx, extra)
    if size is None:
        body = body.replace(' size="1"', "")
    path = sbml(tmp_path, body)
    with pytest.raises(ModelError) as info:
        read_sbml(path, reversible=policy)
    assert phrase in info.value.message
    assert info.value.file == str(path)
    assert info.value.line is not None


def test_reversible_forward_policy(tmp_path):
    body = model(1, species("A", amount=3), param("k", 2),
                 reaction("R", "A:1", "", law(apply("times", ci("k"), ci("A"))), 'reversible="true" fast="false"'))
    net = read_sbml(sbml(tmp_path, body), reversible="forward")
    np.testing.assert_allclose(net.propensities(np.array([3.0])), [6.0])
    with pytest.raises(ValueError):
        read_sbml(sbml(tmp_path, body), reversible="maybe")


def test_level2_model(tmp_path):
    body = ('<listOfCompartments><compartment id="V" size="2"/></listOfCompartments>'
            '<listOfSpecies><species id="A" compartment="V" initialAmount="6"/></listOfSpecies>'
            '<listOfReactions><reaction id="R" reversible="false"><listOfReactants><speciesReference species="A"/>'
            '</listOfReactants><kineticLaw><math xmlns="http://www.w3.org/1998/Math/MathML">'
            + apply("times", ci("k"), ci("A")) + '</math><listOfParameters><parameter id="k" value="0.5"/>'
            '</listOfParameters></kineticLaw></reaction></listOfReactions>')
    path = sbml(tmp_path, body, level=2, version=4)
    with pytest.raises(ModelError, match="mole \\(the Level 1/2 default substance unit\\)"):
        read_sbml(path)  # L2's default substance unit is the mole: 6 mol is far too many molecules
    net = read_sbml(path, system_size=1)
    # L2 default hasOnlySubstanceUnits=false: A means 6/2 = 3 (a concentration)
    assert net.initial == (6,)
    assert net.params == {"V": 2.0, "R__k": 0.5}
    np.testing.assert_allclose(net.propensities(np.array([6.0])), [0.5 * 3])


def test_malformed_sbml_reports_line(tmp_path):
    p = tmp_path / "bad.xml"
    p.write_text('<?xml version="1.0"?>\n<sbml xmlns="http://www.sbml.org/sbml/level3/version1/core" level="3" '
                 'version="1">\n<model id="m">\n<listOfSpecies>\n</model>\n</sbml>\n')
    with pytest.raises(ModelError, match="invalid SBML") as info:
        read_sbml(p)
    assert info.value.file == str(p) and info.value.line is not None


def test_missing_libsbml(monkeypatch):
    monkeypatch.setitem(sys.modules, "libsbml", None)  # makes 'import libsbml' raise ImportError
    with pytest.raises(ModelError, match="pip install python-libsbml"):
        read_sbml(dsmts("00001"))


# ------------------------------------------------------------------------------------------------
# format selection


def test_load_reactions_by_extension_and_content(tmp_path):
    assert detect_reaction_format(dsmts("00001")) == "sbml"
    assert detect_reaction_format(EXAMPLES / "michaelis_menten.rxn") == "text"
    net = load_reactions(dsmts("00030"))
    assert net.species == ("P", "P2")
    # SBML content under a text extension is sniffed
    sniffed = tmp_path / "model.txt"
    shutil.copy(dsmts("00030"), sniffed)
    assert detect_reaction_format(sniffed) == "sbml"
    assert load_reactions(sniffed).species == ("P", "P2")
    no_decl = tmp_path / "model"
    no_decl.write_bytes(b"\xef\xbb\xbf  " + dsmts("00030").read_bytes().split(b"?>", 1)[1].lstrip())
    assert detect_reaction_format(no_decl) == "sbml"
    # text under .xml only with format=
    txt = tmp_path / "mm.xml"
    txt.write_text(MM)
    with pytest.raises(ModelError):
        load_reactions(txt)
    assert load_reactions(txt, format="text").n_reactions == 3
    other = tmp_path / "mm.model"
    other.write_text(MM)
    assert load_reactions(other).species == ("E", "S", "ES", "P")
    assert load_reactions(sniffed, format="SBML").n_reactions == 2
    with pytest.raises(ValueError, match="unknown reaction-network format"):
        load_reactions(other, format="bngl")
    with pytest.raises(FileNotFoundError):
        load_reactions(tmp_path / "missing.rxn")


def test_load_text_error_names_file(tmp_path):
    p = tmp_path / "bad.rxn"
    p.write_text("A -> B ; 1\nA + B ; 2\n")
    with pytest.raises(ModelError) as info:
        load_reactions(p)
    assert str(info.value).startswith(f"{p}:2:1: missing '->'")
