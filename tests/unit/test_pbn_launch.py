"""The GPU launch plans (distsim.pbn.launch) on the CPU: the tasks of stacked runs, and the pieces
that keep the device full to the end of a long advance. Replaying a plan with the CPU kernel, task
by task in launch order, gives the bits and counts of one plain advance (the GPU tests run the same
plans through the CUDA kernel)."""

import numpy as np
import pytest

from distsim.models.pbn import random_pbn
from distsim.pbn import cpu
from distsim.pbn.compile import compile_pbn
from distsim.pbn.launch import LAST, TASK_DTYPE, TILE_CHAINS, Runs, pieces, plan_launch, split_steps
from distsim.pbn.shard import flat_targets


def test_task_layout_matches_the_cuda_struct():
    # struct ds_task: 2 x u64, 2 x u32, 10 x int32, no padding
    assert TASK_DTYPE.itemsize == 64
    assert [TASK_DTYPE.fields[k][1] for k in ("chain0", "step0", "tile", "seed", "nsteps", "flags", "piece")] == \
        [0, 8, 16, 20, 24, 52, 56]


def test_runs_stack_tiles_tables_and_tasks():
    perts = [(np.array([0, 1]), np.array([5, 9])), (np.array([2]), np.array([7]))]
    r = Runs.stack([10_000, 5_000], [0, 7], [1, 2], perts, [(), ((3, 1),)])
    assert r.n_tiles == 5 and list(r.tile0) == [0, 3]
    assert list(r.pert_list[:3]) == [0, 1, 2] and r.pert.tolist() == [[0, 2], [2, 1]]
    assert r.fix.tolist() == [[0, 0], [0, 1]] and list(r.fix_list) == [3, 1]
    # the kernel reads these tables as int32 / uint32 arrays (a wider type would be read as garbage)
    assert (r.pert_list.dtype, r.pert_thresh.dtype, r.fix_list.dtype) == (np.int32, np.uint32, np.int32)
    assert r.pert_thresh.tolist()[:3] == [5, 9, 7]
    t = r.tasks([0, 10], [100, 50])
    assert list(t["tile"]) == [0, 1, 2, 3, 4]
    assert list(t["n_chains"]) == [TILE_CHAINS, TILE_CHAINS, 10_000 - 2 * TILE_CHAINS, TILE_CHAINS,
                                   5_000 - TILE_CHAINS]
    assert list(t["chain0"]) == [0, TILE_CHAINS, 2 * TILE_CHAINS, 7, 7 + TILE_CHAINS]
    assert list(t["seed"]) == [1, 1, 1, 2, 2] and list(t["slot"]) == [0, 0, 0, 1, 1]
    assert list(t["step0"]) == [0, 0, 0, 10, 10] and list(t["nsteps"]) == [100, 100, 100, 50, 50]
    assert list(t["n_fix"]) == [0, 0, 0, 1, 1] and (t["flags"] == LAST).all()
    assert list(r.tasks([0, 0], [1, 1], runs=[1])["tile"]) == [3, 4]


@pytest.mark.parametrize("tiles, capacity, expected, wave_times", [
    (512, 396, 17, 22 / 17),  # a 2-GPU share of 2^22 chains on an H200 at 3 blocks/SM: 1.294 (ideal 1.293), not 2
    (1024, 396, 17, 44 / 17),  # 2.588 (ideal 2.586), not 3
    (792, 396, 1, 2.0),  # exactly two waves
    (300, 396, 1, 1.0),  # fits
    (2000, 400, 1, 5.0),  # exactly five waves
])
def test_pieces(tiles, capacity, expected, wave_times):
    P = pieces(tiles, capacity)
    assert P == expected and -(-tiles * P // capacity) / P == pytest.approx(wave_times)
    if tiles > capacity:  # (fewer tiles: one piece each, a tile's pieces could not run side by side)
        assert wave_times <= min(-(-tiles * p // capacity) / p for p in range(1, 33)) * 1.001


def _tasks(n_tiles, per_tile, nsteps, step0=7, seed=3):
    t = np.zeros(n_tiles, dtype=TASK_DTYPE)
    t["tile"] = np.arange(n_tiles)
    t["chain0"] = 11 + np.arange(n_tiles) * per_tile
    t["n_chains"] = per_tile
    t["seed"], t["step0"], t["nsteps"], t["flags"] = seed, step0, nsteps, LAST
    return t


@pytest.mark.parametrize("n_tiles, capacity, nsteps", [(10, 4, 1003), (7, 3, 640), (5, 2, 100)])
def test_plan_covers_every_step_in_order(n_tiles, capacity, nsteps):
    tasks = _tasks(n_tiles, 64, nsteps)
    tasks["nsteps"][0] -= 3  # lengths may differ
    plan = plan_launch(tasks, capacity, min_steps=8)
    P = len(plan) // n_tiles
    assert P > 1 and len(plan) == P * n_tiles
    done = {int(t): 7 for t in tasks["tile"]}
    seen = {int(t): 0 for t in tasks["tile"]}
    last = {int(t): 0 for t in tasks["tile"]}
    for i, task in enumerate(plan):
        tile = int(task["tile"])
        assert int(task["piece"]) == seen[tile] == i // n_tiles  # piece k of every tile before piece k + 1
        assert int(task["step0"]) == done[tile]  # each piece starts where the tile stands
        done[tile] += int(task["nsteps"])
        seen[tile] += 1
        last[tile] += int(task["flags"] & LAST)
    assert all(done[int(t["tile"])] == 7 + int(t["nsteps"]) for t in tasks) and all(v == 1 for v in last.values())


def test_one_piece_when_it_fits_or_pieces_are_short():
    assert len(plan_launch(_tasks(4, 64, 1000), 4)) == 4
    assert len(plan_launch(_tasks(10, 64, 300), 4)) == 10  # pieces of 100 steps < MIN_PIECE_STEPS
    one = plan_launch(_tasks(10, 64, 300), 4)
    assert (one["piece"] == 0).all() and (one["flags"] == LAST).all() and (one["nsteps"] == 300).all()


def test_split_steps_keeps_last_on_the_final_part():
    t = _tasks(3, 64, 10)
    t["nsteps"][1] = 4
    parts = split_steps(t, 4)
    assert [list(p["nsteps"]) for p in parts] == [[4, 4, 4], [4, 0, 4], [2, 0, 2]]
    assert [list(p["step0"]) for p in parts] == [[7] * 3, [11] * 3, [15] * 3]
    assert [int((p["flags"] & LAST).sum()) for p in parts] == [0, 0, 3]


@pytest.mark.parametrize("mode", [0, 1])
def test_replaying_a_plan_with_the_cpu_kernel_gives_the_plain_advance(mode):
    net = random_pbn(24, seed=11, multi_fraction=0.4, perturbation=0.03)
    c = compile_pbn(net)
    per_tile, n_tiles, nsteps, seed = 64, 9, 700, 3
    fix = (np.zeros(net.n, bool), np.zeros(net.n, np.uint8))
    targets = flat_targets([((0, 1),), ((1, 0), (2, 1))])
    kw = dict(seed=seed, mode=mode, targets=targets, want_chain=True, want_nodes=True)
    whole = cpu.init_sliced(net.n, 11, per_tile * n_tiles, seed, *fix)
    ref = cpu.advance_sliced(whole, c, chain0=11, n_chains=per_tile * n_tiles, step0=7, nsteps=nsteps, **kw)

    tiles = [cpu.init_sliced(net.n, 11 + k * per_tile, per_tile, seed, *fix) for k in range(n_tiles)]
    pooled = np.zeros_like(ref["pooled"])
    chain_ones = np.zeros_like(ref["chain_ones"])
    node_ones = np.zeros_like(ref["node_ones"])
    plan = plan_launch(_tasks(n_tiles, per_tile, nsteps), capacity=4, min_steps=16)
    assert len(plan) > 2 * n_tiles
    for task in plan:
        k = int(task["tile"])
        out = cpu.advance_sliced(tiles[k], c, chain0=int(task["chain0"]), n_chains=per_tile,
                                 step0=int(task["step0"]), nsteps=int(task["nsteps"]), **kw)
        pooled[:, :3] += out["pooled"][:, :3]
        if task["flags"] & LAST:
            pooled[:, 3] += out["pooled"][:, 3]
        chain_ones[:, k * per_tile:(k + 1) * per_tile] += out["chain_ones"]
        node_ones += out["node_ones"]
    states = np.concatenate([cpu.unslice(S, per_tile, net.n) for S in tiles])
    assert np.array_equal(states, cpu.unslice(whole, per_tile * n_tiles, net.n))
    assert np.array_equal(pooled, ref["pooled"])
    assert np.array_equal(chain_ones, ref["chain_ones"])
    assert np.array_equal(node_ones, ref["node_ones"])
