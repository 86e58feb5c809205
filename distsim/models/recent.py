"""The last few results of a pure function of an immutable model object (a network, a PBN),
remembered by the object's identity: repeated runs of one model compile it once."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Generic, Hashable, TypeVar

import numpy as np

V = TypeVar("V")


class Recent(Generic[V]):
    """``get(obj, key)`` returns what ``put(obj, key, value)`` stored while ``obj`` (the very object,
    not an equal one) is among the last ``size`` stored; arrays among a stored value's attributes are
    made read-only, since every later caller shares them. Thread-safe (worker threads compile too)."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self._items: OrderedDict[tuple[int, Hashable], tuple[Any, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, obj: Any, key: Hashable = ()) -> V | None:
        with self._lock:
            hit = self._items.get((id(obj), key))
            if hit is None or hit[0] is not obj:
                return None
            self._items.move_to_end((id(obj), key))
            return hit[1]

    def put(self, obj: Any, key: Hashable, value: V) -> V:
        for v in vars(value).values():
            if isinstance(v, np.ndarray):
                v.setflags(write=False)
        with self._lock:
            self._items[(id(obj), key)] = (obj, value)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value
