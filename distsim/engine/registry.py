"""Worker-local cache of shard state (device arrays stay on their device between rounds).

The cache is an optimisation, never the source of truth: every shard task can rebuild its state
from (model, seed, shard, step) by replaying, so a worker that dies loses nothing but time.
Entries are keyed ``(run_id, shard, tag)``; the oldest are evicted past ``MAX_ENTRIES``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

MAX_ENTRIES = 512

_lock = threading.Lock()
_store: "OrderedDict[tuple[str, int, str], Any]" = OrderedDict()


def get(run_id: str, shard: int, tag: str = "") -> Any:
    with _lock:
        key = (run_id, shard, tag)
        if key in _store:
            _store.move_to_end(key)
            return _store[key]
    return None


def put(run_id: str, shard: int, value: Any, tag: str = "") -> None:
    with _lock:
        _store[(run_id, shard, tag)] = value
        _store.move_to_end((run_id, shard, tag))
        while len(_store) > MAX_ENTRIES:
            _store.popitem(last=False)


def release(run_id: str) -> int:
    """Drop every entry of a run; returns how many were dropped."""
    with _lock:
        keys = [k for k in _store if k[0] == run_id]
        for k in keys:
            del _store[k]
    return len(keys)


def size() -> int:
    with _lock:
        return len(_store)


async def release_async(run_id: str) -> int:
    """:func:`release` as a coroutine, so a client can ask every worker without waiting for a busy one
    (``client.run(release_async, run_id, wait=False)``)."""
    return release(run_id)
