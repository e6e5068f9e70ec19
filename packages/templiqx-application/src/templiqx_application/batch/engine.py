"""The batch engine: many rows of one contract through the runtime, on one event loop.

For each row the engine prepares the execution exactly as ``execute_contract`` does (the
contract loaded once for the whole run), computes its *request key* (the runtime's request
fingerprint, see :meth:`~templiqx_ports.RuntimeAdapter.request_fingerprint`), and then:

1. a cache hit (opt-in :class:`~templiqx_application.batch.ledger.ResultCache`) concludes the
   row from the kept answer without calling the runtime;
2. a request already in flight or finished in this run is not executed again: the row gets a
   copy of that outcome (``source: duplicate``);
3. otherwise the runtime is called under the run's pacing
   (:mod:`templiqx_application.batch.pacing`): a slot of the adaptive concurrency limit, the
   rate budget, and bounded retries of transient failures. The receipt (or the failure) is
   concluded into the same envelope ``execute_contract`` would give, and that envelope into the
   row's :class:`~templiqx_application.batch.results.BatchResult`.

Rows are pulled from their source only as fast as results are taken (at most ``window`` rows
are alive at once), and results are handed out as rows finish, so memory does not depend on
the dataset's size. Stopping (:meth:`BatchEngine.cancel`, or the caller's cancel token) admits
no more rows, cancels the calls in flight — their rows produce no result, so a resumed run
executes them — and still hands out every result that had finished.

Tracing seam: ``on_row(row)``, when given, returns a context manager entered in the row's own
task around everything the row does, so a tracer's span opened there is the parent of the
runtime calls (they inherit the task's context). What it yields, if callable, receives the
row's result before the context exits. A batch-level span is simply whatever context is current
where the run starts (the sync iterator runs its event loop in a copy of that context).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Container, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import msgspec

from templiqx_application import execution, observability, packages
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
)
from templiqx_application.batch.results import (
    BatchResult,
    BatchSummary,
    EvalOutcome,
    RowDiagnostic,
    Source,
    SummaryBuilder,
)
from templiqx_application.batch.rows import BatchRow
from templiqx_application.batch.scoring import compare
from templiqx_application.context import ServiceContext
from templiqx_application.diagnostics import error, port_diagnostic
from templiqx_application.loading import LoadedContract
from templiqx_application.workers import WorkerPool
from templiqx_contracts import (
    CanonicalJSONError,
    Diagnostic,
    ExecutionReceipt,
    ExecutionRequest,
    OperationEnvelope,
    RenderRequest,
    Usage,
    fingerprint,
    quote_input,
)
from templiqx_ports import (
    AsyncRuntimeAdapter,
    CallFacts,
    CancelToken,
    PortError,
    RuntimeAdapter,
    usage_meter,
)

__all__ = [
    "MAX_CONCURRENCY",
    "BatchEngine",
    "BatchOptions",
    "RowHook",
    "request_key",
]

MAX_CONCURRENCY = 1024
"""The highest concurrency ceiling a batch accepts."""

_TOKEN_POLL_S = 0.05
"""How often the caller's cancel token is looked at."""

RowHook = Callable[[BatchRow], AbstractContextManager[Any]]
"""``on_row``: a context manager around one row's work (see the module docstring)."""


@dataclass(frozen=True)
class BatchOptions:
    """How a batch runs.

    * ``concurrency`` — the ceiling of calls at once (the adaptive limit starts there);
      ``min_concurrency`` — the floor rate limits may push it down to;
    * ``retry`` — bounded retries of transient failures (:class:`RetryPolicy`);
    * ``requests_per_minute`` / ``tokens_per_minute`` — optional budgets (tokens are estimated
      from the prompt's length before a call and settled with the reported usage after it);
    * ``capabilities`` — as for ``execute_contract`` (``None``: the runtime's own);
    * ``window`` — rows alive at once (default ``4 * concurrency + 64``);
    * ``evaluate`` — an eval run: every row runs on the deterministic fake with its ``output``
      and is scored against its ``expected`` (DECISIONS 14: evals never call a model);
    * ``package_identity`` — when given, the run refuses to start unless the package's
      identity fingerprint is this one (``TQX_BATCH_IDENTITY_MISMATCH``).
    """

    concurrency: int = 16
    min_concurrency: int = 1
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    capabilities: tuple[str, ...] | None = None
    window: int | None = None
    evaluate: bool = False
    package_identity: str | None = None

    def problems(self) -> list[Diagnostic]:
        """What is wrong with these options (``TQX_BATCH_OPTION_INVALID`` each)."""
        found: list[str] = []
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            found.append(f"concurrency must be between 1 and {MAX_CONCURRENCY}")
        if not 1 <= self.min_concurrency <= max(1, self.concurrency):
            found.append("min_concurrency must be between 1 and concurrency")
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None and not (value > 0 and value < float("inf")):
                found.append(f"{name} must be a positive number")
        if self.window is not None and self.window < 1:
            found.append("window must be at least 1")
        return [error("TQX_BATCH_OPTION_INVALID", message) for message in found]

    @property
    def admission(self) -> int:
        return self.window if self.window is not None else 4 * self.concurrency + 64


def request_key(runtime: RuntimeAdapter, request: ExecutionRequest) -> tuple[str, str | None]:
    """The key a request is deduplicated and cached by, and the runtime's request fingerprint.

    The key is the runtime's request fingerprint (what its receipt will carry); with a fixture
    output it also covers that output (the fake and the mock answer with it, so two rows with
    the same request and different outputs are different executions). A runtime that cannot
    tell its fingerprint before the call is keyed by its identity and the whole request.
    Raises the runtime's :class:`~templiqx_ports.PortError` for a request it cannot send, and
    :class:`~templiqx_contracts.CanonicalJSONError` for values that have no fingerprint.
    """
    predicted = runtime.request_fingerprint(request)
    if predicted is None:
        descriptor = runtime.descriptor()
        return fingerprint([descriptor.id, descriptor.version, request]), None
    if request.fixture_output is None:
        return predicted, predicted
    return fingerprint([predicted, request.fixture_output]), predicted


@dataclass
class _Call:
    """How one runtime call ended."""

    receipt: ExecutionReceipt | None
    error: Exception | None
    usage: Usage | None
    latency_ms: float
    facts: CallFacts | None = None


@dataclass(frozen=True)
class _Waiting:
    """A row whose request is in flight for an earlier row: it waits for that outcome."""

    running: asyncio.Future[BatchResult]
    base: BatchResult


@dataclass(frozen=True)
class _Claimed:
    """A claimed request: the row's base result, its execution, its key and its future;
    ``elsewhere`` when another process of the run executes it (the row waits for that)."""

    base: BatchResult
    prepared: execution.Execution
    key: str
    future: asyncio.Future[BatchResult]
    elsewhere: bool = False


class _End:
    """The engine's queue is finished."""


_END = _End()


def _noop_sink(event: object) -> None:
    return None


def _diagnostics(envelope: OperationEnvelope) -> list[RowDiagnostic]:
    return [RowDiagnostic.of(diagnostic) for diagnostic in envelope.diagnostics]


class BatchEngine:
    """One batch run on the calling event loop (see the module docstring).

    Use :meth:`results` once. ``skip`` holds row indexes that are already done (a resumed run):
    they are neither run nor reported; ``previous`` are their results (read once, counted into
    the summary, so a resumed run's summary covers the whole output; ``skipped`` says how many
    came from before). ``ledger`` remembers finished requests (default: in
    memory); ``cache`` is the opt-in result cache; ``budget`` overrides the rate budget the
    options describe (a budget shared across processes); ``shared`` claims requests across
    the processes of one run, so each is executed once per run (:class:`SharedLedger`).
    """

    def __init__(
        self,
        ctx: ServiceContext,
        pool: WorkerPool,
        package: str,
        contract: str | None,
        options: BatchOptions,
        *,
        ledger: BatchLedger | None = None,
        cache: ResultCache | None = None,
        budget: RateBudget | None = None,
        shared: SharedLedger | None = None,
        skip: Container[int] | None = None,
        on_row: RowHook | None = None,
        cancel: CancelToken | None = None,
        previous: Iterable[BatchResult] = (),
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self._ctx = ctx
        self._pool = pool
        self.package = package
        self.contract = contract
        self.options = options
        self.runtime = ctx.eval_runtime if options.evaluate else ctx.runtime
        self._ledger: BatchLedger = ledger if ledger is not None else MemoryLedger()
        self._cache = cache
        self._budget: RateBudget | None = budget
        self._shared = shared
        self._skip = skip
        self._on_row = on_row
        self._cancel_token = cancel
        self._clock = clock
        self._rng = rng if rng is not None else random.Random()
        self._limit: AdaptiveLimit | None = None
        self._loaded: dict[str, LoadedContract] = {}
        self._inflight: dict[str, asyncio.Future[BatchResult]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._producer: asyncio.Task[None] | None = None
        self._last_turn: asyncio.Future[None] | None = None
        self._stopping = False
        self._started = False
        self._summary = SummaryBuilder()
        for earlier in previous:
            self._summary.add(earlier)
        self._summary.skipped = self._summary.rows
        self._setup_problems: list[Diagnostic] = []
        self._identity: str | None = None
        self._began = clock()
        self._ended: float | None = None
        self.calls = 0
        self.retries = 0
        self.rate_limited = 0
        self.interrupted = False
        descriptor = self.runtime.descriptor()
        self.scope = f"{descriptor.id}/{descriptor.version}"
        self._completion_estimate = 0.0
        self._completions_seen = 0
        self._trace: observability.BatchTrace | None = None

    # --- control ------------------------------------------------------------------------------

    def cancel(self) -> None:
        """Stop: admit no more rows, cancel the calls in flight (call on the engine's loop)."""
        if self._stopping:
            return
        self._stopping = True
        self.interrupted = True
        if self._producer is not None:
            self._producer.cancel()
        for task in list(self._tasks):
            task.cancel()

    @property
    def stopping(self) -> bool:
        """Whether the run has been told to stop."""
        return self._stopping

    @property
    def setup_problems(self) -> list[Diagnostic]:
        """Why the run was refused before any row ran (empty when it started)."""
        return list(self._setup_problems)

    def summary(self) -> BatchSummary:
        """The summary so far (final once :meth:`results` has ended)."""
        built = self._summary
        ended = self._ended if self._ended is not None else self._clock()
        elapsed = max(0.0, ended - self._began)
        limit = self._limit
        concurrency: dict[str, float] = {"ceiling": float(self.options.concurrency)}
        if limit is not None:
            concurrency["final"] = round(limit.limit, 2)
            concurrency["lowest"] = round(limit.lowest, 2)
            concurrency["decreases"] = float(limit.decreases)
        refused = bool(self._setup_problems)
        score = built.score()
        fresh = built.rows - built.skipped
        return BatchSummary(
            ok=not refused
            and not self.interrupted
            and built.failed == 0
            and (score is None or score.failed == 0),
            package=self.package,
            contract=self.contract,
            runtime=self.scope,
            package_identity=self._identity,
            rows=built.rows,
            succeeded=built.succeeded,
            failed=built.failed,
            skipped=built.skipped,
            by_source=dict(sorted(built.by_source.items())),
            by_code=dict(sorted(built.by_code.items(), key=lambda item: (-item[1], item[0]))),
            calls=self.calls,
            retries=self.retries,
            rate_limited=self.rate_limited,
            latency_ms=built.latency_summary(),
            tokens=built.token_totals(),
            elapsed_s=round(elapsed, 3),
            rows_per_s=round(fresh / elapsed, 3) if elapsed > 0 and fresh else None,
            concurrency=concurrency,
            interrupted=self.interrupted,
            diagnostics=[RowDiagnostic.of(d) for d in self._setup_problems],
            score=score,
        )

    # --- the run ------------------------------------------------------------------------------

    async def results(self, rows: AsyncIterable[BatchRow]) -> AsyncIterator[BatchResult]:
        """Run ``rows``; yield each result as its row finishes (once per engine)."""
        if self._started:
            raise RuntimeError("a batch engine runs once")
        self._started = True
        self._began = self._clock()
        self._trace = observability.batch_trace(self.package, self.contract)
        try:
            if not await self._setup():
                return
            self._limit = AdaptiveLimit(
                self.options.concurrency, floor=self.options.min_concurrency, clock=self._clock
            )
            wanted = self.options
            if self._budget is None and (wanted.requests_per_minute or wanted.tokens_per_minute):
                self._budget = LocalRateBudget(
                    wanted.requests_per_minute, wanted.tokens_per_minute, clock=self._clock
                )
            out: asyncio.Queue[BatchResult | _End] = asyncio.Queue()
            admission = asyncio.Semaphore(self.options.admission)
            self._producer = asyncio.create_task(self._produce(rows, admission, out))
            watcher = self._watch_token()
            try:
                while True:
                    item = await out.get()
                    if isinstance(item, _End):
                        break
                    admission.release()
                    self._summary.add(item)
                    yield item
            finally:
                if watcher is not None:
                    watcher.cancel()
                await self._shutdown()
        finally:
            self._ended = self._clock()
            if self._trace is not None:
                built = self._summary
                self._trace.finish(
                    built.rows,
                    built.succeeded,
                    built.failed,
                    self.interrupted,
                    self._setup_problems,
                )

    def _watch_token(self) -> asyncio.Task[None] | None:
        token = self._cancel_token
        if token is None:
            return None

        async def watch() -> None:
            while not token.is_set():
                await asyncio.sleep(_TOKEN_POLL_S)
            self.cancel()

        return asyncio.create_task(watch())

    async def _shutdown(self) -> None:
        """Leave nothing running (a consumer that stopped early cancels the rest)."""
        pending = [task for task in [self._producer, *self._tasks] if task is not None]
        if any(not task.done() for task in pending):
            self._stopping = True
            self.interrupted = True
            for task in pending:
                task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    async def _setup(self) -> bool:
        """Check options, the package identity and the contract before the first row."""
        problems = self.options.problems()
        if problems:
            self._setup_problems = problems
            return False
        exported = await self._pool.run(
            lambda: packages.export_package_identity(self._ctx, self.package)
        )
        if not exported.ok:
            self._setup_problems = list(exported.diagnostics)
            return False
        self._identity = exported.fingerprints.get("package_identity")
        wanted = self.options.package_identity
        if wanted is not None and wanted != self._identity:
            self._setup_problems = [
                error(
                    "TQX_BATCH_IDENTITY_MISMATCH",
                    f"package '{self.package}' has identity {self._identity}, not the "
                    f"{quote_input(wanted)} this run was given",
                    help="run with the package the identity was taken from (export it again "
                    "with `templiqx identity PACKAGE` after a change, or ship the same "
                    "package folder to every worker)",
                )
            ]
            return False
        if self.contract is not None:
            loaded = await self._load(self.contract)
            if loaded.contract is None:
                self._setup_problems = list(loaded.diagnostics)
                return False
        problem = await self._pool.run(self._ready_runtime)
        if problem is not None:
            self._setup_problems = [problem]
            return False
        return True

    def _ready_runtime(self) -> Diagnostic | None:
        """Check the runtime's settings and do its first call's blocking set-up, before any row.

        A runtime that offers ``check_settings`` (the OpenAI-compatible and Langfuse runtimes
        do; the port does not require it) is asked first: settings it cannot use refuse the
        run once, with the runtime's diagnostic, instead of failing every row with it. Then
        ``warm_up``, when offered, builds what the first call would build (the async HTTP
        stack, its SSL context): done here, it is not done between a call's rate-budget
        reservation and its request, where it would make the first calls late and send them
        in the same instant as the calls reserved after them.
        """
        runtime = self.runtime
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

    async def _load(self, contract: str) -> LoadedContract:
        """The contract's load, once per run (every row runs the same contract text)."""
        loaded = self._loaded.get(contract)
        if loaded is None:
            loaded = await self._pool.run(lambda: self._ctx.loader.load(self.package, contract))
            if len(self._loaded) < 1024:
                self._loaded[contract] = loaded
        return loaded

    async def _produce(
        self,
        rows: AsyncIterable[BatchRow],
        admission: asyncio.Semaphore,
        out: asyncio.Queue[BatchResult | _End],
    ) -> None:
        try:
            async for row in rows:
                if self._stopping:
                    break
                if self._skip is not None and row.index in self._skip:
                    continue
                await admission.acquire()
                if self.stopping:
                    break
                turn = asyncio.get_running_loop().create_future()
                previous, self._last_turn = self._last_turn, turn
                task = asyncio.create_task(self._row_task(row, out, previous, turn))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except asyncio.CancelledError:
            if not self._stopping:
                raise
        finally:
            # Stopping cancels this task too, and it may come while the last rows are being
            # waited for here (every row read): the wait goes on (the rows are cancelled as
            # well, so it ends at once) and the end is still announced, or the consumer would
            # wait for it forever.
            while self._tasks:
                try:
                    await asyncio.wait(set(self._tasks))
                except asyncio.CancelledError:
                    if not self._stopping:
                        out.put_nowait(_END)
                        raise
            out.put_nowait(_END)

    async def _row_task(
        self,
        row: BatchRow,
        out: asyncio.Queue[BatchResult | _End],
        previous: asyncio.Future[None] | None,
        turn: asyncio.Future[None],
    ) -> None:
        try:
            if self._trace is None:
                result = await self._hooked(row, previous, turn)
            else:
                with self._trace.row(row.index, row.id) as traced:
                    result = await self._hooked(row, previous, turn)
                    traced.result(result.contract, result.ok, result.source, result.diagnostics)
        except asyncio.CancelledError:
            return  # stopped: the row is not done, a resumed run executes it
        except Exception as exc:  # an engine bug must not end the whole run
            result = BatchResult(
                index=row.index,
                id=row.id,
                ok=False,
                diagnostics=[
                    RowDiagnostic.of(
                        error("TQX_INTERNAL", f"batch row failed: {type(exc).__name__}: {exc}")
                    )
                ],
                source="refused",
            )
        out.put_nowait(self._scored(row, result))

    async def _hooked(
        self, row: BatchRow, previous: asyncio.Future[None] | None, turn: asyncio.Future[None]
    ) -> BatchResult:
        """One row inside the caller's ``on_row`` hook, when there is one."""
        if self._on_row is None:
            return await self._row(row, previous, turn)
        with self._on_row(row) as finish:
            result = await self._row(row, previous, turn)
            if callable(finish):
                finish(result)
        return result

    # --- one row ------------------------------------------------------------------------------

    def _refused(
        self, row: BatchRow, contract: str | None, diagnostics: list[Diagnostic]
    ) -> BatchResult:
        return BatchResult(
            index=row.index,
            id=row.id,
            contract=contract,
            ok=False,
            diagnostics=[RowDiagnostic.of(d) for d in diagnostics],
            source="refused",
        )

    def _contract_of(self, row: BatchRow) -> str | Diagnostic:
        if row.contract is not None and self.contract is not None and row.contract != self.contract:
            return error(
                "TQX_BATCH_ROW_INVALID",
                f"row names contract {quote_input(row.contract)} but the batch runs "
                f"'{self.contract}'",
                "/contract",
            )
        contract = self.contract if self.contract is not None else row.contract
        if contract is None:
            return error(
                "TQX_BATCH_ROW_INVALID",
                "row names no contract (a batch over a whole package needs a 'contract' per row)",
                "/contract",
            )
        return contract

    async def _row(
        self, row: BatchRow, previous: asyncio.Future[None] | None, turn: asyncio.Future[None]
    ) -> BatchResult:
        """One row. Rows claim their requests in file order (each waits for the row before it
        to have claimed its own), so of several rows with one request the first in the file is
        the one executed, whatever order their preparations finish in."""
        try:
            if previous is not None:
                await asyncio.shield(previous)
            claimed = await self._claim(row)
        finally:
            if not turn.done():
                turn.set_result(None)
        if isinstance(claimed, BatchResult):
            return claimed
        if isinstance(claimed, _Waiting):
            return self._copy(await asyncio.shield(claimed.running), claimed.base)
        key, future = claimed.key, claimed.future
        owned = not claimed.elsewhere
        try:
            if claimed.elsewhere:
                assert self._shared is not None
                done = await self._shared.wait(key)
                if done is not None:
                    self._ledger.record(key, done)
                    future.set_result(done)
                    return self._copy(done, claimed.base)
                owned = True  # its owner gave it up: this row executes it
            result = await self._execute(claimed.base, claimed.prepared)
            self._ledger.record(key, result)
            if self._shared is not None:
                self._shared.record(key, result)
            owned = False
            future.set_result(result)
            return result
        except BaseException:
            future.cancel()
            if owned and self._shared is not None:
                self._shared.release(key)
            raise
        finally:
            del self._inflight[key]

    async def _claim(self, row: BatchRow) -> BatchResult | _Waiting | _Claimed:
        """Prepare ``row`` and claim its request: a finished result (refused, cached, or a copy
        of a finished request), the future of the same request in flight, or what executing it
        needs (the request now marked in flight)."""
        if row.problem is not None:
            return self._refused(row, row.contract or self.contract, [row.problem])
        contract = self._contract_of(row)
        if isinstance(contract, Diagnostic):
            return self._refused(row, row.contract or self.contract, [contract])
        label = contract
        loaded = await self._load(contract)
        if loaded.contract is None:
            return self._refused(row, label, loaded.diagnostics)
        prepared = await self._prepare(row, contract, loaded)
        if isinstance(prepared, OperationEnvelope):
            return self._refused(row, label, prepared.diagnostics)
        try:
            key, predicted = request_key(self.runtime, prepared.request)
        except PortError as exc:
            return self._refused(row, label, [port_diagnostic(exc)])
        except CanonicalJSONError as exc:
            return self._refused(row, label, [error("TQX_DATA_INVALID", str(exc))])
        base = BatchResult(
            index=row.index,
            id=row.id,
            contract=label,
            request_fingerprint=predicted,
            ok=False,
            source="executed",
        )
        if self._cache is not None:
            answer = self._cache.get(self.scope, key)
            if answer is not None:
                concluded = execution.conclude(prepared, receipt=answer.receipt, usage=answer.usage)
                return self._result(base, concluded, answer.receipt, answer.latency_ms, 0, "cache")
        running = self._inflight.get(key)
        if running is not None:
            return _Waiting(running, base)
        finished = self._ledger.finished(key)
        if finished is not None:
            return finished if finished.index == row.index else self._copy(finished, base)
        elsewhere = False
        if self._shared is not None:
            claim = await self._shared.claim(key)
            if isinstance(claim, BatchResult):
                self._ledger.record(key, claim)
                return claim if claim.index == row.index else self._copy(claim, base)
            elsewhere = not claim
        future: asyncio.Future[BatchResult] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        return _Claimed(base, prepared, key, future, elsewhere)

    async def _prepare(
        self, row: BatchRow, contract: str, loaded: LoadedContract
    ) -> execution.Execution | OperationEnvelope:
        capabilities = (
            None if self.options.capabilities is None else list(self.options.capabilities)
        )

        def prepare() -> execution.Execution | OperationEnvelope:
            return execution.prepare_execution(
                self._ctx,
                self.runtime,
                self.package,
                contract,
                RenderRequest(inputs=row.inputs, context=row.context),
                capabilities,
                fixture_output=row.output,
                loaded=loaded,
            )

        manifest = loaded.manifest
        if manifest is not None and not manifest.translations:
            return prepare()  # CPU only: no store read, so it runs on the loop
        return await self._pool.run(prepare)

    def _copy(self, original: BatchResult, base: BatchResult) -> BatchResult:
        return msgspec.structs.replace(
            original,
            index=base.index,
            id=base.id,
            contract=base.contract,
            source="duplicate",
            attempts=0,
            eval=None,
        )

    def _result(
        self,
        base: BatchResult,
        envelope: OperationEnvelope,
        receipt: ExecutionReceipt | None,
        latency_ms: float | None,
        attempts: int,
        source: Source,
        extra: list[Diagnostic] | None = None,
    ) -> BatchResult:
        diagnostics = [RowDiagnostic.of(d) for d in extra or []] + _diagnostics(envelope)
        fingerprint_seen = envelope.fingerprints.get("request", base.request_fingerprint)
        return msgspec.structs.replace(
            base,
            request_fingerprint=fingerprint_seen,
            ok=envelope.ok and not extra,
            output=receipt.output if receipt is not None else None,
            diagnostics=diagnostics,
            usage=envelope.usage,
            latency_ms=None if latency_ms is None else round(latency_ms, 3),
            attempts=attempts,
            source=source,
        )

    def _scored(self, row: BatchRow, result: BatchResult) -> BatchResult:
        if not self.options.evaluate:
            return result
        if row.expected is msgspec.UNSET or result.source == "refused":
            return msgspec.structs.replace(result, eval=EvalOutcome(passed=result.ok))
        matched, mismatched, fields = compare(row.expected, result.output)
        outcome = EvalOutcome(
            passed=result.ok and matched, matched=matched, fields=fields, mismatched=mismatched
        )
        return msgspec.structs.replace(result, eval=outcome)

    # --- calling the runtime --------------------------------------------------------------

    def _estimate_tokens(self, request: ExecutionRequest) -> int:
        """A call's tokens before it is made: ~4 characters a prompt token, plus the mean
        completion seen so far (or the contract's ``max_tokens``)."""
        interaction = request.interaction
        characters = sum(len(str(message.content)) for message in interaction.messages)
        completion = interaction.runtime_policy.get("max_tokens")
        if not isinstance(completion, int) or isinstance(completion, bool):
            completion = round(self._completion_estimate)
        return max(1, characters // 4 + 8 + completion)

    async def _execute(self, base: BatchResult, prepared: execution.Execution) -> BatchResult:
        assert self._limit is not None
        policy = self.options.retry
        attempt = 0
        usage: Usage | None = None
        while True:
            attempt += 1
            epoch = await self._limit.acquire()
            try:
                estimate = 0
                if self._budget is not None:
                    estimate = self._estimate_tokens(prepared.request)
                    wait = await self._budget.reserve(1, estimate)
                    if wait > 0:
                        await asyncio.sleep(wait)
                call = await self._call(prepared)
            finally:
                self._limit.release()
            self.calls += 1
            if call.usage is not None:
                usage = call.usage if usage is None else usage + call.usage
                self._completions_seen += 1
                self._completion_estimate += (
                    call.usage.completion_tokens - self._completion_estimate
                ) / self._completions_seen
                if self._budget is not None:
                    await self._budget.settle(call.usage.total_tokens - estimate)
            failure = call.error
            if failure is None:
                self._limit.succeeded()
                break
            if policy.rate_limited(failure):
                self.rate_limited += 1
                self._limit.rate_limited(epoch, policy.retry_after_s(failure))
            if policy.retryable(failure) and attempt < policy.max_attempts:
                self.retries += 1
                await asyncio.sleep(policy.delay(attempt, failure, self._rng))
                continue
            break
        extra: list[Diagnostic] = []
        diagnostic = None
        if call.error is not None:
            diagnostic = execution.runtime_failure(prepared, call.error)
            if policy.retryable(call.error) and policy.max_attempts > 1:
                extra.append(
                    error(
                        "TQX_HOST_RETRY_EXHAUSTED",
                        f"gave up after {attempt} attempts; the last failed with {diagnostic.code}",
                        help="lower the concurrency or the rate budgets, or allow more "
                        "attempts (--max-attempts); with --cache, a new run executes only the "
                        "rows that failed",
                    )
                )
        concluded = execution.conclude(
            prepared, receipt=call.receipt, failure=diagnostic, usage=usage
        )
        result = self._result(
            base, concluded, call.receipt, call.latency_ms, attempt, "executed", extra
        )
        if self._cache is not None and call.receipt is not None:
            self._cache.put(
                self.scope,
                request_key(self.runtime, prepared.request)[0],
                CachedAnswer(receipt=call.receipt, usage=usage, latency_ms=result.latency_ms),
            )
        return result

    async def _call(self, prepared: execution.Execution) -> _Call:
        """One attempt: one model call (traced as one, a child of the row's span)."""
        traced = observability.model_call(prepared, stream=False)  # None unless OTel is set up
        if traced is None:
            return await self._attempt(prepared)
        with traced.active():  # a worker runs in a copy of this context
            try:
                call = await self._attempt(prepared)
            except BaseException:
                traced.end(failure=error("TQX_RUNTIME_CANCELLED", "the batch was stopped"))
                raise
        failure = None if call.error is None else execution.runtime_failure(prepared, call.error)
        traced.end(receipt=call.receipt, failure=failure, usage=call.usage, facts=call.facts)
        return call

    async def _attempt(self, prepared: execution.Execution) -> _Call:
        runtime = prepared.runtime
        request = prepared.request
        started = self._clock()
        if isinstance(runtime, AsyncRuntimeAdapter):
            with usage_meter() as meter:
                try:
                    receipt = await runtime.aexecute(request)
                except Exception as exc:
                    return _Call(
                        None, exc, meter.usage, (self._clock() - started) * 1000, meter.facts
                    )
            return _Call(receipt, None, meter.usage, (self._clock() - started) * 1000, meter.facts)
        token = threading.Event()

        def work() -> _Call:
            begun = time.monotonic()
            with usage_meter() as meter:
                try:
                    receipt = runtime.execute_streaming(request, _noop_sink, cancel=token)
                except Exception as exc:
                    elapsed = (time.monotonic() - begun) * 1000
                    return _Call(None, exc, meter.usage, elapsed, meter.facts)
            return _Call(receipt, None, meter.usage, (time.monotonic() - begun) * 1000, meter.facts)

        future = self._pool.submit(work)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            token.set()
            with contextlib.suppress(Exception):
                future.cancel()
            raise
