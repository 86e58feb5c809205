"""The CPU kernels' shortcuts give the documented bits: the initial state (istate groups whose first option has
probability 1 take it without a draw, their part and the fixed nodes precomputed once) equals the stream layout
of ``distsim.maboss.cpu`` (group g: the uniform of Philox counter (g, 0, 1, 0), key (seed, trajectory); then the
fixed nodes), and a remembered entropy term equals the one computed afresh."""

import math

import numba
import numpy as np
import pytest

from distsim.backends.dsmath import INV_LN2, ds_log
from distsim.maboss import compile_model, cpu, load
from distsim.rng.philox import philox4x32_10, u01_f64

BND = """Node A { logic = B; rate_up = @logic ? 1 : 0; rate_down = @logic ? 0 : 1; }
Node B { logic = A; rate_up = @logic ? 1 : 0; rate_down = @logic ? 0 : 1; }
Node C { logic = !A; rate_up = @logic ? 1 : 0; rate_down = @logic ? 0 : 1; }
Node D { logic = C; rate_up = @logic ? 1 : 0; rate_down = @logic ? 0 : 1; }
Node E { logic = D; rate_up = @logic ? 1 : 0; rate_down = @logic ? 0 : 1; }
Node F { logic = E; rate_up = @logic ? 1 : 0; rate_down = @logic ? 0 : 1; }
"""
# [A, B]: a joint draw; C: always 1; D: first option probability 1, then one of probability 0; E: a draw
# (0.5 / 0.5 without an istate); F: always 0 with a later option of probability 0
CFG = """[A, B].istate = 0.3 [1, 0], 0.5 [0, 1], 0.2 [1, 1];
C.istate = 1;
[D].istate = 1 [1], 0 [0];
[F].istate = 1 [0], 0 [1], 0 [1];
"""


def _reference(c, seed, traj):
    """The documented layout, every group drawn (as ``kernels/ctbn.cu`` does), then the fixed nodes."""
    x = np.zeros(c.n, np.uint8)
    for g in range(len(c.grp_start) - 1):
        w = philox4x32_10(g, 0, 1, 0, seed, traj)
        u = u01_f64(w[0], w[1])
        k = c.grp_start[g]
        while k < c.grp_start[g + 1] - 1 and not (u < c.grp_cum[k]):
            k += 1
        for j, i in enumerate(c.grp_nodes[c.grp_node_start[g]:c.grp_node_start[g + 1]]):
            x[i] = (int(c.opt_bits[k]) >> j) & 1
    x[c.fix_mask.astype(bool)] = c.fix_val[c.fix_mask.astype(bool)]
    return x


@numba.njit
def _kernel_states(c_n, grp_start, grp_cum, grp_node_start, grp_nodes, opt_bits, fix_mask, fix_val, seed, n_traj):
    x0, groups = cpu._start_template(c_n, grp_start, grp_cum, grp_node_start, grp_nodes, opt_bits, fix_mask,
                                     fix_val)
    out = np.zeros((n_traj, c_n), np.uint8)
    x = np.zeros(c_n, np.uint8)
    for t in range(n_traj):
        cpu._initial_state(x, x0, groups, seed, t, grp_start, grp_cum, grp_node_start, grp_nodes, opt_bits, fix_mask)
        out[t] = x
    return out, groups


@pytest.mark.parametrize("mutants, draws", [(None, 2), ({"B": 1, "C": 0}, 2), ({"A": 0, "B": 0, "E": 1}, 2)])
def test_initial_states_follow_the_stream_layout(tmp_path, mutants, draws):
    (tmp_path / "m.bnd").write_text(BND)
    (tmp_path / "m.cfg").write_text(CFG)
    c = compile_model(load(tmp_path / "m.bnd", tmp_path / "m.cfg"), mutants)
    seed, n = 12345, 400
    got, groups = _kernel_states(c.n, c.grp_start, c.grp_cum, c.grp_node_start, c.grp_nodes, c.opt_bits,
                                 c.fix_mask, c.fix_val, np.int64(seed), n)
    assert len(groups) == draws  # only [A, B] and E draw
    want = np.array([_reference(c, seed, t) for t in range(n)])
    np.testing.assert_array_equal(got, want)
    idx = {nm: i for i, nm in enumerate(c.nodes)}
    assert got[:, idx["D"]].all() and not got[:, idx["F"]].any()
    ab = got[:, idx["A"]] * 2 + got[:, idx["B"]]
    if not mutants:  # the joint draw: 0.3 [1,0] 0.5 [0,1] 0.2 [1,1], never [0,0]; 400 draws: each within 5 sd
        assert not (ab == 0).any()
        for code, pr in ((2, 0.3), (1, 0.5), (3, 0.2)):
            assert abs((ab == code).mean() - pr) < 5 * math.sqrt(pr * (1 - pr) / n)
        assert got[:, idx["C"]].all()
    else:
        for nm, v in mutants.items():
            assert (got[:, idx[nm]] == v).all()


@numba.njit
def _entropies(rates, internal, totals, internals):
    memo_p = np.full(1 << cpu.MEMO_BITS, np.nan)
    memo_t = np.zeros(1 << cpu.MEMO_BITS, np.float64)
    n = rates.shape[1]
    nz = np.zeros((n + 63) >> 6, np.uint64)
    out = np.zeros(totals.shape[0])
    for e in range(totals.shape[0]):
        for i in range(n):
            cpu._set_bit(nz, i, rates[e, i] != 0.0)
        out[e] = cpu._transition_entropy(rates[e], nz, internal, n, totals[e], internals[e], memo_p, memo_t)
    return out


def test_remembered_entropy_terms_are_the_computed_ones():
    """Many events of rates from a few values (hits, misses and slot collisions), over two words of nodes, give,
    term for term in node order, the bits of ``-(ds_log(p) * INV_LN2) * p`` summed afresh."""
    rng = np.random.default_rng(7)
    n, events = 70, 3000
    values = np.array([0.0, 1.0, 2.0, 0.5, 3.0, 1.0 / 3.0])
    rates = values[rng.integers(0, len(values), (events, n))]
    rates[::97] = 0.0
    rates[::97, 3] = 2.0  # one visible rate: p = 1
    internal = np.zeros(n, bool)
    internal[[2, 7, 64, 69]] = True
    vis_nodes = np.flatnonzero(~internal).astype(np.int32)
    totals = rates.sum(axis=1)
    internals = (rates * internal).sum(axis=1)
    got = _entropies(rates, internal.astype(np.uint8), totals, internals)
    want = np.zeros(events)
    for e in range(events):
        th = 0.0
        for i in vis_nodes:
            if rates[e, i] != 0.0:
                p = rates[e, i] / (totals[e] - internals[e])
                th -= (ds_log(p) * INV_LN2) * p
        want[e] = th
    np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


@numba.njit
def _sums_and_flips(rates, internal, u2s):
    n = rates.shape[1]
    nz = np.zeros((n + 63) >> 6, np.uint64)
    dummy_i, dummy_f, dummy_u8 = np.zeros(1, np.int32), np.zeros(1), np.zeros(1, np.uint8)
    out = np.zeros((rates.shape[0], 2))
    node = np.zeros((rates.shape[0], u2s.shape[0]), np.int64)
    for e in range(rates.shape[0]):
        for i in range(n):
            cpu._set_bit(nz, i, rates[e, i] != 0.0)
        r = rates[e].copy()
        out[e, 0], out[e, 1] = cpu._update_rates(dummy_u8, n, -2, dummy_i, dummy_i, dummy_i, dummy_i, dummy_i,
                                                 dummy_u8, dummy_i, dummy_f, internal, r, nz)
        for k in range(u2s.shape[0]):
            node[e, k] = cpu._flip(r, nz, u2s[k], out[e, 0])
    return out, node


def test_sums_and_flip_over_the_nodes_with_a_rate_are_the_full_scans():
    """The sums over the nodes whose rate is not 0 (``nz``) and the flip chosen among them equal the scans over
    every node in node order (zeros added, the original loops), bit for bit, over two words of nodes."""
    rng = np.random.default_rng(11)
    n, events = 70, 400
    values = np.array([0.0, 0.0, 0.0, 1.0, 2.5, 1e-3, 7.0 / 3.0])
    rates = values[rng.integers(0, len(values), (events, n))]
    rates[::50] = 0.0  # fixed points
    internal = (rng.random(n) < 0.3).astype(np.uint8)
    u2s = np.concatenate([rng.random(50), [0.0, 1.0 - 2.0**-53]])
    got, nodes = _sums_and_flips(rates, internal, u2s)
    for e in range(events):
        total = rate_internal = 0.0
        for i in range(n):
            total += rates[e, i]
            if rates[e, i] != 0.0 and internal[i]:
                rate_internal += rates[e, i]
        assert (got[e, 0], got[e, 1]) == (total, rate_internal)
        assert np.float64(got[e, 0]).tobytes() == np.float64(total).tobytes()
        for k, u2 in enumerate(u2s):
            rr, want = u2 * total, -1
            for i in range(n):
                if rates[e, i] > 0.0:
                    want = i
                    rr -= rates[e, i]
                    if rr < 0.0:
                        break
            assert nodes[e, k] == want


@pytest.mark.parametrize("words", [1, 2])
def test_sum_rows_of_one_key_and_of_keys_equal_at_the_ends(words):
    """``block._sum_rows`` where every row is the same (the shortcut: no sort) and where only the first and the
    last are (the sort): the distinct rows in order with the integer sums of their values."""
    from distsim.maboss.block import _sum_rows

    rng = np.random.default_rng(5)
    n = 1000
    vals = rng.integers(-2**40, 2**40, n)
    row = np.array([2**63 + 5, 7][:words], np.uint64)
    rows = np.tile(row, (n, 1))
    got_rows, got_sum = _sum_rows((), rows, vals)
    np.testing.assert_array_equal(got_rows, row[None, :])
    assert got_sum.dtype == np.int64 and got_sum.tolist() == [int(vals.sum())]
    lead = np.full(n, 3, np.int32)
    got_lead, got_rows, got_sum = _sum_rows((lead,), rows, vals)
    assert got_lead.tolist() == [3] and got_sum.tolist() == [int(vals.sum())]
    rows[1:-1:2, -1] = np.uint64(1)  # the ends equal, others not
    got_rows, got_sum = _sum_rows((), rows, vals)
    odd = np.zeros(n, bool)
    odd[1:-1:2] = True
    np.testing.assert_array_equal(got_rows[:, -1], np.array([1, row[-1]], np.uint64))
    assert got_sum.tolist() == [int(vals[odd].sum()), int(vals[~odd].sum())]
