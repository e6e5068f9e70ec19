"""``ScriptedRuntime``: a deterministic runtime adapter that replays scripts and scenarios.

It never calls a model and, by default, never sleeps: a ``delay`` step advances a
:class:`VirtualClock`. Three sources of behaviour, the first that applies wins on every call:

1. a manifest's **steps**, replayed from the top on every call;
2. a manifest's **events**, aggregated into one output;
3. a FIFO **script** of :class:`ScriptedSuccess` / :class:`ScriptedFailure` (empty -> success).

A success reports the ``output_schema_valid`` its manifest scripts; where nothing scripts it (a
script success, a ``runtime_success`` step or ``finish`` event without the flag) the flag is
computed against ``request.interaction.output_schema`` by the application's rule (DECISIONS 8),
which judges a tool-call answer by the interaction's declared tools.

A manifest's ``tool_call`` events script a model that calls tools (see
:mod:`templiqx_mock.tool_calls`); such a runtime declares the ``tool_calling`` capability.

All mutable state (attempt counter, clock, script queue) sits behind one lock, so one instance
may be shared between threads and its :meth:`ScriptedRuntime.stats` read from anywhere.

Two deliberate extensions over the reference: ``execute_streaming`` honours a cancellation
token (``TQX_RUNTIME_CANCELLED``), and ``pace_ms`` adds a real, cancellable pause after each
streamed delta for demos and cancellation tests.

It is natively async as well (:class:`~templiqx_ports.AsyncRuntimeAdapter`): ``aexecute`` and
``aexecute_streaming`` give the same receipts and events, pacing with ``asyncio.sleep`` on the
event loop (no thread), and stop at once when the iterator is closed or the task cancelled.
"""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable
from typing import Any, TypeAlias

import msgspec

from templiqx_contracts import (
    AdapterDescriptor,
    CanonicalJSONError,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
    ToolCallDelta,
    fingerprint,
)
from templiqx_mock.fingerprints import runtime_failure_fingerprint
from templiqx_mock.scenario import (
    ScenarioManifest,
    ScenarioStep,
    ScenarioStepKind,
    ScenarioStreamEvent,
    StreamDelta,
    StreamFinish,
    StreamReasoning,
    StreamUsage,
)
from templiqx_mock.tool_calls import StreamToolCall, scripted_tool_answer
from templiqx_mock.validity import interaction_valid
from templiqx_ports import (
    OFFLINE_RUNTIME,
    AsyncRuntimeAdapter,
    CancelToken,
    InvalidDataError,
    PortError,
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeFailureCode,
    RuntimeFailureError,
    RuntimeReach,
    StreamSink,
    failed_event,
)

__all__ = [
    "ADAPTER_ID",
    "ADAPTER_VERSION",
    "CANCELLED_DETAIL",
    "CAPABILITIES",
    "RuntimeStats",
    "ScriptedFailure",
    "ScriptedRuntime",
    "ScriptedScenario",
    "ScriptedSuccess",
    "VirtualClock",
]

ADAPTER_ID = "templiqx-scripted-runtime"
ADAPTER_VERSION = "0.2.0"
CAPABILITIES: tuple[str, ...] = ("structured_output",)
CANCELLED_DETAIL = "execution cancelled by the caller"
"""Detail of the failure a cancelled stream raises."""

_U64_MAX = (1 << 64) - 1
_CANCEL_POLL_S = 0.02


class ScriptedSuccess(msgspec.Struct, frozen=True):
    """A scripted success: output = the request's fixture output (or null); its validity is
    computed against the request's output schema."""

    @property
    def retryable(self) -> bool:
        """A success is never retried."""
        return False


class ScriptedFailure(msgspec.Struct, kw_only=True, frozen=True):
    """A scripted runtime failure."""

    id: str
    code: RuntimeFailureCode
    detail: str
    retry_after_ms: int | None = None

    @classmethod
    def of(cls, failure_id: str, code: RuntimeFailureCode | str) -> ScriptedFailure:
        """The reference's default failure: detail ``scripted runtime failure: {id}``, and a
        1500 ms retry hint for rate limits only."""
        code = RuntimeFailureCode(code)
        return cls(
            id=failure_id,
            code=code,
            detail=f"scripted runtime failure: {failure_id}",
            retry_after_ms=1500 if code is RuntimeFailureCode.RATE_LIMITED else None,
        )

    @property
    def retryable(self) -> bool:
        """Whether a host may retry: timeouts, rate limits and unavailability."""
        return self.code.retryable


ScriptedScenario: TypeAlias = ScriptedSuccess | ScriptedFailure


class RuntimeStats(msgspec.Struct, kw_only=True, frozen=True):
    """``attempts``: calls of ``execute`` (streaming included); ``elapsed_ms``: virtual time."""

    attempts: int
    elapsed_ms: int


class VirtualClock:
    """Milliseconds of virtual time; starts at 0 and saturates at the 64-bit maximum."""

    def __init__(self) -> None:
        self.now_ms = 0

    def advance(self, ms: int) -> None:
        """Move time forward by ``ms`` (non-negative)."""
        if ms < 0:
            raise ValueError("virtual time cannot move backwards")
        self.now_ms = min(self.now_ms + ms, _U64_MAX)


class ScriptedRuntime(RuntimeAdapter, AsyncRuntimeAdapter):
    """The deterministic, scriptable runtime adapter of the conformance suites.

    Build it with :meth:`success`, :meth:`failure`, :meth:`sequence` or :meth:`from_manifest`.
    """

    def __init__(
        self,
        script: Iterable[ScriptedScenario] = (),
        *,
        steps: list[ScenarioStep] | None = None,
        events: list[ScenarioStreamEvent] | None = None,
        scenario_id: str | None = None,
        fallback_output: Any = None,
        pace_ms: int = 0,
        tool_calling: bool = False,
    ) -> None:
        if pace_ms < 0:
            raise ValueError("pace_ms must be zero or a positive number of milliseconds")
        self._lock = threading.Lock()
        self._attempts = 0
        self._clock = VirtualClock()
        self._queue: deque[ScriptedScenario] = deque(script)
        self._steps = steps or None
        self._events = events
        self._scenario_id = scenario_id
        self._fallback_output = fallback_output
        self._pace_s = pace_ms / 1000.0
        scripted_calls = any(isinstance(event, StreamToolCall) for event in events or ())
        self._capabilities = [
            *CAPABILITIES,
            *(["tool_calling"] if tool_calling or scripted_calls else []),
        ]

    # --- constructors ----------------------------------------------------------------------

    @classmethod
    def success(cls, *, pace_ms: int = 0) -> ScriptedRuntime:
        """Every call succeeds with the request's fixture output (or null)."""
        return cls([ScriptedSuccess()], pace_ms=pace_ms)

    @classmethod
    def failure(
        cls, failure_id: str, code: RuntimeFailureCode | str, *, pace_ms: int = 0
    ) -> ScriptedRuntime:
        """The first call fails (see :meth:`ScriptedFailure.of`); later calls succeed."""
        return cls([ScriptedFailure.of(failure_id, code)], pace_ms=pace_ms)

    @classmethod
    def sequence(cls, script: Iterable[ScriptedScenario], *, pace_ms: int = 0) -> ScriptedRuntime:
        """Calls take outcomes from ``script`` in order; once it is used up they succeed."""
        return cls(script, pace_ms=pace_ms)

    @classmethod
    def from_manifest(
        cls,
        manifest: ScenarioManifest,
        *,
        fallback_output: Any = None,
        pace_ms: int = 0,
    ) -> ScriptedRuntime:
        """Replay a scenario manifest. The manifest is validated first and copied.

        ``fallback_output`` (an extension; default none) is the output of a success that has
        neither a scripted output nor a request fixture output, e.g. the manifest's
        ``expected_output`` file.
        """
        manifest.validate()
        owned = copy.deepcopy(manifest)
        return cls(
            steps=owned.steps,
            events=owned.events,
            scenario_id=owned.id,
            fallback_output=copy.deepcopy(fallback_output),
            pace_ms=pace_ms,
        )

    # --- the port --------------------------------------------------------------------------

    def reach(self) -> RuntimeReach:
        """Offline: the answers are replayed from the scenario; nothing leaves the process."""
        return OFFLINE_RUNTIME

    def request_fingerprint(self, request: ExecutionRequest) -> str:
        """The fingerprint of the compiled interaction (what every receipt carries)."""
        try:
            return fingerprint(request.interaction)
        except CanonicalJSONError as exc:
            raise InvalidDataError(str(exc)) from exc

    def descriptor(self) -> AdapterDescriptor:
        """``templiqx-scripted-runtime`` ``0.2.0`` with ``["structured_output"]``, and
        ``tool_calling`` after it when the runtime scripts tool calls (``tool_call`` events, or
        ``tool_calling=True`` for a runtime replaying tool-call outputs)."""
        return AdapterDescriptor(
            id=ADAPTER_ID, version=ADAPTER_VERSION, capabilities=list(self._capabilities)
        )

    def stats(self) -> RuntimeStats:
        """Attempts so far and the virtual clock."""
        with self._lock:
            return RuntimeStats(attempts=self._attempts, elapsed_ms=self._clock.now_ms)

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        """One execution: count the attempt, then replay steps, events or the script."""
        with self._lock:
            self._attempts += 1
            if self._steps is not None:
                return self._replay_steps(self._steps, request)
            if self._events is not None:
                return self._aggregate_events(self._events, request)
            scripted = self._queue.popleft() if self._queue else ScriptedSuccess()
            if isinstance(scripted, ScriptedFailure):
                raise self._failure(
                    scripted.id,
                    scripted.code,
                    scripted.retry_after_ms,
                    scripted.detail,
                    scenario_id=scripted.id,
                )
            return self._receipt(request, self._default_output(request), None)

    def execute_streaming(
        self,
        request: ExecutionRequest,
        sink: StreamSink,
        *,
        cancel: CancelToken | None = None,
    ) -> ExecutionReceipt:
        """Stream the manifest's ``delta`` texts and ``tool_call`` fragments, then execute and
        emit one terminal event.

        A ``Delta`` per text and a ``ToolCallDelta`` per non-empty arguments fragment are emitted
        before execution; ``reasoning``, ``usage``, ``start``, ``end`` and ``finish`` are not
        streamed. A success ends in ``Complete`` with exactly the receipt
        :meth:`execute` returns; a failure ends in one ``Failed`` and the error is re-raised.
        ``cancel`` is checked before each delta and before executing: once set, one ``Failed``
        with ``TQX_RUNTIME_CANCELLED`` is emitted and the matching error raised.
        """
        with self._lock:
            events = self._events
        try:
            for event in events or []:
                streamed = _streamed(event)
                if streamed is None:
                    continue
                self._check_cancel(cancel)
                sink(streamed)
                self._pause(cancel)
            self._check_cancel(cancel)
            receipt = self.execute(request)
        except PortError as error:
            sink(failed_event(error))
            raise
        sink(Complete.of(receipt))
        return receipt

    # --- the async twin --------------------------------------------------------------------

    async def aexecute(self, request: ExecutionRequest) -> ExecutionReceipt:
        """:meth:`execute` (which never waits: delays advance the virtual clock)."""
        return self.execute(request)

    async def aexecute_streaming(
        self,
        request: ExecutionRequest,
        *,
        cancel: CancelToken | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """The events :meth:`execute_streaming` emits, paced with ``asyncio.sleep``.

        Closing the iterator or cancelling the awaiting task stops it at once; ``cancel`` is
        checked before each delta and before executing, as in the synchronous twin.
        """
        with self._lock:
            events = self._events
        try:
            for event in events or []:
                streamed = _streamed(event)
                if streamed is None:
                    continue
                self._check_cancel(cancel)
                yield streamed
                if self._pace_s > 0:
                    await asyncio.sleep(self._pace_s)
            self._check_cancel(cancel)
            receipt = self.execute(request)
        except PortError as error:
            yield failed_event(error)
            raise
        yield Complete.of(receipt)

    # --- internals -------------------------------------------------------------------------

    def _check_cancel(self, cancel: CancelToken | None) -> None:
        if cancel is not None and cancel.is_set():
            raise self._failure(
                "cancelled",
                RuntimeFailureCode.CANCELLED,
                None,
                CANCELLED_DETAIL,
                scenario_id=self._scenario_id,
            )

    def _pause(self, cancel: CancelToken | None) -> None:
        if self._pace_s <= 0:
            return
        deadline = time.monotonic() + self._pace_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (cancel is not None and cancel.is_set()):
                return
            time.sleep(min(remaining, _CANCEL_POLL_S))

    def _default_output(self, request: ExecutionRequest) -> Any:
        if request.fixture_output is not None:
            return request.fixture_output
        return copy.deepcopy(self._fallback_output)

    def _replay_steps(
        self, steps: list[ScenarioStep], request: ExecutionRequest
    ) -> ExecutionReceipt:
        for step in steps:
            if step.kind is ScenarioStepKind.DELAY:
                self._clock.advance(step.delay_ms or 0)
            elif step.kind is ScenarioStepKind.RUNTIME_SUCCESS:
                output = (
                    copy.deepcopy(step.output)
                    if step.output is not None
                    else self._default_output(request)
                )
                return self._receipt(request, output, step.output_schema_valid)
            elif step.kind is ScenarioStepKind.RUNTIME_FAILURE and step.failure is not None:
                spec = step.failure
                raise self._failure(
                    step.id, spec.code, spec.retry_after_ms, spec.detail, scenario_id=step.id
                )
        raise InvalidDataError("mock scenario has no terminal step")

    def _aggregate_events(
        self, events: list[ScenarioStreamEvent], request: ExecutionRequest
    ) -> ExecutionReceipt:
        text: list[str] = []
        reasoning: list[str] = []
        input_tokens = output_tokens = 0
        finish: StreamFinish | None = None
        for event in events:
            if isinstance(event, StreamDelta):
                text.append(event.text)
            elif isinstance(event, StreamReasoning):
                reasoning.append(event.text)
            elif isinstance(event, StreamUsage):
                input_tokens = min(input_tokens + event.input_tokens, _U64_MAX)
                output_tokens = min(output_tokens + event.output_tokens, _U64_MAX)
            elif isinstance(event, StreamFinish):
                finish = event
        tool_answer = scripted_tool_answer(events)
        if finish is not None and finish.output is not None:
            output = copy.deepcopy(finish.output)
        elif tool_answer is not None:
            output = tool_answer
        elif request.fixture_output is not None:
            output = request.fixture_output
        elif self._fallback_output is not None:
            output = copy.deepcopy(self._fallback_output)
        else:
            output = {
                "text": "".join(text),
                "reasoning": "".join(reasoning),
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            }
        flag = None if finish is None else finish.output_schema_valid
        return self._receipt(request, output, flag if isinstance(flag, bool) else None)

    def _receipt(
        self, request: ExecutionRequest, output: Any, scripted_valid: bool | None
    ) -> ExecutionReceipt:
        """The success receipt; ``scripted_valid`` ``None`` means "compute it"."""
        try:
            request_fp = fingerprint(request.interaction)
            output_fp = fingerprint(output)
        except CanonicalJSONError as exc:
            raise InvalidDataError(str(exc)) from exc
        valid = (
            interaction_valid(request.interaction, output)
            if scripted_valid is None
            else scripted_valid
        )
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=request_fp,
            output_fingerprint=output_fp,
            output=output,
            output_schema_valid=valid,
        )

    def _failure(
        self,
        failure_id: str,
        code: RuntimeFailureCode,
        retry_after_ms: int | None,
        detail: str,
        *,
        scenario_id: str | None,
    ) -> RuntimeFailureError:
        return RuntimeFailureError(
            RuntimeFailure(
                code=code,
                adapter_id=ADAPTER_ID,
                adapter_version=ADAPTER_VERSION,
                scenario_id=scenario_id,
                retry_after_ms=retry_after_ms,
                fingerprint=runtime_failure_fingerprint(failure_id, code.value, retry_after_ms),
                detail=detail,
            )
        )


def _streamed(event: ScenarioStreamEvent) -> Delta | ToolCallDelta | None:
    """The stream event a scripted event is sent as: a ``Delta`` per text, a ``ToolCallDelta``
    per non-empty arguments fragment; ``None`` for what is not streamed."""
    if isinstance(event, StreamDelta):
        return Delta(text=event.text)
    if isinstance(event, StreamToolCall) and event.arguments:
        return ToolCallDelta(name=event.name, arguments_fragment=event.arguments)
    return None
