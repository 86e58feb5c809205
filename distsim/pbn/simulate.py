"""``distsim.pbn.simulate``: many PBN trajectories, sharded over the cluster's workers."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import xarray as xr

from .. import engine, results
from ..models.pbn import PBN
from ..rng import check_seed
from .compile import compile_pbn
from .inputs import (TargetSpec, as_network, check_count, check_mode, initial_state, parse_targets, resolve_mode,
                     target_label)
from .shard import CHAINS, Block

LANE_ALIGN = 64  # shard boundaries fall on whole CPU words (and so whole GPU words)
FIRST_ROUND_STEPS = 64  # then rounds of about ROUND_SECONDS each (progress reports between rounds)
ROUND_SECONDS = 1.0


def simulate(
    net: PBN | str,
    *,
    steps: int,
    trajectories: int,
    mode: str | None = None,
    seed: int = 0,
    perturbation: float | None = None,
    fixed: Mapping[str, int] | None = None,
    initial: str | Mapping[str, int] | None = "random",
    targets: TargetSpec | Sequence[TargetSpec] | None = None,
    keep_states: bool = False,
    client: Any = None,
    backend: str | None = None,
    progress: bool | None = None,
) -> xr.Dataset:
    """Simulate ``trajectories`` independent trajectories for ``steps`` steps.

    Returns a Dataset with the long-run frequency of each node being 1 over steps 1..steps and all
    trajectories (``frequency[node]``), the fraction of trajectories with each node at 1 after the
    last step (``final_frequency[node]``, counted where the states live: on a GPU only n numbers come
    back), and for each target set the fraction of steps in it and its 0->1 / 1->0 transition counts.
    ``keep_states=True`` also returns every trajectory's final state (``final_state[trajectory, node]``:
    trajectories x nodes bytes, copied from the device to this process). Trajectory ``c`` uses the
    Philox stream (seed, c): the result is identical on CPU and GPU and for any number of workers.
    ``mode``: 'sync' or 'async' (default: the update the model file states, else 'sync'); ``fixed``:
    knockouts/mutations ``{"X": 0}``.
    """
    net = as_network(net, perturbation=perturbation, fixed=fixed)
    mode = resolve_mode(mode, net)
    steps = check_count("steps", steps, 1, 2**62)
    trajectories = check_count("trajectories", trajectories, 1, 2**32)
    seed = check_seed(seed)
    mode_id = check_mode(mode)
    tgts = parse_targets(targets, net)
    fix_mask, fix_val = initial_state(initial, net)
    compiled = compile_pbn(net)

    with engine.Run("pbn-sim", client, backend, progress=progress, label="pbn simulate") as run:
        template = [Block(compiled, mode_id, tuple(tgts), seed, r.start, len(r), fix_mask, fix_val, 0, (0,),
                          want_nodes=True) for r in run.split(trajectories, align=LANE_ALIGN)]
        run.progress.start(f"{trajectories} trajectories x {steps} steps on {run.describe()}", total=steps,
                           unit="step")
        res = _run_steps(run, run.stateful(CHAINS, template), steps, keep_states)
    return simulation_dataset(net, tgts, res, run.provenance, rounds=run.rounds, round_seconds=run.round_seconds,
                              mode=mode, seed=seed, steps=steps, trajectories=trajectories, keep_states=keep_states)


def _run_steps(run: engine.Run, chains: engine.StatefulShards, steps: int, keep_states: bool) -> dict:
    """Advance every chain to ``steps`` in rounds of about ROUND_SECONDS (progress is reported
    between rounds); counts are summed over the rounds, so they do not depend on the round sizes."""
    node_ones = pooled = None
    at, size = 0, min(steps, FIRST_ROUND_STEPS)
    while True:
        last = at + size == steps
        out = chains.advance([replace(b, step_from=at, segments=(at + size,), want_states=keep_states and last,
                                      want_final=last) for b in chains.setups])
        ones = np.sum([r["node_ones"] for r in out], axis=0)
        counts = np.sum([r["pooled"][0] for r in out], axis=0)  # [T, 4]: ones, n01, n10, in the set at the end
        if pooled is None:
            node_ones, pooled = ones, counts
        else:
            node_ones += ones
            pooled[:, :3] += counts[:, :3]
            pooled[:, 3] = counts[:, 3]
        at += size
        run.progress.update(at)
        if last:
            final_ones = np.sum([r["final_ones"] for r in out], axis=0)
            return {"node_ones": node_ones, "pooled": pooled, "final_ones": final_ones,
                    "states": [r.get("states") for r in out]}
        size = int(min(steps - at, max(1, size * ROUND_SECONDS / max(run.last_round_seconds, 1e-3))))


def simulation_dataset(net: PBN, tgts: list, res: dict, provenance: Callable[..., dict], *, rounds: int,
                       round_seconds: float, mode: str, seed: int, steps: int, trajectories: int,
                       keep_states: bool) -> xr.Dataset:
    """The Dataset of :func:`simulate` from the summed counts ``res`` (node_ones, pooled, final_ones, states)."""
    node_ones = np.asarray(res["node_ones"]).astype(np.float64)
    denom = float(trajectories) * steps
    data: dict[str, Any] = {
        "frequency": ("node", node_ones / denom if steps else np.full(net.n, np.nan),
                      {"long_name": "fraction of (trajectory, step) pairs with the node at 1, steps 1..steps",
                       "units": "1"}),
        "final_frequency": ("node", np.asarray(res["final_ones"]).astype(np.float64) / trajectories,
                            {"long_name": "fraction of trajectories with the node at 1 after the last step",
                             "units": "1"}),
    }
    coords: dict[str, Any] = {"node": list(net.nodes)}
    if keep_states:
        states = np.concatenate(res["states"], axis=0).astype(np.uint8)
        data["final_state"] = (("trajectory", "node"), states, {"long_name": "state after the last step", "units": "1"})
        coords["trajectory"] = np.arange(trajectories)
    if tgts:
        pooled = res["pooled"]
        coords["target"] = [target_label(t, net) for t in tgts]
        data["target_frequency"] = ("target", pooled[:, 0] / denom if steps else np.full(len(tgts), np.nan),
                                    {"long_name": "fraction of steps in the target set", "units": "1"})
        data["transitions_01"] = ("target", pooled[:, 1].astype(np.int64), {"long_name": "entries into the set"})
        data["transitions_10"] = ("target", pooled[:, 2].astype(np.int64), {"long_name": "exits from the set"})
        data["final_in_target"] = ("target", pooled[:, 3].astype(np.int64),
                                   {"long_name": "trajectories in the set after the last step"})
    ds = results.dataset(data, coords)
    ds.attrs = provenance(
        workload="pbn.simulate", seed=seed, model_name=net.name, model_sha256=net.digest(), mode=mode, steps=steps,
        trajectories=trajectories, perturbation=net.perturbation, steps_simulated=trajectories * steps,
        steps_per_second=trajectories * steps / max(round_seconds, 1e-12), rounds=rounds,
    )
    return ds
