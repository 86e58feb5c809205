"""Unknown node, species, parameter and variable names are answered with the closest known ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from distsim import pbn, ssa
from distsim.cli import main
from distsim.errors import did_you_mean

EX = Path(__file__).resolve().parents[2] / "examples"
SIZEK = EX / "pbn" / "bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet"
MM = EX / "ssa" / "michaelis_menten.rxn"


def test_did_you_mean():
    nodes = ["v_Casp3", "v_Casp8", "v_Casp9", "v_p53"]
    assert did_you_mean("Casp3", nodes) == " (did you mean 'v_Casp3'?)"  # the prefix BBM nodes share
    assert did_you_mean("v_casp8", nodes) == " (did you mean 'v_Casp8'?)"  # case
    close = did_you_mean("v_Casp", nodes)  # difflib's closest three (ties in its order)
    assert close.startswith(" (did you mean ") and sorted(close[15:-2].split(" or ")) == ["'v_Casp3'", "'v_Casp8'",
                                                                                          "'v_Casp9'"]
    assert did_you_mean("ERK", nodes) == ""


@pytest.mark.parametrize("args, expected", [
    (["--target", "Casp3=1"], "target: unknown node 'Casp3' (did you mean 'v_Casp3'?)"),
    (["--target", "v_Casp3=1", "--fix", "Casp8=0"], "cannot fix 'Casp8': not a node of "
     "bbm209_sizek2019_cell_cycle_apoptosis_87n (did you mean 'v_Casp8'?)"),
])
def test_steady_state_names(args, expected, capsys):
    assert main(["--in-process", "-q", "pbn", "steady-state", str(SIZEK), "-p", "1e-3", *args]) == 2
    assert expected in capsys.readouterr().err


def test_influence_node(capsys):
    assert main(["--in-process", "-q", "pbn", "influence", str(SIZEK), "-p", "1e-3", "--node", "casp3"]) == 2
    assert "unknown node 'casp3' (did you mean 'v_Casp3'?)" in capsys.readouterr().err


def test_reaction_network_names():
    net = ssa.load(MM)
    with pytest.raises(KeyError, match=r"unknown species 'ESS' \(did you mean 'ES'\?\); species are E, S, ES, P"):
        net.index("ESS")
    with pytest.raises(KeyError, match=r"unknown parameter 'k_1' \(did you mean 'k1'"):
        net.with_parameters(k_1=2.0)


def test_knockout_in_a_sweep_point():
    import distsim

    net = pbn.load(SIZEK, perturbation=1e-3)
    with pytest.raises(ValueError, match=r"'fix.Casp8': unknown node 'Casp8' \(did you mean 'v_Casp8'\?\)"):
        distsim.sweep(pbn.steady_state, net, [{"fix.Casp8": 0}], seed=1, target="v_Casp3=1", precision=0.1)
