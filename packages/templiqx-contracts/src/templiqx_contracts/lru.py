"""A small thread-safe, bounded LRU map for caches of pure results (the core's compiled schemas
and validations, the adapters' compiled output schemas).

A cache is bounded twice: by entries and, when it is given a ``weigh`` function, by the total
weight (bytes) of its values. Keys should be short: :func:`digest_key` turns an encoded
document into its 32-byte SHA-256, so a cache never holds a whole contract or schema as a key
(issue #18: 1 MB contracts kept as keys left a long-running MCP server at 2.4 GB).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["LRU", "digest_key"]

K = TypeVar("K")
V = TypeVar("V")


def digest_key(data: bytes) -> bytes:
    """The 32-byte SHA-256 digest of ``data``: a cache key that does not keep ``data`` alive."""
    return hashlib.sha256(data).digest()


class LRU(Generic[K, V]):
    """At most ``size`` entries (and ``max_weight`` in all); the least recently used go first.

    ``weigh`` gives a value's weight (its approximate bytes); with it, the total weight stays at
    most ``max_weight``, and a value heavier than that alone is not kept at all.
    """

    def __init__(
        self,
        size: int,
        *,
        max_weight: int | None = None,
        weigh: Callable[[V], int] | None = None,
    ) -> None:
        self._size = size
        self._max_weight = max_weight
        self._weigh = weigh
        self._data: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value for ``key`` (marking it recently used), or ``None``."""
        with self._lock:
            entry = self._data.get(key)
            if entry is None:
                return None
            self._data.move_to_end(key)
            return entry[0]

    def put(self, key: K, value: V) -> None:
        """Store ``value`` under ``key``, evicting the oldest entries while over a bound."""
        weight = self._weigh(value) if self._weigh is not None else 0
        limit = self._max_weight
        with self._lock:
            previous = self._data.pop(key, None)
            if previous is not None:
                self._weight -= previous[1]
            if limit is not None and weight > limit:
                return
            self._data[key] = (value, weight)
            self._weight += weight
            while len(self._data) > self._size or (limit is not None and self._weight > limit):
                _, (_, dropped) = self._data.popitem(last=False)
                self._weight -= dropped

    def cached(self, key: K, build: Callable[[], V]) -> V:
        """The value for ``key``, built by ``build`` and kept (within the bounds) when missing.

        ``build`` runs outside the lock, so two threads missing the same key at once may both
        build it; the value is a pure result, so either may be kept.
        """
        found = self.get(key)
        if found is not None:
            return found
        built = build()
        self.put(key, built)
        return built

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._data.clear()
            self._weight = 0

    @property
    def weight(self) -> int:
        """The total weight of the values held."""
        with self._lock:
            return self._weight

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is held (without marking it used)."""
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)
