"""What a batch remembers by request: the run's ledger and the opt-in result cache.

Both are seams: the engine talks to these protocols, and templiqx-local gives file-backed
implementations (SQLite beside the output, so memory stays flat and a resumed run still knows
what it executed). Keys are request keys (:func:`templiqx_application.batch.engine.request_key`):
the runtime's request fingerprint, or a fingerprint of the request itself for a runtime that
cannot tell its fingerprint before the call.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import msgspec

from templiqx_application.batch.results import BatchResult
from templiqx_contracts import ExecutionReceipt, Usage

__all__ = ["BatchLedger", "CachedAnswer", "MemoryLedger", "ResultCache"]


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
    """A :class:`BatchLedger` in a dict: about 300 bytes per distinct request, for runs that
    fit in memory. File runs use templiqx-local's SQLite ledger, whose memory is flat."""

    def __init__(self) -> None:
        self._results: dict[str, BatchResult] = {}

    def finished(self, key: str) -> BatchResult | None:
        return self._results.get(key)

    def record(self, key: str, result: BatchResult) -> None:
        self._results.setdefault(key, result)


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
