"""SBML amounts from units: molecules = amount x molecules per substance unit (Avogadro for a mole,
or ``system_size=``), laws rescaled to firings per time, no silent rounding, initial assignments,
tolerated drawing packages, bounded input -- against hand computations and curated BioModels."""

from __future__ import annotations

import math
import pickle
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from distsim import ssa
from distsim.errors import DistsimError, ModelError, SBMLWarning
from distsim.models.arith import evaluate
from distsim.models.formats import sbml as sbml_mod
from distsim.models.formats.reaction_text import parse_reactions
from distsim.models.formats.sbml import AVOGADRO, read_sbml, read_sbml_string
from distsim.ssa.errors import SimulationError

libsbml = pytest.importorskip("libsbml")

BIOMODELS = Path(__file__).resolve().parents[1] / "data" / "biomodels"
MMOL = 6.02214076e23 * 1e-3  # molecules per millimole, by hand


def mathml(formula: str) -> str:
    return libsbml.writeMathMLToString(libsbml.parseL3Formula(formula)).split("?>", 1)[-1]


def sp(sid: str, value: float, *, conc: bool = False, units: str | None = None, comp: str = "V") -> str:
    init = f'initialConcentration="{value!r}"' if conc else f'initialAmount="{value!r}"'
    u = f' substanceUnits="{units}"' if units else ""
    return (f'<species id="{sid}" compartment="{comp}" {init}{u} hasOnlySubstanceUnits="{"false" if conc else "true"}" '
            'boundaryCondition="false" constant="false"/>')


def rx(rid: str, reactants: dict[str, float], products: dict[str, float], formula: str) -> str:
    def refs(d: dict[str, float]) -> str:
        return "".join(f'<speciesReference species="{s}" stoichiometry="{n!r}" constant="true"/>' for s, n in d.items())
    side = ((f"<listOfReactants>{refs(reactants)}</listOfReactants>" if reactants else "")
            + (f"<listOfProducts>{refs(products)}</listOfProducts>" if products else ""))
    return f'<reaction id="{rid}" reversible="false">{side}<kineticLaw>{mathml(formula)}</kineticLaw></reaction>'


def doc(species: str, reactions: str, params: dict[str, float] | None = None, *, units: str = "",
        model_attrs: str = "", extra: str = "", size: float = 2.0) -> str:
    ps = "".join(f'<parameter id="{k}" value="{v!r}" constant="true"/>' for k, v in (params or {}).items())
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<sbml xmlns="http://www.sbml.org/sbml/level3/version2/core" '
            f'level="3" version="2">\n<model id="m"{model_attrs}>\n'
            + (f"<listOfUnitDefinitions>{units}</listOfUnitDefinitions>\n" if units else "")
            + f'<listOfCompartments><compartment id="V" size="{size!r}" constant="true"/></listOfCompartments>\n'
            f"<listOfSpecies>{species}</listOfSpecies>\n"
            + (f"<listOfParameters>{ps}</listOfParameters>\n" if ps else "")
            + extra + f"\n<listOfReactions>{reactions}</listOfReactions>\n</model>\n</sbml>\n")


MMOL_UNIT = ('<unitDefinition id="mmol"><listOfUnits><unit kind="mole" exponent="1" scale="-3" multiplier="1"/>'
             '</listOfUnits></unitDefinition>')


def _amount(count: int, omega: float) -> float:
    return count / omega  # an amount whose molecules (x omega) are `count` within float rounding


# ------------------------------------------------------------------------------------------------
# amounts and laws from units, against hand computation

def test_mmol_amounts_and_mass_action_rates_by_hand():
    """mmol: omega = 6.02214076e23 x 1e-3. A law in substance/time becomes firings/time = omega x law,
    species symbols amounts = count / omega (concentrations: / (omega V)); mass action keeps its shape
    with theta' = theta x (omega V)^(1 - order) for concentrations (omega^(1 - order) for amounts)."""
    k0, k1, k2, kc = 1e-20, 0.3, 5e3, 7e3
    species = (sp("A", _amount(1000, MMOL)) + sp("B", _amount(2000, MMOL))
               + sp("C", _amount(300, 2.0 * MMOL), conc=True) + sp("D", _amount(400, 2.0 * MMOL), conc=True))
    reactions = (rx("make", {}, {"A": 1}, "k0") + rx("lose", {"A": 1}, {}, "k1 * A")
                 + rx("bind", {"A": 1, "B": 1}, {}, "k2 * A * B") + rx("cd", {"C": 1, "D": 1}, {}, "V * kc * C * D"))
    net = read_sbml_string(doc(species, reactions, {"k0": k0, "k1": k1, "k2": k2, "kc": kc}, units=MMOL_UNIT,
                               model_attrs=' substanceUnits="mmol" extentUnits="mmol"'))
    assert net.initial == (1000, 2000, 300, 400)
    assert [r.rate for r in net.reactions] == ["k0__stochastic", "k1", "k2__stochastic", "kc__stochastic"]
    theta = [net.theta(j) for j in range(4)]
    np.testing.assert_allclose(theta, [k0 * MMOL, k1, k2 / MMOL, kc / (MMOL * 2.0)], rtol=1e-15)
    x = np.array([[1000.0, 2000.0, 300.0, 400.0], [7.0, 0.0, 5.0, 11.0]])
    want = np.array([[k0 * MMOL, k1 * 1000, k2 / MMOL * 1000 * 2000, kc / (2 * MMOL) * 300 * 400],
                     [k0 * MMOL, k1 * 7, 0.0, kc / (2 * MMOL) * 5 * 11]])
    np.testing.assert_allclose(net.propensities(x), want, rtol=1e-14)
    meta = dict(net.metadata)
    assert float(meta["system_size"]) == MMOL and meta["system_size_source"] == "units"
    assert "mole" in meta["substance_unit"] and "k2__stochastic = k2 x" in meta["derived_rates"]
    # the model parameter is gone from the network: changing it is an error, never a stale copy
    with pytest.raises(KeyError, match="unknown parameter 'k2'"):
        net.with_parameters(k2=1.0)


def test_derived_rate_falls_back_to_the_law_when_the_parameter_is_read_elsewhere():
    species = sp("A", _amount(1000, MMOL)) + sp("B", _amount(2000, MMOL))
    reactions = rx("bind", {"A": 1, "B": 1}, {}, "k2 * A * B") + rx("other", {"B": 1}, {}, "k2 * B / (1 + B)")
    net = read_sbml_string(doc(species, reactions, {"k2": 5e3}, units=MMOL_UNIT,
                               model_attrs=' substanceUnits="mmol"'))
    assert all(r.law is not None for r in net.reactions) and "derived_rates" not in dict(net.metadata)
    x = np.array([1000.0, 2000.0])
    b = 2000 / MMOL
    np.testing.assert_allclose(net.propensities(x), [5e3 / MMOL * 1000 * 2000, MMOL * 5e3 * b / (1 + b)], rtol=1e-13)
    assert net.with_parameters(k2=1.0).params["k2"] == 1.0


def test_system_size_is_molecules_per_substance_unit():
    species = sp("A", 2.5, units="mole") + sp("B", 0.5, conc=True, units="mole")
    reactions = rx("bind", {"A": 1, "B": 1}, {}, "k * A * B")  # A an amount, B a concentration in V = 2
    text = doc(species, reactions, {"k": 0.7})
    net = read_sbml_string(text, system_size=100)
    assert net.initial == (250, 100)  # 2.5 x 100; 0.5 x 2 x 100
    np.testing.assert_allclose(net.propensities(np.array([250.0, 100.0])),
                               [100 * 0.7 * (250 / 100) * (100 / (100 * 2.0))], rtol=1e-14)
    assert dict(net.metadata)["system_size_source"] == "system_size"
    with pytest.raises(ModelError, match=r"species 'A': initial amount 2.5 x 6.02214076e\+23 .* more than exact"):
        read_sbml_string(text)  # by its units, 2.5 mol: 1.5e24 molecules
    for bad in (0, -1.0, math.inf, math.nan, True, "10"):
        with pytest.raises(ValueError, match="system_size must be a positive number"):
            read_sbml_string(text, system_size=bad)
    with pytest.raises(ValueError, match="unknown rounding"):
        read_sbml_string(text, rounding="up")


def test_undeclared_and_item_units_read_amounts_as_molecules():
    species = sp("A", 40.0) + sp("B", 7.0, units="item")
    reactions = rx("bind", {"A": 1, "B": 1}, {}, "k * A * B")
    net = read_sbml_string(doc(species, reactions, {"k": 0.1}))
    assert net.initial == (40, 7) and net.reactions[0].rate == "k"
    assert dict(net.metadata)["system_size"] == "1.0"


def test_substance_units_of_different_sizes_are_refused():
    species = sp("A", 1e-21, units="mole") + sp("B", 7.0, units="item")
    with pytest.raises(ModelError, match="substance units of different sizes.*system_size="):
        read_sbml_string(doc(species, rx("r", {"A": 1}, {}, "k * A"), {"k": 0.1}))


def test_event_and_rule_assignments_to_species_are_converted():
    species = sp("A", 3.0) + sp("B", 1.0, conc=True)
    events = ('<listOfEvents><event id="e" useValuesFromTriggerTime="true"><trigger initialValue="false" '
              f'persistent="true">{mathml("time > 1")}</trigger><listOfEventAssignments>'
              f'<eventAssignment variable="A">{mathml("A + 2")}</eventAssignment>'
              f'<eventAssignment variable="B">{mathml("4")}</eventAssignment>'
              '</listOfEventAssignments></event></listOfEvents>')
    net = read_sbml_string(doc(species, rx("r", {"A": 1}, {}, "k * A"), {"k": 0.1}, extra=events), system_size=10)
    assert net.initial == (30, 20)  # 3 x 10; 1 x V (2) x 10
    a, b = net.events[0].assignments
    x = np.array([[30.0, 20.0]])
    assert float(evaluate(a.expr, x, net.params)[0]) == pytest.approx(50.0, rel=1e-15)  # (30/10 + 2) x 10
    assert float(evaluate(b.expr, x, net.params)[0]) == pytest.approx(80.0, rel=1e-15)  # 4 x V x 10


# ------------------------------------------------------------------------------------------------
# no silent rounding, no silent zero, no astronomical counts

def test_a_tiny_amount_is_never_silently_zero():
    text = doc(sp("A", 1.66e-21, units="item") + sp("B", 5.0, units="item"), rx("r", {"A": 1}, {"B": 1}, "k * A"),
               {"k": 1.0})
    with pytest.raises(ModelError, match=r"species 'A': initial amount 1.66e-21 = 1.66e-21 molecules is not a "
                                         r"whole number \(it would become 0 molecules\)") as info:
        read_sbml_string(text, file="tiny.xml")
    assert info.value.file == "tiny.xml" and info.value.line is not None
    with pytest.warns(SBMLWarning, match="rounded to 0"):
        net = read_sbml_string(text, rounding="nearest")
    assert net.initial == (0, 5) and dict(net.metadata)["rounded"] == "species 'A': 1.66e-21 -> 0"


def test_rounding_is_on_request_and_recorded_in_the_result():
    text = doc(sp("A", 10.4) + sp("B", 2.0), rx("r", {"A": 1}, {"B": 1}, "k * A"), {"k": 1.0})
    with pytest.raises(ModelError, match=r"10.4 molecules is not a whole number; pass rounding='nearest'"):
        read_sbml_string(text)
    net = read_sbml_string(text, rounding="nearest")
    assert net.initial == (10, 2)
    ds = ssa.simulate(net, t_end=0.5, points=3, realizations=64, seed=1, quantiles=None, backend="cpu")
    assert ds.attrs["model_rounded"] == "species 'A': 10.4 -> 10"
    assert ds.attrs["model_system_size"] == "1.0"
    batch = ssa.simulate_batch(net, [{"k": 1.0}, {"k": 2.0}], seeds=[1, 2], t_end=0.5, points=3, realizations=64,
                               quantiles=None, backend="cpu")
    assert batch.attrs["model_rounded"] == "species 'A': 10.4 -> 10"


def test_astronomical_counts_are_refused_with_the_firings_and_the_option():
    # 1e-9 mol = 6.0e14 molecules (< 2**53) firing at k = 1/s: 6.0e14 firings per second
    text = doc(sp("A", 1e-9, units="mole"), rx("r", {"A": 1}, {}, "k * A"), {"k": 1.0})
    with pytest.raises(ModelError, match=r"fire about 6.02e\+14 times per unit of model time \('A' starts with "
                                         r"6.02e\+14 molecules\).*pass system_size="):
        read_sbml_string(text)
    assert read_sbml_string(text, system_size=1e12).initial == (1000,)


# ------------------------------------------------------------------------------------------------
# initial assignments

def test_initial_assignments_in_dependency_order():
    """A's assignment reads k, assigned after it in the document: k is evaluated first."""
    ias = ('<listOfInitialAssignments>'
           f'<initialAssignment symbol="A">{mathml("2 * k")}</initialAssignment>'
           f'<initialAssignment symbol="k">{mathml("j + 1")}</initialAssignment>'
           f'<initialAssignment symbol="B">{mathml("A / 4 + V")}</initialAssignment>'
           '</listOfInitialAssignments>')
    species = sp("A", 0.0) + sp("B", 0.0, conc=True)
    text = doc(species, rx("r", {"A": 1}, {"B": 1}, "k * A"), {"j": 3.0, "k": 0.0}, extra=ias)
    net = read_sbml_string(text)
    assert net.initial == (8, 8)  # k = 4; A = 2 k = 8; B (a concentration) = A/4 + V = 4, x V (2) = 8
    assert net.params["k"] == 4.0 and net.reactions[0].rate == "k"
    with pytest.raises(ModelError, match=r"species 'A': initial assignment to 'A' \(2.0 \* k\) = 8.5 molecules is not a "
                                         "whole number"):
        read_sbml_string(text.replace('id="j" value="3.0"', 'id="j" value="3.25"'))
    net10 = read_sbml_string(text, system_size=10)
    # amounts: A = 2 k = 8 units = 80 molecules; B = (A/4 + V) = (8/4 + 2) = 4 per volume x 2 x 10 = 80
    assert net10.initial == (80, 80)


def test_initial_assignment_to_a_compartment_is_read():
    """V = 3 k at load (k = 1): a concentration of 2 in V is 6 molecules (more in tests/unit/test_sbml_reach.py)."""
    ias = (f'<listOfInitialAssignments><initialAssignment symbol="V">{mathml("3 * k")}</initialAssignment>'
           '</listOfInitialAssignments>')
    net = read_sbml_string(doc(sp("A", 2.0, conc=True), rx("r", {"A": 1}, {}, "k * A"), {"k": 1.0}, extra=ias))
    assert net.initial == (6,)


def test_antimony_repressilator_style_initial_assignment():
    """antimony's own export of `Y = n*10/cell` (a concentration assigned from a parameter and the
    compartment size) and of `Z = k*40` (an amount)."""
    pytest.importorskip("antimony")
    from distsim.models.formats.antimony import antimony_to_sbml, parse_antimony

    text = ("compartment cell = 4\nspecies Y in cell\nsubstanceOnly species Z in cell\nn = 2\nY = n*10/cell\n"
            "Z = k*40\nJ0: Y -> Z; k*Y\nk = 0.5\n")
    assert antimony_to_sbml(text).count("<initialAssignment ") == 2
    net = parse_antimony(text)
    assert dict(zip(net.species, net.initial)) == {"Y": 20, "Z": 20}  # (2 x 10 / 4) x size 4; 0.5 x 40


# ------------------------------------------------------------------------------------------------
# SimulationError is a DistsimError; drawings tolerated; input bounded

def test_simulation_error_is_a_distsim_error():
    net = parse_reactions("bad: A -> 0 ; law: -A\ninit: A = 5", name="bad")
    with pytest.raises(DistsimError) as info:
        ssa.simulate(net, t_end=1.0, realizations=8, quantiles=None, backend="cpu")
    assert isinstance(info.value, SimulationError) and isinstance(info.value, RuntimeError)
    assert "the propensity of reaction 0 'bad'" in info.value.message
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is SimulationError and str(again) == str(info.value)


LAYOUT = """<?xml version="1.0" encoding="UTF-8"?>
<sbml xmlns="http://www.sbml.org/sbml/level3/version1/core" xmlns:layout="http://www.sbml.org/sbml/level3/version1/layout/version1" level="3" version="1" layout:required="REQ">
  <model id="m">
    <listOfCompartments><compartment id="c" size="1" constant="true"/></listOfCompartments>
    <listOfSpecies><species id="A" compartment="c" initialAmount="5" hasOnlySubstanceUnits="true" boundaryCondition="false" constant="false"/></listOfSpecies>
    <listOfReactions><reaction id="R" reversible="false" fast="false"><listOfReactants><speciesReference species="A" stoichiometry="1" constant="true"/></listOfReactants>
      <kineticLaw><math xmlns="http://www.w3.org/1998/Math/MathML"><apply><times/><cn> 0.1 </cn><ci> A </ci></apply></math></kineticLaw></reaction></listOfReactions>
    <layout:listOfLayouts><layout:layout layout:id="lay"><layout:dimensions layout:width="100" layout:height="100"/>
      <layout:listOfSpeciesGlyphs><layout:speciesGlyph GLYPH layout:species="A"><layout:boundingBox layout:id="bb">
        <layout:position layout:x="0" layout:y="0"/><layout:dimensions layout:width="10" layout:height="10"/>
      </layout:boundingBox></layout:speciesGlyph></layout:listOfSpeciesGlyphs></layout:layout></layout:listOfLayouts>
  </model>
</sbml>
"""


@pytest.mark.parametrize("required, glyph, warns", [("false", 'layout:id="g"', False), ("true", 'layout:id="g"', True),
                                                    ("false", "", True)])
def test_layout_is_tolerated(required, glyph, warns):
    text = LAYOUT.replace("REQ", required).replace("GLYPH", glyph)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net = read_sbml_string(text)
    assert net.initial == (5,) and net.reactions[0].rate == 0.1
    assert any("the layout package does not change the model" in str(w.message) for w in caught) == warns


def test_huge_attribute_is_refused_before_libsbml():
    text = doc(sp("A", 1.0), rx("r", {"A": 1}, {}, "k * A"), {"k": 1.0}, model_attrs=' name="' + "x" * 10_000_000 + '"')
    t0 = time.perf_counter()
    with pytest.raises(ModelError, match=r"attribute 'name' of <model> has 10000000 characters, more than 100000") as e:
        read_sbml_string(text, file="big.xml")
    assert time.perf_counter() - t0 < 10.0  # libsbml alone takes > 75 s on it
    assert e.value.file == "big.xml" and e.value.line == 3


def test_document_size_is_bounded(tmp_path, monkeypatch):
    text = doc(sp("A", 1.0), rx("r", {"A": 1}, {}, "k * A"), {"k": 1.0})
    monkeypatch.setattr(sbml_mod, "MAX_SBML_BYTES", len(text.encode()) - 1)
    with pytest.raises(ModelError, match="more than the .* an SBML document may have"):
        read_sbml_string(text)
    path = tmp_path / "m.xml"
    path.write_text(text)
    with pytest.raises(ModelError, match="more than the .* an SBML document may have"):
        read_sbml(path)


def test_cli_system_size(tmp_path, capsys):
    from distsim.cli import main

    path = tmp_path / "m.xml"
    path.write_text(doc(sp("A", 0.25, units="mole"), rx("r", {"A": 1}, {}, "k * A"), {"k": 1.0}))
    out = tmp_path / "r.nc"
    assert main(["--in-process", "-q", "ssa", "simulate", str(path), "--system-size", "400", "--t-end", "1",
                 "-n", "64", "--points", "3", "-o", str(out)]) == 0
    import xarray as xr

    with xr.open_dataset(out) as ds:
        assert ds.attrs["model_system_size"] == "400.0" and float(ds["mean"][0, 0]) == 100.0
    rxn = tmp_path / "x.rxn"
    rxn.write_text("r: A -> 0 ; 1\ninit: A = 1\n")
    with pytest.raises(ValueError, match="not to text files"):
        ssa.load(rxn, system_size=2)


# ------------------------------------------------------------------------------------------------
# curated BioModels

def test_biomd1_tiny_mole_amount_is_named_then_rounded_on_request():
    """Edelstein 1996: B = 1.66057788110262e-21 mol (1000 molecules by the 1986 Avogadro constant)
    was read as 0 molecules; by its units it is 1000.0234 molecules: refused, or rounded to 1000."""
    path = BIOMODELS / "BIOMD0000000001.xml"
    with pytest.raises(ModelError, match=r"species 'B': initial amount 1.66057788110262e-21 x 6.02214076e\+23 "
                                         r"molecules per substance unit = 1000.023374294\d* molecules is not a whole "
                                         r"number; pass rounding='nearest'") as info:
        ssa.load(path)
    assert info.value.line == 206
    with warnings.catch_warnings():
        warnings.simplefilter("error", SBMLWarning)
        net = ssa.load(path, rounding="nearest")
    assert net.initial[net.index("B")] == 1000 and sum(net.initial) == 1000
    # its 17 reversible laws comp1 * (kf * X - kr * Y) split in two, also where an event changes kf
    assert net.n_reactions == 34 and all(r.name.endswith(("_f", "_r")) for r in net.reactions)
    assert dict(net.metadata)["rounded"] == "species 'B': 1000.0233742942522 -> 1000"


def test_biomd1_mean_and_variance_follow_the_rate_equations():
    """Every BIOMD1 reaction is first order (the ligand is in the rate constants): the 1000 receptors
    move independently, so the counts at time t are multinomial with the rate equations' solution
    m(t) / 1000 as probabilities. SSA mean and variance against that, Bonferroni z at alpha = 1e-3."""
    from scipy.integrate import solve_ivp
    from scipy.stats import norm

    net = ssa.load(BIOMODELS / "BIOMD0000000001.xml", rounding="nearest")
    t_end, points, R, N = 2e-3, 5, 1000, 1000
    grid = np.linspace(0, t_end, points)
    V = net.stoichiometry().astype(float)
    sol = solve_ivp(lambda t, m: V.T @ net.propensities(m), (0, t_end), np.array(net.initial, float), t_eval=grid,
                    method="Radau", rtol=1e-10, atol=1e-9)
    m = sol.y.T  # [time, species]
    assert abs(m.sum(axis=1) - N).max() < 1e-6
    ds = ssa.simulate(net, t_end=t_end, points=points, realizations=R, seed=3, quantiles=None, backend="cpu")
    mean, var = ds["mean"].values, ds["variance"].values
    p = np.clip(m / N, 0, 1)
    sd = np.sqrt(N * p * (1 - p))
    live = sd[1:] > 0.05
    z_crit = norm.isf(1e-3 / (2 * live.sum()))
    z = (mean[1:] - m[1:])[live] / (sd[1:][live] / np.sqrt(R))
    assert np.abs(z).max() < z_crit, (np.abs(z).max(), z_crit)
    # the sample variance: its standard error from the multinomial's fourth central moment (normal approx.)
    mu4 = N * p * (1 - p) * (1 + 3 * (N - 2) * p * (1 - p))
    se_var = np.sqrt((mu4 - (sd ** 4) * (R - 3) / (R - 1)) / R)
    zv = (var[1:] - sd[1:] ** 2)[live] / se_var[1:][live]
    assert np.abs(zv).max() < z_crit, (np.abs(zv).max(), z_crit)
    assert ds.attrs["model_system_size"] == repr(AVOGADRO)


def test_biomd12_item_units_read_as_before():
    """The repressilator redefines `substance` as item: one molecule per unit, as before."""
    path = BIOMODELS / "BIOMD0000000012.xml"
    net = ssa.load(path)
    assert net.initial[net.index("Y")] == 20
    assert dict(net.metadata)["system_size"] == "1.0" and "item" in dict(net.metadata)["substance_unit"]
    assert net.digest() == ssa.load(path, system_size=1).digest()


# ------------------------------------------------------------------------------------------------
# fractional stoichiometry

def test_fractional_stoichiometry_is_a_fraction_of_an_extent_per_firing():
    """0.5 A -> 1.5 B at law v: every stoichiometry is a whole multiple of q = 1/2, so a firing is half an
    extent: A -> 3 B at propensity v / 2 (the rate equations are unchanged: dA/dt = -0.5 v,
    dB/dt = 1.5 v)."""
    text = doc(sp("A", 40.0) + sp("B", 0.0), rx("r", {"A": 0.5}, {"B": 1.5}, "k * A"), {"k": 0.2})
    with pytest.warns(SBMLWarning, match=r"fractional stoichiometries: r: a firing is 1/2 of the law's extent"):
        net = read_sbml_string(text)
    r = net.reactions[0]
    assert r.reactants == ((0, 1),) and r.products == ((1, 3),)
    x = np.array([[40.0, 0.0], [7.0, 3.0]])
    a = net.propensities(x)[:, 0]
    np.testing.assert_allclose(a, 0.5 * 0.2 * x[:, 0], rtol=1e-15)
    drift = a[:, None] * net.stoichiometry()[0]  # firings/time x change per firing
    np.testing.assert_allclose(drift, np.stack([-0.5 * 0.2 * x[:, 0], 1.5 * 0.2 * x[:, 0]], axis=1), rtol=1e-15)
    assert "fractional_stoichiometry" in dict(net.metadata)
    with pytest.raises(ModelError, match=r"stoichiometry of reactant 'A' is 0.1234567, neither a whole number nor a "
                                         r"fraction p/q with q <= 1000; a firing moves whole molecules"):
        read_sbml_string(doc(sp("A", 40.0), rx("r", {"A": 0.1234567}, {}, "k * A"), {"k": 0.2}))


@pytest.mark.gpu
def test_biomd1_cpu_equals_gpu():
    """Laws rescaled by Omega = Avogadro (and the model's event) give the same bits on both backends."""
    net = ssa.load(BIOMODELS / "BIOMD0000000001.xml", rounding="nearest")
    kw = dict(t_end=2e-3, points=5, realizations=512, seed=7, keep_trajectories=True, keep_final=True)
    for method in ("direct", "tree"):
        a = ssa.simulate(net, backend="cpu", method=method, **kw)
        b = ssa.simulate(net, backend="gpu", method=method, **kw)
        assert b.attrs["backend"] == "gpu"
        for v in ("trajectory", "final_state", "firings", "mean", "variance"):
            assert np.array_equal(a[v].values, b[v].values), (method, v)


def test_sbml_qual_files_are_bounded_too(tmp_path):
    from distsim.models.formats.sbml_qual import read_sbml_qual

    path = tmp_path / "q.sbml"
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<sbml xmlns="http://www.sbml.org/sbml/level3/version1/core" '
                    'xmlns:qual="http://www.sbml.org/sbml/level3/version1/qual/version1" level="3" version="1" '
                    'qual:required="true">\n<model id="m" name="' + "x" * 200_000 + '"/>\n</sbml>\n')
    with pytest.raises(ModelError, match="attribute 'name' of <model> has 200000 characters") as info:
        read_sbml_qual(path)
    assert info.value.file == str(path) and info.value.line == 3
