"""Batch runs of the service: the part of :class:`TempliqxService` that runs a contract over a
dataset (:mod:`templiqx_application.batch`).

A batch is not a catalog operation: it is a long job over many rows whose results stream out
as rows finish, not one call with one envelope, so it is offered to Python callers (and the CLI
and templiqx-ray, which are Python callers) and not through MCP or HTTP. Every row is still
exactly one ``execute_contract``: the same preparation, the same envelope, concluded into a
result row.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Container, Iterable

    from templiqx_application.batch import (
        AsyncBatchRun,
        BatchLedger,
        BatchOptions,
        BatchResult,
        BatchRun,
        RateBudget,
        ResultCache,
        RowHook,
        RowSource,
        SharedLedger,
    )
    from templiqx_application.batch.engine import BatchEngine
    from templiqx_application.context import ServiceContext
    from templiqx_application.workers import WorkerPool
    from templiqx_ports import CancelToken

__all__ = ["BatchOperations"]


class BatchOperations:
    """Mixed into :class:`~templiqx_application.TempliqxService` (which provides the rest)."""

    if TYPE_CHECKING:
        _ctx: ServiceContext
        _pool: WorkerPool

    def _batch_engine(
        self,
        package: str,
        contract: str | None,
        options: BatchOptions | None,
        overrides: dict[str, Any],
        *,
        ledger: BatchLedger | None,
        cache: ResultCache | None,
        budget: RateBudget | None,
        shared: SharedLedger | None = None,
        skip: Container[int] | None,
        on_row: RowHook | None,
        cancel: CancelToken | None,
        previous: Iterable[BatchResult] = (),
    ) -> BatchEngine:
        from templiqx_application.batch import BatchOptions, RetryPolicy
        from templiqx_application.batch.engine import BatchEngine

        chosen = options if options is not None else BatchOptions()
        given = {name: value for name, value in overrides.items() if value is not None}
        if "max_attempts" in given:
            chosen = dataclasses.replace(
                chosen,
                retry=dataclasses.replace(chosen.retry, max_attempts=given.pop("max_attempts")),
            )
        if "capabilities" in given:
            given["capabilities"] = tuple(given["capabilities"])
        chosen = dataclasses.replace(chosen, **given)
        assert isinstance(chosen.retry, RetryPolicy)
        return BatchEngine(
            self._ctx,
            self._pool,
            package,
            contract,
            chosen,
            ledger=ledger,
            cache=cache,
            budget=budget,
            shared=shared,
            skip=skip,
            on_row=on_row,
            cancel=cancel,
            previous=previous,
        )

    def batch(
        self,
        package: str,
        contract: str | None,
        rows: RowSource,
        *,
        options: BatchOptions | None = None,
        concurrency: int | None = None,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        max_attempts: int | None = None,
        capabilities: list[str] | None = None,
        package_identity: str | None = None,
        ledger: BatchLedger | None = None,
        cache: ResultCache | None = None,
        budget: RateBudget | None = None,
        shared: SharedLedger | None = None,
        skip: Container[int] | None = None,
        previous: Iterable[BatchResult] = (),
        on_row: RowHook | None = None,
        cancel: CancelToken | None = None,
    ) -> BatchRun:
        """Run ``contract`` of ``package`` over ``rows``; iterate the results as rows finish.

        ``rows`` holds :class:`~templiqx_application.batch.BatchRow` values or mappings with
        ``inputs``, ``context``, ``id`` (and ``output`` / ``expected`` for evals); each is one
        ``execute_contract`` on the composed runtime. ``contract`` ``None`` lets each row name
        its own. The keywords override ``options`` (:class:`~templiqx_application.batch.
        BatchOptions`). After iteration, ``run.summary`` counts outcomes; ``run.diagnostics``
        says why a run was refused before its first row (unknown package, a contract that does
        not load, a package identity other than ``package_identity``)::

            with service.batch("support", "classify", rows, concurrency=32) as run:
                for result in run:
                    print(result.index, result.ok, result.output)
            print(run.summary.by_code)
        """
        from templiqx_application.batch import BatchRun

        engine = self._batch_engine(
            package,
            contract,
            options,
            {
                "concurrency": concurrency,
                "requests_per_minute": requests_per_minute,
                "tokens_per_minute": tokens_per_minute,
                "max_attempts": max_attempts,
                "capabilities": capabilities,
                "package_identity": package_identity,
            },
            ledger=ledger,
            cache=cache,
            budget=budget,
            shared=shared,
            skip=skip,
            on_row=on_row,
            cancel=cancel,
            previous=previous,
        )
        return BatchRun(engine, rows)

    def abatch(
        self,
        package: str,
        contract: str | None,
        rows: RowSource,
        *,
        options: BatchOptions | None = None,
        concurrency: int | None = None,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        max_attempts: int | None = None,
        capabilities: list[str] | None = None,
        package_identity: str | None = None,
        ledger: BatchLedger | None = None,
        cache: ResultCache | None = None,
        budget: RateBudget | None = None,
        shared: SharedLedger | None = None,
        skip: Container[int] | None = None,
        previous: Iterable[BatchResult] = (),
        on_row: RowHook | None = None,
        cancel: CancelToken | None = None,
    ) -> AsyncBatchRun:
        """The async twin of :meth:`batch`: ``async for result in service.abatch(...)``, on the
        caller's event loop (``rows`` may be an async iterable)."""
        from templiqx_application.batch import AsyncBatchRun

        engine = self._batch_engine(
            package,
            contract,
            options,
            {
                "concurrency": concurrency,
                "requests_per_minute": requests_per_minute,
                "tokens_per_minute": tokens_per_minute,
                "max_attempts": max_attempts,
                "capabilities": capabilities,
                "package_identity": package_identity,
            },
            ledger=ledger,
            cache=cache,
            budget=budget,
            shared=shared,
            skip=skip,
            on_row=on_row,
            cancel=cancel,
            previous=previous,
        )
        return AsyncBatchRun(engine, rows)

    def test_dataset(
        self,
        package: str,
        rows: RowSource,
        *,
        contract: str | None = None,
        capabilities: list[str] | None = None,
        concurrency: int | None = None,
        ledger: BatchLedger | None = None,
        shared: SharedLedger | None = None,
        skip: Container[int] | None = None,
        previous: Iterable[BatchResult] = (),
        cancel: CancelToken | None = None,
    ) -> BatchRun:
        """Evals at scale: ``test_package`` / ``run_eval`` over a dataset of cases.

        Each row is a case (``inputs``, ``context``, the ``output`` the deterministic fake
        answers with — DECISIONS 14: evals never call a model — and, optionally, the
        ``expected`` output it is scored against); rows name their ``contract`` unless
        ``contract`` is given (``run_eval``'s form). Every result carries an ``eval`` outcome
        and ``run.summary.score`` the score summary (pass rate, by contract, field accuracy).
        """
        from templiqx_application.batch import BatchOptions, BatchRun

        engine = self._batch_engine(
            package,
            contract,
            BatchOptions(evaluate=True),
            {"concurrency": concurrency, "capabilities": capabilities},
            ledger=ledger,
            cache=None,
            budget=None,
            shared=shared,
            skip=skip,
            on_row=None,
            cancel=cancel,
            previous=previous,
        )
        return BatchRun(engine, rows)

    def atest_dataset(
        self,
        package: str,
        rows: RowSource,
        *,
        contract: str | None = None,
        capabilities: list[str] | None = None,
        concurrency: int | None = None,
        ledger: BatchLedger | None = None,
        shared: SharedLedger | None = None,
        skip: Container[int] | None = None,
        previous: Iterable[BatchResult] = (),
        cancel: CancelToken | None = None,
    ) -> AsyncBatchRun:
        """The async twin of :meth:`test_dataset`."""
        from templiqx_application.batch import AsyncBatchRun, BatchOptions

        engine = self._batch_engine(
            package,
            contract,
            BatchOptions(evaluate=True),
            {"concurrency": concurrency, "capabilities": capabilities},
            ledger=ledger,
            cache=None,
            budget=None,
            shared=shared,
            skip=skip,
            on_row=None,
            cancel=cancel,
            previous=previous,
        )
        return AsyncBatchRun(engine, rows)
