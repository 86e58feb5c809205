"""benchmarks/biomodels_coverage.py: its system_size rule, its classification of outcomes and its
table, on the two curated BioModels of tests/data/biomodels and a small SBML model written here."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("libsbml")

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "biomodels"


def _module():
    spec = importlib.util.spec_from_file_location("biomodels_coverage", ROOT / "benchmarks" / "biomodels_coverage.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("biomodels_coverage", mod)
    spec.loader.exec_module(mod)
    return mod


bc = _module()

# A compartment changed by a rate rule: refused by the reader (species with rate rules are simulated).
# (a rate rule of a compartment, refused here before, is read now)
ALGEBRAIC_RULE = """<?xml version="1.0" encoding="UTF-8"?>
<sbml xmlns="http://www.sbml.org/sbml/level3/version2/core" level="3" version="2">
  <model id="rr">
    <listOfCompartments><compartment id="c" size="1" constant="false"/></listOfCompartments>
    <listOfSpecies>
      <species id="A" compartment="c" initialAmount="10" hasOnlySubstanceUnits="true"
               boundaryCondition="false" constant="false"/>
    </listOfSpecies>
    <listOfParameters><parameter id="k" value="0.1" constant="true"/></listOfParameters>
    <listOfRules>
      <algebraicRule><math xmlns="http://www.w3.org/1998/Math/MathML">
        <apply><minus/><ci>c</ci><ci>k</ci></apply></math></algebraicRule>
    </listOfRules>
  </model>
</sbml>
"""


@pytest.mark.filterwarnings("ignore::distsim.errors.SBMLWarning")  # the probe rounds B to 0 molecules
def test_system_size_puts_the_largest_initial_amount_at_1000_molecules():
    from distsim.ssa import load

    # BIOMD0000000001: amounts in moles (the Level 2 default substance); the largest is
    # B = 1.66057788110262e-21 mol (tests/data/biomodels/PROVENANCE.md), so Omega = 1000 / that
    omega = bc._omega(str(DATA / "BIOMD0000000001.xml"), load)
    assert omega == pytest.approx(1000 / 1.66057788110262e-21, rel=1e-12)
    net = load(DATA / "BIOMD0000000001.xml", system_size=omega, rounding="nearest")
    assert max(net.initial) == 1000


def test_one_model_outcomes():
    r = bc.run_one(str(DATA / "BIOMD0000000012.xml"))  # substance = item: whole counts as loaded
    assert (r["outcome"], r["species"], r["reactions"]) == ("simulated", 6, 12)
    r = bc.run_one(str(DATA / "BIOMD0000000001.xml"))  # moles: refused as loaded, then with system_size
    assert r["outcome"] == "simulated with system_size"
    assert r["system_size"] == pytest.approx(1000 / 1.66057788110262e-21, rel=1e-12)


def test_reasons_are_grouped_from_the_messages():
    assert bc.reason_of("f.xml:3:6: rate rule for 'u': 'u' is a species; distsim integrates ...") == \
        "rate rules for species or compartments"
    assert bc.reason_of("f.xml: assignment rule 'n' for 'n' reads time (exp(-k * time)): its value ...") == \
        "assignment rule reads time"
    assert bc.reason_of("f.xml:8:2: the model has no species") == "no species (ODEs of parameters only)"
    assert bc.reason_of("f.xml:3: something new and unexpected here, said plainly") == \
        "something new and unexpected here, said"
    r = {"model": "M", "outcome": "simulate error", "reason": "SimulationError",
         "message": "SimulationError: 4 of 4 realizations stopped: the propensity of reaction 3 'v' is -2 (negative)"}
    assert bc.classify(r)["reason"] == "negative propensity (a net-rate law used as a propensity)"
    r = {"model": "M", "outcome": "refused", "phase": "simulate", "reason": "x",
         "message": "f.xml: event 'e': its trigger compares 'T - time <= 0.0'; distsim ..."}
    assert bc.classify(r)["reason"] == "event trigger with time inside an expression (at simulate)"


def test_the_command_runs_a_folder_and_writes_the_table(tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "BIOMD0000000012.xml").write_bytes((DATA / "BIOMD0000000012.xml").read_bytes())
    (folder / "algebraic.xml").write_text(ALGEBRAIC_RULE)
    out, cache = tmp_path / "table.md", tmp_path / "cache.jsonl"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "biomodels_coverage.py"), str(folder), "--timeout", "300",
           "--out", str(out), "--cache", str(cache)]
    subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT, timeout=600)
    text = out.read_text()
    assert "**Load and simulate: 1 of 2 (50.0%)**" in text
    assert "| simulated | 1 | 50.0% |" in text and "| refused | 1 | 50.0% |" in text
    assert "| algebraic rules | 1 |" in text
    assert "**refused: algebraic rules** (1): algebraic" in text
    cached = {json.loads(line)["model"] for line in cache.read_text().splitlines()}
    assert cached == {"BIOMD0000000012", "algebraic"}
    # a second run takes both from the cache (no subprocess) and writes the same counts
    out.unlink()
    subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "**Load and simulate: 1 of 2 (50.0%)**" in out.read_text()


FAURE_SBML = ROOT / "examples" / "pbn" / "bbm023_faure2006_mammalian_cell_cycle_10n.sbml"


@pytest.mark.filterwarnings("ignore::UserWarning")  # the export's schema errors that the qual reader forgives
def test_an_sbml_qual_model_is_simulated_as_a_boolean_network(tmp_path):
    # the SSA reader refuses it (it requires the package 'qual'); the script runs it as 'distsim pbn' does
    path = tmp_path / "faure.xml"
    path.write_bytes(FAURE_SBML.read_bytes())
    r = bc.run_one(str(path))
    assert r["outcome"] == "simulated as a Boolean network (SBML-qual)" == bc.QUAL
    assert r["nodes"] == 10 and r["boolean"] is True  # Faure 2006: 10 nodes (the .bnet beside it)


def test_the_table_counts_boolean_models_as_simulated():
    results = [{"model": "Q", "outcome": bc.QUAL, "nodes": 10},
               {"model": "A", "outcome": "refused", "reason": "x", "message": "f.xml:3: algebraic rules are not ..."}]
    text = "\n".join(bc.report(results, "models", 1.0, None))
    assert "**Load and simulate: 1 of 2 (50.0%)**" in text
    assert "| simulated as a Boolean network (SBML-qual) | 1 | 50.0% |" in text
    assert f"**{bc.QUAL}** (1): Q" in text and "- Q:" not in text  # no message line for a simulated model
