"""Batch runs: one contract over many rows — bounded, adaptive, deduplicated, resumable.

The engine (:mod:`~templiqx_application.batch.engine`) sequences the work; the iterators
(:mod:`~templiqx_application.batch.runs`) are what ``service.batch(...)`` and
``service.abatch(...)`` return. Files (datasets, the durable output, resuming, the result
cache on disk) are templiqx-local's (``templiqx_local.batch``); scaling out is templiqx-ray's.
"""

from templiqx_application.batch.engine import (
    MAX_CONCURRENCY,
    BatchEngine,
    BatchOptions,
    RowHook,
    request_key,
)
from templiqx_application.batch.ledger import (
    BatchLedger,
    CachedAnswer,
    MemoryLedger,
    ResultCache,
    SharedLedger,
)
from templiqx_application.batch.pacing import (
    AdaptiveLimit,
    LocalRateBudget,
    RateBudget,
    RetryPolicy,
    TokenBucket,
)
from templiqx_application.batch.results import (
    BatchResult,
    BatchSummary,
    EvalOutcome,
    EvalScore,
    FieldScore,
    LatencySummary,
    RowDiagnostic,
    TokenTotals,
)
from templiqx_application.batch.rows import ROW_FIELDS, BatchRow, RowError, as_row
from templiqx_application.batch.runs import AsyncBatchRun, BatchRun, RowSource

__all__ = [
    "MAX_CONCURRENCY",
    "ROW_FIELDS",
    "AdaptiveLimit",
    "AsyncBatchRun",
    "BatchEngine",
    "BatchLedger",
    "BatchOptions",
    "BatchResult",
    "BatchRow",
    "BatchRun",
    "BatchSummary",
    "CachedAnswer",
    "EvalOutcome",
    "EvalScore",
    "FieldScore",
    "LatencySummary",
    "LocalRateBudget",
    "MemoryLedger",
    "RateBudget",
    "ResultCache",
    "RetryPolicy",
    "RowDiagnostic",
    "RowError",
    "RowHook",
    "RowSource",
    "SharedLedger",
    "TokenBucket",
    "TokenTotals",
    "as_row",
    "request_key",
]
