"""The checks: every rule of the runtime port the kit proves, and what each builds on.

* :mod:`~templiqx_conformance.checks.context` — :class:`Check`, the :class:`CheckContext` a check
  runs with, and the helpers that word failures;
* :mod:`~templiqx_conformance.checks.verdicts` — the shared rules: stream order, deltas against
  the receipt, a failure's projection, cancellation, leaks;
* :mod:`~templiqx_conformance.checks.port` — descriptor, receipts (on both paths),
  ``output_schema_valid`` on a valid and an invalid output, concurrency;
* :mod:`~templiqx_conformance.checks.streaming` — stream order, streamed receipts against
  ``execute``'s, deltas against the output, the default projection, the cancel token;
* :mod:`~templiqx_conformance.checks.failures`, :mod:`~templiqx_conformance.checks.secrets`,
  :mod:`~templiqx_conformance.checks.tools`;
* :mod:`~templiqx_conformance.checks.transport` — the wire suite.

:data:`CORE_CHECKS` run for every adapter; :data:`TRANSPORT_CHECKS` follow them for an adapter
run against the kit's server. A check's ``depends`` names the checks whose invariants it takes
for granted: the runner does not run it when one of them failed, so one bug gives one message.
"""

from __future__ import annotations

from templiqx_conformance.checks.context import Check
from templiqx_conformance.checks.failures import failure_projection
from templiqx_conformance.checks.port import (
    capabilities_honest,
    descriptor_well_formed,
    output_fingerprint,
    output_schema_valid,
    parallel_execute,
    receipt_well_formed,
    request_fingerprint,
)
from templiqx_conformance.checks.secrets import secrets_not_exposed
from templiqx_conformance.checks.streaming import (
    cancellation_token,
    complete_matches_execute,
    default_projection,
    deltas_match_output,
    event_order,
)
from templiqx_conformance.checks.tools import declared_tools_check
from templiqx_conformance.checks.transport.faults import (
    fault_matrix,
    in_band_error,
    size_bounds,
    truncation,
)
from templiqx_conformance.checks.transport.recordings import recordings
from templiqx_conformance.checks.transport.streams import (
    content_stream,
    crlf,
    idle_events,
    request_shape,
    tool_calls,
    wire_cancellation,
)

__all__ = ["CORE_CHECKS", "TRANSPORT_CHECKS", "Check"]

_DESCRIPTOR = "descriptor.well_formed"
_HONEST = "descriptor.capabilities_honest"
_RECEIPT = "receipt.well_formed"
_ORDER = "streaming.event_order"
_PARITY = "streaming.complete_matches_execute"
_PROJECTION = "failure.projection"
_CONTENT = "transport.content_stream"

CORE_CHECKS: tuple[Check, ...] = (
    Check(
        _DESCRIPTOR,
        "descriptor() is a static, well-formed identity (id, version, capabilities)",
        descriptor_well_formed,
    ),
    Check(
        _HONEST,
        "every declared capability the kit can exercise is honoured",
        capabilities_honest,
        (_DESCRIPTOR,),
    ),
    Check(
        _RECEIPT,
        "receipts carry the descriptor, SHA-256 fingerprints and JSON-able output",
        receipt_well_formed,
        (_HONEST,),
    ),
    Check(
        "receipt.output_fingerprint",
        "output_fingerprint == fingerprint(output), on execute's and the streamed receipt",
        output_fingerprint,
        (_RECEIPT,),
    ),
    Check(
        "receipt.request_fingerprint",
        "request_fingerprint is stable across calls and unaffected by streaming",
        request_fingerprint,
        (_RECEIPT,),
    ),
    Check(
        "receipt.output_schema_valid",
        "output_schema_valid agrees with the output schema for a valid and an invalid output, "
        "on both paths",
        output_schema_valid,
        (_RECEIPT,),
    ),
    Check(
        _ORDER,
        "every stream is deltas then exactly one terminal event, nothing after it",
        event_order,
        (_HONEST,),
    ),
    Check(
        _PARITY,
        "the streamed receipt equals the execute receipt, field by field, for every probe",
        complete_matches_execute,
        (
            _ORDER,
            "receipt.output_fingerprint",
            "receipt.request_fingerprint",
            "receipt.output_schema_valid",
        ),
    ),
    Check(
        "streaming.deltas_match_output",
        "joined Delta texts are the output; tool-call fragments assemble to its arguments",
        deltas_match_output,
        (_PARITY,),
    ),
    Check(
        "streaming.default_projection",
        "an adapter with the default execute_streaming emits exactly one Complete",
        default_projection,
        (_HONEST,),
    ),
    Check(
        _PROJECTION,
        "each failure yields exactly one Failed equal to the raised error, nothing after it, "
        "also once deltas went out",
        failure_projection,
        (_ORDER,),
    ),
    Check(
        "cancellation.token",
        "a token set before the call or at the first delta ends the stream within 1 s with "
        "TQX_RUNTIME_CANCELLED",
        cancellation_token,
        (_PROJECTION, "streaming.deltas_match_output"),
    ),
    Check(
        "secrets.not_exposed",
        "no credential appears in an event, receipt, error or diagnostic, for any probe or failure",
        secrets_not_exposed,
        (_DESCRIPTOR,),
    ),
    Check(
        "concurrency.parallel_execute",
        "one adapter serves concurrent executions with identical receipts",
        parallel_execute,
        ("receipt.request_fingerprint",),
    ),
    Check(
        "tools.declared_calls",
        "(tool_calling adapters) declared tools reach the model and judge its calls: an "
        "undeclared or forbidden call is invalid on both paths",
        declared_tools_check,
        ("receipt.output_schema_valid", "streaming.deltas_match_output"),
    ),
)
"""The port checks every adapter must pass, whatever its transport, in run order."""

TRANSPORT_CHECKS: tuple[Check, ...] = (
    Check(
        "transport.request_shape",
        "one POST of the interaction to the wire's request path per call",
        request_shape,
        (_HONEST,),
    ),
    Check(
        _CONTENT,
        "content streams give one Delta per fragment and the execute receipt, any byte split",
        content_stream,
        ("transport.request_shape", "streaming.deltas_match_output"),
    ),
    Check(
        "transport.tool_calls",
        "tool calls stream ToolCallDeltas and end in the execute receipt",
        tool_calls,
        (_CONTENT, "tools.declared_calls"),
    ),
    Check(
        "transport.idle_events",
        "keep-alives (where the framing has them) and events that say nothing produce no delta",
        idle_events,
        (_CONTENT,),
    ),
    Check(
        "transport.crlf",
        "CRLF line endings read like LF, split at every byte boundary",
        crlf,
        (_CONTENT,),
    ),
    Check(
        "transport.in_band_error",
        "an error the provider reports in-band fails the call at once with one Failed",
        in_band_error,
        (_PROJECTION, _CONTENT),
    ),
    Check(
        "transport.truncation",
        "a stream cut at any frame boundary, or a body cut short, fails instead of completing",
        truncation,
        (_PROJECTION,),
    ),
    Check(
        "transport.fault_matrix",
        "HTTP and payload faults map to stable codes on both paths, without retries",
        fault_matrix,
        (_PROJECTION,),
    ),
    Check(
        "transport.size_bounds",
        "oversized bodies, outputs, lines and streams fail naming the limit",
        size_bounds,
        (_PROJECTION,),
    ),
    Check(
        "transport.cancellation",
        "a set cancel token ends a silent stream within 1 s and closes the connection",
        wire_cancellation,
        ("cancellation.token", _CONTENT),
    ),
    Check(
        "transport.recordings",
        "recorded responses replay to their output and deltas (or declared failure), and fail "
        "when cut",
        recordings,
        (_CONTENT, _PROJECTION),
    ),
)
"""The transport suite, run after :data:`CORE_CHECKS` against the kit's server, in run order."""
