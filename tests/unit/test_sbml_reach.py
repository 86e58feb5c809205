"""BioModels once refused at load (issue 30): MathML's other elementary functions, a reaction's rate in
math, rules not finite at t = 0, initial assignments to compartments, stoichiometry 0 / large /
stoichiometryMath, negative round-off amounts, values SBML leaves undefined. Minimal documents with hand
computations, and curated BioModels (tests/data/biomodels) against libRoadRunner."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from distsim.errors import ModelError, SBMLWarning
from distsim.models.arith import (ELEMENTARY, Call, Num, Param, Species, compile_stack, elementary, evaluate, to_text,
                                  tree_size)
from distsim.models.formats.sbml import MAX_MATH_NODES, read_sbml, read_sbml_string

libsbml = pytest.importorskip("libsbml")
BM = Path(__file__).resolve().parents[1] / "data" / "biomodels"
EPS = np.finfo(float).eps


def mathml(formula: str) -> str:
    ast = libsbml.parseL3Formula(formula)
    assert ast is not None, formula
    return libsbml.writeMathMLToString(ast).split("?>", 1)[-1]


def sp(sid: str, value: float | None, *, conc: bool = False, comp: str = "V", boundary: bool = False) -> str:
    init = "" if value is None else f'initialConcentration="{value!r}"' if conc else f'initialAmount="{value!r}"'
    return (f'<species id="{sid}" compartment="{comp}" {init} hasOnlySubstanceUnits="{"false" if conc else "true"}" '
            f'boundaryCondition="{str(boundary).lower()}" constant="false"/>')


def rx(rid: str, reac: dict, prod: dict, formula: str, local: dict | None = None) -> str:
    def refs(tag: str, d: dict) -> str:
        items = "".join(f'<speciesReference species="{s}" stoichiometry="{n!r}" constant="true"/>'
                        for s, n in d.items())
        return f"<{tag}>{items}</{tag}>" if d else ""

    lps = "".join(f'<localParameter id="{k}" value="{v!r}"/>' for k, v in (local or {}).items())
    lps = f"<listOfLocalParameters>{lps}</listOfLocalParameters>" if lps else ""
    return (f'<reaction id="{rid}" reversible="false">{refs("listOfReactants", reac)}{refs("listOfProducts", prod)}'
            f"<kineticLaw>{mathml(formula)}{lps}</kineticLaw></reaction>")


def doc(species: str, reactions: str, params: dict | None = None, *, extra: str = "", comps: str = "") -> str:
    ps = "".join(f'<parameter id="{k}"' + ("" if v is None else f' value="{v!r}"') + ' constant="false"/>'
                 for k, v in (params or {}).items())
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<sbml xmlns="http://www.sbml.org/sbml/level3/version2/core" '
            'level="3" version="2">\n<model id="m">\n'
            f'<listOfCompartments><compartment id="V" size="1.0" constant="true"/>{comps}</listOfCompartments>\n'
            f"<listOfSpecies>{species}</listOfSpecies>\n"
            + (f"<listOfParameters>{ps}</listOfParameters>\n" if ps else "")
            + extra + f"\n<listOfReactions>{reactions}</listOfReactions>\n</model>\n</sbml>\n")


def rules(**formulas: str) -> str:
    return ("<listOfRules>" + "".join(f'<assignmentRule variable="{k}">{mathml(f)}</assignmentRule>'
                                      for k, f in formulas.items()) + "</listOfRules>")


def initial_assignments(**formulas: str) -> str:
    return ("<listOfInitialAssignments>" + "".join(f'<initialAssignment symbol="{k}">{mathml(f)}</initialAssignment>'
                                                   for k, f in formulas.items()) + "</listOfInitialAssignments>")


# ------------------------------------------------------------------------------------------------
# 1. MathML's elementary functions

REFERENCE = {
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "sech": lambda x: 1 / np.cosh(x),
    "csch": lambda x: 1 / np.sinh(x), "coth": lambda x: 1 / np.tanh(x), "arcsinh": np.arcsinh,
    "arccosh": np.arccosh, "arctanh": np.arctanh, "arcsech": lambda x: np.arccosh(1 / x),
    "arccsch": lambda x: np.arcsinh(1 / x), "arccoth": lambda x: np.arctanh(1 / x), "tan": np.tan,
    "sec": lambda x: 1 / np.cos(x), "csc": lambda x: 1 / np.sin(x), "cot": lambda x: 1 / np.tan(x),
}
RECIPROCALS = ("csch", "coth")  # 1 / (a difference near 0): an ulp of 1 in it is relative eps |f| in f
POINTS = [-30.0, -3.0, -1.7, -0.9, -0.4, -1e-3, 1e-3, 0.4, 0.9, 1.7, 3.0, 30.0, 700.0]


def _cpu_program(node, x: float) -> float:
    """The expression run by the CPU event/hybrid interpreter (distsim's exp/log/sin/cos), x as species 0."""
    from distsim.ssa import event_ops

    prog, depth = compile_stack(node, {})
    op = np.array([o for o, _ in prog], dtype=np.int32)
    arg = np.array([a for _, a in prog], dtype=np.float64)
    st = np.zeros(depth + 1)
    return float(event_ops.run_program(0, np.array([x]), np.zeros(0), 0.0, np.array([0, len(prog)], dtype=np.int32),
                                       op, arg, st))


def test_elementary_functions_match_the_references():
    """Each rewrite is within 8 ulps of max(1, |f(x)|) of numpy's libm value where f is well conditioned
    (a few roundings of exp/log/sqrt, each within 1 ulp, none amplified by more than 2: the forms avoid
    inf/inf and cancellation except near 0, where the error is absolute, of the size of an ulp of 1, so
    of 8 ulps of f^2 for csch and coth, reciprocals of such differences);
    the CPU kernel's interpreter gives the same within the same bound; overflow gives the limit."""
    checked = 0
    for f in ELEMENTARY:
        node = Call(f, (Species(0),))  # as the SBML reader keeps it: expanded by evaluate and compile_stack
        for x in POINTS:
            with np.errstate(all="ignore"):
                ref = float(REFERENCE[f](x))
            if not math.isfinite(ref) or (f in ("tan", "sec", "csc", "cot") and abs(x) > 3.5):
                continue  # outside the domain, or a trigonometric argument far from 0 (sin/cos reduce it)
            if f in ("arctanh", "arccoth", "arcsech") and abs(abs(x if f == "arctanh" else 1 / x) - 1) < 0.2:
                continue  # ill-conditioned near 1 (the reference itself has no 8-ulp accuracy there)
            tol = 8 * EPS * max(1.0, abs(ref)) ** (2 if f in RECIPROCALS else 1)
            got = float(evaluate(node, np.array([[x]]), {})[0])
            assert abs(got - ref) <= tol, (f, x, got, ref)
            assert abs(_cpu_program(node, x) - ref) <= tol, (f, x)
            checked += 1
    assert checked > 120
    with np.errstate(all="ignore"):
        assert float(evaluate(elementary("tanh", Num(800.0)), np.zeros((1, 0)), {})[0]) == 1.0
        assert float(evaluate(elementary("tanh", Num(-800.0)), np.zeros((1, 0)), {})[0]) == -1.0
        assert float(evaluate(elementary("tanh", Num(0.0)), np.zeros((1, 0)), {})[0]) == 0.0
        assert float(evaluate(elementary("cosh", Num(800.0)), np.zeros((1, 0)), {})[0]) == math.inf
        assert math.isnan(float(evaluate(elementary("tanh", Num(math.nan)), np.zeros((1, 0)), {})[0]))


def test_tanh_in_a_kinetic_law_and_unsupported_functions():
    text = doc(sp("A", 3.0), rx("R", {"A": 1}, {}, "k * (1 + tanh(A - 2))"), {"k": 0.5})
    with warnings.catch_warnings():
        warnings.simplefilter("error", SBMLWarning)  # tanh is one factor: no net-rate split of its expansion
        net = read_sbml_string(text)
    assert len(net.reactions) == 1 and not net.hybrid
    assert "tanh" in to_text(net.reactions[0].law, net.species)
    a = net.propensities(np.array([[3.0], [0.0], [40.0]]))[:, 0]
    assert np.allclose(a, [0.5 * (1 + math.tanh(1.0)), 0.5 * (1 + math.tanh(-2.0)), 1.0], rtol=8 * EPS, atol=8 * EPS)
    for f, why in [("arctan", "inverse trigonometric"), ("factorial", "gamma function")]:
        with pytest.raises(ModelError, match=rf"reaction 'R': the math uses '{f}'.*{why}"):
            read_sbml_string(doc(sp("A", 3.0), rx("R", {"A": 1}, {}, f"k * {f}(A)"), {"k": 0.5}))


def test_shared_arguments_count_as_a_tree():
    """sinh(sinh(...(A))) uses each argument twice: 2^k nodes as compiled, refused past MAX_MATH_NODES; a call's
    size is that of its compiled expansion."""
    node = Param("p")
    for _ in range(20):
        node = Call("sinh", (node,))
    assert tree_size(node, MAX_MATH_NODES) > MAX_MATH_NODES
    compiled = compile_stack(elementary("tanh", Param("p")), {"p": 1.0})[0]
    assert tree_size(Call("tanh", (Param("p"),)), 100) == len(compiled)
    deep = "A"
    for _ in range(20):
        deep = f"sinh({deep})"
    with pytest.raises(ModelError, match=f"more than {MAX_MATH_NODES} nodes"):
        read_sbml_string(doc(sp("A", 3.0), rx("R", {"A": 1}, {}, f"k * {deep}"), {"k": 0.5}))


# ------------------------------------------------------------------------------------------------
# 1b. a reaction's rate in math


def test_reaction_rate_in_a_rule_is_its_law():
    """v = 2 R1 with R1's law k A (k = 0.5 local): v(A = 10) = 10; the local k keeps its renamed id."""
    text = doc(sp("A", 10.0) + sp("B", 0.0), rx("R1", {"A": 1}, {"B": 1}, "k * A", local={"k": 0.5}),
               {"v": 0.0}, extra=rules(v="2 * R1"))
    net = read_sbml_string(text)
    (rule,) = net.rules
    assert rule.target == "v" and net.params["v"] == 10.0
    assert float(evaluate(rule.expr, np.array([[4.0, 6.0]]), net.params)[0]) == 4.0
    assert net.params["R1__k"] == 0.5
    loop = doc(sp("A", 10.0), rx("R1", {"A": 1}, {}, "k * A + 0 * R1", local={"k": 0.5}), {"v": 0.0},
               extra=rules(v="R1"))
    with pytest.raises(ModelError, match="the rate of reaction 'R1' reads itself"):
        read_sbml_string(loop)


# ------------------------------------------------------------------------------------------------
# 2. rules not finite at t = 0


def test_a_rule_that_is_0_over_0_at_the_start_loads_and_is_recorded():
    """ratio = A / (A + B) with A = B = 0 is NaN at t = 0 (libRoadRunner: NaN too); it loads, recorded and
    warned; a later rule reads the NaN."""
    text = doc(sp("A", 0.0) + sp("B", 0.0), rx("R", {"A": 1}, {"B": 1}, "k * A"),
               {"k": 1.0, "ratio": None, "r2": None}, extra=rules(ratio="A / (A + B)", r2="ratio + 1"))
    with pytest.warns(SBMLWarning, match="non-finite values at t = 0"):
        net = read_sbml_string(text)
    assert dict(net.metadata)["rules_nonfinite_at_start"] == "ratio = nan; r2 = nan"
    assert all(math.isfinite(v) for v in net.params.values())  # placeholders; the run computes the rules again
    # a species rule (not whole by its form: a real-valued parameter) behaves the same
    sprule = doc(sp("A", 0.0) + sp("B", 0.0) + sp("C", 0.0, boundary=True), rx("R", {"A": 1}, {"B": 1}, "k * A"),
                 {"k": 1.0}, extra=rules(C="A / (A + B)"))
    with pytest.warns(SBMLWarning, match="non-finite values at t = 0"):
        net = read_sbml_string(sprule)
    assert dict(net.metadata)["rules_nonfinite_at_start"] == "C = nan"


def test_initial_assignments_read_parameters_that_rules_give():
    """p = 3 q (an initial assignment) with q = k + A from a rule (k = 2, A = 5): p = 21 at load, as SBML
    evaluates initial assignments and rules together at t = 0; the rule still runs."""
    text = doc(sp("A", 5.0), rx("R", {"A": 1}, {}, "p * A"), {"k": 2.0, "q": None, "p": None},
               extra=rules(q="k + A") + initial_assignments(p="3 * q"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SBMLWarning)
        net = read_sbml_string(text)
    assert net.params["p"] == 21.0 and [r.target for r in net.rules] == ["q"] and net.params["q"] == 7.0
    unknown = doc(sp("A", 5.0), rx("R", {"A": 1}, {}, "p * A"), {"k": None, "q": None, "p": None},
                  extra=rules(q="k + A") + initial_assignments(p="3 * q"))
    with pytest.raises(ModelError, match="assignment rule for 'q': parameter 'k' has no \\(finite\\) value"):
        read_sbml_string(unknown)


def test_biomd302_initial_assignments_through_rules_match_libroadrunner():
    """Wang1996: h_post = alpha_h_post / (beta_h_post + alpha_h_post), both from rules of V_post (rate rules):
    every rate-rule variable's initial value equals libRoadRunner's (the same formula: within 4 ulps)."""
    path = BM / "BIOMD0000000302.xml"
    net = read_sbml(path)
    rr = _rr(path)
    assert len(net.rate_rules) == 7
    for r in net.rate_rules:
        want = rr.getValue(r.target)
        assert abs(net.params[r.target] - want) <= 4 * EPS * abs(want), r.target


# ------------------------------------------------------------------------------------------------
# 3. compartments


def test_initial_assignments_to_compartments():
    """W = V2 / 2 and V2 = 3 k (k = 1; evaluated in dependency order): C = 4 per volume in W (1.5) = 6
    molecules; a parameter's initial assignment reading W sees 1.5."""
    comps = '<compartment id="W" constant="true"/><compartment id="V2" size="9.0" constant="true"/>'
    ias = initial_assignments(W="V2 / 2", V2="3 * k", q="2 * W")
    text = doc(sp("C", 4.0, conc=True, comp="W"), rx("R", {"C": 1}, {}, "q * C"), {"k": 1.0, "q": 0.0}, extra=ias,
               comps=comps)
    net = read_sbml_string(text)
    assert net.initial == (6,)
    assert net.params["q"] == 3.0
    species = doc(sp("C", 4.0), rx("R", {"C": 1}, {}, "C"), comps=comps, extra=initial_assignments(W="C"))
    with pytest.raises(ModelError, match="initial assignment to 'W': the size .* must be a finite constant at load"):
        read_sbml_string(species)
    # an assignment rule of time gives the size at t = 0 (BIOMD0000000342's Vmed): 3 per volume x (2 + 0) = 6
    timed = doc(sp("C", 3.0, conc=True), rx("R", {"C": 1}, {}, "C"), extra=rules(V="2 + time"))
    net = read_sbml_string(timed)
    assert net.initial == (6,) and net.hybrid and dict(net.metadata)["changing_compartments"] == "V"
    # a rate rule: a continuous parameter of the hybrid loop, from the declared size
    rated = doc(sp("C", 3.0, conc=True), rx("R", {"C": 1}, {}, "C"),
                extra=f'<listOfRules><rateRule variable="V">{mathml("0.1 * V")}</rateRule></listOfRules>')
    net = read_sbml_string(rated)
    assert [r.target for r in net.rate_rules] == ["V"] and net.params["V"] == 1.0 and net.initial == (3,)


def test_biomd547_compartment_initial_assignments_match_libroadrunner():
    """BIOMD0000000547 (compartment_1 = 0.4 compartment_3, compartment_4 = 0.6 compartment_3; species_5's
    piecewise initial assignment reads compartment_3): with system_size = 1e20 and rounding="nearest" every
    initial count is libRoadRunner's amount x 1e20 rounded, so within 0.5 (+ round-off) of it."""
    path = BM / "BIOMD0000000547.xml"
    omega = 1e20
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SBMLWarning)
        net = read_sbml(path, system_size=omega, rounding="nearest")
    rr = _rr(path)  # (kept: its model lives in it)
    model = rr.model
    amount = dict(zip(model.getFloatingSpeciesIds(), model.getFloatingSpeciesAmounts()))
    amount.update(zip(model.getBoundarySpeciesIds(), model.getBoundarySpeciesAmounts()))
    assert len(net.species) == 11 and max(net.initial) > 10**5
    for s, c in zip(net.species, net.initial):
        assert abs(c - amount[s] * omega) <= 0.5 + 1e-9 * c, s


def test_an_event_dilutes_a_compartment():
    """A (a concentration in V) decays at k A; at t = 1 an event doubles V (BIOMD0000000338's dilution): the count
    stays, the concentration halves, so the decay rate per molecule halves: E[A(t)] = A0 e^{-k} e^{-k (t - 1) / 2}
    for t >= 1, binomial (p = that / A0). Means of 400 realizations at each grid time within z = 4.5."""
    from distsim import ssa

    ev = ('<listOfEvents><event id="dilute" useValuesFromTriggerTime="true"><trigger initialValue="false" '
          f'persistent="true">{mathml("time >= 1")}</trigger><listOfEventAssignments><eventAssignment variable="V">'
          f'{mathml("2 * V")}</eventAssignment></listOfEventAssignments></event></listOfEvents>')
    text = doc(sp("A", 1000.0, conc=True), rx("R", {"A": 1}, {}, "k * A"), {"k": 1.0}, extra=ev)
    net = read_sbml_string(text)
    (e,) = net.events
    assert e.assignments[0].target == "V" and e.assignments[0].species == -1
    n = 400
    out = ssa.simulate(net, t_end=3.0, points=7, realizations=n, seed=3, backend="cpu", client=None, progress=False)
    t = out["time"].values
    p = np.where(t < 1, np.exp(-t), np.exp(-1.0) * np.exp(-(t - 1) / 2))
    got = out["mean"].values.reshape(len(t))
    assert np.all(np.abs(got - 1000 * p) <= 4.5 * np.sqrt(1000 * p * (1 - p) / n) + 1e-9), (got, 1000 * p)


# ------------------------------------------------------------------------------------------------
# 4. values SBML leaves undefined


def test_species_and_parameters_without_a_value_are_refused_saying_why():
    with pytest.raises(ModelError, match="species 'A' has no initial amount .* SBML leaves its value undefined"):
        read_sbml_string(doc(sp("A", None), rx("R", {"A": 1}, {}, "A")))
    with pytest.raises(ModelError, match="parameter 'k' has no \\(finite\\) value .*SBML leaves it undefined"):
        read_sbml_string(doc(sp("A", 1.0), rx("R", {"A": 1}, {}, "k * A"), {"k": None}))
    # an initial assignment gives the value: loads
    net = read_sbml_string(doc(sp("A", None), rx("R", {"A": 1}, {}, "A"), extra=initial_assignments(A="7")))
    assert net.initial == (7,)


# ------------------------------------------------------------------------------------------------
# 5. stoichiometry


def _l2(species: str, reactions: str, params: dict) -> str:
    ps = "".join(f'<parameter id="{k}" value="{v!r}"/>' for k, v in params.items())
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<sbml xmlns="http://www.sbml.org/sbml/level2/version4" '
            'level="2" version="4">\n<model id="m"><listOfUnitDefinitions><unitDefinition id="substance">'
            '<listOfUnits><unit kind="item"/></listOfUnits></unitDefinition></listOfUnitDefinitions>'
            '<listOfCompartments><compartment id="V" size="1"/></listOfCompartments>'
            f"<listOfSpecies>{species}</listOfSpecies><listOfParameters>{ps}</listOfParameters>"
            f"<listOfReactions>{reactions}</listOfReactions></model></sbml>")


def _l2_reaction(formula: str) -> str:
    return ('<reaction id="R" reversible="false"><listOfReactants><speciesReference species="A"/></listOfReactants>'
            f'<listOfProducts><speciesReference species="B"><stoichiometryMath>{mathml(formula)}</stoichiometryMath>'
            f'</speciesReference></listOfProducts><kineticLaw>{mathml("k * A")}</kineticLaw></reaction>')


def test_stoichiometry_zero_large_and_stoichiometry_math():
    l2sp = '<species id="A" compartment="V" initialAmount="5" hasOnlySubstanceUnits="true"/>' \
           '<species id="B" compartment="V" initialAmount="0" hasOnlySubstanceUnits="true"/>'
    # zero: a modifier (BIOMD0000000091's 'source'); its law may read it
    net = read_sbml_string(doc(sp("S", 4.0) + sp("B", 0.0), rx("R", {"S": 0.0}, {"B": 1}, "k * S"), {"k": 1.0}))
    assert net.reactions[0].reactants == () and net.reactions[0].products == ((1, 1),)
    assert net.stoichiometry().tolist() in ([[0, 1]], [[0], [1]])
    # a whole stoichiometry above 1000 (BIOMD0000000463: 2932)
    net = read_sbml_string(doc(sp("A", 4.0) + sp("B", 0.0), rx("R", {"A": 1}, {"B": 2932}, "k * A"), {"k": 1.0}))
    assert net.reactions[0].products == ((1, 2932),)
    # a constant stoichiometryMath (BIOMD0000000040's 'f'): 2 f = 3
    net = read_sbml_string(_l2(l2sp, _l2_reaction("2 * f"), {"f": 1.5, "k": 1.0}))
    assert net.reactions[0].products == ((1, 3),)
    with pytest.raises(ModelError, match="stoichiometryMath for product 'B' .* reads time"):
        read_sbml_string(_l2(l2sp, _l2_reaction("1 + time"), {"k": 1.0}))
    with pytest.raises(ModelError, match="stoichiometryMath for product 'B' \\(A\\) is not a constant"):
        read_sbml_string(_l2(l2sp, _l2_reaction("A"), {"k": 1.0}))


# ------------------------------------------------------------------------------------------------
# 6. negative round-off


def test_negative_round_off_rounds_to_zero_only_on_request():
    text = doc(sp("A", -1.2e-26) + sp("B", 3.0), rx("R", {"B": 1}, {"A": 1}, "k * B"), {"k": 1.0})
    with pytest.raises(ModelError, match="is negative; it is within half a molecule of 0: pass rounding='nearest'"):
        read_sbml_string(text)
    with pytest.warns(SBMLWarning, match="rounded to 0"):
        net = read_sbml_string(text, rounding="nearest")
    assert net.initial == (0, 3)
    assert dict(net.metadata)["rounded"] == "species 'A': -1.2e-26 -> 0"
    with pytest.raises(ModelError, match=r"= -0.7 molecules is negative$"):
        read_sbml_string(text.replace("-1.2e-26", "-0.7"), rounding="nearest")


# ------------------------------------------------------------------------------------------------
# curated BioModels against libRoadRunner


def _rr(path: Path):
    rr = pytest.importorskip("roadrunner")
    return rr.RoadRunner(str(path))


@pytest.mark.parametrize("model", ["BIOMD0000000280", "BIOMD0000000324"])
def test_tanh_rules_of_biomodels_match_libroadrunner(model):
    """Morris-Lecar models: Minf = 0.5 (1 + tanh((V - V1) / V2)) etc. at t = 0. Each value is within 8 ulps of
    1 of libRoadRunner's (tanh's absolute error near -1, through 1 + tanh), relative 1e-15 otherwise."""
    path = BM / f"{model}.xml"
    net = read_sbml(path)
    rr = _rr(path)
    checked = 0
    for r in net.rules:
        if r.species < 0:
            want = rr.getValue(r.target)
            assert abs(net.params[r.target] - want) <= 8 * EPS + 1e-15 * abs(want), r.target
            checked += 1
    assert checked >= 3


def test_stoichiometry_math_and_zero_of_biomodels_match_libroadrunner():
    """BIOMD0000000040 (stoichiometryMath 'f' on Reaction5's product Br) and BIOMD0000000091 (stoichiometry 0 of
    'source'): the change of every reaction in every floating species equals libRoadRunner's stoichiometry matrix."""
    for model, kw in [("BIOMD0000000040", {"system_size": 1e4, "rounding": "nearest"}), ("BIOMD0000000091", {})]:
        path = BM / f"{model}.xml"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SBMLWarning)
            net = read_sbml(path, **kw)
        full = _rr(path).getFullStoichiometryMatrix()
        rows, cols = list(full.rownames), list(full.colnames)
        change = {}
        for r in net.reactions:
            d: dict[str, int] = {}
            for i, n in r.reactants:
                d[net.species[i]] = d.get(net.species[i], 0) - n
            for i, n in r.products:
                d[net.species[i]] = d.get(net.species[i], 0) + n
            change[r.name] = d
        compared = 0
        for j, rid in enumerate(cols):
            if rid not in change:
                continue  # (split into _f/_r channels: not here)
            for i, s in enumerate(rows):
                assert change[rid].get(s, 0) == full[i, j], (model, rid, s)
                compared += 1
        assert compared >= 15


def test_tan_of_time_in_a_law_is_a_poisson_birth_process():
    """0 -> A at 5 (1.5 + tan(t / 4)) (the hybrid loop): A(t) is Poisson with mean 7.5 t - 20 log cos(t / 4); the
    mean of 2000 realizations at each grid time within z = 4.5 standard errors (sqrt(mean / n); alpha 1e-5 per
    time, 7 times: 7e-5 in all)."""
    from distsim import ssa

    net = read_sbml_string(doc(sp("A", 0.0), rx("R", {}, {"A": 1}, "5 * (1.5 + tan(time / 4))")))
    assert net.hybrid
    n = 2000
    out = ssa.simulate(net, t_end=3.0, points=7, realizations=n, seed=5, backend="cpu", client=None, progress=False)
    t = out["time"].values
    want = 7.5 * t - 20 * np.log(np.cos(t / 4))
    got = out["mean"].values.reshape(len(t))
    assert np.all(np.abs(got - want) <= 4.5 * np.sqrt(np.maximum(want, 1e-12) / n)), (got, want)


def test_a_compartment_growing_by_a_rate_rule():
    """V' = V / 2 (V(0) = 1) and A (a concentration in V) decays at k A: the rate per molecule is k / V(t) =
    e^{-t/2}, so A(t) is binomial with p = exp(-2 (1 - e^{-t/2})) (k = 1). Means of 400 realizations at each
    grid time within z = 4.5 (the hybrid loop's integration error is far below)."""
    from distsim import ssa

    text = doc(sp("A", 500.0, conc=True), rx("R", {"A": 1}, {}, "k * A"), {"k": 1.0},
               extra=f'<listOfRules><rateRule variable="V">{mathml("0.5 * V")}</rateRule></listOfRules>')
    net = read_sbml_string(text)
    n = 400
    out = ssa.simulate(net, t_end=3.0, points=7, realizations=n, seed=3, backend="cpu", client=None, progress=False)
    t = out["time"].values
    p = np.exp(-2 * (1 - np.exp(-t / 2)))
    got = out["mean"].values.reshape(len(t), -1)[:, 0]
    assert np.all(np.abs(got - 500 * p) <= 4.5 * np.sqrt(500 * p * (1 - p) / n) + 1e-9), (got, 500 * p)


@pytest.mark.gpu
def test_elementary_functions_cpu_equals_gpu():
    """Laws and rules with tanh, sinh, arcsinh, coth (the event loop) and tan of time (the hybrid loop) give the
    same bits on both backends: their expansions use only exp, log, sqrt, sin, cos and arithmetic."""
    from distsim import ssa

    laws = doc(sp("A", 50.0) + sp("B", 0.0),
               rx("R1", {"A": 1}, {"B": 1}, "k * A * (1 + tanh(B / 10 - 1))")
               + rx("R2", {"B": 1}, {"A": 1}, "k * B * cosh(A / 100) + arcsinh(B / 50)"),
               {"k": 0.7, "c": 0.0}, extra=rules(c="coth(1 + A / 10)"))
    hybrid = doc(sp("A", 0.0), rx("R", {}, {"A": 1}, "5 * (1.5 + tan(time / 4))"))
    kw = dict(t_end=3.0, points=7, realizations=256, seed=11, keep_final=True)
    for text in (laws, hybrid):
        net = read_sbml_string(text)
        for method in ("direct", "tree"):
            a = ssa.simulate(net, backend="cpu", method=method, **kw)
            b = ssa.simulate(net, backend="gpu", method=method, **kw)
            assert b.attrs["backend"] == "gpu"
            for v in ("final_state", "firings", "mean", "variance"):
                assert np.array_equal(a[v].values, b[v].values), (method, v)


@pytest.mark.gpu
def test_changing_compartments_and_nonfinite_rules_cpu_equals_gpu():
    """An event doubling a compartment, a rate rule growing one, and a rule that is 0/0 at t = 0 (observed only):
    the same bits on both backends."""
    from distsim import ssa

    ev = ('<listOfEvents><event id="dilute" useValuesFromTriggerTime="true"><trigger initialValue="false" '
          f'persistent="true">{mathml("time >= 1")}</trigger><listOfEventAssignments><eventAssignment variable="V">'
          f'{mathml("2 * V")}</eventAssignment></listOfEventAssignments></event></listOfEvents>')
    dilute = doc(sp("A", 1000.0, conc=True) + sp("B", 0.0), rx("R", {"A": 1}, {"B": 1}, "k * A"),
                 {"k": 1.0, "ratio": None}, extra=rules(ratio="B / (A + B - 1000)") + ev)
    grow = doc(sp("A", 500.0, conc=True), rx("R", {"A": 1}, {}, "k * A"), {"k": 1.0},
               extra=f'<listOfRules><rateRule variable="V">{mathml("0.5 * V")}</rateRule></listOfRules>')
    kw = dict(t_end=3.0, points=7, realizations=256, seed=13, keep_final=True)
    for text in (dilute, grow):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SBMLWarning)
            net = read_sbml_string(text)
        for method in ("direct", "tree"):
            a = ssa.simulate(net, backend="cpu", method=method, **kw)
            b = ssa.simulate(net, backend="gpu", method=method, **kw)
            assert b.attrs["backend"] == "gpu"
            for v in ("final_state", "firings", "mean", "variance"):
                assert np.array_equal(a[v].values, b[v].values), (method, v)
