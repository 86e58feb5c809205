"""SCC reduction (seed 000, section 4) is exact in every mode, on every backend.

Networks here have nodes that are not ancestors of the targets: descendants of the core with
several functions, non-perturbed (npNode) self-loops that freeze their initial value, constants.
Two checks:
* a reduced run gives the kept nodes the same trajectories as the unreduced run, so every count
  (pooled, per chain) and every steady-state figure is identical, bit for bit;
* time averages of the reduced run match the exact stationary probabilities of the kept nodes'
  process (the full chain's 2**n matrix lumped onto the kept nodes) within 4.42 exact standard
  errors (two-sided 1e-5), with and without frozen nodes, in asynchronous mode where a removed
  node's turn leaves the kept nodes unchanged.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from distsim.engine import registry
from distsim.engine.executor import ShardContext
from distsim.models.boolean import Const, Not, Or, Var, remap
from distsim.models.pbn import PBN, Predictor, random_pbn
from distsim.pbn import reference as ref
from distsim.pbn import steady_state
from distsim.pbn.compile import compile_pbn
from distsim.pbn.reduce import ancestors
from distsim.pbn.shard import MODES, Block, advance_block

BACKENDS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]


def with_outsiders(core: PBN, *, frozen: bool, order_seed: int) -> PBN:
    """``core`` plus nodes that no core node reads, shuffled among the core nodes: a two-function
    descendant, a node reading it, and (``frozen``) a non-perturbed self-loop and a non-perturbed
    constant; else perturbable ones."""
    n = core.n
    rows = [list(r) for r in core.predictors]
    rows.append([Predictor(Or((Var(0), Not(Var(1)))), 0.6), Predictor(Var(2), 0.4)])  # n: descendant, 2 functions
    rows.append([Predictor(Or((Var(n), Var(n + 2))), 1.0)])  # n+1 reads n and n+2
    rows.append([Predictor(Var(n + 2), 1.0)])  # n+2: self-loop x = x
    rows.append([Predictor(Const(True), 1.0)])  # n+3: constant
    fixed = set(core.fixed) | ({n + 2, n + 3} if frozen else set())
    contexts = None
    if core.dependent:
        contexts = [(tuple(choice) + (k % 2, 0, 0, 0), p) for k, (choice, p) in enumerate(core.contexts)]
    order = np.random.default_rng(order_seed).permutation(n + 4)  # new position of old node i
    new = {int(i): int(order[i]) for i in range(n + 4)}
    inv = np.argsort(order)
    old_names = [f"c{i}" for i in range(n)] + [f"o{i}" for i in range(4)]
    names = [old_names[int(inv[k])] for k in range(n + 4)]
    preds = [[Predictor(remap(p.expr, new), p.probability) for p in rows[int(inv[k])]] for k in range(n + 4)]
    ctx = None if contexts is None else [(tuple(c[int(inv[k])] for k in range(n + 4)), p) for c, p in contexts]
    return PBN.create(names, preds, perturbation=core.perturbation, fixed=[new[f] for f in fixed], contexts=ctx,
                      name="outsiders")


def networks():
    return {
        "independent": with_outsiders(random_pbn(4, seed=3, multi_fraction=0.7, perturbation=0.03), frozen=False,
                                      order_seed=1),
        "independent-frozen": with_outsiders(random_pbn(4, seed=5, multi_fraction=0.7, perturbation=0.03),
                                             frozen=True, order_seed=2),
        "dependent-frozen": with_outsiders(random_pbn(4, seed=8, multi_fraction=0.7, perturbation=0.03, contexts=3),
                                           frozen=True, order_seed=3),
    }


def targets_for(net: PBN) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Two targets over core nodes (named c*), whose ancestors are all in the core."""
    core = [i for i in range(net.n) if net.nodes[i].startswith("c")]
    a, b = core[0], core[-1]
    return (((a, 1),), ((a, 0), (b, 1)))


def run_block(c, targets, mode, backend, chains=64 * 8, start=20, length=300, seed=11):
    zero = (np.zeros(c.n, bool), np.zeros(c.n, np.uint8))
    blk = Block(c, MODES[mode], targets, seed, 0, chains, *zero, start, (start, start + length // 2, start + length),
                want_chain=True)
    out = advance_block(ShardContext(f"red-{c.digest[:8]}", 0, 0, backend), blk)
    registry.release(f"red-{c.digest[:8]}")
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("name", ["independent", "independent-frozen", "dependent-frozen"])
def test_reduced_run_equals_unreduced_run(name, mode, backend):
    net = networks()[name]
    targets = targets_for(net)
    keep = ancestors(net, {i for t in targets for i, _ in t})
    assert len(keep) <= net.n - 4, "the outsiders must be removable"
    sim = {old: new for new, old in enumerate(keep)}
    full = run_block(compile_pbn(net), targets, mode, backend)
    red = run_block(compile_pbn(net, keep), tuple(tuple((sim[i], v) for i, v in t) for t in targets), mode, backend)
    assert np.array_equal(full["pooled"], red["pooled"])
    assert full["chain_sums"] == red["chain_sums"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_steady_state_identical_with_and_without_reduction(mode, backend):
    net = networks()["independent-frozen"]
    target = [{net.nodes[i]: v for i, v in t} for t in targets_for(net)]
    kw = dict(mode=mode, precision=5e-3, seed=4, backend=backend, initial="zeros")
    red = steady_state(net, target, reduce=True, **kw)
    full = steady_state(net, target, reduce=False, **kw)
    assert red.attrs["nodes_removed"] >= 4 and full.attrs["nodes_removed"] == 0
    for v in ("probability", "half_width", "rhat", "burn_in", "sample_size"):
        assert np.array_equal(red[v].values, full[v].values), v


def lumped(P: np.ndarray, n: int, keep: list[int]) -> np.ndarray:
    """The kept nodes' transition matrix from the full one (exact when no kept node reads a removed
    one: every full state with the same kept bits must give the same kept-row, which is checked)."""
    X = ref.all_states(n)
    code = (X[:, keep].astype(np.int64) << np.arange(len(keep))).sum(axis=1)
    K = 1 << len(keep)
    to_kept = np.zeros((P.shape[0], K))
    np.add.at(to_kept.T, code, P.T)  # to_kept[x, k] = sum of P[x, y] over y with kept bits k
    PK = np.zeros((K, K))
    for k in range(K):
        rows = to_kept[code == k]
        assert np.allclose(rows, rows[0], atol=1e-12), "not lumpable onto the kept nodes"
        PK[k] = rows[0]
    return PK


def stationary(P: np.ndarray) -> np.ndarray:
    N = P.shape[0]
    A = P.T - np.eye(N)
    A[-1, :] = 1.0
    b = np.zeros(N)
    b[-1] = 1.0
    return np.linalg.solve(A, b)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["async", "sync"])
@pytest.mark.parametrize("name", ["independent", "independent-frozen", "dependent-frozen"])
def test_reduced_time_averages_match_exact(name, mode, backend):
    net = networks()[name]
    targets = targets_for(net)
    keep = ancestors(net, {i for t in targets for i, _ in t})
    sim = {old: new for new, old in enumerate(keep)}
    PK = lumped(ref.transition_matrix(net, mode), net.n, keep)
    pi = stationary(PK)
    lam = np.sort(np.abs(np.linalg.eigvals(PK)))[::-1][1]
    start = max(50, math.ceil(math.log(1e-9) / math.log(lam)))
    chains, length = 64 * 64, 400
    red_targets = tuple(tuple((sim[i], v) for i, v in t) for t in targets)
    out = run_block(compile_pbn(net, keep), red_targets, mode, backend, chains=chains, start=start, length=length)
    XK = ref.all_states(len(keep))
    for t, tgt in enumerate(red_targets):
        f = np.ones(len(pi), bool)
        for i, v in tgt:
            f &= XK[:, i] == bool(v)
        f = f.astype(float)
        exact = float(pi @ f)
        g = f - exact
        Z = np.linalg.inv(np.eye(len(pi)) - PK + np.outer(np.ones(len(pi)), pi))
        var = float(pi @ (g * (2 * (Z @ g) - g)))
        se = math.sqrt(max(var, 1e-300) / (chains * length))
        est = int(out["pooled"][1:, t, 0].sum()) / (chains * length)
        assert abs(est - exact) < 4.42 * se, f"target {tgt}: {est:.5f} vs exact {exact:.5f} (se {se:.2e})"
