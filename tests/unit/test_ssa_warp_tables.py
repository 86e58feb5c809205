"""The warp kernel's host-side tables (no GPU needed): its sum levels and its firing table, decoded
back into the compiled network's changes, dependents and propensities."""

import numpy as np
import pytest

from distsim.models.compile_reactions import compile_network
from distsim.models.formats.reaction_text import parse_reactions
from distsim.models.kinetics import mass_action
from distsim.ssa.generators import colloidal_aggregation, cyclic_chain, random_network
from distsim.ssa.gpu import (ITEM_CHANGE, ITEM_GENERAL, ITEM_MASS, ITEM_NONE, RCT_SHIFT, _needs_check, warp_check,
                             warp_chunk, warp_general, warp_items, warp_lanes, warp_levels, warp_placement, warp_resident,
                             warp_stride, warp_strided)

LAWS = parse_reactions("0 -> X; 2\nX -> 0; law: 0.1*X/(1+X)\n2 X -> Y; 0.01\nX + Y + Z -> 0; 0.5\n"
                       "Y -> Z; 0.3\nZ -> X; 0.2\ninit: X = 30, Y = 2, Z = 1", name="laws")


@pytest.mark.parametrize("m,sizes,offs", [(3, [3], [0]), (32, [32], [0]), (33, [33, 2], [0, 0]),
                                          (1024, [1024, 32], [0, 0]), (10000, [10000, 313, 10], [0, 0, 320]),
                                          (50000, [50000, 1563, 49, 2], [0, 0, 1568, 1632])])
def test_warp_levels(m, sizes, offs):
    """Level l+1 has ceil(size_l / 32) entries until one has <= 32 (the top); levels 1..L-1 are laid
    out one after the other, each padded to whole blocks of 32 (the kernel reads 16-byte pairs)."""
    s, o = warp_levels(m)
    assert s.tolist() == sizes and o.tolist() == offs


def _decode(c, j, item_start, items):
    rows = items[item_start[j]:item_start[j + 1]]
    changes = [(int(r[0]), int(r[1])) for r in rows if r[3] == ITEM_CHANGE]
    deps = [r for r in rows if r[3] != ITEM_CHANGE]
    assert all(r[3] == ITEM_CHANGE for r in rows[:len(changes)])  # the changes come first
    return changes, deps


@pytest.mark.parametrize("net", [cyclic_chain(70), random_network(60, seed=3), colloidal_aggregation(9), LAWS],
                         ids=["chain", "random", "aggregation", "laws"])
def test_warp_items_decode_to_the_network(net):
    """Every reaction's rows: its net changes, then its dependents in order; a mass-action dependent
    of <= 2 reactants carries them packed, and theta * C(x_a, r_a) * C(x_b, r_b) computed from them is
    the CPU's propensity; every other dependent is marked general."""
    c = compile_network(net)
    item_start, items = warp_items(c)
    assert item_start.dtype == np.int32 and items.dtype == np.int32 and items.shape[1] == 4
    x = np.random.default_rng(1).integers(0, 50, c.n_species).astype(np.int64)
    for j in range(c.n_reactions):
        changes, deps = _decode(c, j, item_start, items)
        q = slice(c.chg_start[j], c.chg_start[j + 1])
        assert changes == list(zip(c.chg_species[q].tolist(), c.chg_delta[q].tolist()))
        assert [int(r[0]) for r in deps] == c.dep_list[c.dep_start[j]:c.dep_start[j + 1]].tolist()
        for d, p1, p2, kind in deps:
            n_rct = c.rct_start[d + 1] - c.rct_start[d]
            if kind == ITEM_GENERAL:
                assert c.kind[d] != 0 or n_rct > 2
                continue
            assert kind == ITEM_MASS
            v = c.theta[d]
            for p in (p1, p2):
                if p >= 0:
                    s, r = p & ((1 << RCT_SHIFT) - 1), p >> RCT_SHIFT
                    h = float(x[s])
                    for m in range(1, r):
                        h = h * (float(x[s]) - m) / (m + 1)
                    v = v * h
            assert v == mass_action(c.theta[d], d, x, c.rct_start, c.rct_species, c.rct_stoich)


def test_warp_items_laws_are_general():
    c = compile_network(LAWS)
    _, items = warp_items(c)
    kinds = {int(r[0]): int(r[3]) for r in items if r[3] != ITEM_CHANGE}
    assert kinds[1] == ITEM_GENERAL  # a kinetic law
    assert kinds[3] == ITEM_GENERAL  # three reactants
    assert kinds[2] == ITEM_MASS and kinds[4] == ITEM_MASS


def test_warp_placement():
    """Levels and counts go to shared memory while a block of realizations fits the budget, the levels first."""
    assert warp_placement(1000, 0) == (1, 1)
    assert warp_placement(10000, 320) == (0, 1)
    assert warp_placement(50000, 1632) == (0, 0)
    assert warp_placement(10000, 320, 16) == (0, 1)  # 8 realizations per block: 20 KiB of levels
    assert warp_placement(10000, 320, 8) == (0, 0)  # 16 per block: 40 KiB
    assert warp_placement(1000, 0, 8) == (0, 1)  # one level: nothing above level 0, counts 64 KiB
    assert warp_placement(2000, 64, 8) == (0, 1)  # 8 KiB of levels beside 4 KiB of top levels
    assert warp_placement(2000, 64, 4) == (0, 0)  # 16 KiB of levels beside 8 KiB of top levels: > 22 KiB


def test_warp_strided_tables():
    """Padded firing tables: reaction j's items at rows j*stride.., ITEM_NONE after them; the stride is
    the longest table rounded up to a power of two, and 0 (item_start) where the general path is needed."""
    c = compile_network(random_network(60, seed=3))
    item_start, items = warp_items(c)
    stride = warp_stride(item_start, 0)
    n = np.diff(item_start)
    assert stride >= n.max() and stride & (stride - 1) == 0 and stride < 2 * n.max()
    assert warp_stride(item_start, 1) == 0
    padded = warp_strided(item_start, items, stride)
    assert padded.shape == (c.n_reactions * stride, 4)
    for j in range(c.n_reactions):
        rows = padded[j * stride:(j + 1) * stride]
        assert np.array_equal(rows[:n[j]], items[item_start[j]:item_start[j + 1]])
        assert np.all(rows[n[j]:, 3] == ITEM_NONE)


@pytest.mark.parametrize("net", [cyclic_chain(70), random_network(60, seed=3), colloidal_aggregation(9),
                                 colloidal_aggregation(40), LAWS], ids=["chain", "random", "agg-9", "agg-40", "laws"])
def test_warp_compile_time_paths(net):
    """The general path is compiled in exactly when a firing table is longer than 32 items or has a
    general dependent; the propensity checks exactly when some reaction needs one."""
    c = compile_network(net)
    item_start, items = warp_items(c)
    longest = int(np.diff(item_start).max())
    assert warp_general(item_start, items) == int(longest > 32 or bool((items[:, 3] == ITEM_GENERAL).any()))
    assert warp_check(c) == int(any(_needs_check(c, d) for d in range(c.n_reactions)))
    assert warp_general(item_start, items) == {"cyclic_chain_70": 0, "random_60": 0, "colloidal_aggregation_9": 0,
                                              "colloidal_aggregation_40": 1, "laws": 1}[net.name]


def test_warp_lanes():
    """The fewest lanes that the ensemble fills (4,224 realizations of 32 lanes on the reference device,
    33,792 of 4), else 32, and 8 at least for tables longer than 4 items; never by the shard's size."""
    assert (warp_resident(32), warp_resident(4), warp_resident(4, sms=114)) == (4224, 33792, 29184)
    chain = warp_items(compile_network(cyclic_chain(100)))[0]  # 4 items per reaction
    assert [warp_lanes(chain, n) for n in (1, 4096, 8000, 16384, 65536, 10**7)] == [32, 32, 16, 8, 4, 4]
    start = np.array([0, 12, 20])  # a 12-item table: the general path, 8 lanes at least
    assert [warp_lanes(start, n) for n in (4096, 8000, 16384, 65536)] == [32, 16, 8, 8]
    assert warp_lanes(np.array([0, 5]), 10**7) == 8
    assert warp_lanes(np.array([0, 40]), 10**7) == 8


def test_warp_chunk():
    """Launches hold whole waves of resident realizations where more than one fits, then are balanced."""
    assert warp_chunk(65536, 26000, 16896) == 16384  # 4 launches of one wave, not 3 of 1.3
    assert warp_chunk(65536, 10**9, 33792) == 65536  # one launch
    assert warp_chunk(65536, 1000, 33792) == 993  # less than a wave fits: as many as fit, balanced
    assert warp_chunk(100, 26000, 16896) == 100
    for R, fits, resident in [(65536, 26000, 16896), (10**6, 70000, 33792), (5, 2, 4)]:
        chunk = warp_chunk(R, fits, resident)
        assert chunk <= fits and -(-R // chunk) * chunk - R < -(-R // chunk)  # balanced: launches differ by < 1
