"""The PBN shard kind: advance a block of chains from step a to step b and return counts.

A round's task is a pure function of its :class:`Block` payload. The block's bit-sliced state is
cached on the worker between rounds (on its GPU when it has one); if the cache is missing -- a new
worker, a restarted one, or another backend -- the state is rebuilt by replaying from step 0, which
gives the same bits because every random number is addressed by (seed, chain, step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import time

import numpy as np

from ..engine import ShardContext, ShardKind, Slices, StateTask, run_state_task
from . import cpu
from .compile import CompiledPBN
from .stats import exact_sums

MODES = {"sync": cpu.MODE_SYNC, "async": cpu.MODE_ASYNC}
FIRST_STEPS = 8  # steps of a CPU advance's first slice (the next ones are sized by the measured rate)


@dataclass(frozen=True)
class Block:
    """Everything a shard task needs (and nothing that depends on where it runs)."""

    compiled: CompiledPBN
    mode: int
    targets: tuple[tuple[tuple[int, int], ...], ...]
    seed: int
    chain0: int
    n_chains: int
    fix_mask: np.ndarray
    fix_val: np.ndarray
    step_from: int
    segments: tuple[int, ...]  # absolute step at the end of each counted segment (increasing)
    want_chain: bool = False
    want_nodes: bool = False
    want_states: bool = False
    want_final: bool = False  # chains with each node at 1 after the last step (counted where the state lives)
    time_left: float | None = None  # seconds the run may still take: a CPU task stops between slices past it

    @property
    def step_to(self) -> int:
        return self.segments[-1] if self.segments else self.step_from


def flat_targets(targets: Sequence[Sequence[tuple[int, int]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    start, node, val = [0], [], []
    for lits in targets:
        for a, v in lits:
            node.append(a)
            val.append(v)
        start.append(len(node))
    return np.array(start, np.int32), np.array(node, np.int32), np.array(val, np.uint8)


class _State:
    __slots__ = ("step", "S")

    def __init__(self, step: int, S):
        self.step, self.S = step, S


class Chains(ShardKind):
    """A block of chains whose bit-sliced state stays on its worker's device between rounds. Every
    random number is addressed by (seed, chain, step), so a lost state is rebuilt from the block
    alone by replaying from step 0 (counts discarded): the same bits."""

    replays_itself = True

    def tag(self, b: Block) -> str:
        return f"{b.compiled.digest}:{b.mode}:{b.seed}:{b.chain0}:{b.n_chains}"

    def build(self, ctx: ShardContext, b: Block) -> _State:
        return _State(0, _init(ctx.backend, b))

    def advance(self, ctx: ShardContext, state: _State, b: Block) -> dict:
        """Counts per segment, per chain and per node, plus final states; ``{"cut": True, "step": s}``
        when the block's time limit stopped it at step s (CPU)."""
        if state.step > b.step_from:  # a state past the block's start cannot go back: start again
            state.step, state.S = 0, _init(ctx.backend, b)
        deadline = None if b.time_left is None else time.monotonic() + b.time_left
        todo = [(b.step_from, False, False, None)] + [(end, b.want_chain, b.want_nodes, k)
                                                       for k, end in enumerate(b.segments)]
        counts = SegmentCounts(b)
        for end, want_chain, want_nodes, k in todo:  # first a replay to the block's start (counts discarded)
            if end < state.step or (k is None and end == state.step):
                continue
            out = _advance(ctx.backend, state, b, end, want_chain, want_nodes, deadline)
            if state.step < end:
                return {"cut": True, "step": state.step}
            if k is not None:
                counts.add(k, out)
        return counts.result(state.step, _states(ctx.backend, state.S, b) if b.want_states else None,
                             _final_ones(ctx.backend, state.S, b) if b.want_final else None)


class SegmentCounts:
    """A block's result, gathered segment by segment: pooled counts [segment, target, 4] (ones, n01,
    n10, occupancy at the segment's end), and over all segments the exact sums of each chain's
    steps in each target (``want_chain``) and each node's ones (``want_nodes``)."""

    def __init__(self, b: Block):
        T = max(1, len(b.targets))
        self.b = b
        self.pooled = np.zeros((len(b.segments), T, 4), dtype=np.uint64)
        self.chain_ones = np.zeros((T, b.n_chains), dtype=np.uint32) if b.want_chain else None
        self.node_ones = np.zeros(b.compiled.n, dtype=np.uint64) if b.want_nodes else None

    def add(self, k: int, out: dict) -> None:
        self.pooled[k] = out["pooled"]
        if self.chain_ones is not None:
            self.chain_ones += out["chain_ones"]
        if self.node_ones is not None:
            self.node_ones += out["node_ones"]

    def result(self, step: int, states: np.ndarray | None = None, final_ones: np.ndarray | None = None) -> dict:
        result = {"pooled": self.pooled, "step": step}
        if self.chain_ones is not None:  # sufficient statistics only: sum c and sum c^2 per target, exact
            result["chain_sums"] = [exact_sums(self.chain_ones[t]) for t in range(len(self.chain_ones))]
        if self.node_ones is not None:
            result["node_ones"] = self.node_ones
        if states is not None:
            result["states"] = states
        if final_ones is not None:
            result["final_ones"] = final_ones
        return result


CHAINS = Chains()


def advance_block(ctx: ShardContext, b: Block) -> dict:
    """One block as a stateful shard task (step ``ctx.round`` of its shard), outside a :class:`Run`."""
    return run_state_task(ctx, StateTask(CHAINS, b, b, ctx.round))


def _init(backend: str, b: Block):
    if backend == "gpu":
        from .gpu import get_kernel

        return get_kernel(b.compiled, b.mode, b.targets).init_state(b.chain0, b.n_chains, b.seed, b.fix_mask, b.fix_val)
    return cpu.init_sliced(b.compiled.n, b.chain0, b.n_chains, b.seed, b.fix_mask, b.fix_val, b.compiled.init_index)


def _advance(backend: str, state: _State, b: Block, to_step: int, want_chain: bool, want_nodes: bool,
             deadline: float | None = None) -> dict:
    """Advance ``state`` to ``to_step``: the counts of those steps. On CPUs in bounded slices of steps
    (Ctrl-C, the ``deadline`` and a cancellation seen between them; counts are exact sums over the
    slices, the occupancy the last slice's): past the deadline ``state.step`` stops short."""
    step0, nsteps = state.step, to_step - state.step
    if backend == "gpu":
        from .gpu import get_kernel

        state.step = to_step
        return get_kernel(b.compiled, b.mode, b.targets).advance(
            state.S, chain0=b.chain0, n_chains=b.n_chains, step0=step0, nsteps=nsteps, seed=b.seed,
            want_chain=want_chain, want_nodes=want_nodes)
    kw = dict(chain0=b.chain0, n_chains=b.n_chains, seed=b.seed, mode=b.mode, targets=flat_targets(b.targets or ((),)),
              want_chain=want_chain, want_nodes=want_nodes)
    if nsteps == 0:  # only the occupancy
        return cpu.advance_sliced(state.S, b.compiled, step0=step0, nsteps=0, **kw)
    out: dict | None = None
    slices = Slices(nsteps, first=FIRST_STEPS, time_left=None if deadline is None else deadline - time.monotonic())
    for s0, s1 in slices:
        part = cpu.advance_sliced(state.S, b.compiled, step0=step0 + s0, nsteps=s1 - s0, **kw)
        state.step = step0 + s1
        if out is None:
            out = part
            continue
        out["pooled"][:, :3] += part["pooled"][:, :3]
        out["pooled"][:, 3] = part["pooled"][:, 3]
        for key in ("chain_ones", "node_ones"):
            if key in part:
                out[key] += part[key]
    slices.raise_if_cancelled()
    return out


def _final_ones(backend: str, S, b: Block) -> np.ndarray:
    """uint64 [n]: the block's chains with each node at 1 now (reduced on the device: n words come back)."""
    if backend == "gpu":
        from .gpu import get_kernel

        return get_kernel(b.compiled, b.mode, b.targets).node_ones(S, b.n_chains)
    return cpu.node_ones_of(S, b.n_chains)


def _states(backend: str, S, b: Block) -> np.ndarray:
    if backend == "gpu":
        from .gpu import GPUKernel

        return GPUKernel.states_of(S, b.n_chains)
    return cpu.unslice(S, b.n_chains, b.compiled.n)
