"""Whole stoichiometries up to reactions.MAX_CHANGE = 2**31 - 1 (issue 30, BIOMD0000000353's 1851850):
net changes are int32 in every kernel, so a firing that moves 2**31 - 1 molecules is exact. Exact
reference: A -> N B (law k A), N B -> C (law k floor(B / N)) from A = 1, N = 2**31 - 1: every
realization's B is 0 or N on the grid, and ends at A = B = 0, C = 1 (both firings are done by t = 60
except with probability e^-60 (1 + 60) < 1e-24); one molecule above the bound is refused at load."""

from __future__ import annotations

import numpy as np
import pytest

from distsim import ssa
from distsim.errors import ModelError
from distsim.models.compile_reactions import compile_network
from distsim.models.formats.sbml import read_sbml_string
from distsim.models.reactions import MAX_CHANGE, Reaction, ReactionNetwork

from test_sbml_semantics import model, par, rx, sp  # (tests/unit is on sys.path: rootdir-less test modules)

pytest.importorskip("libsbml")

N = 2**31 - 1


def chain(n: int) -> str:
    return model(sp("A", 1) + sp("B", 0) + sp("C", 0), par("k", 1.0),
                 rx("R1", {"A": 1}, {"B": n}, "k * A") + rx("R2", {"B": n}, {"C": 1}, f"k * floor(B / {n})"))


def test_the_bound_is_int32():
    assert MAX_CHANGE == N == np.iinfo(np.int32).max


def test_sbml_at_the_bound_loads_and_compiles_exactly():
    net = read_sbml_string(chain(N))
    assert net.reactions[0].products == ((1, N),) and net.reactions[1].reactants == ((1, N),)
    c = compile_network(net)
    assert c.chg_delta.dtype == np.int32
    assert sorted(c.chg_delta.tolist()) == [-N, -1, 1, N]


def test_one_above_the_bound_is_refused():
    with pytest.raises(ModelError, match=rf"reaction 'R1': stoichiometry of product 'B' must be at most {N}, "
                                         rf"got {N + 1}") as e:
        read_sbml_string(chain(N + 1), file="big.xml")
    assert e.value.file == "big.xml" and e.value.line is not None
    with pytest.raises(ModelError, match=rf"stoichiometry must be an integer in \[1, {N}\], got {N + 1}"):
        ReactionNetwork.create(["A", "B"], [1, 0], [Reaction(((0, 1),), ((1, N + 1),), law=read_sbml_string(
            chain(N)).reactions[0].law)], {"k": 1.0})


def _run(backend: str, method: str):
    return ssa.simulate(read_sbml_string(chain(N)), t_end=60.0, points=601, realizations=64, seed=4,
                        method=method, keep_trajectories=True, quantiles=None, backend=backend)


def _check(ds) -> None:
    traj = ds["trajectory"].values  # [realization, time, species]
    b = traj[:, :, 1]
    assert set(np.unique(b).tolist()) == {0, N}  # N molecules at once, exactly
    np.testing.assert_array_equal(traj[:, -1, :], np.tile([0, 0, 1], (64, 1)))
    np.testing.assert_array_equal(ds["firings"].values, [64, 64])


def test_a_firing_of_2_31_minus_1_molecules_is_exact_on_the_cpu():
    _check(_run("cpu", "direct"))


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["direct", "warp", "tree"])
def test_gpu_is_exact_at_the_bound(method):
    """direct (the register kernel: N as a literal added to int32 counts) and tree give the CPU's bits;
    warp (int32 firing table) is exact too (its sums are not the CPU's order in general, so only _check)."""
    gpu = _run("gpu", method)
    _check(gpu)
    if method != "warp":
        np.testing.assert_array_equal(_run("cpu", method)["trajectory"].values, gpu["trajectory"].values)
