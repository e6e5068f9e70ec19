"""compile_contract, render_contract and execute_contract.

Compiling runs the load pipeline, refuses what a caller may not supply (``_templiqx_*`` context
keys are templiqx's: only ``_templiqx_authorized_merge`` comes from outside, and it must carry
the host's signature), injects translation bundles, checks the authorized merge context when the
package requires one, then asks the core to validate and compile. Executing
also checks the runtime's capabilities before calling it, runs it (streaming or not), and
re-checks the output against the contract's output schema whatever the runtime claimed.

An execution is three steps, shared by the blocking call here and by the iterator and async
APIs (:mod:`templiqx_application.stream_runs`): :func:`prepare_execution` (everything before
the runtime; a not-ok envelope when the runtime must not be called), running the runtime, and
:func:`conclude` (the envelope of a receipt or of a failure). A streamed execution's envelope
carries its events whatever the outcome (DECISIONS 19): on failure the deltas delivered and
one ``Failed`` whose code is the diagnostic's.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from templiqx_application import observability
from templiqx_application.authorized_context import (
    AUTHORIZED_MERGE_KEY,
    requires_authorized_context,
    validate_authorized_context,
)
from templiqx_application.context import ServiceContext, envelope
from templiqx_application.diagnostics import (
    address,
    error,
    fingerprint_or_diagnostic,
    output_schema_problems,
    port_diagnostic,
)
from templiqx_application.loading import LoadedContract
from templiqx_application.stream_record import (
    DEFAULT_STREAM_LIMITS,
    ConsumerGuard,
    EitherCancel,
    StreamLimits,
    StreamRecord,
)
from templiqx_application.tools import tool_runtime_problems
from templiqx_application.translations import inject_translations
from templiqx_contracts import (
    CompiledInteraction,
    Complete,
    Diagnostic,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    OperationEnvelope,
    RenderRequest,
    StreamEvent,
    Usage,
    has_errors,
)
from templiqx_core import compile_interaction, validate_tool_answer
from templiqx_core.fuel import CallCancelledError
from templiqx_ports import (
    CancelToken,
    EventOrderError,
    PortError,
    RuntimeAdapter,
    StreamSink,
    UsageMeter,
    usage_meter,
    validate_event_order,
)

CALLER_CANCELLED = "execution was cancelled by the caller"
"""The message of a cancellation the application records itself (its consumer left, or the
token fired while a native async runtime was waiting)."""

_CANCELLED_BEFORE = "execution was cancelled before the runtime was called"

__all__ = [
    "CALLER_CANCELLED",
    "Execution",
    "compile_contract",
    "conclude",
    "end_call",
    "execute_contract",
    "prepare_execution",
    "prepare_interaction",
    "render_contract",
    "runtime_failure",
]


RESERVED_CONTEXT_PREFIX = "_templiqx_"


def reserved_context_problems(request: RenderRequest) -> list[Diagnostic]:
    """``TQX_CONTEXT_RESERVED`` for each ``_templiqx_*`` context key a caller may not pass.

    Those keys are what templiqx or the host vouches for (translation bundles the package
    lists, ...): from a caller they would rewrite a signed prompt (issue #29: a caller's
    ``_templiqx_translations`` was rendered by ``translate`` into the system message of a
    strictly verified package). The one a caller carries is the host-signed
    ``_templiqx_authorized_merge``.
    """
    return [
        error(
            "TQX_CONTEXT_RESERVED",
            f"context key {key[:80]!r} is reserved for templiqx and the host; a caller may pass "
            f"only {AUTHORIZED_MERGE_KEY!r} among the {RESERVED_CONTEXT_PREFIX}* keys",
            f"/context/{key[:80]}",
        )
        for key in sorted(request.context)
        if key.startswith(RESERVED_CONTEXT_PREFIX) and key != AUTHORIZED_MERGE_KEY
    ]


def prepare_interaction(
    ctx: ServiceContext,
    package: str,
    contract_id: str,
    request: RenderRequest,
    capabilities: list[str],
    *,
    loaded: LoadedContract | None = None,
    package_data: bool = False,
) -> tuple[CompiledInteraction | None, list[Diagnostic]]:
    """Load, enrich and compile; the interaction, or the diagnostics that stopped it.

    ``loaded`` is the outcome of an earlier ``ctx.loader`` load of the contract when the caller
    has one (evals run several fixtures of one load); nothing later changes a loaded contract.
    The manifest the load read is the one the interaction is enriched from. Raises
    :class:`~templiqx_core.fuel.CallCancelledError` when the call's cancel token is set while
    it works (the service turns that into the cancelled call's envelope). ``package_data``: the
    request is the package's own eval fixture, not a caller's (it may carry reserved keys and
    the reference's unkeyed authorization binding). Each call counts as one compilation in the
    telemetry (:func:`~templiqx_application.observability.compiled`).
    """
    interaction, diagnostics, package_version = _prepare_interaction(
        ctx, package, contract_id, request, capabilities, loaded, package_data
    )
    observability.compiled(interaction, diagnostics, package_version)
    return interaction, diagnostics


def _prepare_interaction(
    ctx: ServiceContext,
    package: str,
    contract_id: str,
    request: RenderRequest,
    capabilities: list[str],
    loaded: LoadedContract | None,
    package_data: bool,
) -> tuple[CompiledInteraction | None, list[Diagnostic], str | None]:
    if not package_data:
        reserved = reserved_context_problems(request)
        if reserved:
            return None, reserved, None
    if loaded is None:
        loaded = ctx.loader.load(package, contract_id)
    if loaded.contract is None:
        return None, loaded.diagnostics, None
    manifest = loaded.manifest
    if manifest is None:
        try:
            manifest = ctx.store.manifest(package)
        except PortError as exc:
            return None, [port_diagnostic(exc)], None
    version = manifest.version
    enriched, diagnostics = inject_translations(ctx.store, package, manifest, request)
    if enriched is None:
        return None, diagnostics, version
    required, diagnostics = requires_authorized_context(manifest)
    if diagnostics:
        return None, diagnostics, version
    if required:
        diagnostics = validate_authorized_context(
            enriched.context, ctx.clock(), package_data=package_data
        )
        if diagnostics:
            return None, diagnostics, version
    interaction, diagnostics = compile_interaction(loaded.contract, enriched, capabilities)
    if any(d.code == "TQX_CANCELLED" for d in diagnostics):
        raise CallCancelledError  # the call ends as a cancelled call, whatever it was
    diagnostics = address(diagnostics, package, contract_id, source=loaded.source)
    if interaction is None or has_errors(diagnostics):
        return None, diagnostics, version
    return interaction, diagnostics, version


def compile_contract(
    ctx: ServiceContext,
    package: str,
    contract: str,
    request: RenderRequest,
    capabilities: list[str],
) -> OperationEnvelope:
    """The compiled interaction; fingerprint ``compiled_interaction``."""
    interaction, diagnostics = prepare_interaction(ctx, package, contract, request, capabilities)
    return _fingerprinted("compile_contract", interaction, diagnostics, "compiled_interaction")


def render_contract(
    ctx: ServiceContext,
    package: str,
    contract: str,
    request: RenderRequest,
    capabilities: list[str],
) -> OperationEnvelope:
    """The rendered messages; fingerprint ``rendered_messages``."""
    interaction, diagnostics = prepare_interaction(ctx, package, contract, request, capabilities)
    messages = interaction.messages if interaction is not None else None
    return _fingerprinted("render_contract", messages, diagnostics, "rendered_messages")


def _fingerprinted(
    operation: str, result: Any, diagnostics: list[Diagnostic], key: str
) -> OperationEnvelope:
    """``result`` with its fingerprint as ``key``; only the diagnostics without a result."""
    if result is None:
        return envelope(operation, diagnostics=diagnostics)
    value, problems = fingerprint_or_diagnostic(result)
    if value is None:
        return envelope(operation, diagnostics=diagnostics + problems)
    return envelope(operation, result=result, diagnostics=diagnostics, fingerprints={key: value})


@dataclass(frozen=True)
class Execution:
    """A compiled, checked execution about to call ``runtime``."""

    operation: str
    runtime: RuntimeAdapter
    request: ExecutionRequest
    diagnostics: list[Diagnostic]
    """The compile diagnostics (warnings) an ok envelope carries."""


def prepare_execution(
    ctx: ServiceContext,
    runtime: RuntimeAdapter,
    package: str,
    contract: str,
    request: RenderRequest,
    capabilities: list[str] | None,
    *,
    fixture_output: Any,
    operation: str = "execute_contract",
    loaded: LoadedContract | None = None,
    package_data: bool = False,
) -> Execution | OperationEnvelope:
    """Everything before the runtime call; the envelope refusing it when it must not happen.

    ``capabilities`` ``None`` means the runtime's own (DECISIONS 21).
    """
    descriptor = runtime.descriptor()
    offered_list = list(descriptor.capabilities) if capabilities is None else capabilities
    interaction, diagnostics = prepare_interaction(
        ctx, package, contract, request, offered_list, loaded=loaded, package_data=package_data
    )
    if interaction is None:
        return envelope(operation, diagnostics=diagnostics)
    offered = set(descriptor.capabilities)
    for capability in interaction.required_capabilities:
        if capability not in offered:
            return envelope(
                operation,
                diagnostics=[
                    error(
                        "TQX_RUNTIME_CAPABILITY_UNSUPPORTED",
                        f"runtime lacks '{capability}'",
                        "/capabilities",
                    )
                ],
            )
    lacking = tool_runtime_problems(runtime, interaction, offered)
    if lacking:
        return envelope(operation, diagnostics=lacking)
    execution = ExecutionRequest(interaction=interaction, fixture_output=fixture_output)
    return Execution(operation, runtime, execution, list(diagnostics))


def cancelled_before(execution: Execution | str, *, stream: bool) -> OperationEnvelope:
    """The envelope of an execution (or an operation name, when it was cancelled while still
    being prepared) whose token was set before the runtime was called."""
    failure = error("TQX_RUNTIME_CANCELLED", _CANCELLED_BEFORE)
    events: list[StreamEvent] | None = (
        [Failed(code=failure.code, message=failure.message)] if stream else None
    )
    operation = execution if isinstance(execution, str) else execution.operation
    return envelope(operation, diagnostics=[failure], stream_events=events)


def runtime_failure(execution: Execution, exc: BaseException) -> Diagnostic:
    """The diagnostic of an exception a runtime raised.

    A port error is its own diagnostic; anything else is an adapter bug, ``TQX_INTERNAL``
    naming only the adapter and the exception type (its text could carry a credential).
    """
    if isinstance(exc, PortError):
        return port_diagnostic(exc)
    descriptor = execution.runtime.descriptor()
    return error(
        "TQX_INTERNAL",
        f"runtime adapter '{descriptor.id}' raised an unexpected {type(exc).__name__}",
    )


def conclude(
    execution: Execution,
    *,
    receipt: ExecutionReceipt | None = None,
    failure: Diagnostic | None = None,
    guard: ConsumerGuard | None = None,
    usage: Usage | None = None,
) -> OperationEnvelope:
    """The envelope of a finished execution: its ``receipt``, or its ``failure``.

    ``guard`` is the stream's consumer guard (``None`` when the execution did not stream);
    ``usage`` is what the runtime reported to its usage meter (on a failure too: a completion
    whose output was unusable still cost tokens).
    """
    operation = execution.operation
    if failure is not None or receipt is None:
        if failure is None:
            failure = error("TQX_INTERNAL", "runtime returned neither a receipt nor an error")
        if guard is None:
            return envelope(operation, diagnostics=[failure], usage=usage)
        terminal = Failed(code=failure.code, message=failure.message)
        return envelope(
            operation,
            diagnostics=[
                failure,
                *guard.problems(cancelled=True),
                *guard.record.truncation(),
            ],
            stream_events=guard.record.ending_in(terminal),
            usage=usage,
        )
    diagnostics = list(execution.diagnostics)
    interaction = execution.request.interaction
    tool_problems = validate_tool_answer(interaction, receipt.output)
    if tool_problems is not None:  # a contract with tools judges tool calls by its tools
        diagnostics.extend(tool_problems)
    else:
        diagnostics.extend(output_schema_problems(interaction.output_schema, receipt.output))
    if guard is not None:
        diagnostics.extend(_stream_problems(guard.record.events, receipt))
        diagnostics.extend(guard.problems(cancelled=False))
        diagnostics.extend(guard.record.truncation())
    return envelope(
        operation,
        result=receipt,
        diagnostics=diagnostics,
        fingerprints={
            "request": receipt.request_fingerprint,
            "output": receipt.output_fingerprint,
        },
        stream_events=guard.record.events if guard is not None else None,
        usage=usage,
    )


def execute_contract(
    ctx: ServiceContext,
    runtime: RuntimeAdapter,
    package: str,
    contract: str,
    request: RenderRequest,
    capabilities: list[str] | None,
    *,
    fixture_output: Any,
    stream: bool,
    sink: StreamSink | None = None,
    cancel: CancelToken | None = None,
    operation: str = "execute_contract",
    loaded: LoadedContract | None = None,
    limits: StreamLimits = DEFAULT_STREAM_LIMITS,
    package_data: bool = False,
    preparing: AbstractContextManager[Any] | None = None,
) -> OperationEnvelope:
    """Run one interaction on ``runtime``, blocking; fingerprints ``request`` and ``output``.

    ``loaded``: the contract's load, when already done; ``package_data``: the request is the
    package's own eval fixture (see :func:`prepare_interaction`); ``preparing``: entered around
    the preparation only (the service's CPU slot), never around the runtime call.
    """
    with preparing if preparing is not None else nullcontext():
        prepared = prepare_execution(
            ctx,
            runtime,
            package,
            contract,
            request,
            capabilities,
            fixture_output=fixture_output,
            operation=operation,
            loaded=loaded,
            package_data=package_data,
        )
    if isinstance(prepared, OperationEnvelope):
        return prepared
    if cancel is not None and cancel.is_set():
        return cancelled_before(prepared, stream=stream)
    guard = ConsumerGuard(StreamRecord(limits), sink, EitherCancel(cancel)) if stream else None
    call = observability.model_call(prepared, stream=stream)  # None unless a host set up OTel
    with usage_meter() as meter, observability.active(call):
        # The runtime reports token usage (and, for telemetry, call facts) to the meter.
        try:
            if guard is not None:
                receipt = runtime.execute_streaming(prepared.request, guard, cancel=guard.cancel)
            else:
                receipt = runtime.execute(prepared.request)
        except Exception as exc:  # a port error, or an adapter bug: either ends in an envelope
            failure = runtime_failure(prepared, exc)
            if call is not None:
                end_call(call, meter, failure=failure, guard=guard)
            return conclude(prepared, failure=failure, guard=guard, usage=meter.usage)
    if call is not None:
        end_call(call, meter, receipt=receipt, guard=guard)
    return conclude(prepared, receipt=receipt, guard=guard, usage=meter.usage)


def end_call(
    call: observability.ModelCall,
    meter: UsageMeter | None,
    *,
    receipt: ExecutionReceipt | None = None,
    failure: Diagnostic | None = None,
    guard: ConsumerGuard | None = None,
) -> None:
    """End a model call's trace with what its meter and its stream record saw."""
    call.end(
        receipt=receipt,
        failure=failure,
        usage=None if meter is None else meter.usage,
        facts=None if meter is None else meter.facts,
        first_chunk=None if guard is None else guard.record.first_chunk,
    )


def _stream_problems(events: list[StreamEvent], receipt: ExecutionReceipt) -> list[Diagnostic]:
    try:
        validate_event_order(events)
    except EventOrderError as exc:
        return [
            error(
                "TQX_RUNTIME_INVALID_RESPONSE",
                f"runtime stream broke the event grammar: {exc}",
                "/stream_events",
            )
        ]
    terminal = events[-1]
    if not isinstance(terminal, Complete) or terminal.receipt != receipt:
        return [
            error(
                "TQX_RUNTIME_INVALID_RESPONSE",
                "runtime stream's terminal event does not carry the returned receipt",
                "/stream_events",
            )
        ]
    return []
