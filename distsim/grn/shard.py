"""The GRN shard kind: a block of islands on one worker's device, advanced one round at a time.

Round 0 creates the islands (from the seed alone); round r >= 1 runs ``epochs`` migration epochs
(each: ring migration, then ``migration_interval`` generations). The population stays on the
worker between rounds (:mod:`distsim.engine.stateful`); only statistics, the block's emigrants
(when the ring crosses blocks) and an improved best individual come back. A task that finds no
state (its worker died, or Dask moved it) is resent by the engine with the earlier rounds' steps,
and the block is rebuilt by replaying them, which gives the same state because every step is a
pure function of (seed, islands, immigrants).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..engine import ShardContext, ShardKind
from .ga import Consts, CPUOps, GAParams, IslandBlock
from .problem import Problem


@dataclass(frozen=True, eq=False)
class Setup:
    problem: Problem
    params: GAParams
    islands: tuple[int, ...]  # global island ids held by this shard
    external: bool  # the migration ring crosses shards: the first island is fed by the driver


@dataclass(frozen=True, eq=False)
class Step:
    epoch0: int
    epochs: int
    incoming: tuple | None = None  # (act, rep, rules, score) host arrays for the first island
    time_left: float | None = None  # seconds the run may still take: the step stops between generations past it


@dataclass(eq=False)
class ShardState:
    block: IslandBlock
    setup: Setup
    sent_key: tuple = field(default_factory=lambda: (np.iinfo(np.int64).max, -1))


def _ops(backend: str, c: Consts) -> Any:
    if backend == "gpu":
        from .gpu import GPUOps

        return GPUOps(c)
    return CPUOps(c)


def _build(backend: str, setup: Setup) -> ShardState:
    c = Consts.of(setup.problem)
    block = IslandBlock(_ops(backend, c), c, setup.params, np.array(setup.islands, np.int64))
    return ShardState(block, setup)


def _advance(st: ShardState, step: Step, deadline: float | None = None) -> tuple[list, list, int, bool, bool]:
    """Run the step's epochs; returns (best, sum) per generation, epochs done, stopped, and whether
    ``deadline`` (``time.monotonic()``) cut the step between two generations."""
    b, prm = st.block, st.setup.params
    xp = b.xp
    best, total = [], []
    done, stopped, cut = 0, False, False
    for e in range(step.epoch0, step.epoch0 + step.epochs):
        if prm.migrates:
            b.migrate(step.incoming if st.setup.external else None)
        last = min((e + 1) * prm.migration_interval, prm.generations)
        while b.generation < last and not cut:
            b.step()
            s_min, s_sum = b.stats()
            best.append(s_min)
            total.append(s_sum)
            cut = deadline is not None and time.monotonic() > deadline
        done += 1
        if cut:
            break
        if int(b.best_score.min()) <= prm.stop_score:
            stopped = True
            break
    if best:
        best = [xp.stack(best, axis=1)]
        total = [xp.stack(total, axis=1)]
    return best, total, done, stopped, cut


def _result(st: ShardState, best: list, total: list, epochs: int, stopped: bool) -> dict:
    b = st.block
    ops = b.ops
    K = b.K
    bs = ops.asnumpy(b.best_score)
    i = int(np.lexsort((np.array(st.setup.islands), bs))[0])
    key = (int(bs[i]), int(st.setup.islands[i]))
    out: dict[str, Any] = {
        "best": ops.asnumpy(best[0]) if best else np.zeros((K, 0), np.int64),
        "sum": ops.asnumpy(total[0]) if total else np.zeros((K, 0), np.int64),
        "epochs": epochs, "stopped": stopped, "generation": b.generation, "island_best": bs,
        "outgoing": b.outgoing() if st.setup.external else None, "best_key": key, "best_individual": None,
    }
    if key < st.sent_key:
        st.sent_key = key
        out["best_individual"] = (ops.asnumpy(b.best_act[i]), ops.asnumpy(b.best_rep[i]),
                                  ops.asnumpy(b.best_rules[i]), int(ops.asnumpy(b.best_generation)[i]))
    return out


class Islands(ShardKind):
    """Islands on a worker: CPU (NumPy + Numba) or GPU (CuPy) by the worker's backend. A round's
    step is None in round 0 (report the new islands) and a :class:`Step` after it."""

    def tag(self, setup: Setup) -> str:
        return "grn"

    def build(self, ctx: ShardContext, setup: Setup) -> ShardState:
        return _build(ctx.backend, setup)

    def advance(self, ctx: ShardContext, st: ShardState, step: Step | None) -> dict:
        if step is None:
            s_min, s_sum = st.block.stats()
            return _result(st, [s_min[:, None]], [s_sum[:, None]], 0, False)
        deadline = None if step.time_left is None else time.monotonic() + step.time_left
        *out, cut = _advance(st, step, deadline)
        return {**_result(st, *out), "cut": cut}

    def replay(self, ctx: ShardContext, st: ShardState, step: Step | None) -> None:
        if step is not None:
            _advance(st, step)


ISLANDS = Islands()
