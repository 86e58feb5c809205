"""Models from the ecosystem: files exported by GillesPy2, antimony and tellurium (tests/data/ecosystem,
see its README for provenance), in-memory inputs, and rate inference on SBML.

* Every exported file loads, with the propensities its tool simulates.
* distsim's ensemble means agree with the peer's own ensemble of the same file: at every time point
  t > 0 and species, Z = (mean - mean_peer) / sqrt(var / n + var_peer / n_peer) must satisfy |Z| < z*,
  z* = Phi^-1(1 - alpha / (2 m)) with alpha = 0.001 for the whole file and m the number of
  comparisons (Bonferroni), so a correct simulator fails a file with probability <= 0.001. Seeds are
  fixed. Peers (GillesPy2's NumPySSASolver on GillesPy2 exports, libRoadRunner's gillespie on
  antimony/tellurium exports) are skipped when absent.
* SBML strings, antimony strings, gillespy2.Model objects and the Builder give the expected networks;
  GillesPy2 events and assignment rules are parsed (never evaluated) and an event follows the exact
  law of a reset immigration-death process.
* `mcmc.infer_rates` on an SBML Michaelis-Menten model with `k1*E*S` laws gives the same draws, bit
  for bit, as the `.rxn` model with the same seed.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

import distsim.ssa as ssa
from distsim.errors import ModelError
from distsim.models.formats.sbml import SBMLWarning, read_sbml, read_sbml_string

ROOT = Path(__file__).resolve().parents[2]
ECO = ROOT / "tests" / "data" / "ecosystem"
MM_RXN = ROOT / "examples" / "mcmc" / "michaelis_menten.rxn"
MM_DATA = ROOT / "examples" / "mcmc" / "mm_observations.csv"
ALPHA = 1e-3
# GillesPy2 1.8.3 parses propensities with ast.NodeVisitor.visit_Num (deprecated since Python 3.8)
pytestmark = pytest.mark.filterwarnings("ignore:visit_Num is deprecated:DeprecationWarning")

# file stem: (species, initial, mass-action rates in reaction order (None = general law), propensity(x) by hand)
FILES = {
    "gillespy2_michaelis_menten": (("E", "ES", "P", "S"), (120, 0, 0, 301), ["k1", "k3", "k2"],
                                   lambda E, ES, P, S: [1e-3 * E * S, 0.1 * ES, 0.2 * ES]),
    # GillesPy2's own 2P mass action is k1 P (P - 1) / vol (no 1/2): a general law here, same propensity
    "gillespy2_dimerisation": (("P2", "P"), (0, 100), [None, "k2"], lambda P2, P: [1e-3 * P * (P - 1), 0.01 * P2]),
    "gillespy2_birth_death": (("X",), (100,), ["lam", "mu"], lambda X: [0.1 * X, 0.11 * X]),
    "antimony_michaelis_menten": (("E", "S", "ES", "P"), (120, 301, 0, 0), ["k1", "k2", "k3"],
                                  lambda E, S, ES, P: [1e-3 * E * S, 0.2 * ES, 0.1 * ES]),
    # 'dimer: 2 P -> P2; k1*P*(P - 1)/2 - k2*P2' (reversible) splits into two mass-action reactions
    "antimony_dimerisation": (("P", "P2"), (100, 0), ["k1", "k2"], lambda P, P2: [1e-3 * P * (P - 1) / 2, 0.01 * P2]),
    "antimony_birth_death": (("X",), (100,), ["lam", "mu"], lambda X: [0.1 * X, 0.11 * X]),
    # tellurium 'A -> B; kf*A - kr*B' splits into _J0_f and _J0_r
    "tellurium_isomerisation": (("A", "B"), (50, 0), ["kf", "kr"], lambda A, B: [0.3 * A, 0.2 * B]),
}


def _load(path: Path):
    """GillesPy2 writes substanceUnits="mole" but means molecule counts: its files need system_size=1
    (read by their units, 100 mol would be 6e25 molecules, which the reader refuses)."""
    if path.stem.startswith("gillespy2_"):
        with pytest.raises(ModelError, match="system_size=1 reads each amount as a number of molecules"):
            ssa.load(path)
        return ssa.load(path, system_size=1)
    return ssa.load(path)


def states(n_species: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 400, size=(50, n_species)).astype(float)


@pytest.mark.parametrize("stem", sorted(FILES))
def test_exported_file_loads(stem):
    species, initial, rates, prop = FILES[stem]
    path = ECO / f"{stem}.xml"
    with warnings.catch_warnings():
        warnings.simplefilter("error", SBMLWarning)  # these files need no lenient reading
        net = _load(path)
    assert net.species == species and net.initial == initial
    assert [r.rate if r.mass_action else None for r in net.reactions] == rates
    x = states(len(species))
    np.testing.assert_allclose(net.propensities(x), np.array(prop(*x.T)).T, rtol=1e-12)
    assert net.source == str(path)


@pytest.mark.parametrize("stem", ["antimony_michaelis_menten", "antimony_dimerisation", "antimony_birth_death"])
def test_antimony_files_give_the_network_of_their_sbml_export(stem):
    pytest.importorskip("antimony")
    ant = ssa.load(ECO / f"{stem}.ant")
    assert ant.digest() == ssa.load(ECO / f"{stem}.xml").digest()


# ------------------------------------------------------------------------------------------------
# means against the peer's own ensemble

T_END, POINTS, N_OURS = 20.0, 11, 4000


def _gillespy2_ensemble(path: Path, n: int, seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    gillespy2 = pytest.importorskip("gillespy2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, _ = gillespy2.import_SBML(str(path))
        model.timespan(np.linspace(0, T_END, POINTS))
        res = model.run(solver=gillespy2.NumPySSASolver, number_of_trajectories=n, seed=seed)
    out = {}
    for sp in model.listOfSpecies:
        x = np.array([traj[sp] for traj in res])  # [n, time]
        out[sp] = (x.mean(axis=0), x.var(axis=0, ddof=1))
    return out


def _roadrunner_ensemble(path: Path, n: int, seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    roadrunner = pytest.importorskip("roadrunner")
    rr = roadrunner.RoadRunner(str(path))
    rr.setIntegrator("gillespie")
    rr.getIntegrator().setValue("variable_step_size", False)
    runs = []
    for k in range(n):
        rr.reset()
        rr.getIntegrator().setValue("seed", seed + k)
        runs.append(np.asarray(rr.simulate(0, T_END, POINTS)))
    x = np.stack(runs)  # [n, time, 1 + species]
    names = [c.strip("[]") for c in rr.simulate(0, T_END, POINTS).colnames[1:]]
    return {sp: (x[:, :, 1 + k].mean(axis=0), x[:, :, 1 + k].var(axis=0, ddof=1)) for k, sp in enumerate(names)}


PEERS = {  # stem: (peer ensemble, realizations of the peer)
    "gillespy2_michaelis_menten": (_gillespy2_ensemble, 400),
    "gillespy2_dimerisation": (_gillespy2_ensemble, 1000),
    "gillespy2_birth_death": (_gillespy2_ensemble, 1000),
    "antimony_michaelis_menten": (_roadrunner_ensemble, 1000),
    "antimony_dimerisation": (_roadrunner_ensemble, 1000),
    "antimony_birth_death": (_roadrunner_ensemble, 1000),
    "tellurium_isomerisation": (_roadrunner_ensemble, 1000),
}


@pytest.mark.parametrize("stem", sorted(PEERS))
def test_means_agree_with_the_peer(stem):
    ensemble, n_peer = PEERS[stem]
    path = ECO / f"{stem}.xml"
    peer = ensemble(path, n_peer, seed=11)
    net = _load(path)
    ds = ssa.simulate(net, t_end=T_END, points=POINTS, realizations=N_OURS, seed=5, quantiles=None)
    z = []
    for sp, (m_peer, v_peer) in peer.items():
        i = net.index(sp)
        mean, var = ds["mean"].values[1:, i], ds["variance"].values[1:, i]
        se = np.sqrt(var / N_OURS + v_peer[1:] / n_peer)
        ok = se > 0
        z.extend(((mean - m_peer[1:])[ok] / se[ok]).tolist())
    bound = norm.ppf(1 - ALPHA / (2 * len(z)))
    assert len(z) >= POINTS - 1
    assert np.max(np.abs(z)) < bound, f"|Z| up to {np.max(np.abs(z)):.2f} (bound {bound:.2f}): {np.round(z, 2)}"


# ------------------------------------------------------------------------------------------------
# in-memory inputs

MM_SBML = """<?xml version="1.0" encoding="UTF-8"?>
<sbml xmlns="http://www.sbml.org/sbml/level3/version1/core" level="3" version="1">
  <model id="mm">
    <listOfCompartments><compartment id="cell" spatialDimensions="3" size="1" constant="true"/></listOfCompartments>
    <listOfSpecies>
      <species id="E" compartment="cell" initialConcentration="120" hasOnlySubstanceUnits="false"
               boundaryCondition="false" constant="false"/>
      <species id="S" compartment="cell" initialConcentration="301" hasOnlySubstanceUnits="false"
               boundaryCondition="false" constant="false"/>
      <species id="ES" compartment="cell" initialConcentration="0" hasOnlySubstanceUnits="false"
               boundaryCondition="false" constant="false"/>
      <species id="P" compartment="cell" initialConcentration="0" hasOnlySubstanceUnits="false"
               boundaryCondition="false" constant="false"/>
    </listOfSpecies>
    <listOfParameters>
      <parameter id="k1" value="0.001" constant="true"/><parameter id="k2" value="0.2" constant="true"/>
      <parameter id="k3" value="0.1" constant="true"/>
    </listOfParameters>
    <listOfReactions>
      <reaction id="bind" reversible="true">
        <listOfReactants><speciesReference species="E" stoichiometry="1" constant="true"/>
          <speciesReference species="S" stoichiometry="1" constant="true"/></listOfReactants>
        <listOfProducts><speciesReference species="ES" stoichiometry="1" constant="true"/></listOfProducts>
        <kineticLaw><math xmlns="http://www.w3.org/1998/Math/MathML">
          <apply><times/><ci>cell</ci><apply><minus/>
            <apply><times/><ci>k1</ci><ci>E</ci><ci>S</ci></apply><apply><times/><ci>k2</ci><ci>ES</ci></apply>
          </apply></apply></math></kineticLaw>
      </reaction>
      <reaction id="produce" reversible="false">
        <listOfReactants><speciesReference species="ES" stoichiometry="1" constant="true"/></listOfReactants>
        <listOfProducts><speciesReference species="E" stoichiometry="1" constant="true"/>
          <speciesReference species="P" stoichiometry="1" constant="true"/></listOfProducts>
        <kineticLaw><math xmlns="http://www.w3.org/1998/Math/MathML">
          <apply><times/><ci>cell</ci><ci>k3</ci><ci>ES</ci></apply></math></kineticLaw>
      </reaction>
    </listOfReactions>
  </model>
</sbml>
"""


def test_sbml_string_with_reversible_split_and_missing_fast():
    """L3V1 without 'fast' (a warning), concentrations in 'cell' (size 1) and a reversible law
    cell * (k1 E S - k2 ES): the .rxn Michaelis-Menten network exactly (same digest)."""
    with pytest.warns(SBMLWarning, match="'fast' is missing"):
        net = ssa.load(MM_SBML)
    assert [r.name for r in net.reactions] == ["bind_f", "bind_r", "produce"]
    assert net.digest() == ssa.load(MM_RXN).digest()
    with pytest.warns(SBMLWarning):
        same = read_sbml_string(MM_SBML.encode())
    assert same.digest() == net.digest() and same.source == "<string>"
    with pytest.warns(SBMLWarning), pytest.raises(ModelError, match="is reversible and its kinetic law"):
        read_sbml_string(MM_SBML.replace("<minus/>", "<plus/>"), reversible="error")
    with pytest.warns(SBMLWarning):
        forward = ssa.load(MM_SBML, reversible="forward")  # the law as one (net) propensity
    assert forward.n_reactions == 2 and not forward.reactions[0].mass_action


MM_SBML_L3V2 = MM_SBML.replace("level3/version1", "level3/version2").replace('version="1"', 'version="2"')


def test_l3v2_with_extendedmath_plugin_loads_without_warning():
    """libsbml reports its internal 'l3v2extendedmath' package as enabled and required on every L3V2
    document; 'fast' does not exist in L3V2."""
    libsbml = pytest.importorskip("libsbml")
    doc = libsbml.readSBMLFromString(MM_SBML_L3V2)
    assert doc.getPackageRequired("l3v2extendedmath")
    with warnings.catch_warnings():
        warnings.simplefilter("error", SBMLWarning)
        net = read_sbml_string(MM_SBML_L3V2)
    assert net.digest() == ssa.load(MM_RXN).digest()


def test_level2_conversion_reads_the_same_network():
    libsbml = pytest.importorskip("libsbml")
    doc = libsbml.readSBMLFromString(MM_SBML_L3V2)
    assert doc.setLevelAndVersion(2, 4, False)
    text = libsbml.writeSBMLToString(doc)
    assert 'level="2" version="4"' in text
    # Level 2's default substance unit is the mole (the L3 original declares none): 120 mol is refused
    with pytest.raises(ModelError, match="mole \\(the Level 1/2 default substance unit\\)"):
        read_sbml_string(text)
    assert read_sbml_string(text, system_size=1).digest() == ssa.load(MM_RXN).digest()


def test_builder_gives_the_rxn_network():
    net = (ssa.Builder("mm").add_species("E", 120).add_species("S", 301).add_species("ES").add_species("P")
           .add_parameter("k1", 0.001).add_parameter("k2", 0.2).add_parameter("k3", 0.1)
           .add_reaction("E + S -> ES", "k1").add_reaction("ES -> E + S", "k2")
           .add_reaction("ES -> E + P", "k3", name="produce").build())
    assert net.digest() == ssa.load(MM_RXN).digest()
    rev = (ssa.Builder().add_species("A", 5).add_reaction("A <-> B", ("kf", 0.5)).add_parameter("kf", 2)
           .add_reaction("0 -> A", law="kf * 3").build())
    assert rev.species == ("A", "B") and [r.rate if r.mass_action else None for r in rev.reactions] == ["kf", 0.5, None]
    np.testing.assert_allclose(rev.propensities(np.array([5.0, 1.0])), [10.0, 0.5, 6.0])
    for bad, phrase in [(lambda b: b.add_reaction("A -> B", "nope"), "add_reaction('A -> B', 'nope')"),
                        (lambda b: b.add_species("A\ninit: A = 3"), "not a valid name"),
                        (lambda b: b.add_parameter("k", float("nan")), "finite number"),
                        (lambda b: b.add_reaction("A -> B # x", 1.0), "without '#'"),
                        (lambda b: b.add_reaction("A -> B", 1.0, law="A"), "either")]:
        with pytest.raises(ModelError, match=phrase.replace("(", r"\(").replace(")", r"\)")):
            bad(ssa.Builder().add_species("A", 1)).build()


def test_antimony_string_and_missing_package(monkeypatch):
    pytest.importorskip("antimony")
    text = (ECO / "antimony_michaelis_menten.ant").read_text()
    net = ssa.load(text, format="antimony")
    assert net.digest() == ssa.load(MM_RXN).digest()
    with pytest.raises(ModelError, match="antimony: .*line 2"):
        ssa.load("model m\n  J1: A -> ; k*(A\nend\n", format="antimony")
    with pytest.raises(ValueError, match="format='rxn' or format='antimony'"):
        ssa.load(text)
    import sys

    monkeypatch.setitem(sys.modules, "antimony", None)
    with pytest.raises(ModelError, match="distsim-bio\\[antimony\\]"):
        ssa.load(text, format="antimony")


def test_gillespy2_model_object():
    gillespy2 = pytest.importorskip("gillespy2")
    m = gillespy2.Model(name="mm")
    m.add_species([gillespy2.Species(name=s, initial_value=v) for s, v in [("E", 120), ("S", 301), ("ES", 0),
                                                                           ("P", 0)]])
    m.add_parameter([gillespy2.Parameter(name="k1", expression=0.001), gillespy2.Parameter(name="k2", expression="0.2"),
                     gillespy2.Parameter(name="k3", expression="k2 / 2")])
    m.add_reaction([gillespy2.Reaction(name="bind", reactants={"E": 1, "S": 1}, products={"ES": 1}, rate="k1"),
                    gillespy2.Reaction(name="unbind", reactants={"ES": 1}, products={"E": 1, "S": 1}, rate="k2"),
                    gillespy2.Reaction(name="produce", reactants={"ES": 1}, products={"E": 1, "P": 1},
                                       propensity_function="k3 * ES"),
                    gillespy2.Reaction(name="pair", reactants={"P": 2}, products={}, rate="k1")])
    net = ssa.from_gillespy2(m)
    assert ssa.load(m).digest() == net.digest()
    assert net.species == ("E", "ES", "P", "S")  # GillesPy2 sorts species and reactions by name
    assert [r.name for r in net.reactions] == ["bind", "pair", "produce", "unbind"]
    assert net.params["k3"] == 0.1
    # GillesPy2's 2P mass action k1 P (P - 1) / vol is 2 k1 C(P, 2): a general law with that propensity
    assert [r.rate if r.mass_action else None for r in net.reactions] == ["k1", None, "k3", "k2"]
    x = states(4)
    E, ES, P, S = x.T
    np.testing.assert_allclose(net.propensities(x), np.c_[1e-3 * E * S, 1e-3 * P * (P - 1), 0.1 * ES, 0.2 * ES],
                               rtol=1e-12)
    m.add_rate_rule(gillespy2.RateRule(name="drift", variable="P", formula="k1"))
    with pytest.raises(ModelError, match="rate rules are not supported by from_gillespy2"):
        ssa.from_gillespy2(m)


def _immigration_death_with_reset(gillespy2, trigger: str = "t >= 5 and X < 1000", **event):
    """0 -> X (k = 10), X -> 0 (d = 0.5) from X = 0; at t = 5 the event sets X to the parameter `level`."""
    m = gillespy2.Model(name="reset")
    m.add_parameter([gillespy2.Parameter(name="k", expression="10"), gillespy2.Parameter(name="d", expression="0.5"),
                     gillespy2.Parameter(name="level", expression="100")])
    m.add_species([gillespy2.Species(name="X", initial_value=0, mode="discrete")])
    m.add_reaction([gillespy2.Reaction(name="birth", reactants={}, products={"X": 1}, rate="k"),
                    gillespy2.Reaction(name="death", reactants={"X": 1}, products={}, rate="d")])
    m.add_event(gillespy2.Event(name="reset", trigger=gillespy2.EventTrigger(expression=trigger, persistent=True),
                                assignments=[gillespy2.EventAssignment(variable="X", expression="level")], **event))
    return m


def test_gillespy2_events_and_rules_are_parsed_not_evaluated():
    gillespy2 = pytest.importorskip("gillespy2")
    from distsim.models.arith import Num, Param, Species, Time
    from distsim.models.events import Compare, Logic, Truth

    m = _immigration_death_with_reset(gillespy2, trigger="(not X > 3) & (5 <= t < 7 or False) | (X != 2)",
                                      priority="level - 1", use_values_from_trigger_time=True)
    m.add_species([gillespy2.Species(name="Y", initial_value=0, mode="discrete")])
    m.add_assignment_rule(gillespy2.AssignmentRule(name="twice", variable="Y", formula="2 * X + level"))
    m.add_event(gillespy2.Event(name="raise", trigger=gillespy2.EventTrigger(expression="X >= 50", initial_value=True),
                                assignments=[gillespy2.EventAssignment(variable="level", expression="level * 2 ** 1")]))
    net = ssa.from_gillespy2(m)
    reset, raise_ = net.events
    X, level = Species(0), Param("level")
    assert reset.trigger == Logic("or", (
        Logic("and", (Logic("not", (Compare(">", X, Num(3.0)),)),
                      Logic("or", (Logic("and", (Compare("<=", Num(5.0), Time()), Compare("<", Time(), Num(7.0)))),
                                   Truth(False))))),
        Compare("!=", X, Num(2.0))))
    assert (reset.persistent, reset.initial_value, reset.use_values_from_trigger_time) == (True, False, True)
    assert reset.assignments[0].target == "X" and reset.assignments[0].species == 0
    assert net.params["level"] == 100.0 and reset.priority is not None
    assert raise_.initial_value and not raise_.persistent  # GillesPy2's defaults: persistent=False
    assert raise_.assignments[0].target == "level" and raise_.assignments[0].species == -1
    assert [(r.id, r.target, r.species) for r in net.rules] == [("twice", "Y", 1)]
    assert net.initial == (0, 100)  # the rule holds at t = 0

    bad = {"X >": "is not an expression", "X + 1": "is not a condition", "X ^ 2 > 1": "is not arithmetic",
           "__import__('os').system('exit 1') > 0": "is not arithmetic", "X is None": "is not a condition",
           "Z > 1": "unknown"}
    for trigger, message in bad.items():
        with pytest.raises(ModelError, match=message):
            ssa.from_gillespy2(_immigration_death_with_reset(gillespy2, trigger=trigger))
    with pytest.raises(ModelError, match="event delays are not supported"):
        ssa.from_gillespy2(_immigration_death_with_reset(gillespy2, delay="1.0"))
    m = _immigration_death_with_reset(gillespy2)
    m.add_assignment_rule(gillespy2.AssignmentRule(name="a", variable="k", formula="d * 20"))
    m.add_assignment_rule(gillespy2.AssignmentRule(name="b", variable="d", formula="k / 20"))
    with pytest.raises(ModelError, match="cycle"):
        ssa.from_gillespy2(m)


def test_gillespy2_event_follows_the_exact_law():
    """Immigration-death from X = 0, reset to 100 at t = 5: X(4) ~ Poisson(20 (1 - e^-2)) and
    X(10) ~ Binomial(100, e^-2.5) + Poisson(20 (1 - e^-2.5)). Each mean is tested with
    |Z| < Phi^-1(1 - 0.001 / 4) (two time points, Bonferroni); the same model written in antimony
    gives the same realizations, bit for bit."""
    gillespy2 = pytest.importorskip("gillespy2")
    from distsim.engine import LocalExecutor

    net = ssa.from_gillespy2(_immigration_death_with_reset(gillespy2))
    n = 4000
    kw = dict(t_end=10.0, points=11, realizations=n, seed=5, client=LocalExecutor("cpu"), quantiles=None)
    ds = ssa.simulate(net, **kw)
    p4, p10 = np.exp(-0.5 * 4), np.exp(-0.5 * 5)
    expected = {4: (20 * (1 - p4), 20 * (1 - p4)), 10: (100 * p10 + 20 * (1 - p10), 100 * p10 * (1 - p10) + 20 * (1 - p10))}
    z_star = norm.ppf(1 - ALPHA / 4)
    for t, (mean, var) in expected.items():
        z = (float(ds["mean"].sel(time=float(t), species="X")) - mean) / np.sqrt(var / n)
        assert abs(z) < z_star, (t, z)
    antimony = pytest.importorskip("antimony")
    del antimony
    text = """model reset_model
      birth: => X; k
      death: X => ; d * X
      reset: at (time >= 5 && X < 1000), t0 = false, persistent = true, priority = 0: X = level
      k = 10; d = 0.5; level = 100; X = 0
    end"""
    other = ssa.simulate(ssa.load(text, format="antimony"), **kw)
    assert np.array_equal(other["mean"].values, ds["mean"].values)


# ------------------------------------------------------------------------------------------------
# rate inference on SBML


@pytest.mark.filterwarnings("ignore::distsim.errors.ConvergenceWarning")  # 30 iterations: not converged
def test_infer_rates_on_sbml_gives_the_rxn_draws():
    """The SBML export of the Michaelis-Menten model with k1*E*S-style laws is read as mass action, so
    infer_rates gives the same posterior draws, bit for bit, as the .rxn model with the same seed."""
    import distsim.mcmc as mcmc
    from distsim.engine import LocalExecutor

    sbml = read_sbml(ECO / "antimony_michaelis_menten.xml")
    rxn = ssa.load(MM_RXN)
    prior = {"k1": (2.0, 1000.0), "k2": (2.0, 10.0), "k3": (2.0, 10.0)}
    kw = dict(prior=prior, iterations=30, burn_in=0, chains=2, seed=8, client=LocalExecutor("cpu"))
    a = mcmc.infer_rates(sbml, MM_DATA, **kw)
    b = mcmc.infer_rates(rxn, MM_DATA, **kw)
    for v in ("k1", "k2", "k3"):
        assert a[v].shape == (2, 30)
        assert np.array_equal(a[v].values, b[v].values), v
    kw.update(iterations=3)
    c = mcmc.infer_rates(ECO / "antimony_michaelis_menten.xml", MM_DATA, **kw)  # a path goes through ssa.load
    assert np.array_equal(c["k1"].values, b["k1"].values[:, :3])
