"""What a batch remembers by request: the run's ledger and the opt-in result cache.

Both are seams: the engine talks to these protocols, and templiqx-local gives file-backed
implementations (SQLite beside the output, so memory stays flat and a resumed run still knows
what it executed). Keys are request keys (:func:`templiqx_application.batch.engine.request_key`):
the runtime's request fingerprint, or a fingerprint of the request itself for a runtime that
cannot tell its fingerprint before the call.
"""

from __future__ import annotations

import sqlite3
from typing import Protocol, runtime_checkable

import msgspec

from templiqx_application.batch.results import BatchResult
from templiqx_contracts import ExecutionReceipt, Usage

__all__ = ["BatchLedger", "CachedAnswer", "MemoryLedger", "ResultCache", "SharedLedger"]


@runtime_checkable
class BatchLedger(Protocol):
    """The outcome of every distinct request a run has finished (dedupe within a run)."""

    def finished(self, key: str) -> BatchResult | None:
        """The result recorded for ``key``, if any."""
        ...

    def record(self, key: str, result: BatchResult) -> None:
        """Remember ``result`` for ``key`` (called before the result is handed out)."""
        ...


class MemoryLedger:
    """The default :class:`BatchLedger` (``service.batch`` without one): the first
    ``in_memory`` results in a dict, every later one in a private temporary SQLite database
    (``sqlite3.connect("")``: on disk, deleted when the ledger is dropped), so a long run over
    many distinct requests does not grow its memory. File runs use templiqx-local's ledger
    beside the output, which a resumed run reads again."""

    IN_MEMORY = 4096

    def __init__(self, in_memory: int | None = None) -> None:
        self._results: dict[str, BatchResult] = {}
        self._in_memory = self.IN_MEMORY if in_memory is None else in_memory
        self._spilled: sqlite3.Connection | None = None

    def finished(self, key: str) -> BatchResult | None:
        found = self._results.get(key)
        if found is not None or self._spilled is None:
            return found
        row = self._spilled.execute("SELECT result FROM finished WHERE key = ?", (key,)).fetchone()
        return None if row is None else _RESULT.decode(row[0])

    def record(self, key: str, result: BatchResult) -> None:
        if key in self._results:
            return
        if len(self._results) < self._in_memory:
            self._results[key] = result
            return
        if self._spilled is None:
            self._spilled = sqlite3.connect("", check_same_thread=False)
            self._spilled.execute("CREATE TABLE finished (key TEXT PRIMARY KEY, result BLOB)")
        self._spilled.execute(
            "INSERT OR IGNORE INTO finished (key, result) VALUES (?, ?)",
            (key, _ENCODER.encode(result)),
        )

    @property
    def held(self) -> int:
        """Results held in memory (at most ``in_memory``)."""
        return len(self._results)


_RESULT = msgspec.json.Decoder(BatchResult)
_ENCODER = msgspec.json.Encoder()


@runtime_checkable
class SharedLedger(Protocol):
    """Requests claimed across the processes of one run (templiqx-ray's actors), so a request
    is executed once per run however many processes see it.

    The engine asks it after its own in-flight requests and its own ledger: :meth:`claim`
    answers at once — the result if another process finished the request, ``True`` if the
    caller now owns it (it executes it, then :meth:`record` s the result, or :meth:`release` s
    it when it could not finish), ``False`` if another process is executing it. Then
    :meth:`wait` waits for that outcome: the result, or ``None`` when the owner released it
    and the caller now owns it.
    """

    async def claim(self, key: str) -> BatchResult | bool: ...

    async def wait(self, key: str) -> BatchResult | None: ...

    def record(self, key: str, result: BatchResult) -> None:
        """The owner's result (sent without waiting for an answer)."""
        ...

    def release(self, key: str) -> None:
        """The owner gives the request up unfinished (cancelled): a waiter takes it over."""
        ...


class CachedAnswer(msgspec.Struct, kw_only=True, frozen=True):
    """A runtime's answer kept by the result cache: the receipt, its usage and latency."""

    receipt: ExecutionReceipt
    usage: Usage | None = None
    latency_ms: float | None = None


@runtime_checkable
class ResultCache(Protocol):
    """Answers kept across runs, by runtime (``scope``: id and version) and request key."""

    def get(self, scope: str, key: str) -> CachedAnswer | None: ...

    def put(self, scope: str, key: str, answer: CachedAnswer) -> None: ...
