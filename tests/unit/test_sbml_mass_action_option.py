"""SBML reading option ``mass_action="stochastic"`` (issue 30): powers of reactants in mass-action laws
written for concentrations (``k * A^2`` on ``2A -> B``) become falling factorials. Exact references:
hand-computed propensities, and the CME of a small dimerisation (``distsim.pmmh.exact.generator``,
the state space 0..21 of A is closed under 2A -> B) against SSA mean and variance; z limits at
alpha = 1e-3 over all checks of the test (Bonferroni)."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import expm
from scipy.stats import norm

from distsim import ssa
from distsim.models.arith import Param, Species, parse_arith, to_text
from distsim.models.formats.sbml import read_sbml, read_sbml_string
from distsim.models.mass_action import falling_powers
from distsim.pmmh.exact import generator
from distsim.ssa.errors import SimulationError

from test_sbml_semantics import model, par, rx, sp  # (tests/unit is on sys.path: rootdir-less test modules)

ROOT = Path(__file__).resolve().parents[2]
BIOMODELS = ROOT / "tests" / "data" / "biomodels"
NAMES = ["A", "B", "C"]


def _parse(text: str):
    return parse_arith(text, lambda n: Species(NAMES.index(n)) if n in NAMES else Param(n))


# ------------------------------------------------------------------------------------------------
# the rewrite


@pytest.mark.parametrize("law,orders,out", [
    ("k * A ^ 2", {0: 2}, "k * (A * (A - 1))"),
    ("k * A * A", {0: 2}, "k * A * (A - 1)"),
    ("V * k * (A / V) ^ 2 * B", {0: 2, 1: 1}, "V * k * (A / V * ((A - 1) / V)) * B"),
    ("k * A ^ 3", {0: 3}, "k * (A * (A - 1) * (A - 2))"),
    ("k * A * (A - 1)", {0: 2}, None),  # already mass action: unchanged
    ("k * A * B", {0: 1, 1: 1}, None),  # no power above 1
    ("Vm * A ^ 2 / (K + A ^ 2)", {0: 2}, None),  # not mass action
    ("k * A ^ 2", {0: 1}, None),  # the power is not the stoichiometry
    ("k1 * k2 * A ^ 2", {0: 2}, None),  # two rate parameters: not of mass-action shape
])
def test_falling_powers(law, orders, out):
    new = falling_powers(_parse(law), orders, {"V": 2.0}, {"k", "k1", "k2", "Vm", "K"})
    assert (None if new is None else to_text(new, NAMES)) == (None if out is None else to_text(_parse(out), NAMES))


# ------------------------------------------------------------------------------------------------
# propensities, hand-computed

DIMER = model(sp("A", 21, hosu=False) + sp("B", 0, hosu=False), par("k", 0.3),
              rx("dim", {"A": 2}, {"B": 1}, "V * k * A^2"), size=2.0)  # A: 21 molecules (Omega 1), a concentration in V = 2


@pytest.mark.parametrize("omega", [1.0, 5.0])
def test_dimerisation_propensity_is_k_x_falling_2_over_omega_v(omega):
    states = np.array([[0, 0], [1, 0], [2, 3], [7, 0], [21, 0]])
    x = states[:, 0].astype(float)
    V, k = 2.0, 0.3
    net = read_sbml_string(DIMER, mass_action="stochastic", system_size=None if omega == 1 else omega)
    assert dict(net.metadata)["mass_action_stochastic"] == "dim"
    np.testing.assert_allclose(net.propensities(states)[:, 0], k * x * (x - 1) / (omega * V), rtol=1e-14, atol=0)
    written = read_sbml_string(DIMER, system_size=None if omega == 1 else omega)  # default: the law as written
    assert "mass_action_stochastic" not in dict(written.metadata)
    np.testing.assert_allclose(written.propensities(states)[:, 0], k * x * x / (omega * V), rtol=1e-14, atol=0)


def test_split_reversible_law_gives_both_channels():
    """kf*A^2 - kr*B^2 on 2A <-> 2B: forward channel kf x_A (x_A - 1), backward kr x_B (x_B - 1)."""
    body = model(sp("A", 10) + sp("B", 4), par("kf", 0.7) + par("kr", 0.2),
                 rx("R", {"A": 2}, {"B": 2}, "kf * A^2 - kr * B^2", reversible=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = read_sbml_string(body, mass_action="stochastic")
    assert [r.name for r in net.reactions] == ["R_f", "R_r"]
    assert dict(net.metadata)["mass_action_stochastic"] == "R_f, R_r"
    states = np.array([[0, 0], [1, 1], [2, 2], [10, 4], [3, 9]])
    a, b = states[:, 0].astype(float), states[:, 1].astype(float)
    np.testing.assert_allclose(net.propensities(states), np.stack([0.7 * a * (a - 1), 0.2 * b * (b - 1)], 1),
                               rtol=1e-14, atol=0)


def test_split_channel_of_order_one_and_other_laws_are_untouched():
    """kf*A^2 - kr*B on 2A <-> B: only the forward channel changes; a Michaelis-Menten law and a law
    already written with falling factorials read the same with and without the option."""
    body = model(sp("A", 10) + sp("B", 4) + sp("C", 3), par("kf", 0.7) + par("kr", 0.2) + par("Vm", 2) + par("K", 5),
                 rx("R", {"A": 2}, {"B": 1}, "kf * A^2 - kr * B", reversible=True)
                 + rx("M", {"C": 2}, {}, "Vm * C^2 / (K + C^2)") + rx("F", {"B": 2}, {}, "kf * B * (B - 1)"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = read_sbml_string(body, mass_action="stochastic")
        written = read_sbml_string(body)
    assert [r.name for r in net.reactions] == ["R_f", "R_r", "M", "F"]
    assert dict(net.metadata)["mass_action_stochastic"] == "R_f"
    assert net.reactions[1:] == written.reactions[1:]
    states = np.array([[0, 0, 0], [1, 1, 1], [10, 4, 3]])
    a = states[:, 0].astype(float)
    np.testing.assert_allclose(net.propensities(states)[:, 0], 0.7 * a * (a - 1), rtol=1e-14, atol=0)
    np.testing.assert_array_equal(net.propensities(states)[:, 1:], written.propensities(states)[:, 1:])


# ------------------------------------------------------------------------------------------------
# a run against the exact CME


def test_dimerisation_mean_and_variance_are_the_cme():
    """2A -> B at k x (x - 1) / V from 21 molecules (odd, so A = 1 is reached): as written (k x^2 / V)
    the run stops there; read with the option, SSA mean and variance of A match the exact CME."""
    with pytest.raises(SimulationError, match="made a species count negative"):
        ssa.simulate(read_sbml_string(DIMER), t_end=20.0, points=2, realizations=64, seed=3, quantiles=None,
                     backend="cpu")
    net = read_sbml_string(DIMER, mass_action="stochastic")
    t_end, points, R = 1.0, 6, 4000
    ds = ssa.simulate(net, t_end=t_end, points=points, realizations=R, seed=7, quantiles=None, backend="cpu")
    assert ds.attrs["model_mass_action_stochastic"] == "dim"
    states, Q = generator(net, 21)
    p0 = np.all(states == np.array([21, 0]), axis=1).astype(float)
    x = states[:, 0].astype(float)
    checks = []
    for j, t in enumerate(ds["time"].values[1:], start=1):
        p = p0 @ expm(Q * t)
        m = p @ x
        var = p @ (x - m) ** 2
        mu4 = p @ (x - m) ** 4
        checks.append((ds["mean"].sel(species="A").values[j] - m) / np.sqrt(var / R))
        checks.append((ds["variance"].sel(species="A").values[j] - var)
                      / np.sqrt((mu4 - var ** 2 * (R - 3) / (R - 1)) / R))
    z = np.abs(np.array(checks))
    limit = float(norm.isf(1e-3 / (2 * z.size)))
    assert z.max() < limit, (z, limit)


# ------------------------------------------------------------------------------------------------
# the default, the entry points, bad input


def test_default_is_unchanged_on_a_biomodel():
    """BIOMD0000000012 (no powers): the option changes nothing, and results are bit-identical."""
    path = BIOMODELS / "BIOMD0000000012.xml"
    default = read_sbml(path)
    net = read_sbml(path, mass_action="stochastic")
    assert dict(net.metadata)["mass_action_stochastic"] == "none"
    assert "mass_action_stochastic" not in dict(default.metadata)
    assert net.reactions == default.reactions
    kw = dict(t_end=5.0, points=3, realizations=16, seed=2, quantiles=None, backend="cpu")
    a, b = ssa.simulate(default, **kw), ssa.simulate(net, **kw)
    np.testing.assert_array_equal(a["mean"].values, b["mean"].values)
    np.testing.assert_array_equal(a["variance"].values, b["variance"].values)


def test_load_and_cli_pass_the_option(tmp_path, capsys):
    from distsim.cli import main

    f = tmp_path / "dimer.xml"
    f.write_text(DIMER)
    assert dict(ssa.load(f, mass_action="stochastic").metadata)["mass_action_stochastic"] == "dim"
    assert dict(ssa.load(DIMER, mass_action="stochastic").metadata)["mass_action_stochastic"] == "dim"
    out = tmp_path / "r.nc"
    assert main(["ssa", "simulate", str(f), "--mass-action", "stochastic", "--t-end", "1", "--points", "2",
                 "-n", "8", "--output", str(out)]) == 0
    import xarray as xr

    with xr.open_dataset(out) as ds:
        assert ds.attrs["model_mass_action_stochastic"] == "dim"


def test_bad_option_is_refused():
    with pytest.raises(ValueError, match="unknown mass_action 'exact'"):
        read_sbml_string(DIMER, mass_action="exact")
    with pytest.raises(ValueError, match="mass_action= applies to SBML models only"):
        ssa.load("A -> B, k=1\nA = 3\n", format="rxn", mass_action="stochastic")


def test_coverage_retries_with_the_option(tmp_path):
    """benchmarks/biomodels_coverage.py: the 'consumes n > 1' stop is retried with the option."""
    spec = importlib.util.spec_from_file_location("bc", ROOT / "benchmarks" / "biomodels_coverage.py")
    bc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bc)  # type: ignore[union-attr]
    f = tmp_path / "dimer.xml"
    f.write_text(DIMER.replace('value="0.3"', 'value="30"'))  # fast enough to reach A = 1 by t = 1
    r = bc.run_one(str(f))
    assert r["outcome"] == bc.STOCHASTIC and r["stochastic"] == "dim", r
    assert any(bc.STOCHASTIC in line for line in bc.report([r], str(tmp_path), 1.0, None))
