"""BioModels that load but stopped during simulation (issue 30): the sign split cancels a species
that divides and multiplies one term (Haldane forms), and splits laws that read assignment-rule
net fluxes with the rules inlined. Exact references: independent two-state molecules (binomial
counts); z limits at alpha = 1e-3 over all checks of a test (Bonferroni)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import norm

from distsim import ssa
from distsim.errors import SBMLWarning
from distsim.models.arith import Param, Species, evaluate, parse_arith, to_text
from distsim.models.formats.sbml import read_sbml_string
from distsim.models.mass_action import cancel_species, signed_parts
from distsim.ssa.errors import SimulationError

from test_sbml_semantics import model, par, rx, sp  # (tests/unit is on sys.path: rootdir-less test modules)

NAMES = ["S", "P", "A", "B"]
BACKENDS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]


def _parse(text: str):
    return parse_arith(text, lambda n: Species(NAMES.index(n)) if n in NAMES else Param(n))


def _text(node) -> str:
    return to_text(node, NAMES)


def _rule(var: str, formula: str) -> str:
    import libsbml

    math = libsbml.writeMathMLToString(libsbml.parseL3Formula(formula)).split("?>", 1)[-1]
    return f'<assignmentRule variable="{var}">{math}</assignmentRule>'


def _binomial_z(ds, species: str, n: int, p: np.ndarray, realizations: int) -> np.ndarray:
    """z scores of the SSA mean and variance of ``species`` against Binomial(n, p) at the grid's times."""
    mean = ds["mean"].sel(species=species).values[1:]
    var = ds["variance"].sel(species=species).values[1:]
    sd2 = n * p * (1 - p)
    mu4 = sd2 * (1 + 3 * (n - 2) * p * (1 - p))  # binomial fourth central moment
    return np.abs(np.concatenate([(mean - n * p) / np.sqrt(sd2 / realizations),
                                  (var - sd2) / np.sqrt((mu4 - sd2 ** 2 * (realizations - 3) / (realizations - 1))
                                                        / realizations)]))


def _z_limit(checks: int, alpha: float = 1e-3) -> float:
    return float(norm.isf(alpha / (2 * checks)))


# ------------------------------------------------------------------------------------------------
# a species in the numerator and the denominator of one term cancels


@pytest.mark.parametrize("law,pos,neg", [
    ("kf * S / K * (1 - P / (S * Keq))", "kf * S / K", "kf * P / (K * Keq)"),  # BIOMD0000000017's R8
    ("V * (S / c) * (A / c) * (1 - P * B / (S / c * (A / c)) / Keq) / D",  # BIOMD0000000503's PFK, with Omega
     "V * (S / c) * (A / c) / D", "V * P * B * c * c / (c * c * Keq * D)"),
    ("k * (S - P)", "k * S", "k * P"),  # nothing cancels: the same trees
])
def test_split_cancels_a_species_of_numerator_and_denominator(law, pos, neg):
    p, q = signed_parts(_parse(law))
    assert (_text(p), _text(q)) == (_text(_parse(pos)), _text(_parse(neg)))
    x = np.random.default_rng(3).uniform(1, 9, size=(40, len(NAMES)))
    env = {"kf": 0.7, "K": 3.0, "Keq": 2.5, "V": 1.5, "c": 4.0, "D": 2.0, "k": 0.3}
    whole = evaluate(_parse(law), x, env)
    assert np.allclose(evaluate(p, x, env) - evaluate(q, x, env), whole, rtol=1e-12)
    x[:, 0] = 0  # S absent: the law as written is 0 * inf; the parts are its limit
    with np.errstate(all="ignore"):
        assert np.isnan(evaluate(_parse(law), x, env)).all() == (law != "k * (S - P)")
    assert np.isfinite(evaluate(p, x, env)).all() and np.isfinite(evaluate(q, x, env)).all()


def test_cancel_reaches_products_inside_sums_and_keeps_the_rest():
    law = _parse("c * (k * S / (1 + S) + k2 * P * (A / P) + S / S ^ 2 + (S / c) ^ h * B / ((S / c) ^ h * K))")
    out = cancel_species(law)
    # P cancels, and BIOMD0000000426's power of a species; S and S ^ 2 are different factors
    assert _text(out) == _text(_parse("c * (k * S / (1 + S) + k2 * A + S / S ^ 2 + B / K)"))
    kept = out.right.left.left.left
    assert kept is law.right.left.left.left  # a product where nothing cancels is the same node
    same = _parse("k * c / c * (S - P)")
    assert cancel_species(same) is same  # factors of constants only never cancel (the same bits)


HALDANE = model(sp("S", 0) + sp("P", 40), par("kf", 0.8) + par("Keq", 2.0),
                rx("R", {"S": 1}, {"P": 1}, "kf * S * (1 - P / (S * Keq))", reversible=False))


@pytest.mark.parametrize("backend", BACKENDS)
def test_haldane_law_split_runs_from_zero_and_is_exact(backend):
    """BIOMD0000000017/503's form on S -> P, started with S absent: the law as written is NaN there;
    its split is S -> P at kf per S and P -> S at kf / Keq per P, so S(t) ~ Binomial(40, pS(t)),
    pS(t) = b / (a + b) (1 - exp(-(a + b) t)), a = kf, b = kf / Keq."""
    with pytest.warns(SBMLWarning, match=r"split by sign .*: R \(irreversible\)"):
        net = read_sbml_string(HALDANE)
    r = {x.name: x for x in net.reactions}
    assert r["R_r"].reactants == ((1, 1),) and r["R_r"].products == ((0, 1),)
    assert np.isfinite(net.propensities(np.array([[0.0, 40.0]]))).all()
    t_end, points, R = 2.0, 5, 4000
    ds = ssa.simulate(net, t_end=t_end, points=points, realizations=R, seed=7, quantiles=None, backend=backend)
    t = ds["time"].values[1:]
    a, b = 0.8, 0.4
    z = _binomial_z(ds, "S", 40, b / (a + b) * (1 - np.exp(-(a + b) * t)), R)
    assert z.max() < _z_limit(z.size), (z.max(), _z_limit(z.size))
    if backend == "gpu":
        cpu = ssa.simulate(net, t_end=t_end, points=points, realizations=R, seed=7, quantiles=None, backend="cpu")
        assert np.array_equal(cpu["mean"].values, ds["mean"].values)


# ------------------------------------------------------------------------------------------------
# laws that are an assignment-rule parameter (a net flux)

RULE_FLUX = model(sp("A", 40) + sp("B", 0), par("kf", 0.9) + par("kb", 0.6) + par("j", 0, constant=False),
                  rx("R", {"A": 1}, {"B": 1}, "j", reversible=False),
                  extra=f"<listOfRules>{_rule('j', 'kf * A - kb * B')}</listOfRules>")


@pytest.mark.parametrize("backend", BACKENDS)
def test_rule_flux_law_is_split_with_the_rule_inlined(backend):
    """BIOMD0000000408's J_CK_MM: an irreversible A -> B whose law is the rule parameter j = kf A - kb B.
    Inlined, it splits into A -> B at kf per A and B -> A at kb per B (B is a factor of the negative
    term): B(t) ~ Binomial(40, a / (a + b) (1 - exp(-(a + b) t))), a = kf, b = kb."""
    with pytest.warns(SBMLWarning, match=r"R \(irreversible\) \(assignment rules inlined\)"):
        net = read_sbml_string(RULE_FLUX)
    r = {x.name: x for x in net.reactions}
    assert r["R_f"].mass_action and r["R_f"].rate == "kf" and r["R_r"].mass_action and r["R_r"].rate == "kb"
    t_end, points, R = 2.0, 5, 4000
    ds = ssa.simulate(net, t_end=t_end, points=points, realizations=R, seed=5, quantiles=None, backend=backend)
    t = ds["time"].values[1:]
    a, b = 0.9, 0.6
    z = _binomial_z(ds, "B", 40, a / (a + b) * (1 - np.exp(-(a + b) * t)), R)
    assert z.max() < _z_limit(z.size), (z.max(), _z_limit(z.size))
    assert "assignment rules inlined" in ds.attrs["model_net_rate_split"]


def test_nested_rule_flux_split_matches_the_rule():
    """Rules that read rules (j = (v - w) / D, v = kf A B, w = kb P) on A + B -> P: the channels'
    propensities differ by the rule's value; the backward channel vanishes without P."""
    rules = _rule("v", "kf * A * B") + _rule("w", "kb * P") + _rule("j", "(v - w) / (1 + A / K)")
    body = model(sp("A", 30) + sp("B", 20) + sp("P", 5),
                 par("kf", 0.02) + par("kb", 0.5) + par("K", 10) + "".join(par(p, 0, constant=False) for p in "vwj"),
                 rx("R", {"A": 1, "B": 1}, {"P": 1}, "j", reversible=False),
                 extra=f"<listOfRules>{rules}</listOfRules>")
    with pytest.warns(SBMLWarning, match="assignment rules inlined"):
        net = read_sbml_string(body)
    assert [r.name for r in net.reactions] == ["R_f", "R_r"]
    x = np.array([[30.0, 20.0, 5.0], [3.0, 0.0, 7.0], [12.0, 4.0, 0.0]])
    a = net.propensities(x)
    j = (0.02 * x[:, 0] * x[:, 1] - 0.5 * x[:, 2]) / (1 + x[:, 0] / 10)
    assert np.allclose(a[:, 0] - a[:, 1], j, rtol=1e-12) and (a >= 0).all() and a[2, 1] == 0


def test_rule_flux_without_a_defined_backward_channel_stays_whole():
    """0 -> A at j = k - g C: inlined, its backward channel A -> 0 would fire without A: the law stays
    the rule parameter, and the run stops naming it when it is negative."""
    body = model(sp("A", 0) + sp("C", 5), par("k", 1) + par("g", 2) + par("j", 0, constant=False),
                 rx("R", {}, {"A": 1}, "j"), extra=f"<listOfRules>{_rule('j', 'k - g * C')}</listOfRules>")
    with warnings.catch_warnings():
        warnings.simplefilter("error", SBMLWarning)
        net = read_sbml_string(body)
    assert [_text_law(r) for r in net.reactions] == ["j"]
    assert dict(net.metadata)["net_rate_not_split"] == "R (its negative terms do not vanish when 'A' is absent)"
    with pytest.raises(SimulationError, match=r"'R' \(law: j\) is -9 \(negative\)"):
        ssa.simulate(net, t_end=1.0, points=2, realizations=4, seed=1, quantiles=None, backend="cpu")


def _text_law(r) -> str:
    return to_text(r.law, ["A", "C"])


def test_a_rule_beside_a_rate_parameter_or_a_real_valued_species_is_not_inlined():
    """BIOMD0000000107's k2 * cyclin with k2 = V1 (T - U) + V2 U (a rate coefficient, positive by the
    model's conservation), and BIOMD0000000386's J * NADP with NADP = Nt - NADPH (a free moiety): the
    rules are amounts or coefficients, not fluxes; the laws stay whole (the same network as before)."""
    rules = _rule("k2", "V1 * (T - U) + V2 * U") + _rule("F", "Nt - B")
    body = model(sp("A", 10) + sp("B", 3) + sp("U", 2) + sp("F", 7),
                 par("V1", 0.5) + par("V2", 2) + par("T", 4) + par("Nt", 10) + par("J", 1.5)
                 + par("k2", 0, constant=False),
                 rx("deg", {"A": 1}, {}, "k2 * A") + rx("make", {}, {"B": 1}, "J * F"),
                 extra=f"<listOfRules>{rules}</listOfRules>")
    net = read_sbml_string(body)
    assert [r.name for r in net.reactions] == ["deg", "make"]
    assert "net_rate_split" not in dict(net.metadata)


# ------------------------------------------------------------------------------------------------
# what a rule's value that is not a count means (BIOMD0000000300, 409: a total minus a part)


def test_a_conservation_rule_going_negative_says_so():
    """Free = T - B with B made at a constant rate: once B passes T the rule counts -1 molecules; the run
    stops saying that the balance is not kept by the reactions (not only 'not whole')."""
    body = model(sp("B", 0) + sp("F", 3), par("k", 5) + par("T", 3),
                 rx("make", {}, {"B": 1}, "k"), extra=f"<listOfRules>{_rule('F', 'T - B')}</listOfRules>")
    net = read_sbml_string(body)
    with pytest.raises(SimulationError, match=r"assignment rule 'F' set species 'F' to T - B \(-1.0\), which is not "
                       r"a whole number .*it is -1 up to round-off, negative: .* the reactions do not keep"):
        ssa.simulate(net, t_end=5.0, points=2, realizations=4, seed=1, quantiles=None, backend="cpu")


# ------------------------------------------------------------------------------------------------
# why a firing made a count negative (BIOMD0000000047's constant leak; 152's k Ca^2 on 2 Ca)


@pytest.mark.parametrize("law,reac,why", [
    ("Fleak", {"S": 1}, r"this law is not 0 when 'S' is absent \(a constant flux.*no stochastic meaning once 'S' "
                        r"runs out.*boundaryCondition=\"true\""),
    ("k * S ^ 2", {"S": 2}, r"it consumes 2 molecules of 'S' but its law is 0 only when none are left.*below 2 "
                            r"molecules"),
])
def test_a_law_firing_without_its_molecules_says_why(law, reac, why):
    body = model(sp("S", 3) + sp("P", 0), par("Fleak", 4) + par("k", 2),
                 rx("R", reac, {"P": 1}, law))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SBMLWarning)
        net = read_sbml_string(body)
    with pytest.raises(SimulationError, match=r"made a species count negative .*S = -1; a propensity must be 0 "
                       r"when its reaction cannot fire; " + why):
        ssa.simulate(net, t_end=20.0, points=2, realizations=4, seed=1, quantiles=None, backend="cpu")


def test_a_reversible_source_whose_law_is_a_rule_flux_is_split():
    """0 <-> A, reversible, law j = k - g A (a flux in a rule): births at k, deaths at g per A. A(t) is
    Poisson with mean k / g (1 - exp(-g t)) from A(0) = 0 (immigration-death)."""
    body = model(sp("A", 0), par("k", 12) + par("g", 0.8) + par("j", 0, constant=False),
                 rx("R", {}, {"A": 1}, "j", reversible=True),
                 extra=f"<listOfRules>{_rule('j', 'k - g * A')}</listOfRules>")
    with pytest.warns(SBMLWarning, match=r"split by sign .*: R \(assignment rules inlined\)"):
        net = read_sbml_string(body)
    assert [r.name for r in net.reactions] == ["R_f", "R_r"]
    R = 4000
    ds = ssa.simulate(net, t_end=3.0, points=4, realizations=R, seed=3, quantiles=None, backend="cpu")
    t = ds["time"].values[1:]
    lam = 12 / 0.8 * (1 - np.exp(-0.8 * t))
    mean, var = ds["mean"].sel(species="A").values[1:], ds["variance"].sel(species="A").values[1:]
    # Poisson: var of the sample mean lam / R; of the sample variance (mu4 - lam^2 (R-3)/(R-1)) / R, mu4 = lam + 3 lam^2
    z = np.abs(np.concatenate([(mean - lam) / np.sqrt(lam / R),
                               (var - lam) / np.sqrt((lam + 3 * lam ** 2 - lam ** 2 * (R - 3) / (R - 1)) / R)]))
    assert z.max() < _z_limit(z.size), (z.max(), _z_limit(z.size))


def test_cancel_does_not_recurse_on_the_depth_of_a_factor():
    """Two equal factors 20000 levels deep (f(S) * (P / f(S))) are compared without recursion, as
    dataclass equality would not: they cancel, leaving P."""
    from distsim.models.arith import BinOp, Num

    def deep(leaf):
        n = leaf
        for _ in range(20000):
            n = BinOp("+", n, Num(1.0))
        return n

    law = BinOp("*", deep(Species(0)), BinOp("/", Species(1), deep(Species(0))))  # f(S) * (P / f(S))
    out = cancel_species(law)
    assert out == Species(1)
