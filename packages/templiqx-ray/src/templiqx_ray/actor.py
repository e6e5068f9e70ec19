"""The batch actor: one per worker of the pool, composing the templiqx service once.

Ray Data calls it with record batches of ``{INDEX_COLUMN, <the dataset's columns>}``; it turns
each record into a :class:`~templiqx_application.batch.BatchRow` exactly as the local batch
reads the same file (``templiqx_local.batch.row_from_json`` for a JSONL line,
``row_from_record`` for a Parquet record, through the same column mapping), runs them through
``service.batch(...)`` — the same engine, so the same result rows — and returns one output
record per row: its index and the result's JSON line (the line the local batch writes).

Before its first call the actor checks that the package it sees has the identity fingerprint
the driver gave it, and refuses to start otherwise (``TQX_BATCH_IDENTITY_MISMATCH``): every
worker provably runs the same contracts. The engine checks it again at every batch, so a
package changed under a running pipeline stops it too.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import OrderedDict
from typing import Any

import msgspec

from templiqx_application.batch import (
    AsyncBatchRun,
    BatchOptions,
    BatchResult,
    BatchRow,
    RateBudget,
    SharedLedger,
)
from templiqx_application.diagnostics import port_diagnostic
from templiqx_contracts import Diagnostic
from templiqx_local import compose, load_runtime
from templiqx_local.batch import ColumnMapping, row_from_csv, row_from_json, row_from_record
from templiqx_ports import PortError
from templiqx_ports.telemetry import continued_trace

__all__ = [
    "INDEX_COLUMN",
    "LEDGER_ENTRIES",
    "LINE_COLUMN",
    "STATS_COLUMN",
    "TEXT_COLUMN",
    "BatchActor",
    "PackageIdentityError",
    "RuntimeConfigurationError",
]

INDEX_COLUMN = "__templiqx_index"
LINE_COLUMN = "result"
STATS_COLUMN = "stats"
TEXT_COLUMN = "text"
"""The column ``ray.data.read_text`` gives a JSONL line in."""

LEDGER_ENTRIES = 4096
"""Recent results an actor keeps to answer its own duplicates without asking the run's
:class:`~templiqx_ray.claims.ClaimKeeper` (which knows every request of the run)."""

_ENCODER = msgspec.json.Encoder()


class PackageIdentityError(RuntimeError):
    """``TQX_BATCH_IDENTITY_MISMATCH``: the actor's package is not the one it was given."""

    code = "TQX_BATCH_IDENTITY_MISMATCH"


class RuntimeConfigurationError(RuntimeError):
    """The actor's runtime cannot be used as configured (its settings' diagnostic, e.g.
    ``TQX_RUNTIME_PERMANENT`` naming a missing ``MODEL_ID``): raised once, before any row."""


class _BoundedLedger:
    """The actor's ledger (:class:`~templiqx_application.batch.BatchLedger`): the last
    :data:`LEDGER_ENTRIES` results, so its memory stays bounded on an endless dataset (the
    run's claim keeper answers for the older ones)."""

    def __init__(self) -> None:
        self._results: OrderedDict[str, BatchResult] = OrderedDict()

    def finished(self, key: str) -> BatchResult | None:
        found = self._results.get(key)
        if found is not None:
            self._results.move_to_end(key)
        return found

    def record(self, key: str, result: BatchResult) -> None:
        self._results[key] = result
        if len(self._results) > LEDGER_ENTRIES:
            self._results.popitem(last=False)


class BatchActor:
    """A Ray Data callable class (``map_batches(BatchActor, compute=ActorPoolStrategy(...))``)."""

    def __init__(
        self,
        *,
        root: str,
        package: str,
        contract: str | None,
        identity: str,
        runtime: str,
        source_format: str,
        mapping: list[str],
        options: dict[str, Any],
        budget: Any = None,
        claims: Any = None,
        trace: dict[str, str] | None = None,
    ) -> None:
        # the driver's trace context (W3C headers; empty when it does not trace): this
        # actor's batch spans join the caller's trace instead of each starting one
        self._trace = dict(trace or {})
        evaluate = bool(options.get("evaluate", False))
        self._adapter = None if runtime == "fake" or evaluate else load_runtime(runtime)
        self._service = (
            compose(root) if self._adapter is None else compose(root, runtime=self._adapter)
        )
        exported = self._service.export_package_identity(package)
        found = exported.fingerprints.get("package_identity")
        if not exported.ok or found != identity:
            reason = (
                "; ".join(d.message for d in exported.diagnostics)
                if not exported.ok
                else f"it has identity {found}"
            )
            raise PackageIdentityError(
                f"{PackageIdentityError.code}: the actor on pid {os.getpid()} refuses to run: "
                f"package '{package}' under {root!r} is not the one the batch was given "
                f"({identity}): {reason}. Ship the same package folder to every worker."
            )
        self._package = package
        self._contract = contract
        self._format = source_format
        self._mapping = ColumnMapping.parse(mapping)
        self._options = BatchOptions(**options)
        self._budget: RateBudget | None = None
        if budget is not None:
            from templiqx_ray.budget import SharedRateBudget

            self._budget = SharedRateBudget(budget)
        self._shared: SharedLedger | None = None
        if claims is not None:
            from templiqx_ray.claims import SharedClaims

            self._shared = SharedClaims(claims)
        self._ledger = _BoundedLedger()
        problem = self._runtime_problem()
        if problem is not None:
            raise RuntimeConfigurationError(
                f"{problem.code}: the actor on pid {os.getpid()} cannot call its runtime "
                f"'{runtime}': {problem.message}"
                + (f" ({problem.help})" if problem.help else "")
                + ". Give every worker the runtime's settings (RayBatch.env)."
            )
        # One event loop for the actor's life: every batch Ray hands it runs on it, so the
        # runtime's HTTP client and its kept-alive connections serve every batch, and no
        # batch's first calls wait for a new client after their rate-budget reservations.
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="templiqx-ray-batch", daemon=True
        )
        self._thread.start()

    def _row(self, record: dict[str, Any]) -> BatchRow:
        index = int(record.pop(INDEX_COLUMN))
        if self._format == "jsonl":
            return row_from_json(str(record.get(TEXT_COLUMN, "")), index, self._mapping)
        if self._format == "csv":
            return row_from_csv(record, index, self._mapping)
        return row_from_record(record, index, self._mapping)

    def _runtime_problem(self) -> Diagnostic | None:
        """The runtime's settings checked and its first call's set-up done, before any row
        (what the engine does at every batch; here it fails the actor once, at its start)."""
        runtime = self._adapter
        if runtime is None:
            return None  # the deterministic fake: nothing to set up
        check = getattr(runtime, "check_settings", None)
        if callable(check):
            try:
                check()
            except PortError as exc:
                return port_diagnostic(exc)
        warm = getattr(runtime, "warm_up", None)
        if callable(warm):
            warm()
        return None

    def __call__(self, batch: Any) -> dict[str, list[Any]]:
        records: list[dict[str, Any]] = batch.to_pylist()
        rows = [self._row(record) for record in records]
        future = asyncio.run_coroutine_threadsafe(self._run(rows), self._loop)
        results, run = future.result()
        engine = run.engine
        stats = {
            "calls": engine.calls,
            "retries": engine.retries,
            "rate_limited": engine.rate_limited,
            "lowest": engine.summary().concurrency.get("lowest"),
        }
        if not results:
            return {INDEX_COLUMN: [], LINE_COLUMN: [], STATS_COLUMN: []}
        return {
            INDEX_COLUMN: [result.index for result in results],
            LINE_COLUMN: [_ENCODER.encode(result).decode() for result in results],
            STATS_COLUMN: [_ENCODER.encode(stats).decode()] + [""] * (len(results) - 1),
        }

    async def _run(self, rows: list[BatchRow]) -> tuple[list[BatchResult], AsyncBatchRun]:
        """One of Ray's batches through the engine, on the actor's loop."""
        with continued_trace(self._trace):
            return await self._run_rows(rows)

    async def _run_rows(self, rows: list[BatchRow]) -> tuple[list[BatchResult], AsyncBatchRun]:
        if self._options.evaluate:
            run = self._service.atest_dataset(
                self._package,
                rows,
                contract=self._contract,
                capabilities=None
                if self._options.capabilities is None
                else list(self._options.capabilities),
                concurrency=self._options.concurrency,
                ledger=self._ledger,
                shared=self._shared,
            )
        else:
            run = self._service.abatch(
                self._package,
                self._contract,
                rows,
                options=self._options,
                ledger=self._ledger,
                budget=self._budget,
                shared=self._shared,
            )
        async with run:
            results = [result async for result in run]
        if run.diagnostics:
            problems = "; ".join(f"{d.code}: {d.message}" for d in run.diagnostics)
            raise RuntimeError(f"the batch was refused on pid {os.getpid()}: {problems}")
        return results, run
