"""SBML reading option ``fast="as_slow"`` (issue 30): a reaction marked ``fast="true"`` is refused by
default and, with the option, read as an ordinary reaction with its kinetic law -- the network of the
same document with the flag false, listed in the metadata and warned once. Exact reference: the
linear chain A -> B -> 0 from 50 molecules of A, where each molecule is independently in A, in B or
gone, so A(t) and B(t) are binomial with p_A = e^(-k1 t), p_B = k1 (e^(-k1 t) - e^(-k2 t)) / (k2 - k1);
z limits at alpha = 1e-3 over all checks (Bonferroni)."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from distsim import ssa
from distsim.errors import ModelError, SBMLWarning
from distsim.models.formats.sbml import read_sbml, read_sbml_string

from test_sbml_semantics import model, par, rx, sp  # (tests/unit is on sys.path: rootdir-less test modules)

pytest.importorskip("libsbml")

ROOT = Path(__file__).resolve().parents[2]
K1, K2, A0 = 1.0, 0.5, 50
SLOW = model(sp("A", A0) + sp("B", 0), par("k1", K1) + par("k2", K2),
             rx("R1", {"A": 1}, {"B": 1}, "k1 * A") + rx("R2", {"B": 1}, {}, "k2 * B"))
FAST = SLOW.replace('<reaction id="R1" reversible="false" fast="false">',
                    '<reaction id="R1" reversible="false" fast="true">')
assert FAST != SLOW


def test_default_refuses_naming_the_reaction_and_the_option(tmp_path):
    f = tmp_path / "fast.xml"
    f.write_text(FAST)
    with pytest.raises(ModelError, match=r"reaction 'R1': fast reactions are not supported; fast='as_slow' "
                                         r"\(--fast as_slow\)") as e:
        read_sbml(f)
    assert e.value.file == str(f) and e.value.line == FAST[:FAST.index('<reaction id="R1"')].count("\n") + 1


def test_as_slow_is_the_network_with_the_flag_false():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net = read_sbml_string(FAST, fast="as_slow")
    fast_warnings = [w for w in caught if issubclass(w.category, SBMLWarning) and "fast" in str(w.message)]
    assert len(fast_warnings) == 1 and "R1" in str(fast_warnings[0].message)
    slow = read_sbml_string(SLOW)
    assert (net.species, net.initial, net.reactions, net.parameters) == \
        (slow.species, slow.initial, slow.reactions, slow.parameters)
    assert net.digest() == slow.digest()
    assert dict(net.metadata)["fast_as_slow"] == "R1" and "fast_as_slow" not in dict(slow.metadata)
    # a model without fast reactions reads the same with the option, and records nothing
    assert read_sbml_string(SLOW, fast="as_slow").metadata == slow.metadata


@pytest.mark.filterwarnings("ignore::distsim.errors.SBMLWarning")
def test_as_slow_simulates_the_chain_exactly():
    R = 4000
    ds = ssa.simulate(read_sbml_string(FAST, fast="as_slow"), t_end=2.0, points=5, realizations=R, seed=11,
                      quantiles=None, backend="cpu")
    assert ds.attrs["model_fast_as_slow"] == "R1"
    z = []
    for j, t in enumerate(ds["time"].values[1:], start=1):
        pa = np.exp(-K1 * t)
        pb = K1 * (np.exp(-K1 * t) - np.exp(-K2 * t)) / (K2 - K1)
        for s, p in (("A", pa), ("B", pb)):
            z.append((ds["mean"].sel(species=s).values[j] - A0 * p) / np.sqrt(A0 * p * (1 - p) / R))
    z = np.abs(np.array(z))
    limit = float(norm.isf(1e-3 / (2 * z.size)))
    assert z.max() < limit, (z, limit)


@pytest.mark.filterwarnings("ignore::distsim.errors.SBMLWarning")
def test_load_and_cli_pass_the_option(tmp_path, capsys):
    import xarray as xr

    from distsim.cli import main

    f = tmp_path / "fast.xml"
    f.write_text(FAST)
    assert dict(ssa.load(f, fast="as_slow").metadata)["fast_as_slow"] == "R1"
    assert dict(ssa.load(FAST, fast="as_slow").metadata)["fast_as_slow"] == "R1"
    out = tmp_path / "r.nc"
    run = ["ssa", "simulate", str(f), "--t-end", "1", "--points", "2", "-n", "8", "--in-process", "--cpu"]
    assert main([*run, "--fast", "as_slow", "--output", str(out)]) == 0
    with xr.open_dataset(out) as ds:
        assert ds.attrs["model_fast_as_slow"] == "R1"
    capsys.readouterr()
    assert main(run) != 0  # the default: refused, naming the option
    assert "reaction 'R1': fast reactions are not supported; fast='as_slow' (--fast as_slow)" in capsys.readouterr().err


def test_bad_option_is_refused():
    with pytest.raises(ValueError, match="unknown fast 'equilibrium'; expected one of refuse, as_slow"):
        read_sbml_string(FAST, fast="equilibrium")
    with pytest.raises(ValueError, match="fast= applies to SBML models only"):
        ssa.load("A -> B, k=1\nA = 3\n", format="rxn", fast="as_slow")


def test_coverage_retries_with_the_option(tmp_path):
    """benchmarks/biomodels_coverage.py: a 'fast reactions' refusal is retried with the option."""
    spec = importlib.util.spec_from_file_location("bc", ROOT / "benchmarks" / "biomodels_coverage.py")
    bc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bc)  # type: ignore[union-attr]
    f = tmp_path / "fast.xml"
    f.write_text(FAST)
    r = bc.run_one(str(f))
    assert r["outcome"] == bc.FAST == "simulated with fast reactions as ordinary reactions", r
    assert r["fast"] == "as_slow" and (r["species"], r["reactions"]) == (2, 2)
    assert "**Load and simulate: 1 of 1 (100.0%)**" in bc.report([r], str(tmp_path), 1.0, None)
