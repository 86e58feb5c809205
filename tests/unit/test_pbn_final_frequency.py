"""``pbn.simulate`` keeps the trajectories' final states only when asked; the final node frequencies
are counted where the chains live (issue 33: the states' copy to the host cost most of the run)."""

import numpy as np
import pytest

from distsim.pbn import load, simulate
from distsim.pbn.cpu import LANES, node_ones_of, slice_states, unslice

FAURE = "examples/pbn/bbm023_faure2006_mammalian_cell_cycle_10n.bnet"


@pytest.mark.parametrize("n_chains", [1, 63, 64, 65, 1000])
def test_node_ones_of_counts_only_the_valid_lanes(n_chains):
    rng = np.random.default_rng(n_chains)
    states = rng.random((n_chains, 7)) < 0.3
    S = slice_states(states)
    full, rest = divmod(n_chains, LANES)
    if rest:  # padding lanes evolve too (the kernel updates whole words): they must not count
        S[:, full] |= ~np.uint64((1 << rest) - 1)
    assert np.array_equal(unslice(S, n_chains, 7), states)
    assert np.array_equal(node_ones_of(S, n_chains), states.sum(axis=0).astype(np.uint64))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_final_frequency_is_the_mean_final_state_and_nothing_else_changes(mode):
    net = load(FAURE).with_perturbation(0.02)
    kw = dict(steps=150, trajectories=1000, seed=9, mode=mode, targets="v_CycE=1", initial={"v_Rb": 1},
              backend="cpu", progress=False)
    lean = simulate(net, **kw)  # the default: no per-trajectory states
    full = simulate(net, keep_states=True, **kw)
    assert "final_state" not in lean and "trajectory" not in lean.dims
    assert full.final_state.shape == (1000, net.n)
    assert np.array_equal(full.final_frequency.values, full.final_state.values.sum(axis=0) / 1000)
    assert 0 < full.final_frequency.values.sum() < net.n
    for v in lean.data_vars:
        assert np.array_equal(lean[v].values, full[v].values), v
