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
    """A :class:`BatchLedger` in a dict: about 300 bytes per distinct request, for runs that
    fit in memory. File runs use templiqx-local's SQLite ledger, whose memory is flat."""

    def __init__(self) -> None:
        self._results: dict[str, BatchResult] = {}

    def finished(self, key: str) -> BatchResult | None:
        return self._results.get(key)

    def record(self, key: str, result: BatchResult) -> None:
        self._results.setdefault(key, result)


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
