"""A bounded cache of values by key, least recently used out first, safe across threads: what a
process keeps of what it read or computed (a searcher's chunks and texts, selection's token
counts), so that a request reads or computes only what it has not already."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from codecompass.common.telemetry import record_cache_lookups

V = TypeVar("V")


class ReadCache(Generic[V]):
    """Values by key, least recently used out first, at most `capacity` in weight (`weigh`: 1 a
    value unless given). With a `version`, entries are valid for that table version only: a read
    at another version empties the cache first. `name` labels its hits and misses in the
    `codecompass.cache.requests` metric."""

    def __init__(self, name: str, capacity: int, weigh: Callable[[V], int] | None = None) -> None:
        self._name = name
        self._capacity = capacity
        self._weigh = weigh
        self._weight = 0
        self._lock = threading.Lock()
        self._version: int | None = None
        self._items: OrderedDict[str, V] = OrderedDict()

    def get_many(self, keys: Sequence[str], load: Callable[[list[str]], dict[str, V]],
                 version: int | None = None) -> dict[str, V]:
        """{key: value} for the `keys` there are: cached ones as they are, the rest from `load`
        (which skips keys that have no value)."""
        found: dict[str, V] = {}
        with self._lock:
            if version != self._version:
                self._items.clear()
                self._weight = 0
                self._version = version
            for key in keys:
                value = self._items.get(key)
                if value is not None:
                    self._items.move_to_end(key)
                    found[key] = value
        missing = [key for key in dict.fromkeys(keys) if key not in found]
        record_cache_lookups(self._name, hits=len(found), misses=len(missing))
        if not missing:
            return found
        loaded = load(missing)
        found.update(loaded)
        with self._lock:
            # A commit while loading: what was loaded may be of the newer version, so it is not kept.
            if version == self._version:
                for key, value in loaded.items():
                    if key not in self._items:
                        self._items[key] = value
                        self._weight += self._weight_of(value)
                while self._weight > self._capacity and self._items:
                    _, dropped = self._items.popitem(last=False)
                    self._weight -= self._weight_of(dropped)
        return found

    def __contains__(self, key: str) -> bool:
        """Whether `key` is cached (its place in the recency order unchanged)."""
        with self._lock:
            return key in self._items

    @property
    def full(self) -> bool:
        """Whether what it holds weighs its capacity: anything added now pushes something out."""
        with self._lock:
            return self._weight >= self._capacity

    def _weight_of(self, value: V) -> int:
        return 1 if self._weigh is None else self._weigh(value)
