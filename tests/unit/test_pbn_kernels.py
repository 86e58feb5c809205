"""PBN compiler and CPU kernels: the bit-sliced kernel equals the per-trajectory truth-table kernel
bit for bit, counts are consistent, and results do not depend on how steps or chains are split."""

import numpy as np
import pytest

from distsim.models.boolean import Var, parse_expression, truth_table
from distsim.models.pbn import PBN, random_pbn
from distsim.pbn import cpu
from distsim.pbn.compile import compile_pbn, cumulative_thresholds, perturbation_table
from distsim.pbn.shard import flat_targets

NETS = {
    "independent": dict(n=40, seed=1, multi_fraction=0.4, perturbation=0.05, fixed_fraction=0.1),
    "dependent": dict(n=30, seed=2, multi_fraction=0.5, perturbation=0.02, contexts=4),
    "no-perturbation": dict(n=25, seed=3, multi_fraction=0.3, perturbation=0.0),
    "large-p": dict(n=12, seed=4, perturbation=0.3),
}


def run_both(net, mode, n_chains=150, chain0=11, step0=5, nsteps=200, seed=9):
    c = compile_pbn(net)
    S = cpu.init_sliced(net.n, chain0, n_chains, seed, np.zeros(net.n, bool), np.zeros(net.n, np.uint8))
    X = cpu.pack_states(cpu.unslice(S, n_chains, net.n))
    tg = flat_targets([((0, 1),), ((1, 0), (2, 1))])
    out = cpu.advance_sliced(S, c, chain0=chain0, n_chains=n_chains, step0=step0, nsteps=nsteps, seed=seed, mode=mode,
                             targets=tg, want_chain=True, want_nodes=True)
    cpu.advance_table(X, c, chain0=chain0, step0=step0, nsteps=nsteps, seed=seed, mode=mode)
    return cpu.unslice(S, n_chains, net.n), cpu.unpack_states(X, net.n), out


@pytest.mark.parametrize("name", NETS)
@pytest.mark.parametrize("mode", [0, 1])
def test_sliced_equals_table(name, mode):
    net = random_pbn(**NETS[name])
    a, b, _ = run_both(net, mode)
    assert np.array_equal(a, b)
    assert a.any() and not a.all()


def test_program_matches_truth_tables():
    names = [f"v{i}" for i in range(6)]
    texts = ["v0 & !v1 | v2", "!(v0 | v1) & v2 ^ v3", "maj(v0, v1, v2, v3, v4)", "sumgt(v0,v1,v2,v3,v4,v5, 2)",
             "sumlt(v0, !v1, v2, 2)", "1", "0 | v5", "v1 & !v1", "(v0 ^ v1) ^ (v2 & (v3 | !v4))"]
    exprs = [parse_expression(t, names.index) for t in texts]
    net = PBN.create(names, [[e] for e in exprs[:6]], perturbation=0.0)
    c = compile_pbn(PBN.create(names, [[e] for e in exprs[:6]]))
    # run the program on all 64 states at once: lane x = state x
    from distsim.pbn.compile import compile_program

    prog = compile_program(exprs, 6)
    regs = np.zeros(prog.n_regs, dtype=np.uint64)
    lanes = np.arange(64, dtype=np.uint64)
    for i in range(6):
        regs[i] = np.bitwise_or.reduce(((lanes >> np.uint64(i)) & np.uint64(1)) << lanes)
    regs[6] = 0
    regs[7] = np.uint64(2**64 - 1)
    cpu.run_program(prog.code, regs)
    from distsim.pbn.reference import all_states
    from distsim.models.boolean import evaluate

    X = all_states(6)
    for j, e in enumerate(exprs):
        word = int(regs[prog.outputs[j]])
        got = np.array([(word >> x) & 1 for x in range(64)], dtype=bool)
        assert np.array_equal(got, evaluate(e, X)), texts[j]
    assert c.program.size > 0 and net.n == 6


def test_packed_truth_tables():
    names = ["a", "b", "c", "d", "e", "f"]
    e = parse_expression("a & !b | c & (d ^ e) | f", names.index)
    c = compile_pbn(PBN.create(names, [[e]] + [[Var(i)] for i in range(1, 6)]))
    tt = truth_table(e, (0, 1, 2, 3, 4, 5))
    words = c.tt[c.tt_start[0]:c.tt_start[1]]
    bits = [(int(words[r >> 5]) >> (r & 31)) & 1 for r in range(64)]
    assert bits == list(tt.astype(int))


def test_threshold_tables():
    G = perturbation_table(0.01, 50)
    assert np.all(np.diff(G.astype(np.int64)) > 0)
    assert abs(G[-1] / 2**32 - (1 - 0.99**50)) < 1e-9
    t = cumulative_thresholds([0.25, 0.25, 0.5])
    assert t[0] == 2**30 and t[1] == 2**31 and t[2] == 2**32 - 1


def test_step_and_chain_splits_do_not_matter():
    net = random_pbn(30, seed=5, multi_fraction=0.4, perturbation=0.05)
    c = compile_pbn(net)
    tg = flat_targets([((0, 1),)])
    zero = (np.zeros(net.n, bool), np.zeros(net.n, np.uint8))
    S = cpu.init_sliced(net.n, 0, 200, 3, *zero)
    whole = cpu.advance_sliced(S, c, chain0=0, n_chains=200, step0=0, nsteps=300, seed=3, mode=0, targets=tg,
                               want_nodes=True)
    # same chains in two shards (64-aligned) and the steps in two segments
    parts, pooled, nodes = [], 0, 0
    for c0, nc in ((0, 128), (128, 72)):
        Sp = cpu.init_sliced(net.n, c0, nc, 3, *zero)
        for s0, ns in ((0, 120), (120, 180)):
            o = cpu.advance_sliced(Sp, c, chain0=c0, n_chains=nc, step0=s0, nsteps=ns, seed=3, mode=0, targets=tg,
                                   want_nodes=True)
            pooled = pooled + o["pooled"][:, :3]
            nodes = nodes + o["node_ones"]
        parts.append(cpu.unslice(Sp, nc, net.n))
    assert np.array_equal(np.concatenate(parts), cpu.unslice(S, 200, net.n))
    assert np.array_equal(pooled, whole["pooled"][:, :3])
    assert np.array_equal(nodes, whole["node_ones"])


def test_counts_are_consistent():
    net = random_pbn(20, seed=6, perturbation=0.05)
    a, _, out = run_both(net, 0, n_chains=100, nsteps=300)
    pooled = out["pooled"]
    # per-chain counts (vertical counters) sum to the pooled counts
    assert np.array_equal(out["chain_ones"].sum(axis=1).astype(np.uint64), pooled[:, 0])
    # entries and exits differ by the change in occupancy (at most one per chain)
    assert np.all(np.abs(pooled[:, 1].astype(np.int64) - pooled[:, 2].astype(np.int64)) <= 100)
    # end occupancy matches the final states
    assert pooled[0, 3] == a[:, 0].sum()
    assert pooled[1, 3] == (~a[:, 1] & a[:, 2]).sum()
    assert np.all(out["node_ones"] <= 100 * 300)


def test_fixed_nodes_never_flip_and_fixed_initial_state():
    names = ["a", "b"]
    net = PBN.create(names, [[Var(0)], [Var(1)]], perturbation=0.2, fixed=["a"])
    c = compile_pbn(net)
    S = cpu.init_sliced(2, 0, 128, 1, np.array([True, True]), np.array([1, 0], np.uint8))
    start = cpu.unslice(S, 128, 2)
    assert start[:, 0].all() and not start[:, 1].any()
    cpu.advance_sliced(S, c, chain0=0, n_chains=128, step0=0, nsteps=50, seed=1, mode=0, targets=flat_targets([()]))
    end = cpu.unslice(S, 128, 2)
    assert end[:, 0].all()  # identity function, never perturbed
    assert 0 < end[:, 1].sum() < 128  # perturbed identity: about half flipped


def test_slice_roundtrip():
    rng = np.random.default_rng(0)
    states = rng.random((130, 70)) < 0.5
    assert np.array_equal(cpu.unslice(cpu.slice_states(states), 130, 70), states)
    assert np.array_equal(cpu.unpack_states(cpu.pack_states(states), 70), states)
