"""Stateful shards: state kept on a worker between rounds, rebuilt when it is lost.

A :class:`ShardKind` says how a shard's state lives: ``build`` makes it from the shard's *setup*,
``advance`` applies one round's *step* and returns the round's result, ``replay`` applies an
earlier step whose result is no longer needed. The state is cached on the worker
(:mod:`.registry`) as an optimisation, never as the source of truth: a task that finds no usable
state (its worker died, Dask moved the task, another backend) rebuilds it.

* Kinds whose steps carry absolute positions catch up from the task alone (``replays_itself``;
  PBN: every random number is addressed by (seed, chain, step), so ``advance`` replays from step 0).
* The others (GRN: earlier rounds brought migrants from other shards) answer :class:`Missing`;
  the client (:class:`~distsim.engine.run.StatefulShards`, which keeps every shard's log of steps) resends the task with
  the shard's earlier steps, and the rebuilt state replays them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import registry
from .executor import ShardContext


class ShardKind:
    """How the state of one kind of stateful shard is built, advanced and replayed (subclass it)."""

    replays_itself = False  # advance() reaches any step from a freshly built state on its own

    def tag(self, setup: Any) -> str:
        """Cache key of the state (with the run id and the shard)."""
        return type(self).__name__

    def build(self, ctx: ShardContext, setup: Any) -> Any:
        raise NotImplementedError

    def advance(self, ctx: ShardContext, state: Any, step: Any) -> Any:
        raise NotImplementedError

    def replay(self, ctx: ShardContext, state: Any, step: Any) -> None:
        self.advance(ctx, state, step)


@dataclass(frozen=True, eq=False)
class StateTask:
    """The payload of a stateful shard task: step number ``index`` (0-based) of the shard."""

    kind: ShardKind
    setup: Any
    step: Any
    index: int
    history: tuple | None = None  # steps 0..index-1, sent only to rebuild a lost state


@dataclass(frozen=True)
class Missing:
    """A task's answer when its shard's state is gone and only the shard's history can rebuild it."""


@dataclass(eq=False)
class _Entry:
    state: Any
    backend: str
    done: int = 0  # steps applied
    last: Any = None  # the result of the last step (kinds that cannot replay themselves)


def run_state_task(ctx: ShardContext, t: StateTask | None) -> Any:
    """Shard task of every stateful kind. ``None`` is a no-op (a shard with nothing to rebuild)."""
    if t is None:
        return None
    kind = t.kind
    tag = kind.tag(t.setup)
    entry = registry.get(ctx.run_id, ctx.shard, tag)
    if entry is not None and entry.backend != ctx.backend:
        entry = None
    if entry is not None and entry.done == t.index + 1 and entry.last is not None:
        return entry.last  # this step already ran here (Dask recomputed the task)
    if entry is None or entry.done != t.index:
        if t.index and t.history is None and not kind.replays_itself:
            return Missing()
        entry = _Entry(kind.build(ctx, t.setup), ctx.backend)
        for step in t.history or ():
            kind.replay(ctx, entry.state, step)
    registry.put(ctx.run_id, ctx.shard, None, tag)  # invalid while it changes
    result = kind.advance(ctx, entry.state, t.step)
    entry.done = t.index + 1
    entry.last = None if kind.replays_itself else result
    registry.put(ctx.run_id, ctx.shard, entry, tag)
    return result
