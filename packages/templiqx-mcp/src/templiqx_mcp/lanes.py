"""Per-package lanes: no package can take every worker the server's calls run on.

Every operation of the service is blocking work — parsing a contract of several megabytes takes
seconds, a write may wait for another process's package lock — so none runs on the event loop:
each is awaited through the service's public async API, which runs it on the service's bounded
worker pool (the one bridge between the loop and the blocking service). Each package has a
*lane* of at most :data:`PER_PACKAGE` calls running at once: calls for one package beyond that
wait, on the event loop and cancellably, for one of its own to finish. A package whose writes are
stuck on a lock held elsewhere (each such wait ends in ``TQX_BUSY`` after the store's lock
timeout) therefore holds at most :data:`PER_PACKAGE` workers, and calls for every other package
go on being served. Operations over the whole root (``catalog``, ``discover_packages``) share a
lane of their own.

A worker is never abandoned: when its call is cancelled the call waits for the worker to finish
its (time-bounded) work, and the client gets no response, as MCP prescribes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

import anyio

__all__ = ["PER_PACKAGE", "Lanes"]

PER_PACKAGE: Final = 4
"""Calls of one package (or of the whole root) running at once, at most."""


class _Lane:
    __slots__ = ("limiter", "users")

    def __init__(self, size: int) -> None:
        self.limiter = anyio.CapacityLimiter(size)
        self.users = 0


class Lanes:
    """Per-package admission: at most ``per_package`` calls of one package at once."""

    def __init__(self, per_package: int = PER_PACKAGE) -> None:
        if per_package < 1:
            raise ValueError("a package's lane needs at least one place")
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
