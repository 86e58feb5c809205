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

The setup travels once: a shard's first task carries it and the worker keeps it with the state; later
tasks carry only the step (and the state's tag), and a step of the setup's own dataclass type only the
fields that differ from it (:func:`wire_step`: a PBN round sends its segments, not the compiled model
again). A task that finds no state and has no setup answers :class:`Missing` (every kind), and the
client resends it with the setup (and, for kinds that do not replay themselves, the history).
"""

from __future__ import annotations

import dataclasses
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
    """The payload of a stateful shard task: step number ``index`` (0-based) of the shard. ``setup``
    None: the worker holds it (with the state of cache key ``tag``); then ``step`` may be
    :class:`StepDelta` (see :func:`wire_step`)."""

    kind: ShardKind
    setup: Any
    step: Any
    index: int
    history: tuple | None = None  # steps 0..index-1, sent only to rebuild a lost state
    tag: str | None = None  # kind.tag(setup), sent when the setup is not


@dataclass(frozen=True)
class StepDelta:
    """A step sent as the fields in which it differs from its shard's setup (same dataclass type)."""

    fields: dict


def wire_step(setup: Any, step: Any) -> Any:
    """What of ``step`` travels to a worker that holds ``setup``: a step of the setup's own dataclass
    type (e.g. ``dataclasses.replace(setup, ...)``) as the fields not identical to the setup's, any
    other step as it is."""
    if type(step) is not type(setup) or not dataclasses.is_dataclass(step):
        return step
    return StepDelta({f.name: getattr(step, f.name) for f in dataclasses.fields(step)
                      if f.init and getattr(step, f.name) is not getattr(setup, f.name)})


def _unwire(setup: Any, step: Any) -> Any:
    return dataclasses.replace(setup, **step.fields) if isinstance(step, StepDelta) else step


@dataclass(frozen=True)
class Missing:
    """A task's answer when its shard's state is gone and only the shard's history can rebuild it."""


@dataclass(eq=False)
class _Entry:
    state: Any
    backend: str
    setup: Any
    done: int = 0  # steps applied
    last: Any = None  # the result of the last step (kinds that cannot replay themselves)


def run_state_task(ctx: ShardContext, t: StateTask | None) -> Any:
    """Shard task of every stateful kind. ``None`` is a no-op (a shard with nothing to rebuild)."""
    if t is None:
        return None
    kind = t.kind
    tag = kind.tag(t.setup) if t.tag is None else t.tag
    entry = registry.get(ctx.run_id, ctx.shard, tag)
    if entry is not None and entry.backend != ctx.backend:
        entry = None
    if entry is not None and entry.done == t.index + 1 and entry.last is not None:
        return entry.last  # this step already ran here (Dask recomputed the task)
    if entry is None or entry.done != t.index:
        if t.setup is None or (t.index and t.history is None and not kind.replays_itself):
            return Missing()
        entry = _Entry(kind.build(ctx, t.setup), ctx.backend, t.setup)
        for step in t.history or ():
            kind.replay(ctx, entry.state, _unwire(t.setup, step))
    registry.put(ctx.run_id, ctx.shard, None, tag)  # invalid while it changes
    result = kind.advance(ctx, entry.state, _unwire(entry.setup, t.step))
    entry.done = t.index + 1
    entry.last = None if kind.replays_itself else result
    registry.put(ctx.run_id, ctx.shard, entry, tag)
    return result
