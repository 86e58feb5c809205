"""Batched SSA on a GPU: every point of one launch gives, bit for bit, what a GPU run of that point
alone gives (the per-point loop; the fused sums also against the CPU batch), for
the generated kernel (fused sums and grid states), the generic kernel (direct, tree, ar) and the
warp kernel (bins from the sum tree's pilot, as the per-point path's CPU pilot)."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import distsim
from distsim.engine import LocalExecutor
from distsim.ssa import load, simulate
from distsim.ssa.batch import simulate_batch
from distsim.ssa.generators import cyclic_chain, random_network
from distsim.sweep import adapters

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
CASES = {
    "mm": (lambda: load(ROOT / "examples/ssa/michaelis_menten.rxn"), [{"k1": 2e-3}, {}, {"k3": 0.02}], "S"),
    "dimerisation-sbml-laws": (lambda: load(ROOT / "tests/data/dsmts/00030/00030-sbml-l3v1.xml"),
                               [{"k1": 0.002}, {"k2": 0.05}, {}], None),
    "chain-100": (lambda: cyclic_chain(100), [{}, {}, {}], "S3"),
    "random-80": (lambda: random_network(80), [{}, {}, {}], "S0"),
}
GPU, CPU = LocalExecutor("gpu"), LocalExecutor("cpu")
KEYS = ("mean", "variance", "firings", "firings_total", "mean_firings_per_realization", "truncated_realizations")


def _points(case):
    make, params, species = CASES[case]
    net = make()
    initial = [{}, {species: 7} if species else {}, {}]
    return net, params, initial, [3, 1 << 31, 12345]


def _loop(net, params, initial, seeds, client, **kw):
    return [simulate(net.with_parameters(**p).with_initial(**i), seed=s, client=client, **kw)
            for p, i, s in zip(params, initial, seeds)]


def _check(ds, refs, quantiles):
    for p, ref in enumerate(refs):
        for v in ("mean", "variance", "firings") + (("quantile_value", "bin_width") if quantiles else ()):
            assert np.array_equal(ds[v].values[p], ref[v].values), (p, v)
        assert int(ds.firings_total[p]) == ref.attrs["firings_total"]
        assert float(ds.mean_firings_per_realization[p]) == ref.attrs["mean_firings_per_realization"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("method", ["direct", "tree", "ar", "warp"])
@pytest.mark.parametrize("quantiles", [(0.05, 0.5, 0.95), None])
def test_batch_gpu_equals_per_point_gpu(case, method, quantiles):
    """(The per-point GPU runs equal the CPU's for direct, tree and ar: tests/unit/test_conformance.py;
    the CPU batch equals the CPU per-point runs: tests/unit/test_ssa_batch.py.)"""
    net, params, initial, seeds = _points(case)
    kw = dict(t_end=10.0, points=6, realizations=333, method=method, quantiles=quantiles, max_events=3000)
    ds = simulate_batch(net, params, seeds, initial=initial, client=GPU, **kw)
    assert ds.attrs["backend"] == "gpu"
    _check(ds, _loop(net, params, initial, seeds, GPU, **kw), quantiles)


def test_fused_batch_many_points_and_block_padding():
    """Realizations per point that are not a multiple of the block (threads idle past them), many points."""
    net = load(ROOT / "examples/ssa/michaelis_menten.rxn")
    k1 = np.geomspace(5e-4, 4e-3, 40)
    params = [{"k1": float(k)} for k in k1]
    seeds = list(range(100, 140))
    for R in (1, 25, 129, 1000):
        kw = dict(t_end=20.0, points=5, realizations=R, quantiles=None)
        a = simulate_batch(net, params, seeds, client=GPU, **kw)
        b = simulate_batch(net, params, seeds, client=CPU, **kw)
        for v in KEYS:
            assert np.array_equal(a[v].values, b[v].values, equal_nan=True), (R, v)


def test_sweep_on_gpu_is_batched_and_equals_the_loop():
    net = load(ROOT / "examples/ssa/michaelis_menten.rxn")
    grid = {"k1": [5e-4, 2e-3], "S": [120, 301]}
    fixed = dict(t_end=20.0, points=5, realizations=500)
    loop = dataclasses.replace(adapters.SSA_SIMULATE, run_chunk=None)
    a = distsim.sweep(loop, net, grid, seed=4, client=GPU, chunk_size=1, **fixed)
    b = distsim.sweep("ssa.simulate", net, grid, seed=4, client=GPU, **fixed)
    assert b.attrs["tasks"] == 1 and b.attrs["backend"] == "gpu"
    for v in a.data_vars:
        if v != "wall_time_s":
            assert np.array_equal(a[v].values, b[v].values), v


@pytest.mark.parametrize("shape", [(1, 1), (3, 255), (2, 4096), (5, 4097), (2, 3, 9000), (1, 70_000)])
def test_row_moments_are_exact(shape):
    """gpu.row_moments (kernels/ssa_moments.cu), which every GPU path uses for the grid sums: exact int64
    sums and sums of squares over the last axis, for rows shorter and longer than a block's segment and
    for a strided view."""
    import cupy as cp

    from distsim.ssa import gpu

    x = np.random.default_rng(3).integers(0, 1 << 20, size=shape, dtype=np.int32)
    x64 = x.astype(np.int64)
    for dev, host in ((cp.asarray(x), x64), (cp.asarray(x)[..., ::2], x64[..., ::2])):
        s1, s2 = gpu.row_moments(dev)
        assert s1.dtype == s2.dtype == cp.int64 and s1.shape == host.shape[:-1]
        assert np.array_equal(cp.asnumpy(s1), host.sum(axis=-1))
        assert np.array_equal(cp.asnumpy(s2), (host * host).sum(axis=-1))
