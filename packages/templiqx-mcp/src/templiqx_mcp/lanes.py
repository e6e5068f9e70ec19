"""Worker threads for tool calls: off the event loop, and never all taken by one package.

Every operation of the service is blocking work — parsing a contract of several megabytes takes
seconds, a write may wait for another process's package lock — so none runs on the event loop,
which keeps reading the wire (pings, cancellations, other calls) while they run. They run on a
pool of threads of the server's own (:data:`THREADS`, apart from the threads the SDK and the
wire use), and each package has a *lane* of at most :data:`PER_PACKAGE` of them: calls for one
package beyond that wait, on the event loop, for one of its own to finish. A package whose
writes are stuck on a lock held elsewhere (each such wait ends in ``TQX_BUSY`` after the store's
lock timeout) therefore holds at most :data:`PER_PACKAGE` threads, and calls for every other
package go on being served. Operations over the whole root (``catalog``, ``discover_packages``)
share a lane of their own.

A thread is never abandoned: when its call is cancelled the call waits for the thread to
finish its (time-bounded) work, and the client gets no response, as MCP prescribes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Final, TypeVar

import anyio
import anyio.to_thread

__all__ = ["PER_PACKAGE", "THREADS", "Lanes"]

T = TypeVar("T")

THREADS: Final = 16
"""Worker threads for service operations, at most, across all packages."""

PER_PACKAGE: Final = 4
"""Calls of one package (or of the whole root) running at once, at most."""


class _Lane:
    __slots__ = ("limiter", "users")

    def __init__(self, size: int) -> None:
        self.limiter = anyio.CapacityLimiter(size)
        self.users = 0


class Lanes:
    """Per-package lanes over one bounded pool of worker threads."""

    def __init__(self, threads: int = THREADS, per_package: int = PER_PACKAGE) -> None:
        if not 0 < per_package < threads:
            raise ValueError("a package's lane must be narrower than the whole pool")
        self._threads = anyio.CapacityLimiter(threads)
        self._per_package = per_package
        self._lanes: dict[str, _Lane] = {}

    @asynccontextmanager
    async def lane(self, key: str) -> AsyncIterator[None]:
        """Hold one of ``key``'s places (waiting for one, cancellably) while the block runs."""
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane(self._per_package)
        lane.users += 1
        try:
            async with lane.limiter:
                yield
        finally:
            lane.users -= 1
            if lane.users == 0:
                del self._lanes[key]  # only lanes in use are kept: any number of names is fine

    async def run(self, key: str, work: Callable[[], T]) -> T:
        """``work()`` on a pool thread within ``key``'s lane."""
        async with self.lane(key):
            return await anyio.to_thread.run_sync(work, limiter=self._threads)

    @property
    def busy(self) -> int:
        """Pool threads in use now."""
        return int(self._threads.borrowed_tokens)
