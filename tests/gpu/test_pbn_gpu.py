"""PBN on a GPU: the CUDA kernels reproduce the CPU kernels bit for bit (run on a lent GPU).

The SSA cases are in tests/unit/test_conformance.py (backend x method), Philox in tests/unit/test_rng.py."""

import numpy as np
import pytest

from distsim.models.formats import load
from distsim.models.pbn import random_pbn
from distsim.pbn import cpu
from distsim.pbn.compile import compile_pbn
from distsim.pbn.shard import flat_targets

pytestmark = pytest.mark.gpu

CASES = {
    "random-independent": lambda: random_pbn(40, seed=1, multi_fraction=0.4, perturbation=0.05, fixed_fraction=0.1),
    "random-dependent": lambda: random_pbn(30, seed=2, multi_fraction=0.5, perturbation=0.02, contexts=4),
    "large-p": lambda: random_pbn(12, seed=4, perturbation=0.3),
    "shmulevich": lambda: load("examples/pbn/bnmpy_shmulevich2002_examplePBN_3n.txt").with_perturbation(0.01),
    "kgbn48": lambda: load("examples/pbn/kgbn_aspc1_optimized_pbn_48n_80f.txt").with_perturbation(0.001),
    "sizek87": lambda: load("examples/pbn/bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet").with_perturbation(0.001),
    "erbb247": lambda: load("examples/pbn/bbm004_helikar2013_erbb_receptor_signaling_247n.bnet").with_perturbation(0.01),
    "assa-npnode": lambda: load("examples/pbn/bang_test2_perturbation0.2.pbn"),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("mode", [0, 1])
def test_pbn_kernel_cpu_equals_gpu(case, mode):
    from distsim.pbn.gpu import GPUKernel, get_kernel

    net = CASES[case]()
    c = compile_pbn(net)
    n_chains, chain0, seed = 1000, 77, 5
    targets = [((0, 1),), ((1, 0), (net.n - 1, 1))]
    fix = (np.zeros(net.n, bool), np.zeros(net.n, np.uint8))
    S = cpu.init_sliced(net.n, chain0, n_chains, seed, *fix)
    k = get_kernel(c, mode, targets)
    Sg = k.init_state(chain0, n_chains, seed, *fix)
    assert np.array_equal(GPUKernel.states_of(Sg, n_chains), cpu.unslice(S, n_chains, net.n))
    for step0, nsteps in ((0, 150), (150, 333)):
        a = cpu.advance_sliced(S, c, chain0=chain0, n_chains=n_chains, step0=step0, nsteps=nsteps, seed=seed,
                               mode=mode, targets=flat_targets(targets), want_chain=True, want_nodes=True)
        b = k.advance(Sg, chain0=chain0, n_chains=n_chains, step0=step0, nsteps=nsteps, seed=seed,
                      want_chain=True, want_nodes=True)
        assert np.array_equal(GPUKernel.states_of(Sg, n_chains), cpu.unslice(S, n_chains, net.n))
        assert np.array_equal(a["pooled"], b["pooled"])
        assert np.array_equal(a["chain_ones"], b["chain_ones"])
        assert np.array_equal(a["node_ones"], b["node_ones"])


def test_multi_launch_equals_single(monkeypatch):
    import cupy as cp

    from distsim.pbn import gpu

    net = random_pbn(20, seed=8, perturbation=0.05)
    c = compile_pbn(net)
    k = gpu.get_kernel(c, 0, [((0, 1),)])
    fix = (np.zeros(net.n, bool), np.zeros(net.n, np.uint8))
    S1 = k.init_state(0, 500, 1, *fix)
    S2 = S1.copy()
    one = k.advance(S1, chain0=0, n_chains=500, step0=0, nsteps=1000, seed=1)
    monkeypatch.setattr(gpu, "MAX_STEPS_PER_LAUNCH", 97)
    many = k.advance(S2, chain0=0, n_chains=500, step0=0, nsteps=1000, seed=1)
    assert np.array_equal(cp.asnumpy(S1), cp.asnumpy(S2))
    assert np.array_equal(one["pooled"], many["pooled"])


def test_simulate_gpu_equals_cpu():
    import distsim.pbn as pbn

    net = pbn.load("examples/pbn/kgbn_aspc1_optimized_pbn_48n_80f.txt", perturbation=0.01)
    kw = dict(steps=300, trajectories=3000, seed=4, targets=["AKT1=1", "APC=0,BAD=1"], keep_states=True)
    a = pbn.simulate(net, backend="cpu", **kw)
    b = pbn.simulate(net, backend="gpu", **kw)
    for v in ("final_state", "final_frequency", "frequency", "target_frequency", "transitions_01", "transitions_10"):
        assert np.array_equal(a[v].values, b[v].values), v
    assert b.attrs["backend"] == "gpu"


def test_steady_state_gpu_equals_cpu():
    from distsim.pbn.steady import steady_state

    net = load("examples/pbn/bbm023_faure2006_mammalian_cell_cycle_10n.bnet").with_perturbation(0.01)
    kw = dict(precision=2e-3, seed=3, chains=2048)
    a = steady_state(net, ["v_CycE=1", "v_Rb=0,v_p27=1"], backend="cpu", **kw)
    b = steady_state(net, ["v_CycE=1", "v_Rb=0,v_p27=1"], backend="gpu", **kw)
    for v in ("probability", "rhat", "burn_in", "sample_size", "alpha", "beta"):
        assert np.array_equal(a[v].values, b[v].values), v


def test_connect_uses_gpu_workers_and_matches_cpu():
    import distsim
    from distsim.pbn.steady import steady_state

    net = load("examples/pbn/bnmpy_shmulevich2002_examplePBN_3n.txt").with_perturbation(0.01)
    kw = dict(chains=4096, precision=2e-3, seed=2)
    client = distsim.connect()
    try:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        assert workers and all(w["resources"].get("GPU") for w in workers.values())
        a = steady_state(net, "x1=1", client=client, **kw)
    finally:
        client.close()
    b = steady_state(net, "x1=1", backend="cpu", **kw)
    assert a.attrs["backend"] == "gpu"
    assert np.array_equal(a.probability.values, b.probability.values)
    assert np.array_equal(a.sample_size.values, b.sample_size.values)


def _assert_advances_equal(k, S, Sg, c, n_chains, seed, mode, targets, segments):
    """Advance the CPU state S and the GPU kernel k's state Sg through ``segments`` (step0, nsteps):
    the same states and counts after each."""
    from distsim.pbn.gpu import GPUKernel

    for step0, nsteps in segments:
        a = cpu.advance_sliced(S, c, chain0=0, n_chains=n_chains, step0=step0, nsteps=nsteps, seed=seed, mode=mode,
                               targets=flat_targets(targets), want_chain=True, want_nodes=True)
        b = k.advance(Sg, chain0=0, n_chains=n_chains, step0=step0, nsteps=nsteps, seed=seed, want_chain=True,
                      want_nodes=True)
        assert np.array_equal(GPUKernel.states_of(Sg, n_chains), cpu.unslice(S, n_chains, c.n))
        for key in ("pooled", "chain_ones", "node_ones"):
            assert np.array_equal(a[key], b[key]), key


@pytest.mark.parametrize("case", ["erbb247", "random-dependent", "kgbn48"])
@pytest.mark.parametrize("mode", [0, 1])
def test_split_placement_equals_cpu(case, mode):
    """Nodes kept in global memory (reorder-and-split) give the same bits, odd and even step counts."""
    from distsim.pbn.gpu import get_kernel

    net = CASES[case]()
    c = compile_pbn(net)
    n_chains, seed = 700, 3
    targets = [((0, 1),), ((1, 0), (net.n - 1, 1))]
    fix = (np.zeros(net.n, bool), np.zeros(net.n, np.uint8))
    S = cpu.init_sliced(net.n, 0, n_chains, seed, *fix)
    k = get_kernel(c, mode, targets, registers=8)
    assert k.split
    Sg = k.init_state(0, n_chains, seed, *fix)
    _assert_advances_equal(k, S, Sg, c, n_chains, seed, mode, targets, ((0, 101), (101, 64)))


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("registers", ["auto", 8])
@pytest.mark.parametrize("capacity", [3, 6])
def test_pieces_from_the_queue_equal_cpu(monkeypatch, mode, registers, capacity):
    """More tiles than the device holds: each tile's advance cut into pieces that the blocks take from
    the queue (forced here with a capacity of 3 or 6 tiles, so 3 or 6 pieces per tile, all resident at
    once on a real GPU: most pieces wait for their tile's previous one) gives the CPU's bits and counts,
    odd and even piece lengths, hot and cold nodes."""
    from distsim.pbn import launch
    from distsim.pbn.gpu import get_kernel

    net = CASES["kgbn48"]()
    c = compile_pbn(net)
    n_chains, seed = 7 * launch.TILE_CHAINS - 1000, 6
    targets = [((0, 1),), ((1, 0), (net.n - 1, 1))]
    fix = (np.zeros(net.n, bool), np.zeros(net.n, np.uint8))
    k = get_kernel(c, mode, targets, registers=registers)
    assert k.blocks_per_sm >= 1 and k.capacity >= k.sms
    monkeypatch.setattr(k, "blocks_per_sm", 1)
    monkeypatch.setattr(k, "sms", capacity)
    monkeypatch.setattr(launch, "MIN_PIECE_STEPS", 16)
    assert len(launch.plan_launch(k.single(0, n_chains, seed).tasks([0], [401]), k.capacity)) == 7 * capacity
    S = cpu.init_sliced(net.n, 0, n_chains, seed, *fix)
    Sg = k.init_state(0, n_chains, seed, *fix)
    _assert_advances_equal(k, S, Sg, c, n_chains, seed, mode, targets, ((0, 401), (401, 250)))


BATCH_CASES = {
    "faure-sync": ("examples/pbn/bbm023_faure2006_mammalian_cell_cycle_10n.bnet", "sync",
                   [{"p": 0.01}, {"p": 0.03}, {"fix.v_Rb": 0}, {"fix.v_CycA": 0}, {"fix.v_p27": 1, "p": 0.02},
                    {"fix.v_CycE": 0}]),
    "faure-async": ("examples/pbn/bbm023_faure2006_mammalian_cell_cycle_10n.bnet", "async",
                    [{"p": 0.01}, {"fix.v_Rb": 1}, {"fix.v_CycA": 0}, {"fix.v_Cdh1": 1, "p": 0.03}]),
    "kgbn48-async": ("examples/pbn/kgbn_aspc1_optimized_pbn_48n_80f.txt", "async",
                     [{"p": 0.01}, {"fix.AKT1": 0}, {"fix.APC": 1}, {"fix.BAD": 0, "p": 0.02}]),
}


@pytest.mark.parametrize("case", BATCH_CASES)
def test_batched_sweep_gpu_equals_cpu_per_point(case):
    """The shared-kernel GPU batch (knockouts set by the kernel, per-point perturbation tables) gives
    the numbers of one CPU steady_state / simulate call per point."""
    from distsim.pbn import batch, simulate
    from distsim.pbn.steady import steady_state
    from distsim.sweep.adapters import _pbn_apply

    path, mode, points = BATCH_CASES[case]
    net = load(path).with_perturbation(0.01)
    nets = [_pbn_apply(net, p)[0] for p in points]
    seeds = list(range(21, 21 + len(points)))
    target = [f"{net.nodes[0]}=1", f"{net.nodes[1]}=0,{net.nodes[2]}=1"]
    kw = dict(target=target, precision=5e-3, chains=3000, mode=mode, max_steps=5e7)
    got = batch.steady_states(net, nets, seeds, "gpu", **kw)
    assert got is not None
    for g, m, s in zip(got, nets, seeds):
        ref = steady_state(m, seed=s, backend="cpu", **kw)
        for v in ref.data_vars:
            assert np.array_equal(g[v].values, ref[v].values, equal_nan=True), (v, s)
        assert g.attrs["chain_length"] == ref.attrs["chain_length"] and g.attrs["rounds"] == ref.attrs["rounds"]
    kw = dict(steps=333, trajectories=5000, targets=target, mode=mode, keep_states=True)
    got = batch.simulations(net, nets, seeds, "gpu", **kw)
    for g, m, s in zip(got, nets, seeds):
        ref = simulate(m, seed=s, backend="cpu", **kw)
        for v in ref.data_vars:
            assert np.array_equal(g[v].values, ref[v].values), (v, s)


def test_sweep_on_gpu_is_batched_and_equals_cpu():
    import distsim
    import distsim.pbn as pbn

    net = load("examples/pbn/bbm209_sizek2019_cell_cycle_apoptosis_87n.bnet").with_perturbation(0.001)
    names = list(net.nodes[:6])
    points = [{"p": p, **{f"fix.{n}": (0 if n == m else None) for n in names}} for p in (0.001, 0.002)
              for m in [None] + names]  # the wild type and 6 knockouts, at two perturbation probabilities
    kw = dict(target="v_Casp3=1", precision=1e-2, chains=5000, chunk_size=len(points))
    a = distsim.sweep(pbn.steady_state, net, points, seed=4, backend="gpu", **kw)
    b = distsim.sweep(pbn.steady_state, net, points, seed=4, backend="cpu", **kw)
    assert a.attrs["backend"] == "gpu" and a.attrs["tasks"] == 1
    for v in b.data_vars:
        if v != "wall_time_s":
            assert np.array_equal(a[v].values, b[v].values, equal_nan=True), v
