"""GRN GA on the GPU: the fixtures, kernels equal to the CPU ones bit for bit, and CPU == GPU runs."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

import distsim.grn as grn
from distsim.engine import LocalExecutor
from distsim.grn import cpu
from distsim.grn.ga import MODELS, MODES, SELECTIONS, Consts, CPUOps, GAParams, IslandBlock
from distsim.grn.problem import pack_links

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
OPTIMUM = 0.0005859375


@pytest.fixture(scope="module")
def mouse():
    return grn.load(ROOT / "examples" / "grn" / "mouse_eye.toml")


def ops_pair(prob):
    from distsim.grn.gpu import GPUOps

    c = Consts.of(prob)
    return CPUOps(c), GPUOps(c)


def test_fixtures_on_gpu(mouse):
    import cupy as cp

    fx = json.loads((ROOT / "tests" / "data" / "grn" / "mouse_eye_grn_test_fixtures.json").read_text())
    _, g = ops_pair(mouse)
    a, r = pack_links(mouse.links)
    for case in fx["cases"]:
        s = g.evaluate(cp.asarray(a[None]), cp.asarray(r[None]), cp.asarray(np.array(case["rules"], np.uint8)[None]))
        assert float(mouse.fitness_of_score(int(s.get()[0]))) == case["fitness"], case["case"]


@pytest.mark.parametrize("n", [5, 32, 33, 70, 300, 1100])
def test_evaluate_gpu_equals_cpu(n):
    import cupy as cp

    rng = np.random.default_rng(n)
    prob = grn.Problem(tuple(f"x{i}" for i in range(n)), rng.choice([-1, 0, 1], (n, n), p=[.02, .96, .02]),
                       rng.integers(0, 2, n), rng.integers(0, 2, n), iterations=6, lam=0.8)
    P = 9 if n > 256 else 515  # not a multiple of the individuals per block
    links = rng.choice([-1, 0, 1], (P, n, n), p=[.03, .94, .03]).astype(np.int8)
    rules = rng.integers(0, 4, (P, n)).astype(np.uint8)
    a, r = pack_links(links)
    c, g = ops_pair(prob)
    want = c.evaluate(a, r, rules)
    got = g.evaluate(cp.asarray(a), cp.asarray(r), cp.asarray(rules)).get()
    assert np.array_equal(got, want)
    if n <= 70:
        assert want.tolist()[:5] == [prob.score(*prob.mismatches(links[k], rules[k])) for k in range(5)]


@pytest.mark.parametrize("n", [32, 45])
def test_philox_and_initial_links_gpu_equal_cpu(n):
    prob = grn.planted(n, seed=1)
    c, g = ops_pair(prob)
    isl = np.array([0, 3, 7], np.int64)
    assert np.array_equal(g.rng(11, isl, cpu.P_MUTATE, 9, 100, 3).get(), c.rng(11, isl, cpu.P_MUTATE, 9, 100, 3))
    ca, cr = c.init_links(11, isl, 20)
    ga, gr = g.init_links(11, isl, 20)
    assert np.array_equal(ga.get(), ca) and np.array_equal(gr.get(), cr)


class Checked(CPUOps):
    """CPUOps whose breed/select/update_best also run on the device (GPUOps) and must give the same bits."""

    def __init__(self, c):
        from distsim.grn.gpu import GPUOps

        super().__init__(c)
        self.gpu = GPUOps(c)
        self.checked = {"breed": 0, "select": 0, "update_best": 0}

    def _same(self, kind, got, want):
        assert len(got) == len(want)
        for x, y in zip(got, want):
            x = x.get()
            assert x.dtype == y.dtype and np.array_equal(x, y), kind
        self.checked[kind] += 1

    def breed(self, act, rep, rules, parents, islands, gen, b):
        import cupy as cp

        out = super().breed(act, rep, rules, parents, islands, gen, b)
        dev = [cp.asarray(a) for a in (act, rep, rules, parents)]
        self._same("breed", self.gpu.breed(*dev, islands, gen, b), out)
        return out

    def select(self, order, parents, children):
        import cupy as cp

        out = super().select(order, parents, children)
        dev = lambda t: tuple(cp.asarray(a) for a in t)  # noqa: E731
        self._same("select", self.gpu.select(cp.asarray(order), dev(parents), dev(children)), out)
        return out

    def update_best(self, gen, current, best):
        import cupy as cp

        out = super().update_best(gen, current, best)
        dev = lambda t: tuple(cp.asarray(a) for a in t)  # noqa: E731
        self._same("update_best", self.gpu.update_best(gen, dev(current), dev(best)), out)
        return out


@pytest.mark.parametrize("model,selection,mode", [(m, s, d) for m in MODELS for s in SELECTIONS for d in MODES
                                                  if not (m in ("cellular", "hybrid") and s == "roulette")])
def test_breed_select_update_best_gpu_equal_cpu(mouse, model, selection, mode):
    """grn_cross/grn_revert_mutate/grn_select/grn_update_best on the device == the Numba twins, every
    generation of blocks of one, two and ten words per row (the 45-gene one with connectivity reverts)."""
    probs = (mouse, dataclasses.replace(grn.planted(45, seed=1), max_connectivity_distance=0.005),
             grn.planted(300, seed=2))
    for prob, N, gens in zip(probs, (512, 64, 16), (12, 12, 4)):
        c = Consts.of(prob)
        ops = Checked(c)
        prm = GAParams(model, selection, mode, N, 3, 2, 3, 0.5, 1.0, 5, gens, 0)
        b = IslandBlock(ops, c, prm, np.array([0, 6, 9]))
        for g in range(gens):
            if g % 3 == 0:
                b.migrate(None)
            b.step()
        assert ops.checked["breed"] == gens and ops.checked["update_best"] == gens


def same(a, b):
    for v in ("best_fitness", "mean_fitness", "best_links", "best_rules", "trajectory"):
        assert np.array_equal(a[v].values, b[v].values), v
    for k in ("fitness", "generations", "best_island", "best_generation"):
        assert a.attrs[k] == b.attrs[k], k


@pytest.mark.parametrize("kw", [
    dict(model="island", islands=4, population=128, migration_interval=8, migration_rate=8),
    dict(model="island", islands=3, population=64, selection="roulette", mode="faithful", migration_interval=3),
    dict(model="island", islands=2, population=64, selection="roulette"),
    dict(model="hybrid", islands=2, population=64, migration_interval=5, migration_rate=3),
    dict(model="cellular", population=100, mode="faithful"),
    dict(model="master-slave", population=256, mode="faithful"),
])
def test_cpu_and_gpu_runs_identical(mouse, kw):
    a = grn.infer(mouse, generations=60, seed=4, client=LocalExecutor("cpu"), **kw)
    b = grn.infer(mouse, generations=60, seed=4, client=LocalExecutor("gpu"), **kw)
    assert b.attrs["backend"] == "gpu"
    same(a, b)


def test_planted_large_cpu_equals_gpu():
    prob = grn.planted(300, seed=2)
    kw = dict(islands=2, population=32, generations=6, migration_interval=3, migration_rate=2, seed=1)
    same(grn.infer(prob, client=LocalExecutor("cpu"), **kw), grn.infer(prob, client=LocalExecutor("gpu"), **kw))


def test_mouse_eye_optimum_on_gpu(mouse):
    a = grn.infer(mouse, seed=1, generations=800, target_fitness=OPTIMUM, client=LocalExecutor("gpu"))
    assert a.attrs["fitness"] == OPTIMUM and a.attrs["node_mismatches"] == 0
    same(a, grn.infer(mouse, seed=1, generations=800, target_fitness=OPTIMUM, client=LocalExecutor("cpu")))
