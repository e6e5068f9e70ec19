"""Requests claimed across every actor of a Ray batch: each distinct request executed once per run.

The local batch executes rows whose request fingerprint is identical once per run. On Ray a
run spans several actors, each with its own engine, so one :class:`ClaimKeeper` actor keeps the
run's claims and every engine asks it (through :class:`SharedClaims`, the engine's
:class:`~templiqx_application.batch.SharedLedger`) after its own in-flight requests and its own
recent results:

* a request another actor finished is answered from the keeper (a ``duplicate`` row, no call);
* a request another actor is executing is waited for (the row holds no concurrency slot);
* otherwise the asking actor owns it, executes it and sends the keeper its result.

Memory stays flat: the keeper holds in memory only the requests being executed (at most the
actors' concurrency); finished results go to a SQLite file in a temporary folder on the
keeper's node, removed when the run ends. An owner that gives its request up (its row
cancelled) hands it to a waiter; one that has not answered within :data:`LEASE_S` (its actor
died) is taken over, so a lost actor cannot hang the run.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
import ray

from templiqx_application.batch import BatchResult

__all__ = ["LEASE_S", "ClaimKeeper", "SharedClaims", "start_claims"]

LEASE_S = 600.0
"""How long an owner may hold a request without answering before a waiter takes it over
(far longer than a call with all its retries; only a lost actor holds one that long)."""

_RESULT = msgspec.json.Decoder(BatchResult)
_ENCODER = msgspec.json.Encoder()


class _Running:
    __slots__ = ("done", "since")

    def __init__(self) -> None:
        self.done = asyncio.Event()
        self.since = time.monotonic()


class ClaimKeeper:
    """The run's claims (an async Ray actor; see :func:`start_claims`)."""

    def __init__(self) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="templiqx-ray-claims-"))
        self._db = sqlite3.connect(self._folder / "finished.sqlite", check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=OFF")  # the run's own scratch: lost with the run
        self._db.execute("CREATE TABLE finished (key TEXT PRIMARY KEY, result BLOB NOT NULL)")
        self._running: dict[str, _Running] = {}
        self.executed = 0

    def _finished(self, key: str) -> bytes | None:
        row = self._db.execute("SELECT result FROM finished WHERE key = ?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def _own(self, key: str) -> None:
        self._running[key] = _Running()
        self.executed += 1

    async def claim(self, key: str) -> bytes | bool:
        """The finished result, ``True`` (the caller owns it now) or ``False`` (running)."""
        found = self._finished(key)
        if found is not None:
            return found
        if key in self._running:
            return False
        self._own(key)
        return True

    async def wait(self, key: str) -> bytes | None:
        """The result once its owner sends it; ``None`` when the caller owns it now."""
        while True:
            found = self._finished(key)
            if found is not None:
                return found
            running = self._running.get(key)
            if running is None:  # released by its owner
                self._own(key)
                return None
            left = LEASE_S - (time.monotonic() - running.since)
            if left <= 0:  # its owner is gone: take it over
                self._own(key)
                return None
            try:
                await asyncio.wait_for(running.done.wait(), timeout=left)
            except TimeoutError:
                continue

    async def record(self, key: str, result: bytes) -> None:
        with self._db:
            self._db.execute(
                "INSERT OR IGNORE INTO finished (key, result) VALUES (?, ?)", (key, result)
            )
        running = self._running.pop(key, None)
        if running is not None:
            running.done.set()

    async def release(self, key: str) -> None:
        running = self._running.pop(key, None)
        if running is not None:
            running.done.set()

    async def stats(self) -> dict[str, int]:
        """Requests owned so far (executed, or taken over) and running now."""
        return {"executed": self.executed, "running": len(self._running)}

    async def close(self) -> None:
        """Drop the finished results (the run is over)."""
        self._db.close()
        shutil.rmtree(self._folder, ignore_errors=True)


def start_claims() -> Any:
    """A :class:`ClaimKeeper` actor (no CPU reserved: it only looks keys up)."""
    keeper: Any = ray.remote(num_cpus=0)(ClaimKeeper)
    return keeper.options(max_concurrency=10_000).remote()


class SharedClaims:
    """The engine's view of the keeper (:class:`~templiqx_application.batch.SharedLedger`)."""

    def __init__(self, keeper: Any) -> None:
        self._keeper = keeper

    async def claim(self, key: str) -> BatchResult | bool:
        answer = await self._keeper.claim.remote(key)
        if isinstance(answer, bytes):
            return _RESULT.decode(answer)
        return bool(answer)

    async def wait(self, key: str) -> BatchResult | None:
        answer = await self._keeper.wait.remote(key)
        return None if answer is None else _RESULT.decode(answer)

    def record(self, key: str, result: BatchResult) -> None:
        self._keeper.record.remote(key, _ENCODER.encode(result))

    def release(self, key: str) -> None:
        self._keeper.release.remote(key)
