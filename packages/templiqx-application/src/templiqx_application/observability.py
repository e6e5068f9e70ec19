"""Spans and metrics of templiqx's work, when the host process set up OpenTelemetry.

Three kinds of span, all made here because the application sequences every call:

* one span per catalog operation, ``templiqx <operation>`` (:class:`OperationTrace`): package,
  contract and its version, the envelope's ``ok``, its diagnostic codes and fingerprints;
* one CLIENT span per model call, ``chat <model>`` (:class:`ModelCall`), the child of the
  operation (or of a batch row), following the OpenTelemetry GenAI conventions: operation and
  provider names, request parameters, token usage, finish reasons, response id and model,
  ``error.type`` = the ``TQX_*`` code, time to first chunk when streamed, cancellation;
* a batch span ``templiqx batch`` with one ``templiqx batch_row`` child per row
  (:class:`BatchTrace`), each row the parent of its model calls.

Metrics: the GenAI client histograms (operation duration, token usage, time to first chunk)
per model call; ``templiqx.operation.duration`` per operation; ``templiqx.validations`` and
``templiqx.compilations`` by outcome and first error code, and ``templiqx.diagnostics`` by code.

Everything is decided by :func:`templiqx_ports.telemetry.tracer` and
:func:`~templiqx_ports.telemetry.instruments`: with neither (no SDK, or no OpenTelemetry at
all) every entry point here returns ``None`` or does nothing after that check, so the path of a
call is unchanged. Prompts and outputs are recorded only when the GenAI content-capture setting
is on (:func:`templiqx_ports.telemetry.capture_content`), bounded, with known credentials cut.
Exception texts are never recorded (they could carry a credential); failures are recorded by
their diagnostic code and message, which are credential-free by construction (DECISIONS 10).
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

import msgspec

from templiqx_contracts import Diagnostic, ExecutionReceipt, OperationEnvelope, Usage
from templiqx_ports import CallFacts, telemetry
from templiqx_ports.telemetry import Attr

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

    from templiqx_application.execution import Execution
    from templiqx_contracts import CompiledInteraction
    from templiqx_ports.telemetry import Instruments

T = TypeVar("T")

__all__ = [
    "BatchTrace",
    "ModelCall",
    "OperationTrace",
    "active",
    "batch_trace",
    "carried",
    "compiled",
    "current_operation",
    "model_call",
    "operation",
]

GENAI_OPERATION: Final = "chat"
"""``gen_ai.operation.name`` of every model call: a compiled interaction is a chat."""

CANCELLED: Final = "TQX_RUNTIME_CANCELLED"
_VALIDATIONS: Final = frozenset({"validate_contract", "validate_package"})
_SAMPLING: Final = (
    ("temperature", Attr.REQUEST_TEMPERATURE),
    ("top_p", Attr.REQUEST_TOP_P),
    ("max_tokens", Attr.REQUEST_MAX_TOKENS),
    ("seed", Attr.REQUEST_SEED),
)
_NULL: Final = contextlib.nullcontext()
_CURRENT: contextvars.ContextVar[OperationTrace | None] = contextvars.ContextVar(
    "templiqx_operation_trace", default=None
)
_encode = msgspec.json.Encoder(order="sorted").encode


def _on() -> tuple[Tracer | None, Instruments | None] | None:
    tracer = telemetry.tracer()
    instruments = telemetry.instruments()
    if tracer is None and instruments is None:
        return None
    return tracer, instruments


def active(traced: OperationTrace | ModelCall | BatchTrace | None) -> Any:
    """A context manager making ``traced`` current (nothing when it is ``None``)."""
    return _NULL if traced is None else traced.active()


class _Api:
    """The few OpenTelemetry API names used per call, looked up once (only ever used when a
    tracer exists, so the API is already imported)."""

    def __init__(self) -> None:
        from opentelemetry import context, trace

        self.set_span_in_context = trace.set_span_in_context
        self.attach = context.attach
        self.detach = context.detach
        self.Status = trace.Status
        self.ERROR = trace.StatusCode.ERROR
        self.CLIENT = trace.SpanKind.CLIENT


_api: _Api | None = None


def _otel() -> _Api:
    global _api
    if _api is None:
        _api = _Api()
    return _api


def _set_span(span: Span) -> Context:
    return _otel().set_span_in_context(span)


class _Attached:
    """Makes a span current inside a ``with`` block (on this thread or task)."""

    __slots__ = ("_span", "_token")

    def __init__(self, span: Span) -> None:
        self._span = span
        self._token: object = None

    def __enter__(self) -> None:
        api = _otel()
        self._token = api.attach(api.set_span_in_context(self._span))

    def __exit__(self, *exc_info: object) -> None:
        _otel().detach(self._token)  # type: ignore[arg-type]


def _attached(span: Span | None) -> Any:
    return _NULL if span is None else _Attached(span)


def _error_status(span: Span, code: str, message: str) -> None:
    api = _otel()
    span.set_status(api.Status(api.ERROR, f"{code}: {message}"))


class _Coded(Protocol):
    """A diagnostic, or a batch row's copy of one."""

    @property
    def code(self) -> str: ...
    @property
    def severity(self) -> str: ...
    @property
    def message(self) -> str: ...


def _first_error(diagnostics: Sequence[_Coded]) -> _Coded | None:
    return next((d for d in diagnostics if d.severity == "error"), None)


def _codes(diagnostics: Sequence[_Coded]) -> list[str]:
    return sorted({d.code for d in diagnostics})


# --- catalog operations ---------------------------------------------------------------------


class OperationTrace:
    """The span and duration metric of one catalog operation (see :func:`operation`)."""

    __slots__ = ("_instruments", "_name", "_span", "_started", "_versions")

    def __init__(
        self,
        name: str,
        arguments: Mapping[str, Any],
        tracer: Tracer | None,
        instruments: Instruments | None,
        parent: Context | None,
    ) -> None:
        self._name = name
        self._instruments = instruments
        self._started = time.perf_counter()
        self._span: Span | None = None
        self._versions: dict[str, str] | None = None
        if tracer is not None:
            attributes: dict[str, Any] = {Attr.OPERATION: name}
            package = arguments.get("name" if name == "create_package" else "package")
            if package is None:
                package = arguments.get("left_package")
            if isinstance(package, str):
                attributes[Attr.PACKAGE] = package
            contract = arguments.get("contract", arguments.get("left_contract"))
            if isinstance(contract, str):
                attributes[Attr.CONTRACT] = contract
            if arguments.get("stream") is True:
                attributes[Attr.STREAM] = True
            self._span = tracer.start_span(
                f"templiqx {name}", context=parent, attributes=attributes
            )

    def context(self) -> Context | None:
        """The trace context with this operation's span current (``None`` without tracing)."""
        return None if self._span is None else _set_span(self._span)

    def active(self) -> _OperationScope:
        """Make this operation current (its span the parent of what runs inside)."""
        return _OperationScope(self)

    def note_contract(self, contract_version: str, package_version: str | None) -> None:
        """The versions of the contract (and package) the operation loaded."""
        if self._span is not None:  # set when the span ends, with the outcome
            self._versions = {Attr.CONTRACT_VERSION: contract_version}
            if package_version is not None:
                self._versions[Attr.PACKAGE_VERSION] = package_version

    def finish(self, envelope: OperationEnvelope) -> None:
        """End the span with the envelope's outcome and record the operation's metrics."""
        failure = _first_error(envelope.diagnostics)
        span = self._span
        if span is not None:
            values: dict[str, Any] = {Attr.OK: envelope.ok}
            if self._versions is not None:
                values.update(self._versions)
            if envelope.diagnostics:
                values[Attr.DIAGNOSTIC_CODES] = _codes(envelope.diagnostics)
            for key, value in envelope.fingerprints.items():
                values[Attr.FINGERPRINT_PREFIX + key] = value
            if failure is not None:
                values[Attr.ERROR_TYPE] = failure.code
                _error_status(span, failure.code, failure.message)
            span.set_attributes(values)
            span.end()
        instruments = self._instruments
        if instruments is None:
            return
        attributes: dict[str, Any] = {Attr.OPERATION: self._name, Attr.OK: envelope.ok}
        if failure is not None:
            attributes[Attr.ERROR_TYPE] = failure.code
        instruments.templiqx_duration.record(time.perf_counter() - self._started, attributes)
        if self._name in _VALIDATIONS:
            _count(instruments, "validation", envelope.diagnostics)

    def abandon(self) -> None:
        """The operation's caller went away (its task was cancelled) before an envelope."""
        span = self._span
        if span is not None:
            span.set_attribute(Attr.ERROR_TYPE, CANCELLED)
            _error_status(span, CANCELLED, "the caller cancelled the operation")
            span.end()
        self._span = None


class _OperationScope:
    """The operation current inside a ``with`` block (see :meth:`OperationTrace.active`)."""

    __slots__ = ("_attached", "_operation", "_token")

    def __init__(self, operation: OperationTrace) -> None:
        self._operation = operation
        self._attached: Any = _attached(operation._span)
        self._token: contextvars.Token[OperationTrace | None] | None = None

    def __enter__(self) -> None:
        self._token = _CURRENT.set(self._operation)
        self._attached.__enter__()

    def __exit__(self, *exc_info: object) -> None:
        try:
            self._attached.__exit__(*exc_info)
        finally:
            assert self._token is not None
            _CURRENT.reset(self._token)


def operation(
    name: str, arguments: Mapping[str, Any], *, parent: Context | None = None
) -> OperationTrace | None:
    """The trace of catalog operation ``name`` starting now (``None`` when telemetry is off).

    ``parent``: the span's parent; by default the current context (a caller's span, or a trace
    continued from an HTTP or MCP request).
    """
    on = _on()
    if on is None:
        return None
    return OperationTrace(name, arguments, on[0], on[1], parent)


def carried(work: Callable[[], T]) -> Callable[[], T]:
    """``work`` made to run in the caller's trace context on another thread (a worker): the
    current span and the operation being traced; ``work`` itself when nothing is traced."""
    operation = _CURRENT.get()
    if telemetry.tracer() is None and operation is None:
        return work
    api = _otel() if telemetry.tracer() is not None else None
    context = None if api is None else _current_context()

    def run() -> T:
        token = _CURRENT.set(operation)
        attached = None if api is None or context is None else api.attach(context)
        try:
            return work()
        finally:
            if attached is not None:
                assert api is not None
                api.detach(attached)
            _CURRENT.reset(token)

    return run


def _current_context() -> Context:
    from opentelemetry import context

    return context.get_current()


def current_operation() -> OperationTrace | None:
    """The operation being traced on this thread or task, if any."""
    return _CURRENT.get()


def _count(instruments: Instruments, stage: str, diagnostics: list[Diagnostic]) -> None:
    failure = _first_error(diagnostics)
    attributes: dict[str, Any] = {Attr.OUTCOME: "error" if failure is not None else "ok"}
    if failure is not None:
        attributes[Attr.ERROR_TYPE] = failure.code
    counter = instruments.validations if stage == "validation" else instruments.compilations
    counter.add(1, attributes)
    for diagnostic in diagnostics:
        instruments.diagnostics.add(
            1,
            {
                Attr.STAGE: stage,
                Attr.DIAGNOSTIC_CODE: diagnostic.code,
                Attr.DIAGNOSTIC_SEVERITY: diagnostic.severity,
            },
        )


def compiled(
    interaction: CompiledInteraction | None,
    diagnostics: list[Diagnostic],
    package_version: str | None,
) -> None:
    """A compilation ended: count it, and note the contract's version on the operation."""
    if interaction is not None:
        current = _CURRENT.get()
        if current is not None:
            current.note_contract(interaction.contract_version, package_version)
    instruments = telemetry.instruments()
    if instruments is not None:
        _count(instruments, "compilation", diagnostics)


# --- model calls ----------------------------------------------------------------------------


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "content": telemetry.bounded_content(text)}


def _input_content(interaction: CompiledInteraction) -> dict[str, str]:
    """``gen_ai.system_instructions`` and ``gen_ai.input.messages`` (JSON text)."""
    system = [_text_part(m.content) for m in interaction.messages if m.role == "system"]
    messages = [
        {"role": m.role, "parts": [_text_part(m.content)]}
        for m in interaction.messages
        if m.role != "system"
    ]
    content = {Attr.INPUT_MESSAGES: _encode(messages).decode("utf-8")}
    if system:
        content[Attr.SYSTEM_INSTRUCTIONS] = _encode(system).decode("utf-8")
    return content


def _output_content(output: Any, finish_reasons: tuple[str, ...]) -> str:
    """``gen_ai.output.messages``: the answer, or its tool calls with their arguments."""
    parts: list[dict[str, Any]] = []
    calls = output.get("tool_calls") if isinstance(output, dict) else None
    if isinstance(calls, list) and calls:
        for call in calls:
            if not isinstance(call, dict):
                continue
            arguments = _encode(call.get("arguments")).decode("utf-8")
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("id"),
                    "name": call.get("name"),
                    "arguments": telemetry.bounded_content(arguments),
                }
            )
    else:
        text = output if isinstance(output, str) else _encode(output).decode("utf-8")
        parts.append(_text_part(text))
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    if finish_reasons:
        message["finish_reason"] = finish_reasons[0]
    return _encode([message]).decode("utf-8")


class ModelCall:
    """The CLIENT span and GenAI metrics of one model call (see :func:`model_call`)."""

    __slots__ = (
        "_capture",
        "_ended",
        "_instruments",
        "_provider",
        "_span",
        "_started",
        "_stream",
    )

    def __init__(
        self,
        execution: Execution,
        stream: bool,
        tracer: Tracer | None,
        instruments: Instruments | None,
        parent: Context | None,
    ) -> None:
        self._instruments = instruments
        self._stream = stream
        self._ended = False
        descriptor = execution.runtime.descriptor()
        self._provider = descriptor.id
        self._span: Span | None = None
        self._capture = False
        if tracer is not None:
            interaction = execution.request.interaction
            structured = "structured_output" in interaction.required_capabilities
            attributes: dict[str, Any] = {
                Attr.OPERATION_NAME: GENAI_OPERATION,
                Attr.PROVIDER_NAME: descriptor.id,
                Attr.OUTPUT_TYPE: "json" if structured else "text",
                Attr.REQUEST_STREAM: stream,
                Attr.RUNTIME_ID: descriptor.id,
            }
            policy = interaction.runtime_policy
            for key, name in _SAMPLING:
                value = policy.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    attributes[name] = value
            stop = policy.get("stop")
            if isinstance(stop, str):
                attributes[Attr.REQUEST_STOP_SEQUENCES] = [stop]
            elif isinstance(stop, list) and all(isinstance(s, str) for s in stop):
                attributes[Attr.REQUEST_STOP_SEQUENCES] = stop
            self._capture = telemetry.capture_content()
            if self._capture:
                attributes.update(_input_content(interaction))
            self._span = tracer.start_span(
                GENAI_OPERATION, context=parent, kind=_otel().CLIENT, attributes=attributes
            )
        self._started = time.perf_counter()

    def context(self) -> Context | None:
        """The trace context with this call's span current (``None`` without tracing)."""
        return None if self._span is None else _set_span(self._span)

    def active(self) -> Any:
        """Make this call's span current while the runtime runs (its ``traceparent``)."""
        return _attached(self._span)

    def attach_to(self, context: contextvars.Context) -> None:
        """Make this call's span current inside ``context`` (a context that every step of
        an async stream runs in); the context is the caller's to discard."""
        span = self._span
        if span is not None:
            api = _otel()
            context.run(api.attach, api.set_span_in_context(span))

    def end(
        self,
        *,
        receipt: ExecutionReceipt | None = None,
        failure: Diagnostic | None = None,
        usage: Usage | None = None,
        facts: CallFacts | None = None,
        first_chunk: float | None = None,
    ) -> None:
        """The call ended: with ``receipt``, or ``failure``. Only the first end counts.

        ``usage`` and ``facts`` are what the runtime reported to the call's meter;
        ``first_chunk`` is the :func:`time.perf_counter` reading of the first streamed chunk.
        """
        if self._ended:
            return
        self._ended = True
        elapsed = time.perf_counter() - self._started
        if failure is None and receipt is None:
            failure = Diagnostic.error("TQX_INTERNAL", "the model call ended without an outcome")
        first = None if first_chunk is None else max(0.0, first_chunk - self._started)
        facts = facts if facts is not None else CallFacts()
        provider = facts.provider or self._provider
        metric_attributes: dict[str, Any] = {
            Attr.OPERATION_NAME: GENAI_OPERATION,
            Attr.PROVIDER_NAME: provider,
        }
        if facts.request_model:
            metric_attributes[Attr.REQUEST_MODEL] = facts.request_model
        if facts.response_model:
            metric_attributes[Attr.RESPONSE_MODEL] = facts.response_model
        if facts.server_address:
            metric_attributes[Attr.SERVER_ADDRESS] = facts.server_address
            if facts.server_port is not None:
                metric_attributes[Attr.SERVER_PORT] = facts.server_port
        if failure is not None:
            metric_attributes[Attr.ERROR_TYPE] = failure.code
        span = self._span
        if span is not None:
            self._finish_span(span, metric_attributes, receipt, failure, usage, facts, first)
        instruments = self._instruments
        if instruments is None:
            return
        instruments.operation_duration.record(elapsed, metric_attributes)
        if usage is not None:
            for kind, count in (
                ("input", usage.prompt_tokens),
                ("output", usage.completion_tokens),
            ):
                instruments.token_usage.record(count, {**metric_attributes, Attr.TOKEN_TYPE: kind})
        if first is not None and self._stream:
            instruments.time_to_first_chunk.record(first, metric_attributes)

    def _finish_span(
        self,
        span: Span,
        attributes: dict[str, Any],
        receipt: ExecutionReceipt | None,
        failure: Diagnostic | None,
        usage: Usage | None,
        facts: CallFacts,
        first: float | None,
    ) -> None:
        model = facts.request_model
        if model:
            span.update_name(f"{GENAI_OPERATION} {model}")
        values = {
            k: v
            for k, v in attributes.items()
            if k not in (Attr.ERROR_TYPE, Attr.OPERATION_NAME)
            and not (k == Attr.PROVIDER_NAME and v == self._provider)
        }  # what the span did not get when it started
        if facts.response_id:
            values[Attr.RESPONSE_ID] = facts.response_id
        if facts.finish_reasons:
            values[Attr.RESPONSE_FINISH_REASONS] = list(facts.finish_reasons)
        if usage is not None:
            values[Attr.USAGE_INPUT_TOKENS] = usage.prompt_tokens
            values[Attr.USAGE_OUTPUT_TOKENS] = usage.completion_tokens
        if first is not None and self._stream:
            values[Attr.RESPONSE_TIME_TO_FIRST_CHUNK] = first
        if receipt is not None and self._capture:
            values[Attr.OUTPUT_MESSAGES] = _output_content(receipt.output, facts.finish_reasons)
        if failure is not None:
            values[Attr.ERROR_TYPE] = failure.code
            if failure.code == CANCELLED:
                values[Attr.CANCELLED] = True
            _error_status(span, failure.code, failure.message)
        span.set_attributes(values)
        span.end()


def model_call(
    execution: Execution, *, stream: bool, parent: Context | None = None
) -> ModelCall | None:
    """The trace of a model call starting now (``None`` when telemetry is off).

    ``parent``: by default the current context (the operation, or the batch row, being run).
    """
    on = _on()
    if on is None:
        return None
    return ModelCall(execution, stream, on[0], on[1], parent)


# --- batch runs -----------------------------------------------------------------------------


class BatchTrace:
    """The span of one batch run and one child span per row (see :func:`batch_trace`)."""

    __slots__ = ("_span", "_tracer")

    def __init__(self, tracer: Tracer, package: str, contract: str | None) -> None:
        self._tracer = tracer
        attributes: dict[str, Any] = {Attr.OPERATION: "batch", Attr.PACKAGE: package}
        if contract is not None:
            attributes[Attr.CONTRACT] = contract
        self._span = tracer.start_span("templiqx batch", attributes=attributes)

    def active(self) -> Any:
        """Make the batch span current."""
        return _attached(self._span)

    @contextlib.contextmanager
    def row(self, index: int, row_id: str | None) -> Iterator[RowSpan]:
        """A row's span, current inside the block (the parent of the row's model calls)."""
        attributes: dict[str, Any] = {Attr.ROW_INDEX: index}
        if row_id is not None:
            attributes[Attr.ROW_ID] = row_id
        span = self._tracer.start_span(
            "templiqx batch_row", context=_set_span(self._span), attributes=attributes
        )
        outcome = RowSpan(span)
        try:
            with _Attached(span):
                yield outcome
        finally:
            span.end()

    def finish(
        self, rows: int, succeeded: int, failed: int, interrupted: bool, problems: list[Diagnostic]
    ) -> None:
        """End the batch span with the run's counts."""
        span = self._span
        span.set_attributes(
            {
                Attr.BATCH_ROWS: rows,
                Attr.BATCH_SUCCEEDED: succeeded,
                Attr.BATCH_FAILED: failed,
                Attr.BATCH_INTERRUPTED: interrupted,
                Attr.OK: not problems and not interrupted and failed == 0,
            }
        )
        failure = _first_error(problems)
        if failure is not None:
            span.set_attribute(Attr.ERROR_TYPE, failure.code)
            _error_status(span, failure.code, failure.message)
        span.end()


class RowSpan:
    """What a row's span records of its result."""

    __slots__ = ("_span",)

    def __init__(self, span: Span) -> None:
        self._span = span

    def result(
        self, contract: str | None, ok: bool, source: str, diagnostics: Sequence[_Coded]
    ) -> None:
        """The row's outcome."""
        span = self._span
        if contract is not None:
            span.set_attribute(Attr.CONTRACT, contract)
        span.set_attributes({Attr.OK: ok, Attr.ROW_SOURCE: source})
        codes = _codes(diagnostics)
        if codes:
            span.set_attribute(Attr.DIAGNOSTIC_CODES, codes)
        failure = _first_error(diagnostics)
        if failure is not None:
            span.set_attribute(Attr.ERROR_TYPE, failure.code)
            _error_status(span, failure.code, failure.message)


def batch_trace(package: str, contract: str | None) -> BatchTrace | None:
    """The trace of a batch run starting now (``None`` when tracing is off); its parent is the
    current context."""
    tracer = telemetry.tracer()
    return None if tracer is None else BatchTrace(tracer, package, contract)
