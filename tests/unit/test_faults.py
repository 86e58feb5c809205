"""Kill-a-worker drills for SSA ensembles and sweeps (PBN's is in test_engine.py): a worker process
dies in the middle of a run, Dask recomputes its task elsewhere, and the result is identical to an
undisturbed run with the same seed."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

import distsim
import distsim.ssa as ssa
from distsim.engine import DaskExecutor, LocalExecutor
from distsim.engine.faults import KillWorkerOnce

MM = Path(__file__).resolve().parents[2] / "examples" / "ssa" / "michaelis_menten.rxn"
KW = dict(t_end=30.0, points=7, realizations=1000, seed=21)


def test_ssa_worker_killed_mid_run(dask_client, tmp_path):
    net = ssa.load(MM)
    marker = tmp_path / "killed"
    ex = DaskExecutor(dask_client, "cpu", wrap=functools.partial(KillWorkerOnce, marker=str(marker), round=0, shard=1))
    ds = ssa.simulate(net, client=ex, **KW)
    assert marker.exists(), "the fault was not injected"
    ref = ssa.simulate(net, client=LocalExecutor("cpu"), **KW)
    for v in ("mean", "variance", "firings", "events", "final_state", "quantile_value"):
        assert np.array_equal(ds[v].values, ref[v].values), v
    dask_client.wait_for_workers(2, timeout=60)


def test_sweep_worker_killed_mid_run(dask_client, tmp_path):
    net = ssa.load(MM)
    grid = {"k2": [0.1, 0.2, 0.4], "S": [150, 301]}
    fixed = dict(t_end=20.0, points=5, realizations=128)
    marker = tmp_path / "killed"
    ex = DaskExecutor(dask_client, "cpu", wrap=functools.partial(KillWorkerOnce, marker=str(marker), round=0, shard=2))
    ds = distsim.sweep(ssa.simulate, net, grid, seed=5, client=ex, chunk_size=1, store=tmp_path / "s.zarr", **fixed)
    assert marker.exists(), "the fault was not injected"
    ref = distsim.sweep(ssa.simulate, net, grid, seed=5, client=LocalExecutor("cpu"), **fixed)
    assert list(ds.point.values.ravel()) == list(range(6))
    for v in ("mean", "variance", "firings", "quantile_value"):
        assert np.array_equal(ds[v].values, ref[v].values), v
    dask_client.wait_for_workers(2, timeout=60)
