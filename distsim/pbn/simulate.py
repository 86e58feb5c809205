"""``distsim.pbn.simulate``: many PBN trajectories, sharded over the cluster's workers."""

from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

import numpy as np
import xarray as xr

from .. import engine, results
from ..models.pbn import PBN
from ..rng import check_seed
from .compile import compile_pbn
from .inputs import TargetSpec, as_network, check_count, check_mode, initial_state, parse_targets, target_label
from .shard import Block, advance_block

LANE_ALIGN = 64  # shard boundaries fall on whole CPU words (and so whole GPU words)


def simulate(
    net: PBN | str,
    *,
    steps: int,
    trajectories: int,
    mode: str = "sync",
    seed: int = 0,
    perturbation: float | None = None,
    initial: str | Mapping[str, int] | None = "random",
    targets: TargetSpec | Sequence[TargetSpec] | None = None,
    keep_states: bool = True,
    client: Any = None,
    backend: str | None = None,
    progress: bool | None = None,
) -> xr.Dataset:
    """Simulate ``trajectories`` independent trajectories for ``steps`` steps.

    Returns a Dataset with the final state of every trajectory (``final_state[trajectory, node]``,
    when ``keep_states``), the long-run frequency of each node being 1 over steps 1..steps and all
    trajectories (``frequency[node]``), and for each target set the fraction of steps in it and its
    0->1 / 1->0 transition counts. Trajectory ``c`` uses the Philox stream (seed, c): the result is
    identical on CPU and GPU and for any number of workers.
    """
    t0 = time.perf_counter()
    net = as_network(net, perturbation=perturbation)
    steps = check_count("steps", steps, 0, 2**62)
    trajectories = check_count("trajectories", trajectories, 1, 2**32)
    seed = check_seed(seed)
    mode_id = check_mode(mode)
    tgts = parse_targets(targets, net)
    fix_mask, fix_val = initial_state(initial, net)
    compiled = compile_pbn(net)

    ex = engine.executor_for(client, backend)
    shards = engine.split(trajectories, ex.n_workers(), align=LANE_ALIGN)
    blocks = [Block(compiled, mode_id, tuple(tgts), seed, r.start, len(r), fix_mask, fix_val, 0, (steps,),
                    want_nodes=True, want_states=keep_states) for r in shards]
    run_id = engine.new_run_id("pbn-sim")
    prog = engine.Progress(progress, "pbn simulate")
    prog.update(f"{trajectories} trajectories x {steps} steps on {ex.describe()}", force=True)
    t_round = time.perf_counter()
    try:
        out = ex.run_round(advance_block, run_id, 0, blocks)
        t_round = time.perf_counter() - t_round
    finally:
        ex.release(run_id)
        prog.close()
    res = [r for r, _ in out]
    metas = [m for _, m in out]

    node_ones = np.sum([r["node_ones"] for r in res], axis=0).astype(np.float64)
    denom = float(trajectories) * steps
    data: dict[str, Any] = {
        "frequency": ("node", node_ones / denom if steps else np.full(net.n, np.nan),
                      {"long_name": "fraction of (trajectory, step) pairs with the node at 1, steps 1..steps",
                       "units": "1"}),
    }
    if keep_states:
        states = np.concatenate([r["states"] for r in res], axis=0).astype(np.uint8)
        data["final_state"] = (("trajectory", "node"), states, {"long_name": "state after the last step", "units": "1"})
    coords: dict[str, Any] = {"node": list(net.nodes)}
    if keep_states:
        coords["trajectory"] = np.arange(trajectories)
    if tgts:
        pooled = np.sum([r["pooled"][0] for r in res], axis=0)  # [T, 4]
        coords["target"] = [target_label(t, net) for t in tgts]
        data["target_frequency"] = ("target", pooled[:, 0] / denom if steps else np.full(len(tgts), np.nan),
                                    {"long_name": "fraction of steps in the target set", "units": "1"})
        data["transitions_01"] = ("target", pooled[:, 1].astype(np.int64), {"long_name": "entries into the set"})
        data["transitions_10"] = ("target", pooled[:, 2].astype(np.int64), {"long_name": "exits from the set"})
        data["final_in_target"] = ("target", pooled[:, 3].astype(np.int64),
                                   {"long_name": "trajectories in the set after the last step"})
    wall = time.perf_counter() - t0
    ds = xr.Dataset(data, coords=coords)
    ds.attrs = results.provenance(
        workload="pbn.simulate", seed=seed, model_name=net.name, model_sha256=net.digest(),
        backend=",".join(sorted({m["backend"] for m in metas})), devices=[m["device"] for m in metas],
        executor=ex.describe(), wall_time_s=wall, mode=mode, steps=steps, trajectories=trajectories,
        perturbation=net.perturbation, steps_simulated=trajectories * steps,
        steps_per_second=trajectories * steps / max(t_round, 1e-12),
    )
    return ds
