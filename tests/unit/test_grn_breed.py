"""GRN GA breeding, survivors' gather and best-so-far update as kernels: the Numba twins (distsim.grn.cpu)
equal the NumPy code they replaced (kept here as the specification) bit for bit, for every model,
selection and mode, mutation rates 0, 0.5 and 1, rule sets of 4, 2 and 1 rules, one- and two-word
rows and children reverted for their connectivity; and kernels/grn_ga.cu, compiled for the host by g++
(cuda_on_host.py) and launched by the unchanged GPUOps, equals the twins. The device itself is checked
by tests/gpu/test_grn_gpu.py."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

import distsim.grn as grn
from distsim.grn import cpu
from distsim.grn.ga import MODELS, MODES, SELECTIONS, Consts, CPUOps, GAParams, IslandBlock, _threshold

from cuda_on_host import GXX, HostModule, fake_cupy

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------- the specification: the former NumPy code

def reference_breed(c: Consts, prm: GAParams, islands: np.ndarray, A, R, Ru, parents, g: int):
    """Steps 2-4 of distsim.grn.ga as IslandBlock.step and _mutate wrote them with array ops (xp = numpy).
    Returns (ca, cr, cru, number of children reverted for their connectivity)."""
    xp, u64 = np, np.uint64
    ops = CPUOps(c)
    K, N = parents.shape
    n, n2 = c.n, c.n * c.n
    base = (xp.arange(K, dtype=xp.int64) * N)[:, None]
    index = xp.arange(2 * N, dtype=xp.int64)
    if prm.cellular:
        head = xp.broadcast_to(index[:N], (K, N))
        tail = parents
        w = ops.rng(prm.seed, islands, cpu.P_CROSS, g, N, 1)
        cut = ((w[..., 0].astype(u64) * u64(n2)) >> u64(32)).astype(xp.int64)
    else:
        order = parents
        p1, p2 = order[:, 0::2], order[:, 1::2]
        w = ops.rng(prm.seed, islands, cpu.P_CROSS, g, N // 2, 1)
        c_pair = ((w[..., 0].astype(u64) * u64(n2)) >> u64(32)).astype(xp.int64)
        head = xp.stack([p1, p2], axis=2).reshape(K, N)
        tail = xp.stack([p2, p1], axis=2).reshape(K, N)
        cut = xp.repeat(c_pair, 2, axis=1)
    gh = (head + base).reshape(-1)
    gt = (tail + base).reshape(-1)
    link_cut = cut.reshape(-1) + (1 if prm.mode == "faithful" else 0)
    rule_cut = cut.reshape(-1) // n + 1
    word_lo = (np.arange(n)[None, :] * n + 32 * np.arange(c.W)[:, None]).astype(np.int64)
    nb = xp.clip(link_cut[:, None, None] - word_lo[None], 0, 32).astype(u64)
    one = xp.ones_like(nb)
    mask = ((one << nb) - one).astype(xp.uint32)
    ah, rh = A[gh], R[gh]
    ca = (ah & mask) | (A[gt] & ~mask)
    cr = (rh & mask) | (R[gt] & ~mask)
    cru = xp.where(xp.arange(n)[None, :] < rule_cut[:, None], Ru[gh], Ru[gt])
    nnz = np.bitwise_count(ca | cr).sum(axis=(1, 2)).astype(xp.int64)
    bad = xp.abs(nnz - c.nnz_ref) * c.conn_q >= c.conn_p * n2
    ca = xp.where(bad[:, None, None], ah, ca)
    cr = xp.where(bad[:, None, None], rh, cr)
    cru = xp.where(bad[:, None], Ru[gh], cru)
    # _mutate
    P = ca.shape[0]
    w = ops.rng(prm.seed, islands, cpu.P_MUTATE, g, N, 2).reshape(P, 8).astype(u64)
    ch = xp.arange(P)
    if prm.link_mutation > 0:
        do = w[:, 0] < u64(_threshold(prm.link_mutation))
        pos = ((w[:, 1] * u64(n2)) >> u64(32)).astype(xp.int64)
        j, i = pos // n, pos % n
        wd = i >> 5
        bit = (xp.ones(P, xp.uint32) << (i & 31).astype(xp.uint32))
        aw, rw = ca[ch, wd, j], cr[ch, wd, j]
        v = ((aw & bit) != 0).astype(xp.int64) - ((rw & bit) != 0).astype(xp.int64)
        table = np.array([[0, 1], [1, -1], [0, -1]], np.int64)  # other values of -1, 0, +1
        new = table[v + 1, (w[:, 2] >> u64(31)).astype(xp.int64)]
        ca[ch, wd, j] = xp.where(do, xp.where(new == 1, aw | bit, aw & ~bit), aw)
        cr[ch, wd, j] = xp.where(do, xp.where(new == -1, rw | bit, rw & ~bit), rw)
    na = len(c.allowed)
    if prm.rule_mutation > 0 and na > 1:
        allowed = c.allowed
        pos_of = np.zeros(4, np.int64)
        pos_of[allowed] = np.arange(na)
        do = w[:, 3] < u64(_threshold(prm.rule_mutation))
        node = ((w[:, 4] * u64(n)) >> u64(32)).astype(xp.int64)
        inc = 1 + ((w[:, 5] * u64(na - 1)) >> u64(32)).astype(xp.int64)
        old = cru[ch, node]
        new = allowed[(pos_of[old.astype(xp.int64)] + inc) % na]
        cru[ch, node] = xp.where(do, new, old)
    return ca, cr, cru, int(bad.sum())


def reference_select(N, order, parents, children):
    keep = order[:, :N]
    rows = np.arange(keep.shape[0])[:, None]
    return tuple(np.concatenate([p, ch], axis=1)[rows, keep] for p, ch in zip(parents, children))


def reference_update_best(gen, current, best):
    score, act, rep, rules = current
    b_score, b_act, b_rep, b_rules, b_gen = best
    K, N = score.shape
    i = np.argmin(score * (2 * N) + np.arange(N), axis=1)
    rows = np.arange(K)
    s = score[rows, i]
    better = s < b_score
    return (np.where(better, s, b_score), np.where(better[:, None, None], act[rows, i], b_act),
            np.where(better[:, None, None], rep[rows, i], b_rep), np.where(better[:, None], rules[rows, i], b_rules),
            np.where(better, gen, b_gen), score.min(axis=1), score.sum(axis=1))


# ------------------------------------------------------------------------------------------ recorded blocks

class Recording(CPUOps):
    """CPUOps that keeps copies of the inputs and outputs of every breed/select/update_best call (outputs
    become the block's arrays, which migration changes in place)."""

    def __init__(self, c):
        super().__init__(c)
        self.calls = []

    def breed(self, *args):
        out = super().breed(*args)
        self.calls.append(("breed", tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in args),
                           tuple(map(np.copy, out))))
        return out

    def select(self, order, parents, children):
        out = super().select(order, parents, children)
        self.calls.append(("select", (order.copy(), tuple(map(np.copy, parents)), tuple(map(np.copy, children))),
                           tuple(map(np.copy, out))))
        return out

    def update_best(self, gen, current, best):
        out = super().update_best(gen, current, best)
        self.calls.append(("update_best", (gen, tuple(map(np.copy, current)), tuple(map(np.copy, best))),
                           tuple(map(np.copy, out))))
        return out


@pytest.fixture(scope="module")
def problems():
    mouse = grn.load(ROOT / "examples" / "grn" / "mouse_eye.toml")
    p45 = grn.planted(45, seed=1)
    return {
        "mouse": mouse,  # one word per row, 4 rules
        "planted45-tight": dataclasses.replace(p45, max_connectivity_distance=0.005),  # two words; reverts
        "mouse-2rules": dataclasses.replace(mouse, rules=(0, 2)),
        "mouse-1rule": dataclasses.replace(mouse, rules=(3,)),
    }


CONFIGS = [(m, s, d) for m in MODELS for s in SELECTIONS for d in MODES
           if not (m in ("cellular", "hybrid") and s == "roulette")]
RATES = [(0.0, 0.0), (0.5, 0.5), (1.0, 1.0), (1.0, 0.0), (0.0, 0.5)]


def run_block(prob, model, selection, mode, lm, rm, generations=6, ops_cls=Recording):
    c = Consts.of(prob)
    N = 36 if model in ("cellular", "hybrid") else 32
    prm = GAParams(model, selection, mode, N, 3, 2, 2, lm, rm, 11, generations, 0)
    ops = ops_cls(c)
    b = IslandBlock(ops, c, prm, np.array([0, 4, 5]))
    for g in range(generations):
        if g % 2 == 0:
            b.migrate(None)
        b.step()
    return c, prm, b, ops


@pytest.mark.parametrize("model,selection,mode", CONFIGS)
def test_breed_select_update_best_equal_the_array_code(problems, model, selection, mode):
    reverted = 0
    for name, prob in problems.items():
        for lm, rm in RATES:
            c, prm, b, ops = run_block(prob, model, selection, mode, lm, rm)
            kinds = [k for k, _, _ in ops.calls]
            assert kinds.count("breed") == 6 and kinds.count("update_best") == 6
            assert kinds.count("select") == (6 if (not prm.cellular and mode == "standard") else 0)
            for kind, args, out in ops.calls:
                if kind == "breed":
                    A, R, Ru, parents, islands, g, _ = args
                    *want, bad = reference_breed(c, prm, islands, A, R, Ru, parents, g)
                    reverted += bad
                elif kind == "select":
                    want = reference_select(b.N, *args)
                else:
                    want = reference_update_best(*args)
                assert len(out) == len(want)
                for got, ref in zip(out, want):
                    assert got.dtype == ref.dtype and np.array_equal(got, ref), (name, lm, rm, kind)
    assert reverted > 0, "no child was reverted for its connectivity: the revert path was not exercised"


class Threaded(Recording):
    """Recording whose kernels always use threads (the blocks here are below PARALLEL_WORK)."""

    def _parallel(self, P):
        return True


@pytest.mark.parametrize("model,selection,mode", [("island", "elitist", "standard"), ("cellular", "elitist", "faithful")])
def test_threaded_breed_equals_the_array_code(problems, model, selection, mode):
    c, prm, b, ops = run_block(problems["planted45-tight"], model, selection, mode, 0.5, 1.0, ops_cls=Threaded)
    calls = [(args, out) for kind, args, out in ops.calls if kind == "breed"]
    assert len(calls) == 6
    for (A, R, Ru, parents, islands, g, _), out in calls:
        want = reference_breed(c, prm, islands, A, R, Ru, parents, g)[:3]
        assert all(np.array_equal(x, y) for x, y in zip(out, want))


def test_ranked_islands_need_no_parent_sort(problems):
    """(mu + lambda) leaves every island in key order, so elitist parents are the ranks without a sort:
    the parents breed gets are the argsort of the keys every generation, migrations (which unrank) included;
    the statistics update_best leaves are those of the scores, also after a migration."""
    c = Consts.of(problems["mouse"])
    prm = GAParams("island", "elitist", "standard", 32, 3, 2, 3, 0.5, 0.5, 11, 9, 0)
    ops = Recording(c)
    b = IslandBlock(ops, c, prm, np.array([0, 4, 5]))
    want, ranked = [], []
    for g in range(9):
        if g % 3 == 0:
            b.migrate(None)
        assert all(np.array_equal(x, y) for x, y in zip(b.stats(), (b.score.min(axis=1), b.score.sum(axis=1))))
        want.append(np.argsort(b._keys(b.score), axis=1))
        ranked.append(b.ranked)
        b.step()
    got = [args[3] for kind, args, _ in ops.calls if kind == "breed"]
    assert len(got) == 9 and all(np.array_equal(x, y) for x, y in zip(got, want))
    assert ranked == [False, True, True] * 3


def test_mutation_changes_exactly_what_rate_one_says(problems):
    """Rate 1: every child has one link position changed to another value (never left as it was) and one
    rule changed, relative to the unmutated child (rates 0) of the same parents and generation."""
    prob = problems["mouse"]
    c = Consts.of(prob)
    prm0 = GAParams("island", "elitist", "standard", 32, 3, 2, 2, 0.0, 0.0, 11, 6, 0)
    prm1 = dataclasses.replace(prm0, link_mutation=1.0, rule_mutation=1.0)
    b0 = IslandBlock(CPUOps(c), c, prm0, np.array([0, 4, 5]))
    b1 = IslandBlock(CPUOps(c), c, prm1, np.array([0, 4, 5]))
    parents = np.argsort(b0._keys(b0.score), axis=1)
    flat = (b0._flat(b0.act), b0._flat(b0.rep), b0._flat(b0.rules))
    ca0, cr0, cru0 = b0.ops.breed(*flat, parents, b0.islands, 1, b0.breeding)
    ca1, cr1, cru1 = b1.ops.breed(*flat, parents, b1.islands, 1, b1.breeding)
    links_changed = np.bitwise_count((ca0 ^ ca1) | (cr0 ^ cr1)).sum(axis=(1, 2))
    assert np.all(links_changed == 1)
    assert np.all((ca1 & cr1) == 0)  # a position is never both activator and repressor
    assert np.all((cru0 != cru1).sum(axis=1) == 1)


# ------------------------------------------------------------------ kernels/grn_ga.cu on the host (g++)

class BreedOnly:
    """kernels/grn_breed.cuh compiled for the host; grn_ga.cu's other kernels (warp intrinsics, shared
    memory) are not, and calling one fails."""

    def __init__(self, workdir):
        self.mod = HostModule('#include "grn_breed.cuh"\n', workdir)

    def get_function(self, name):
        try:
            return self.mod.get_function(name)
        except AttributeError:
            return lambda *a: pytest.fail(f"{name} is not compiled for the host")


@pytest.fixture
def host_gpu_ops(monkeypatch, tmp_path_factory):
    if GXX is None:
        pytest.skip("g++ not on PATH")
    from distsim.grn import gpu

    cp = fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cp)
    kdir = tmp_path_factory.mktemp("grn_host_kernels")
    monkeypatch.setattr(gpu, "_module", lambda: BreedOnly(kdir))
    return gpu.GPUOps


@pytest.mark.parametrize("model,selection,mode", [("island", "elitist", "standard"), ("hybrid", "elitist", "faithful"),
                                                  ("island", "roulette", "faithful")])
def test_host_compiled_kernels_equal_the_twins(problems, host_gpu_ops, model, selection, mode):
    """GPUOps.breed/select/update_best (grn_cross, grn_revert_mutate, grn_select, grn_update_best run one
    thread at a time) on the inputs the Numba twins saw == the twins' outputs, bit for bit."""
    reverted = 0
    for name in ("mouse", "planted45-tight", "mouse-2rules"):
        c, prm, b, ops = run_block(problems[name], model, selection, mode, 0.5, 1.0, generations=3)
        g_ops = host_gpu_ops(c)
        for kind, args, out in ops.calls:
            if kind == "breed":
                A, R, Ru, parents, islands, g, _ = args
                reverted += reference_breed(c, prm, islands, A, R, Ru, parents, g)[3]
            got = getattr(g_ops, kind)(*args)
            for x, y in zip(got, out):
                assert x.dtype == y.dtype and np.array_equal(x, y), (name, kind)
    assert reverted > 0
