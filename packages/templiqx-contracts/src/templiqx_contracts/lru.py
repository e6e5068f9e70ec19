"""A small thread-safe, bounded LRU map for caches of pure results (the core's compiled schemas
and validations, the application's prepared contracts, the adapters' compiled output schemas),
and the process-wide budget they all share.

A cache is bounded three ways: by entries; by the total *weight* of its values when it is given
a ``weigh`` function; and, with every other cache of the process, by :data:`MAX_CACHED_BYTES`
(the process-wide ceiling, lowered with ``TEMPLIQX_CACHE_BYTES``, see :func:`cache_ceiling`).
A weight must be a conservative estimate of the bytes a value holds in memory, not of the
document it came from: a jsonschema-rs validator holds up to ~150 times its schema's encoded
size (issue #29: caches weighed by their msgpack bytes kept 2.5 GB), which
:func:`value_shape` lets a cache estimate from the schema itself.

Keys should be short: :func:`digest_key` turns an encoded document into its 32-byte SHA-256,
so a cache never holds a whole contract or schema as a key (issue #18: 1 MB contracts kept as
keys left a long-running MCP server at 2.4 GB).
"""

from __future__ import annotations

import hashlib
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar

__all__ = [
    "CACHE_BYTES_ENV",
    "HARD_CACHED_BYTES",
    "LRU",
    "MAX_CACHED_BYTES",
    "cache_ceiling",
    "cached_bytes",
    "digest_key",
    "set_cache_ceiling",
    "validator_weight",
    "value_shape",
]

K = TypeVar("K")
V = TypeVar("V")

MAX_CACHED_BYTES: Final = 128 * 1024 * 1024
"""What every cache of one process may hold together, by default (128 MiB of weight)."""

HARD_CACHED_BYTES: Final = 1024 * 1024 * 1024
"""The most a host may raise the process-wide ceiling to (1 GiB)."""

CACHE_BYTES_ENV: Final = "TEMPLIQX_CACHE_BYTES"
"""The environment variable that sets the process-wide ceiling in bytes (0 turns caching off)."""


def digest_key(data: bytes) -> bytes:
    """The 32-byte SHA-256 digest of ``data``: a cache key that does not keep ``data`` alive."""
    return hashlib.sha256(data).digest()


def value_shape(value: Any) -> tuple[int, int]:
    """``(nodes, text bytes)`` of a value: every value, key, list item and struct field is a
    node; text is the length of every string and bytes object. Walks ``value`` once
    (iteratively); shared objects are counted at every place they appear, so the estimate
    errs on the heavy side."""
    nodes = 0
    text = 0
    stack = [value]
    while stack:
        item = stack.pop()
        nodes += 1
        if isinstance(item, (str, bytes)):
            text += len(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        else:
            fields = getattr(type(item), "__struct_fields__", None)
            if fields is not None:  # a msgspec Struct
                stack.extend(getattr(item, name) for name in fields)
    return nodes, text


def validator_weight(schema: Any) -> int:
    """A conservative estimate of the bytes a compiled jsonschema-rs validator of ``schema``
    holds: 4 KiB, 512 bytes a node and 2 bytes a byte of text.

    Measured: ~2.6 KiB for the smallest schema, 130-500 bytes a schema node (enums of objects and
    deep nesting are the heaviest: up to ~155 times the schema's msgpack size), about 1.5 bytes
    a byte of long text.
    """
    nodes, text = value_shape(schema)
    return 4096 + 512 * nodes + 2 * text


class _Budget:
    """The weight every LRU of the process holds, and the ceiling on it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.total = 0
        self.ceiling: int | None = None  # read from the environment on first use
        self.caches: weakref.WeakSet[LRU[Any, Any]] = weakref.WeakSet()

    def limit(self) -> int:
        if self.ceiling is None:
            self.ceiling = _ceiling_from_environment()
        return self.ceiling

    def rebalance(self) -> None:
        """Evict the least recently used entries of the heaviest caches while over the ceiling."""
        limit = self.limit()
        while True:
            with self.lock:
                if self.total <= limit:
                    return
                caches = list(self.caches)
            heaviest = max(caches, key=lambda cache: cache.weight, default=None)
            if heaviest is None or not heaviest.evict_oldest():
                return


def _ceiling_from_environment() -> int:
    raw = os.environ.get(CACHE_BYTES_ENV)
    if raw is None or not raw.strip():
        return MAX_CACHED_BYTES
    try:
        value = int(raw)
    except ValueError:
        return MAX_CACHED_BYTES  # a setting that is not a number is ignored, never a crash
    return max(0, min(value, HARD_CACHED_BYTES))


_BUDGET: Final = _Budget()


def cache_ceiling() -> int:
    """The process-wide ceiling on what caches hold (``TEMPLIQX_CACHE_BYTES``, 0 to
    :data:`HARD_CACHED_BYTES`; :data:`MAX_CACHED_BYTES` when unset or not a number)."""
    return _BUDGET.limit()


def set_cache_ceiling(limit: int | None) -> None:
    """Set the process-wide ceiling (``None``: back to the environment's or the default);
    caches over it are trimmed at once. Capped at :data:`HARD_CACHED_BYTES`."""
    _BUDGET.ceiling = None if limit is None else max(0, min(limit, HARD_CACHED_BYTES))
    _BUDGET.rebalance()


def cached_bytes() -> int:
    """The weight every cache of the process holds together."""
    with _BUDGET.lock:
        return _BUDGET.total


class LRU(Generic[K, V]):
    """At most ``size`` entries (and ``max_weight`` in all); the least recently used go first.

    ``weigh`` gives a value's weight (a conservative estimate of its bytes); with it, the total
    weight stays at most ``max_weight``, and a value heavier than that alone is not kept at
    all. Without it every entry weighs ``default_weight``. Every cache's weight also counts
    against the process-wide ceiling, which evicts from the heaviest caches first.
    """

    def __init__(
        self,
        size: int,
        *,
        max_weight: int | None = None,
        weigh: Callable[[V], int] | None = None,
        default_weight: int = 256,
    ) -> None:
        self._size = size
        self._max_weight = max_weight
        self._weigh = weigh
        self._default_weight = default_weight
        self._data: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()
        with _BUDGET.lock:
            _BUDGET.caches.add(self)

    def __del__(self) -> None:
        try:
            with _BUDGET.lock:
                _BUDGET.total -= self._weight
        except Exception:  # interpreter shutdown: nothing left to account to
            return

    def _account(self, delta: int) -> None:
        self._weight += delta
        with _BUDGET.lock:
            _BUDGET.total += delta

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
        weight = self._weigh(value) if self._weigh is not None else self._default_weight
        limit = self._max_weight
        ceiling = _BUDGET.limit()
        with self._lock:
            previous = self._data.pop(key, None)
            if previous is not None:
                self._account(-previous[1])
            if (limit is not None and weight > limit) or weight > ceiling:
                return
            self._data[key] = (value, weight)
            self._account(weight)
            while len(self._data) > self._size or (limit is not None and self._weight > limit):
                _, (_, dropped) = self._data.popitem(last=False)
                self._account(-dropped)
        _BUDGET.rebalance()

    def evict_oldest(self) -> bool:
        """Drop the least recently used entry; ``False`` when there was none."""
        with self._lock:
            if not self._data:
                return False
            _, (_, dropped) = self._data.popitem(last=False)
            self._account(-dropped)
            return True

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

    def pop(self, key: K) -> V | None:
        """Remove ``key``'s entry; its value, or ``None``."""
        with self._lock:
            entry = self._data.pop(key, None)
            if entry is None:
                return None
            self._account(-entry[1])
            return entry[0]

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._account(-self._weight)
            self._data.clear()

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
