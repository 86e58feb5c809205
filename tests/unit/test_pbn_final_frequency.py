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


def test_initial_states_follow_the_documented_stream_layout():
    """Node i of chain c is bit index[i] of the words at Philox counter (index[i] // 128, 0, 0, 1),
    key (seed, c) -- checked against that rule one chain and node at a time (two blocks, a reduced
    index, knockouts, a partial last word)."""
    from distsim.pbn.cpu import init_sliced
    from distsim.rng.philox import philox4x32_10

    rng = np.random.default_rng(4)
    index = np.sort(rng.choice(260, 150, replace=False)).astype(np.int32)
    fix_mask = rng.random(150) < 0.1
    fix_val = (rng.random(150) < 0.5).astype(np.uint8)
    chain0, n_chains, seed = 1000, 77, 31
    got = unslice(init_sliced(150, chain0, n_chains, seed, fix_mask, fix_val, index), n_chains, 150)
    want = np.zeros((n_chains, 150), bool)
    for c in range(n_chains):
        for i, k in enumerate(index):
            words = philox4x32_10(int(k) >> 7, 0, 0, 1, seed, chain0 + c)
            want[c, i] = fix_val[i] if fix_mask[i] else (int(words[(int(k) >> 5) & 3]) >> (int(k) & 31)) & 1
    assert np.array_equal(got, want)
