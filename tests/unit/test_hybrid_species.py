"""Species with rate rules, assignment rules reading ``time`` or rate-rule variables, and ODE-only models
in the SSA's hybrid loop (issue 30).

Exact references: a decaying input species x' = -c x (an SBML species with a rate rule, a concentration)
driving 0 -> A at rate k x: A(t) Poisson with mean k x0 (1 - e^{-ct}) / c, and x reported on the grid
as x0 e^{-ct} in every realization; a birth process whose rate is the assignment rule k = a + b time
(Poisson with mean a t + b t^2 / 2); an ODE-only model x' = -c x against the closed form within the
integrator's tolerance (distsim.ssa.hybrid_ops: RTOL 1e-9 per step).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from distsim.errors import ModelError
from distsim.models.arith import BinOp, Num, Param, Time
from distsim.models.compile_reactions import compile_network
from distsim.models.events import AssignmentRule, RateRule
from distsim.models.formats.sbml import read_sbml_string
from distsim.models.reactions import Reaction, ReactionNetwork
from distsim.ssa import simulate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_sbml_semantics import doc, model, par, rx  # noqa: E402
from test_ssa_time_dependent import poisson_checks  # noqa: E402

K, X0, C = 3.0, 4.0, 0.7
A, B = 1.5, 0.8
# 0.9 e^{-ct} values: the integrator's per-step tolerance is RTOL 1e-9 (relative) + ATOL 1e-12; over the
# few dozen steps of t <= 5 the global error stays far below 1e-7 relative
ODE_TOL = 1e-7


def rate_rule(var: str, formula: str) -> str:
    import libsbml

    math_ = libsbml.writeMathMLToString(libsbml.parseL3Formula(formula)).split("?>", 1)[-1]
    return f'<listOfRules><rateRule variable="{var}">{math_}</rateRule></listOfRules>'


def assignment_rule(var: str, formula: str) -> str:
    import libsbml

    math_ = libsbml.writeMathMLToString(libsbml.parseL3Formula(formula)).split("?>", 1)[-1]
    return f'<listOfRules><assignmentRule variable="{var}">{math_}</assignmentRule></listOfRules>'


def input_species(size: float = 2.0, boundary: bool = True) -> str:
    """x: a concentration (hasOnlySubstanceUnits false) in V of size ``size``, given as an initial amount
    x0 size, so its symbol starts at x0; 0 -> A at rate k x (A an amount)."""
    species = (f'<species id="x" compartment="V" initialAmount="{X0 * size}" hasOnlySubstanceUnits="false" '
               f'boundaryCondition="{str(boundary).lower()}" constant="false"/>'
               '<species id="A" compartment="V" initialAmount="0" hasOnlySubstanceUnits="true" '
               'boundaryCondition="false" constant="false"/>')
    # x is a modifier here; as a boundary reactant and product it must not change
    return model(species, par("k", K) + par("c", C), rx("R", {"x": 1}, {"A": 1, "x": 1}, "k * x"),
                 rate_rule("x", "-c * x"), size=size)


def decay_mean(t):
    return K * X0 * (1.0 - np.exp(-C * t)) / C


def test_a_species_with_a_rate_rule_drives_a_poisson_count():
    net = read_sbml_string(input_species())
    assert net.species == ("A",) and [(r.target, r.reported) for r in net.rate_rules] == [("x", True)]
    assert net.params["x"] == X0  # the concentration: amount x0 size / size
    R = 4000
    ds = simulate(net, t_end=5.0, points=6, realizations=R, seed=11, backend="cpu", quantiles=None)
    t = ds["time"].values
    poisson_checks(ds["mean"].values[:, 0], ds["variance"].values[:, 0], decay_mean(t), R)
    assert ds["continuous"].values.tolist() == ["x"]
    x = ds["continuous_mean"].sel(continuous="x").values
    assert np.all(np.abs(x - X0 * np.exp(-C * t)) <= ODE_TOL * X0), x - X0 * np.exp(-C * t)
    assert np.all(ds["continuous_variance"].values <= 1e-20)  # every realization follows the same ODE


def test_continuous_values_do_not_depend_on_shards_and_recording_changes_nothing():
    net = read_sbml_string(input_species())
    one = simulate(net, t_end=3.0, points=7, realizations=300, seed=5, backend="cpu", quantiles=None,
                   keep_trajectories=True)
    two = simulate(net, t_end=3.0, points=7, realizations=300, seed=5, backend="cpu", quantiles=None,
                   keep_trajectories=True, time_limit=1e9)  # waves: other shards
    assert np.array_equal(one["continuous_trajectory"].values, two["continuous_trajectory"].values)
    assert np.array_equal(one["trajectory"].values, two["trajectory"].values)
    # the same network with x a plain parameter (not reported): the same counts, bit for bit
    plain = ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), law=BinOp("*", Param("k"), Param("x")))],
                                   {"k": K, "c": C, "x": X0},
                                   rate_rules=[RateRule("x", "x", -1, BinOp("*", Num(-1.0), BinOp(
                                       "*", Param("c"), Param("x"))))])
    ref = simulate(plain, t_end=3.0, points=7, realizations=300, seed=5, backend="cpu", quantiles=None,
                   keep_trajectories=True)
    assert "continuous" not in ref.coords
    assert np.array_equal(ref["trajectory"].values, one["trajectory"].values)


def test_a_rate_rule_species_changed_by_a_reaction_is_refused():
    with pytest.raises(ModelError, match=r"^<string>:\d+:\d+: reaction 'R': reactant 'x' has a rate rule but no "
                                         r"boundaryCondition"):
        read_sbml_string(input_species(boundary=False))


def test_the_gpu_refuses_ode_models_clearly():
    from distsim.ssa import gpu_events

    net = read_sbml_string(ode_model())
    with pytest.raises(ModelError, match="GPU backend does not run models without species or reactions"):
        gpu_events.check_gpu(net, compile_network(net))
    ok = read_sbml_string(input_species())  # a species with a rate rule runs on GPUs (tests/gpu)
    gpu_events.check_gpu(ok, compile_network(ok))


def birth() -> ReactionNetwork:
    """0 -> A at rate k, the assignment rule k = a + b time."""
    return ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), law=Param("k"), name="birth")],
                                  {"a": A, "b": B, "k": A},
                                  rules=[AssignmentRule("k", "k", -1, BinOp("+", Param("a"),
                                                                           BinOp("*", Param("b"), Time())))])


def test_a_rate_from_an_assignment_rule_reading_time():
    net = birth()
    assert net.hybrid
    R = 4000
    ds = simulate(net, t_end=4.0, points=5, realizations=R, seed=3, backend="cpu", quantiles=None)
    t = ds["time"].values
    poisson_checks(ds["mean"].values[:, 0], ds["variance"].values[:, 0], A * t + B * t * t / 2, R)


def rule_on_rate_rule() -> str:
    """SBML: 0 -> A at rate k, the assignment rule k = a + b y and the rate rule y' = 1 (y = time)."""
    rules = (assignment_rule("k", "a + b * y").replace("</listOfRules>", "")
             + rate_rule("y", "1").replace("<listOfRules>", ""))
    return model('<species id="A" compartment="V" initialAmount="0" hasOnlySubstanceUnits="true" '
                 'boundaryCondition="false" constant="false"/>',
                 par("a", A) + par("b", B) + par("k", A, constant=False) + par("y", 0.0, constant=False),
                 rx("R", {}, {"A": 1}, "k"), rules)


def test_assignment_rule_from_sbml_reading_a_rate_rule_variable():
    """The birth process again, its rate a rule reading a rate-rule variable that equals time."""
    net = read_sbml_string(rule_on_rate_rule())
    R = 4000
    ds = simulate(net, t_end=4.0, points=5, realizations=R, seed=9, backend="cpu", quantiles=None)
    t = ds["time"].values
    poisson_checks(ds["mean"].values[:, 0], ds["variance"].values[:, 0], A * t + B * t * t / 2, R)
    assert "continuous" not in ds.coords  # y is a parameter: not reported


def test_an_assignment_rule_for_a_species_reading_time_is_refused():
    net = ReactionNetwork.create(["A", "W"], [0, 0], [Reaction((), ((0, 1),), rate="k")], {"k": 1.0},
                                 rules=[AssignmentRule("W", "W", 1, BinOp("*", Num(2.0), Time()))])
    with pytest.raises(ModelError, match="assignment rule 'W' for 'W' reads time .*'W' is a species"):
        compile_network(net)


def test_a_trigger_reading_a_moving_rule_is_located():
    """The birth process k = a + b time; the event k > 2 (at t0 = (2 - a) / b) empties A: afterwards A is
    Poisson with mean a (t - t0) + b (t^2 - t0^2) / 2."""
    from distsim.models.events import Assignment, Compare, Event

    ev = Event("e", Compare(">", Param("k"), Num(2.0)), (Assignment("A", 0, Num(0.0)),))
    net = ReactionNetwork.create(["A"], [0], [Reaction((), ((0, 1),), law=Param("k"))], {"a": A, "b": B, "k": A},
                                 rules=birth().rules, events=[ev])
    assert compile_network(net).events.loc_ev.tolist() == [0]
    R = 4000
    ds = simulate(net, t_end=2.0, points=5, realizations=R, seed=21, backend="cpu", quantiles=None)
    t = ds["time"].values
    t0 = (2.0 - A) / B
    mu = np.where(t < t0, A * t + B * t * t / 2, A * (t - t0) + B * (t * t - t0 * t0) / 2)
    poisson_checks(ds["mean"].values[:, 0], ds["variance"].values[:, 0], mu, R)


def ode_model() -> str:
    """SBML: x' = -c x, a parameter, and nothing else."""
    return doc('<listOfCompartments><compartment id="V" size="1" constant="true"/></listOfCompartments>'
               f'<listOfParameters>{par("x", X0, constant=False)}{par("c", C)}</listOfParameters>'
               + rate_rule("x", "-c * x"))


def test_an_ode_model_without_species():
    """x' = -c x alone (no species, no reactions): every realization equals the closed form x0 e^{-ct}."""
    net = read_sbml_string(ode_model())
    assert net.species == () and net.reactions == ()
    assert dict(net.metadata)["deterministic"].startswith("no reactions")
    ds = simulate(net, t_end=5.0, points=11, realizations=8, seed=1, backend="cpu", quantiles=None,
                  keep_trajectories=True)
    t = ds["time"].values
    x = ds["continuous_trajectory"].sel(continuous="x").values
    assert np.all(x == x[0])  # every realization equal
    assert np.all(np.abs(x[0] - X0 * np.exp(-C * t)) <= ODE_TOL * X0)
    assert ds.attrs["model_deterministic"].startswith("no reactions")


def test_an_sbml_species_with_an_assignment_rule_reading_time_is_continuous():
    """k, a species (a concentration), set by the rule k = a + b time: no count but a continuous variable
    read by the law 'k', so 0 -> A is the same birth process."""
    body = model('<species id="A" compartment="V" initialAmount="0" hasOnlySubstanceUnits="true" '
                 'boundaryCondition="false" constant="false"/>'
                 '<species id="k" compartment="V" initialConcentration="0" hasOnlySubstanceUnits="false" '
                 'boundaryCondition="true" constant="false"/>',
                 par("a", A) + par("b", B), rx("R", {}, {"A": 1}, "k"), assignment_rule("k", "a + b * time"),
                 size=2.0)
    net = read_sbml_string(body)
    assert net.species == ("A",)
    assert dict(net.metadata)["continuous_species"] == ("k (assignment rule reading time or a rate-rule variable, "
                                                        "concentration in 'V')")
    R = 4000
    ds = simulate(net, t_end=4.0, points=5, realizations=R, seed=12, backend="cpu", quantiles=None)
    t = ds["time"].values
    poisson_checks(ds["mean"].values[:, 0], ds["variance"].values[:, 0], A * t + B * t * t / 2, R)


# ---- curated BioModels of each class (tests/data/biomodels/PROVENANCE.md) -----------------------------

BIOMODELS = Path(__file__).resolve().parents[1] / "data" / "biomodels"
# model -> (load options, reported variables, continuous species named in the metadata)
CURATED = {
    "BIOMD0000000006": (dict(system_size=1000, rounding="nearest"), ["u", "v"], ["u", "z", "v"]),
    "BIOMD0000000207": (dict(system_size=500, rounding="nearest"), ["M1", "X1", "M2", "X2"],
                        ["M1", "X1", "M2", "X2"]),
    "BIOMD0000000117": (dict(system_size=1000, rounding="nearest"), [], []),
    "BIOMD0000000262": (dict(system_size=1, rounding="nearest"), [], ["EGF"]),
    "BIOMD0000000020": ({}, ["V", "m", "h", "n"], []),
    "BIOMD0000000118": ({}, ["zzs", "bbs", "hhs", "V", "nns"], []),
    "BIOMD0000000238": ({}, ["M", "T", "BR"], []),
    "BIOMD0000000127": ({}, ["v", "U"], []),  # its event's trigger reads v: located
}


@pytest.mark.parametrize("name", CURATED)
def test_curated_biomodels_load_and_run(name):
    from distsim.ssa import load

    options, reported, continuous = CURATED[name]
    net = load(BIOMODELS / f"{name}.xml", **options)
    assert [r.target for r in net.rate_rules if r.reported] == reported
    meta = dict(net.metadata)
    assert [part.split(" (")[0] for part in meta["continuous_species"].split("; ")] == continuous if continuous \
        else "continuous_species" not in meta
    ds = simulate(net, t_end=1.0, points=3, realizations=4, seed=1, backend="cpu", quantiles=None, progress=False)
    assert ds.attrs["realizations"] == 4 and ds.attrs["truncated_realizations"] == 0
    if reported:
        assert np.all(np.isfinite(ds["continuous_mean"].values))
    if not net.reactions:  # an ODE model: every realization the same
        assert ds.attrs["model_deterministic"].startswith("no reactions")
        assert np.all(ds["continuous_variance"].values == 0.0)
    else:
        assert int(ds["events"].values.sum()) > 0


# libRoadRunner's CVODE at relative 1e-12 / absolute 1e-14 against the hybrid loop's Dormand-Prince (per-step
# relative 1e-9, hybrid_ops.RTOL): over these runs' few hundred steps the global error stays below 1e-6 of the
# value (plus 1e-9 of the variable's largest value, for values passing through 0)
RR_TOL = 1e-6


@pytest.mark.parametrize("name,t_end", [("BIOMD0000000020", 10.0), ("BIOMD0000000118", 10.0),
                                         ("BIOMD0000000238", 10.0), ("BIOMD0000000127", 20.0)])
def test_ode_biomodels_match_libroadrunner(name, t_end):
    """(BIOMD0000000127 spikes once, at t ~ 13: its event located on v, then reset.)"""
    roadrunner = pytest.importorskip("roadrunner")
    from distsim.ssa import load

    path = BIOMODELS / f"{name}.xml"
    net = load(path)
    names = [r.target for r in net.rate_rules if r.reported]
    ds = simulate(net, t_end=t_end, points=11, realizations=1, seed=1, backend="cpu", quantiles=None, progress=False)
    rr = roadrunner.RoadRunner(str(path))
    rr.integrator.relative_tolerance = 1e-12
    rr.integrator.absolute_tolerance = 1e-14
    ref = np.asarray(rr.simulate(0.0, t_end, 11, selections=["time", *names]))
    assert np.array_equal(ref[:, 0], ds["time"].values)
    ref = ref[:, 1:]
    ours = ds["continuous_mean"].sel(continuous=names).values
    bound = RR_TOL * np.abs(ref) + 1e-9 * np.abs(ref).max(axis=0)
    assert np.all(np.abs(ours - ref) <= bound), np.abs(ours - ref) / np.maximum(bound, 1e-300)


def test_a_trigger_on_a_rate_rule_variable_is_located():
    """Integrate and fire: v' = a, the event v >= 1 sets v = 0 and n = n + 1 (n' = 0): at time t,
    n = floor(a t) and v = a t - n, every crossing located to the last bit of the integrator's step."""
    from distsim.models.events import Assignment, Compare, Event

    a = 0.7
    fire = Event("fire", Compare(">=", Param("v"), Num(1.0)),
                 (Assignment("v", -1, Num(0.0)), Assignment("n", -1, BinOp("+", Param("n"), Num(1.0)))))
    net = ReactionNetwork.create([], [], [], {"a": a, "v": 0.0, "n": 0.0}, events=[fire],
                                 rate_rules=[RateRule("v", "v", -1, Param("a"), True),
                                             RateRule("n", "n", -1, Num(0.0), True)])
    assert compile_network(net).events.loc_ev.tolist() == [0]
    ds = simulate(net, t_end=10.0, points=21, realizations=2, seed=1, backend="cpu", quantiles=None)
    t = ds["time"].values
    n = ds["continuous_mean"].sel(continuous="n").values
    v = ds["continuous_mean"].sel(continuous="v").values
    assert n.tolist() == np.floor(a * t).tolist()
    assert np.all(np.abs(v - (a * t - np.floor(a * t))) <= 1e-12)


def test_the_gpu_refuses_located_triggers_clearly():
    from distsim.ssa import gpu_events

    net = read_sbml_string(input_species())
    from distsim.models.events import Assignment, Compare, Event

    low = Event("low", Compare("<", Param("x"), Num(1.0)), (Assignment("A", 0, Num(0.0)),))
    located = ReactionNetwork.create(net.species, net.initial, net.reactions, net.params, events=[low],
                                     rate_rules=net.rate_rules)
    with pytest.raises(ModelError, match="GPU backend cannot locate event triggers on rate-rule variables"):
        gpu_events.check_gpu(located, compile_network(located))


def test_an_initial_assignment_reading_a_rule_only_value_is_read():
    """A = 2 r with r = 3 from an assignment rule: SBML evaluates them together at t = 0, so A = 6
    (BIOMD0000000302 used to fail with a KeyError here, then was refused; tests/unit/test_sbml_reach.py)."""
    import libsbml

    ia = libsbml.writeMathMLToString(libsbml.parseL3Formula("2 * r")).split("?>", 1)[-1]
    body = model('<species id="A" compartment="V" initialAmount="0" hasOnlySubstanceUnits="true" '
                 'boundaryCondition="false" constant="false"/>', '<parameter id="r" constant="false"/>',
                 rx("R", {}, {"A": 1}, "1"),
                 f'<listOfInitialAssignments><initialAssignment symbol="A">{ia}</initialAssignment>'
                 '</listOfInitialAssignments>' + assignment_rule("r", "3"))
    assert read_sbml_string(body).initial == (6,)
