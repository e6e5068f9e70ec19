"""Streamed executions as objects: :class:`ContractStream` and :class:`AsyncContractStream`.

Both are what ``service.stream_contract(...)`` / ``service.astream_contract(...)`` return::

    with service.stream_contract("welcome", "onboarding-summary", inputs=...) as run:
        if not run.ok:                 # compiled and checked on entry; no model call yet
            return run.envelope
        for event in run:              # Delta / ToolCallDelta as they arrive, then the terminal
            ...
    run.envelope                       # == execute_contract(..., stream=True)'s envelope

Opening (``with``, ``async with``, :meth:`ContractStream.open` or the first iteration) loads,
compiles and checks the execution; a not-ok result is then :attr:`~ContractStream.envelope`
before any model call. Iterating starts the runtime and yields every event it emits, ending
with the one terminal event (``Complete`` or ``Failed``). Leaving early — ``break``, an
exception in the loop body, task cancellation, :meth:`~ContractStream.close` — cancels the
runtime call: the runtime's cancel token is set (a native async runtime's iterator is also
closed) and the envelope ends in ``Failed{TQX_RUNTIME_CANCELLED}``.

Where the runtime runs: the sync iterator always runs the runtime's synchronous port on a
worker of the service's :class:`~templiqx_application.workers.WorkerPool` and reads its events
from a bounded :class:`~templiqx_application.workers.EventChannel`. The async stream awaits a
runtime's :class:`~templiqx_ports.AsyncRuntimeAdapter` twin directly on the event loop (no
thread, no task: the consumer's own ``await`` drives the runtime); a runtime without the twin
runs on a worker as in the sync case.

Partial output: for a structured-output contract, :attr:`~ContractStream.partial` is a
:class:`~templiqx_application.partial_view.PartialView` of the answer so far, fed every event
as it is handed to the consumer; :meth:`ContractStream.partials` (an async iterator on the
async stream) yields one :class:`~templiqx_application.partial_view.PartialUpdate` per event,
carrying the event and the changes it made. Feeding the view costs what each event holds: the
stream never reads the value for its consumer. Neither changes the events or the envelope.
"""

from __future__ import annotations

import asyncio
import contextvars
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from templiqx_application import observability
from templiqx_application.diagnostics import error
from templiqx_application.execution import (
    CALLER_CANCELLED,
    Execution,
    cancelled_before,
    conclude,
    end_call,
    runtime_failure,
)
from templiqx_application.partial_view import PartialUpdate, PartialView, partial_view_for
from templiqx_application.stream_record import (
    ConsumerGuard,
    EitherCancel,
    StreamLimits,
    StreamRecord,
)
from templiqx_application.workers import End, EventChannel, WorkerPool
from templiqx_contracts import (
    Complete,
    Diagnostic,
    ExecutionReceipt,
    Failed,
    OperationEnvelope,
    StreamEvent,
    Usage,
)
from templiqx_ports import (
    AsyncRuntimeAdapter,
    CallFacts,
    CancelToken,
    StreamSink,
    UsageMeter,
    metered_context,
    usage_meter,
)

__all__ = [
    "CANCEL_GRACE_S",
    "AsyncContractStream",
    "ContractStream",
    "StreamNotFinishedError",
    "aexecute",
]

CANCEL_GRACE_S = 1.0
"""How long closing a stream waits for a cancelled runtime to stop (the port's bound)."""

_TOKEN_POLL_S = 0.02
"""How often a caller's cancel token is looked at while a native async runtime waits."""

Prepare = Callable[[], "Execution | OperationEnvelope"]


class StreamNotFinishedError(RuntimeError):
    """``envelope`` was read while the stream was still running."""

    def __init__(self) -> None:
        super().__init__(
            "the stream has not ended, so it has no envelope yet: iterate it to the end, or "
            "leave its `with` block (or call close()) to cancel it"
        )


@dataclass
class _Outcome:
    """How a runtime call ended: a receipt or a failure diagnostic, and the usage it reported."""

    receipt: ExecutionReceipt | None = None
    failure: Diagnostic | None = None
    usage: Usage | None = None
    facts: CallFacts | None = None


def _cancelled() -> Diagnostic:
    return error("TQX_RUNTIME_CANCELLED", CALLER_CANCELLED)


def _call_outcome(execution: Execution, call: Callable[[], ExecutionReceipt]) -> _Outcome:
    """``call()`` (a blocking runtime call) as an outcome, with the usage the runtime reported
    on this thread (never raises ``Exception``)."""
    with usage_meter() as meter:
        try:
            receipt = call()
        except Exception as exc:
            failure = runtime_failure(execution, exc)
            return _Outcome(failure=failure, usage=meter.usage, facts=meter.facts)
    return _Outcome(receipt=receipt, usage=meter.usage, facts=meter.facts)


def _run_sync(execution: Execution, guard: ConsumerGuard) -> _Outcome:
    """The runtime's synchronous streaming call, as an outcome (never raises ``Exception``)."""
    return _call_outcome(
        execution,
        lambda: execution.runtime.execute_streaming(execution.request, guard, cancel=guard.cancel),
    )


class _Run:
    """What both stream classes share: the prepared execution, the record, the envelope.

    ``traced``: the arguments to trace the stream with as one ``execute_contract`` operation
    (its span opens with the stream and ends with its envelope); ``None`` when the caller
    traces the operation itself (the awaitable ``execute_contract``).
    """

    def __init__(
        self,
        prepare: Prepare,
        limits: StreamLimits,
        cancel: CancelToken | None,
        traced: Mapping[str, Any] | None,
    ) -> None:
        self._prepare = prepare
        self._traced = traced
        self._trace: observability.OperationTrace | None = None
        self._call: observability.ModelCall | None = None
        self._limits = limits
        self._caller_cancel = cancel
        self._execution: Execution | None = None
        self._envelope: OperationEnvelope | None = None
        self._guard: ConsumerGuard | None = None
        self._opened = False
        self._delivered_terminal = False
        self._meter: UsageMeter | None = None  # a native async runtime's usage meter
        self._partial: PartialView | None = None
        self._update: PartialUpdate | None = None  # what the last event delivered changed

    def _deliver(self, event: StreamEvent) -> StreamEvent:
        """Hand ``event`` to the consumer, noting a terminal one and reading its answer."""
        if isinstance(event, (Complete, Failed)):
            self._delivered_terminal = True
        if self._partial is not None:
            self._update = self._partial.read(event)
        return event

    def _take_update(self) -> PartialUpdate | None:
        update, self._update = self._update, None
        return update

    def _partials_offered(self) -> bool:
        """Whether ``partials()`` yields anything: a structured answer was prepared (a refused
        execution yields none); raises ``TypeError`` for a text contract."""
        if self._partial is not None:
            return True
        if self._execution is None:
            return False
        raise TypeError(
            "partials() reads a structured answer, and this contract answers in text (it does "
            "not require structured_output): its Delta events are the answer, so iterate the "
            "stream itself"
        )

    def _owed_terminal(self) -> StreamEvent | None:
        """The envelope's terminal event when the consumer has not seen one yet.

        The runtime may end without emitting it (an adapter bug, a cancellation the
        application recorded): the iterator still ends with the envelope's terminal event.
        """
        if self._delivered_terminal or self._envelope is None:
            return None
        events = self._envelope.stream_events
        if events and isinstance(events[-1], (Complete, Failed)):
            return self._deliver(events[-1])
        return None

    def _start_trace(self) -> None:
        if self._traced is not None and self._trace is None:
            self._trace = observability.operation("execute_contract", self._traced)

    def _settle(self, envelope: OperationEnvelope) -> OperationEnvelope:
        """The stream's envelope is known: keep it, and end the operation's trace."""
        self._envelope = envelope
        trace, self._trace = self._trace, None
        if trace is not None:
            trace.finish(envelope)
        return envelope

    def _prepared(self, prepared: Execution | OperationEnvelope) -> None:
        self._opened = True
        if isinstance(prepared, OperationEnvelope):
            self._settle(prepared)
        else:
            self._execution = prepared
            self._partial = partial_view_for(prepared.request.interaction)

    def _begin(self, sink: StreamSink | None) -> tuple[Execution, ConsumerGuard] | None:
        """Set up the call (events recorded, then handed to ``sink``); ``None`` when there is
        nothing (more) to run."""
        if self._envelope is not None or self._guard is not None or self._execution is None:
            return None
        execution = self._execution
        if self._caller_cancel is not None and self._caller_cancel.is_set():
            self._settle(cancelled_before(execution, stream=True))
            return None
        record = StreamRecord(self._limits)
        self._guard = ConsumerGuard(record, sink, EitherCancel(self._caller_cancel))
        parent = None if self._trace is None else self._trace.context()
        self._call = observability.model_call(execution, stream=True, parent=parent)
        return execution, self._guard

    def _finish(self, outcome: _Outcome) -> OperationEnvelope:
        if self._envelope is None:
            assert self._execution is not None
            usage = outcome.usage
            facts = outcome.facts
            if self._meter is not None:
                usage = usage if usage is not None else self._meter.usage
                facts = facts if facts is not None else self._meter.facts
            if self._call is not None:
                guard = self._guard
                self._call.end(
                    receipt=outcome.receipt,
                    failure=outcome.failure,
                    usage=usage,
                    facts=facts,
                    first_chunk=None if guard is None else guard.record.first_chunk,
                )
            return self._settle(
                conclude(
                    self._execution,
                    receipt=outcome.receipt,
                    failure=outcome.failure,
                    guard=self._guard,
                    usage=usage,
                )
            )
        return self._envelope

    def _never_started(self) -> None:
        """Closed before iterating (or while still being prepared): no runtime call."""
        if self._envelope is None and self._guard is None:
            self._opened = True
            execution = self._execution if self._execution is not None else "execute_contract"
            self._start_trace()
            self._settle(cancelled_before(execution, stream=True))

    @property
    def ok(self) -> bool:
        """False when the execution was refused on opening or has ended not ok."""
        if not self._opened:
            raise RuntimeError("open the stream first (`with`/`async with`, or open())")
        return self._envelope is None or self._envelope.ok

    @property
    def partial(self) -> PartialView | None:
        """The structured answer so far, after the last event handed out.

        ``None`` for a text contract (its deltas are the answer) and for a refused execution.
        See :class:`~templiqx_application.partial_view.PartialView`.
        """
        if not self._opened:
            raise RuntimeError("open the stream first (`with`/`async with`, or open())")
        return self._partial

    @property
    def envelope(self) -> OperationEnvelope:
        """The envelope: at once for a refused execution, otherwise once the stream ended."""
        if self._envelope is None:
            raise StreamNotFinishedError
        return self._envelope

    @property
    def finished(self) -> bool:
        """Whether :attr:`envelope` is available."""
        return self._envelope is not None


class ContractStream(_Run):
    """A streamed execution read with a plain ``for`` loop (see the module docstring).

    Not thread-safe: one thread iterates and closes it.
    """

    def __init__(
        self,
        prepare: Prepare,
        pool: WorkerPool,
        limits: StreamLimits,
        cancel: CancelToken | None = None,
        *,
        traced: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(prepare, limits, cancel, traced)
        self._pool = pool
        self._channel: EventChannel[StreamEvent] | None = None
        self._future: Future[_Outcome] | None = None

    def open(self) -> ContractStream:
        """Load, compile and check (once); afterwards :attr:`ok` says whether it may run."""
        if not self._opened:
            self._start_trace()
            with observability.active(self._trace):
                prepared = self._prepare()
            self._prepared(prepared)
        return self

    def __enter__(self) -> ContractStream:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(exc if isinstance(exc, Exception) else None)

    def __iter__(self) -> ContractStream:
        return self

    def partials(self) -> Iterator[PartialUpdate]:
        """Iterate the stream, yielding for each event what it changed in the structured
        answer (only a ``Delta`` or the ``Complete`` changes it); a text contract raises
        ``TypeError``.

        The events are consumed as by ``for event in run`` (each update carries its event);
        leaving early cancels the call the same way.
        """
        self.open()
        if not self._partials_offered():
            return
        for _event in self:
            update = self._take_update()
            assert update is not None  # the view read the event as it was handed out
            yield update

    def __next__(self) -> StreamEvent:
        self.open()
        if self._envelope is None and self._guard is None:
            channel: EventChannel[StreamEvent] = EventChannel()
            started = self._begin(channel.offer)
            if started is not None:
                self._channel = channel
                self._future = self._pool.submit(_job(*started, channel, self._call))
                weakref.finalize(self, _abandon, channel, started[1].cancel)
        if self._channel is None or self._future is None or self._envelope is not None:
            owed = self._owed_terminal()
            if owed is None:
                raise StopIteration
            return owed
        item = self._channel.get()
        if item is None or isinstance(item, End):
            self._finish(self._future.result())
            return next(self)
        return self._deliver(item)

    def close(self, failure: Exception | None = None) -> None:
        """End the stream; a running runtime call is cancelled (``failure``: why, if it raised).

        Waits up to :data:`CANCEL_GRACE_S` for the runtime to stop; one that does not is left
        to finish on its worker, and the envelope records the cancellation.
        """
        self._delivered_terminal = True  # a closed stream yields nothing more
        if self._envelope is not None:
            return
        if self._guard is None or self._channel is None or self._future is None:
            self._never_started()
            return
        if failure is not None:
            self._guard.consumer_failed(failure)
        self._guard.cancel.own.set()
        self._channel.close()
        try:
            outcome = self._future.result(timeout=CANCEL_GRACE_S)
        except TimeoutError:
            outcome = _Outcome(failure=_cancelled())
        self._finish(outcome)


def _job(
    execution: Execution,
    guard: ConsumerGuard,
    channel: EventChannel[StreamEvent],
    call: observability.ModelCall | None,
) -> Callable[[], _Outcome]:
    """The worker's part of a stream: run the runtime (its model call's span current), then
    mark the channel's end."""

    def job() -> _Outcome:
        try:
            with observability.active(call):
                return _run_sync(execution, guard)
        finally:
            channel.finish()

    return job


def _abandon(channel: EventChannel[StreamEvent], cancel: EitherCancel) -> None:
    """A stream dropped without closing: release its runtime (garbage-collection hook)."""
    cancel.own.set()
    channel.close()


class AsyncContractStream(_Run):
    """A streamed execution read with ``async for`` (see the module docstring).

    Use it from one task at a time.
    """

    def __init__(
        self,
        prepare: Prepare,
        pool: WorkerPool,
        limits: StreamLimits,
        cancel: CancelToken | None = None,
        *,
        traced: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(prepare, limits, cancel, traced)
        self._pool = pool
        self._events: AsyncIterator[StreamEvent] | None = None
        self._terminal: StreamEvent | None = None
        self._channel: EventChannel[StreamEvent] | None = None
        self._future: Future[_Outcome] | None = None
        self._context: contextvars.Context | None = None

    async def open(self) -> AsyncContractStream:
        """Load, compile and check (once, on a worker thread); then :attr:`ok` is known."""
        if not self._opened:
            self._start_trace()
            with observability.active(self._trace):  # the worker runs in a copy of this context
                prepared = await self._pool.run(self._prepare)
            self._prepared(prepared)
        return self

    async def __aenter__(self) -> AsyncContractStream:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose(exc if isinstance(exc, Exception) else None)

    def __aiter__(self) -> AsyncContractStream:
        return self

    async def partials(self) -> AsyncIterator[PartialUpdate]:
        """The async twin of :meth:`ContractStream.partials`: ``async for update in
        run.partials()``."""
        await self.open()
        if not self._partials_offered():
            return
        async for _event in self:
            update = self._take_update()
            assert update is not None  # the view read the event as it was handed out
            yield update

    async def __anext__(self) -> StreamEvent:
        await self.open()
        if self._envelope is None and self._guard is None:
            self._start()
        if self._envelope is not None:
            owed = self._owed_terminal()
            if owed is None:
                raise StopAsyncIteration
            return owed
        if self._channel is not None:
            return await self._next_from_worker(self._channel)
        return await self._next_native()

    def _start(self) -> None:
        execution = self._execution
        if execution is not None and isinstance(execution.runtime, AsyncRuntimeAdapter):
            started = self._begin(None)
            if started is not None:
                # Every pull runs in one context where a usage meter is open (see _step) and
                # the model call's span is current.
                self._meter, self._context = metered_context()
                if self._call is not None:
                    self._call.attach_to(self._context)
                self._events = execution.runtime.aexecute_streaming(
                    execution.request, cancel=started[1].cancel
                )
            return
        channel: EventChannel[StreamEvent] = EventChannel()
        started = self._begin(channel.offer)
        if started is not None:
            self._channel = channel
            self._future = self._pool.submit(_job(*started, channel, self._call))

    async def _next_from_worker(self, channel: EventChannel[StreamEvent]) -> StreamEvent:
        item = await channel.aget()
        if isinstance(item, End):
            assert self._future is not None
            self._finish(self._future.result())
            return await self.__anext__()
        return self._deliver(item)

    async def _next_native(self) -> StreamEvent:
        assert self._events is not None
        assert self._guard is not None
        guard = self._guard
        if self._terminal is not None:
            await self._after_terminal(self._terminal)
            raise StopAsyncIteration
        try:
            event = await self._pull(self._events)
        except StopAsyncIteration:
            self._finish(_Outcome(failure=_ended_without_terminal()))
            return await self.__anext__()
        except _TokenCancelledError:
            await _close_quietly(self._events)
            self._finish(_Outcome(failure=_cancelled()))
            return await self.__anext__()
        except Exception as exc:
            assert self._execution is not None
            self._finish(_Outcome(failure=runtime_failure(self._execution, exc)))
            return await self.__anext__()
        guard.record.add(event)
        if isinstance(event, (Complete, Failed)):
            self._terminal = event
        return self._deliver(event)

    async def _pull(self, events: AsyncIterator[StreamEvent]) -> StreamEvent:
        """The runtime's next event; when the cancel token is set meanwhile, a cancellation."""
        assert self._guard is not None
        cancel = self._guard.cancel
        if cancel.is_set():
            raise _TokenCancelledError
        if self._caller_cancel is None:
            return await self._step(events)
        pending = self._step(events)
        while True:
            done, _ = await asyncio.wait({pending}, timeout=_TOKEN_POLL_S)
            if done:
                return pending.result()
            if cancel.is_set():
                pending.cancel()
                await asyncio.gather(pending, return_exceptions=True)
                raise _TokenCancelledError

    def _step(self, events: AsyncIterator[StreamEvent]) -> asyncio.Task[StreamEvent]:
        """The runtime's next event, pulled as a task in the stream's metered context, so a
        usage report made during any pull reaches this call's meter."""
        context = self._context if self._context is not None else contextvars.copy_context()
        return asyncio.get_running_loop().create_task(_next_event(events), context=context)

    async def _after_terminal(self, terminal: StreamEvent) -> None:
        """Collect how the runtime ended after its terminal event, then conclude."""
        assert self._events is not None
        assert self._execution is not None
        outcome = _Outcome()
        try:
            extra = await self._step(self._events)
        except StopAsyncIteration:
            pass
        except Exception as exc:
            outcome.failure = runtime_failure(self._execution, exc)
        else:
            assert self._guard is not None
            self._guard.record.add(extra)  # a grammar violation the conclusion reports
        await _close_quietly(self._events)
        if outcome.failure is None:
            if isinstance(terminal, Complete):
                outcome.receipt = terminal.receipt
            elif isinstance(terminal, Failed):
                outcome.failure = error(terminal.code, terminal.message)
        self._finish(outcome)

    async def aclose(self, failure: Exception | None = None) -> None:
        """End the stream; a running runtime call is cancelled (``failure``: why, if it raised).

        A native async runtime's iterator is closed at once. A runtime on a worker thread has
        its token set and is awaited for up to :data:`CANCEL_GRACE_S`; if this task is
        cancelled meanwhile, or the runtime does not stop in time, it is left to finish on
        its worker and the envelope records the cancellation.
        """
        self._delivered_terminal = True  # a closed stream yields nothing more
        if self._envelope is not None:
            return
        guard = self._guard
        if guard is None:
            self._never_started()
            return
        if failure is not None:
            guard.consumer_failed(failure)
        guard.cancel.own.set()
        if self._channel is not None and self._future is not None:
            self._channel.close()
            await self._await_worker(self._future)
            return
        if self._terminal is not None:
            await self._after_terminal(self._terminal)
            return
        if self._events is not None:
            await _close_quietly(self._events)
        self._finish(_Outcome(failure=_cancelled()))

    async def _await_worker(self, future: Future[_Outcome]) -> None:
        outcome = _Outcome(failure=_cancelled())
        try:
            done, _ = await asyncio.wait({asyncio.wrap_future(future)}, timeout=CANCEL_GRACE_S)
            if done:
                outcome = future.result()
        finally:
            self._finish(outcome)


class _TokenCancelledError(Exception):
    """The caller's cancel token fired while a native async runtime was waiting."""


def _ended_without_terminal() -> Diagnostic:
    return error(
        "TQX_RUNTIME_INVALID_RESPONSE",
        "runtime stream broke the event grammar: it ended without a Complete or Failed event",
        "/stream_events",
    )


async def _next_event(events: AsyncIterator[StreamEvent]) -> StreamEvent:
    return await anext(events)


async def _close_quietly(events: AsyncIterator[StreamEvent]) -> None:
    close = getattr(events, "aclose", None)
    if close is None:
        return
    try:
        await close()
    except Exception:  # an adapter failing to clean up must not hide the outcome
        return


async def aexecute(
    prepare: Prepare,
    pool: WorkerPool,
    limits: StreamLimits,
    *,
    stream: bool,
    sink: StreamSink | None,
    cancel: CancelToken | None,
) -> OperationEnvelope:
    """The awaitable ``execute_contract``: the same envelope, without blocking the loop.

    Streamed, it drives an :class:`AsyncContractStream` and hands each event to ``sink`` (on
    the event loop's thread); a sink that raises cancels the call. Not streamed, it awaits the
    runtime's ``aexecute`` when it has one, else runs ``execute`` on a worker.
    """
    if stream:
        run = AsyncContractStream(prepare, pool, limits, cancel)
        await run.open()
        try:
            async for event in run:
                if sink is not None:
                    sink(event)
        except Exception as exc:  # the caller's sink: it cancels the call, not the service
            await run.aclose(exc)
        finally:
            await run.aclose()
        return run.envelope
    prepared = await pool.run(prepare)
    if isinstance(prepared, OperationEnvelope):
        return prepared
    if cancel is not None and cancel.is_set():
        return cancelled_before(prepared, stream=False)
    runtime = prepared.runtime
    call = observability.model_call(prepared, stream=False)  # None unless a host set up OTel
    if isinstance(runtime, AsyncRuntimeAdapter):
        # This task's context: the runtime reports usage here, and sees the call's span.
        with usage_meter() as meter, observability.active(call):
            try:
                receipt = await runtime.aexecute(prepared.request)
            except Exception as exc:
                failure = runtime_failure(prepared, exc)
                if call is not None:
                    end_call(call, meter, failure=failure)
                return conclude(prepared, failure=failure, usage=meter.usage)
            except BaseException:
                if call is not None:
                    end_call(call, meter, failure=_cancelled())
                raise
        if call is not None:
            end_call(call, meter, receipt=receipt)
        return conclude(prepared, receipt=receipt, usage=meter.usage)
    with observability.active(call):  # the worker runs in a copy of this context
        try:
            outcome = await pool.run(
                lambda: _call_outcome(prepared, lambda: runtime.execute(prepared.request))
            )
        except BaseException:
            if call is not None:
                call.end(failure=_cancelled())
            raise
    if call is not None:
        call.end(
            receipt=outcome.receipt,
            failure=outcome.failure,
            usage=outcome.usage,
            facts=outcome.facts,
        )
    return conclude(prepared, receipt=outcome.receipt, failure=outcome.failure, usage=outcome.usage)
