"""A small thread-safe LRU map: the in-memory indexes (postings, vector matrices) of the
scopes searched last, so that a process serving many scopes keeps a bounded number."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """Values by key; beyond `max_size` the least recently used is evicted."""

    def __init__(self, max_size: int) -> None:
        self._max = max_size
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, create: Callable[[], V]) -> V:
        """The value of `key`, made by `create` (under the lock, so once) when absent."""
        with self._lock:
            value = self._values.get(key)
            if value is None:
                value = create()
                self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self._max:
                self._values.popitem(last=False)
            return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def drop(self, matches: Callable[[K], bool]) -> list[V]:
        """Forget every value whose key `matches`; returns them."""
        with self._lock:
            keys = [key for key in self._values if matches(key)]
            return [self._values.pop(key) for key in keys]
