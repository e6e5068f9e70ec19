"""compile_contract, render_contract and execute_contract.

Compiling runs the load pipeline, injects translation bundles, checks the authorized merge
context when the package requires one, then asks the core to validate and compile. Executing
also checks the runtime's capabilities before calling it, runs it (streaming or not), and
re-checks the output against the contract's output schema whatever the runtime claimed.
"""

from __future__ import annotations

from typing import Any

from templiqx_application.authorized_context import (
    requires_authorized_context,
    validate_authorized_context,
)
from templiqx_application.context import ServiceContext, envelope, port_failure
from templiqx_application.diagnostics import (
    address,
    error,
    fingerprint_or_diagnostic,
    port_diagnostic,
)
from templiqx_application.loading import LoadedContract
from templiqx_application.tools import tool_runtime_problems
from templiqx_application.translations import inject_translations
from templiqx_contracts import (
    CompiledInteraction,
    Complete,
    Diagnostic,
    ExecutionReceipt,
    ExecutionRequest,
    OperationEnvelope,
    RenderRequest,
    StreamEvent,
    has_errors,
)
from templiqx_core import compile_interaction, validate_output, validate_tool_answer
from templiqx_ports import (
    CancelToken,
    EventOrderError,
    PortError,
    RuntimeAdapter,
    StreamSink,
    validate_event_order,
)

__all__ = ["compile_contract", "execute_contract", "prepare_interaction", "render_contract"]


def prepare_interaction(
    ctx: ServiceContext,
    package: str,
    contract_id: str,
    request: RenderRequest,
    capabilities: list[str],
    *,
    loaded: LoadedContract | None = None,
) -> tuple[CompiledInteraction | None, list[Diagnostic]]:
    """Load, enrich and compile; the interaction, or the diagnostics that stopped it.

    ``loaded`` is the outcome of an earlier ``ctx.loader`` load of the contract when the caller
    has one (evals run several fixtures of one load); nothing later changes a loaded contract.
    The manifest the load read is the one the interaction is enriched from.
    """
    if loaded is None:
        loaded = ctx.loader.load(package, contract_id)
    if loaded.contract is None:
        return None, loaded.diagnostics
    manifest = loaded.manifest
    if manifest is None:
        try:
            manifest = ctx.store.manifest(package)
        except PortError as exc:
            return None, [port_diagnostic(exc)]
    enriched, diagnostics = inject_translations(ctx.store, package, manifest, request)
    if enriched is None:
        return None, diagnostics
    required, diagnostics = requires_authorized_context(manifest)
    if diagnostics:
        return None, diagnostics
    if required:
        diagnostics = validate_authorized_context(enriched.context, ctx.clock())
        if diagnostics:
            return None, diagnostics
    interaction, diagnostics = compile_interaction(loaded.contract, enriched, capabilities)
    diagnostics = address(diagnostics, package, contract_id)
    if interaction is None or has_errors(diagnostics):
        return None, diagnostics
    return interaction, diagnostics


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


class _Collector:
    """Collects every event and forwards it to the caller's live sink, if any."""

    def __init__(self, sink: StreamSink | None) -> None:
        self.events: list[StreamEvent] = []
        self._sink = sink
        self.sink_failure: str | None = None

    def __call__(self, event: StreamEvent) -> None:
        self.events.append(event)
        if self._sink is None or self.sink_failure is not None:
            return
        try:
            self._sink(event)
        except Exception as exc:  # the caller's sink must not break the execution
            self.sink_failure = type(exc).__name__


def execute_contract(
    ctx: ServiceContext,
    runtime: RuntimeAdapter,
    package: str,
    contract: str,
    request: RenderRequest,
    capabilities: list[str],
    *,
    fixture_output: Any,
    stream: bool,
    sink: StreamSink | None = None,
    cancel: CancelToken | None = None,
    operation: str = "execute_contract",
    loaded: LoadedContract | None = None,
) -> OperationEnvelope:
    """Run one interaction on ``runtime``; fingerprints ``request`` and ``output``.

    ``loaded``: the contract's load, when already done (see :func:`prepare_interaction`).
    """
    interaction, diagnostics = prepare_interaction(
        ctx, package, contract, request, capabilities, loaded=loaded
    )
    if interaction is None:
        return envelope(operation, diagnostics=diagnostics)
    offered = set(runtime.descriptor().capabilities)
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
    if cancel is not None and cancel.is_set():
        return envelope(
            operation,
            diagnostics=[
                error(
                    "TQX_RUNTIME_CANCELLED",
                    "execution was cancelled before the runtime was called",
                )
            ],
        )
    execution = ExecutionRequest(interaction=interaction, fixture_output=fixture_output)
    collector = _Collector(sink)
    try:
        if stream:
            receipt = runtime.execute_streaming(execution, collector, cancel=cancel)
        else:
            receipt = runtime.execute(execution)
    except PortError as exc:
        return port_failure(operation, exc)
    except Exception as exc:  # an adapter bug must still end in an envelope
        descriptor = runtime.descriptor()
        return envelope(
            operation,
            diagnostics=[
                error(
                    "TQX_INTERNAL",
                    f"runtime adapter '{descriptor.id}' raised an unexpected {type(exc).__name__}",
                )
            ],
        )
    diagnostics = list(diagnostics)
    tool_problems = validate_tool_answer(interaction, receipt.output)
    if tool_problems is not None:  # a contract with tools judges tool calls by its tools
        diagnostics.extend(tool_problems)
    elif validate_output(interaction.output_schema, receipt.output):
        diagnostics.append(
            error(
                "TQX_OUTPUT_SCHEMA",
                "runtime output does not satisfy the contract schema",
                "/output",
            )
        )
    if stream:
        diagnostics.extend(_stream_problems(collector, receipt))
    return envelope(
        operation,
        result=receipt,
        diagnostics=diagnostics,
        fingerprints={
            "request": receipt.request_fingerprint,
            "output": receipt.output_fingerprint,
        },
        stream_events=collector.events if stream else None,
    )


def _stream_problems(collector: _Collector, receipt: ExecutionReceipt) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    try:
        validate_event_order(collector.events)
    except EventOrderError as exc:
        problems.append(
            error(
                "TQX_RUNTIME_INVALID_RESPONSE",
                f"runtime stream broke the event grammar: {exc}",
                "/stream_events",
            )
        )
    else:
        terminal = collector.events[-1]
        if not isinstance(terminal, Complete) or terminal.receipt != receipt:
            problems.append(
                error(
                    "TQX_RUNTIME_INVALID_RESPONSE",
                    "runtime stream's terminal event does not carry the returned receipt",
                    "/stream_events",
                )
            )
    if collector.sink_failure is not None:
        problems.append(
            Diagnostic(
                code="TQX_STREAM_SINK_FAILED",
                severity="warning",
                message=f"the live event sink raised {collector.sink_failure}; later events "
                "were not forwarded to it",
                json_pointer="/stream_events",
            )
        )
    return problems
