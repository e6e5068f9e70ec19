"""The transport suite: the checks every wire adapter runs after the port checks.

They are the same for every wire — the built-in ``openai`` one and any author's
:class:`~templiqx_conformance.wire.Wire` — because the kit computes what it expects from its
own answers and lets the wire only put them into bytes. Recorded responses an author supplies
(:class:`~templiqx_conformance.wire.Recording`) are replayed here too.
"""

from __future__ import annotations

import re

from templiqx_conformance.context import (
    Check,
    CheckContext,
    NotApplicableError,
    fail_if,
    receipt_diff,
    show,
)
from templiqx_conformance.loopback import Reply
from templiqx_conformance.probes import PROBES, TEXT, Probe
from templiqx_conformance.recording import describe_error, run_execute, run_streaming
from templiqx_conformance.transport_faults import (
    fault_matrix,
    in_band_error,
    size_bounds,
    truncation,
)
from templiqx_conformance.transport_streams import (
    content_stream,
    crlf,
    in_parallel,
    keepalive_and_usage,
    request_shape,
    rig_of,
    summarise,
    tool_calls,
    wire_cancellation,
)
from templiqx_conformance.verdicts import (
    check_failed_stream,
    delta_content_problems,
    delta_sequence_problem,
    order_problems,
)
from templiqx_conformance.wire import Recording
from templiqx_conformance.wire_rig import RUNTIME_CODES, request_for
from templiqx_contracts import Delta, ExecutionReceipt, ToolCallDelta

__all__ = ["TRANSPORT_CHECKS", "event_boundaries"]

_BLANK_LINE = re.compile(rb"(?:\r\n|\r|\n)(?:\r\n|\r|\n)")


def event_boundaries(stream: bytes) -> list[int]:
    """The offsets just after each event of a server-sent event stream (after its blank line)."""
    return [match.end() for match in _BLANK_LINE.finditer(stream)]


def _probe_for(recording: Recording) -> Probe:
    """The kit probe whose request a recording answers (by capability; text otherwise)."""
    return next(
        (p for p in PROBES if p.capability == recording.capability and p.schema_valid), TEXT
    )


def _replay(
    ctx: CheckContext, recording: Recording, reply: Reply, label: str
) -> tuple[list[str], ExecutionReceipt | None]:
    rig = rig_of(ctx)
    rig.reply_always(reply)
    probe = _probe_for(recording)
    outcome = run_streaming(ctx.new_adapter(), request_for(probe.interaction), ctx.timeout)
    problems = order_problems(label, outcome)
    receipt = outcome.receipt
    if outcome.error is not None or receipt is None:
        error = describe_error(outcome.error) if outcome.error else type(outcome.result).__name__
        return [*problems, f"{label}: execute_streaming must succeed, got {error}"], None
    if show(receipt.output, 10**9) != show(recording.output, 10**9):
        problems.append(
            f"{label}: the output is {show(receipt.output)}, the recording means "
            f"{show(recording.output)}"
        )
    deltas = [event for event in outcome.events if isinstance(event, (Delta, ToolCallDelta))]
    if recording.deltas is not None:
        mismatch = delta_sequence_problem(deltas, list(recording.deltas))
        if mismatch is not None:
            problems.append(f"{label}: {mismatch}")
    problems.extend(delta_content_problems(label, outcome.events, receipt.output))
    return problems, receipt


def _replay_recording(ctx: CheckContext, recording: Recording) -> list[str]:
    rig = rig_of(ctx)
    name = recording.name
    probe = _probe_for(recording)
    if recording.capability not in ctx.descriptor().capabilities:
        return [f"{name}: the adapter does not declare {recording.capability!r}"]
    problems: list[str] = []
    executed: ExecutionReceipt | None = None
    if recording.whole is not None:
        rig.reply_always(
            Reply(status=200, headers=(("Content-Type", "application/json"),), body=recording.whole)
        )
        outcome = run_execute(ctx.new_adapter(), request_for(probe.interaction), ctx.timeout)
        if outcome.receipt is None:
            got = describe_error(outcome.error) if outcome.error else repr(outcome.result)
            problems.append(f"{name} (whole): execute must succeed, got {got}")
        else:
            executed = outcome.receipt
            if show(executed.output, 10**9) != show(recording.output, 10**9):
                problems.append(
                    f"{name} (whole): the output is {show(executed.output)}, the recording "
                    f"means {show(recording.output)}"
                )
    if recording.stream is None:
        return problems
    headers = [("Content-Type", recording.content_type)]
    for label, reply in (
        (f"{name} (stream)", Reply.stream([recording.stream], headers=headers)),
        (f"{name} (one byte per write)", Reply.stream([recording.stream], split_bytes=True)),
    ):
        found, streamed = _replay(ctx, recording, reply, label)
        problems.extend(found)
        if executed is not None and streamed is not None:
            diff = receipt_diff(executed, streamed, ("whole", "stream"))
            if diff:
                problems.append(
                    f"{label}: the streamed receipt differs from the whole one:\n{diff}"
                )
    cuts = [0, *event_boundaries(recording.stream)[:-1]]
    request = request_for(probe.interaction)

    def one(index: int) -> list[str]:
        cut = cuts[index]
        label = f"{name} cut after byte {cut} of {len(recording.stream or b'')}"
        reply = Reply.stream([(recording.stream or b"")[:cut]])
        base_url = rig.at_prefix(f"/recording-{index}", lambda _request: reply)
        adapter = ctx.require_adapter(rig.make_adapter_for(base_url), "the adapter factory")
        outcome = run_streaming(adapter, request, ctx.timeout, grace=0.05)
        found, error = check_failed_stream(label, outcome, None)
        if error is not None and error.code not in RUNTIME_CODES:
            found.append(f"{label}: {error.code!r} is not a runtime failure code")
        return found

    problems.extend(
        summarise(f"{name}: cuts at event boundaries", in_parallel(ctx, len(cuts), one))
    )
    return problems


def recordings(ctx: CheckContext) -> None:
    target = ctx.rig.target
    if not target.recordings:
        raise NotApplicableError(
            "no recordings were supplied: give Recording values (AdapterTarget(recordings=...) "
            "or the templiqx_recordings fixture) with the output and deltas each must give"
        )
    problems: list[str] = []
    for recording in target.recordings:
        problems.extend(_replay_recording(ctx, recording))
    fail_if(
        "a recorded provider response must give its output and deltas, whole and one byte per "
        "write, and fail when cut at any event boundary",
        problems,
    )


TRANSPORT_CHECKS: tuple[Check, ...] = (
    Check(
        "transport.request_shape",
        "one POST of the interaction to the wire's request path per call",
        request_shape,
    ),
    Check(
        "transport.content_stream",
        "content streams give one Delta per fragment and the execute receipt, any byte split",
        content_stream,
    ),
    Check(
        "transport.tool_calls",
        "parallel tool calls stream ToolCallDeltas and end in the execute receipt",
        tool_calls,
    ),
    Check(
        "transport.keepalive_and_usage",
        "keep-alive comments and non-content events produce no events",
        keepalive_and_usage,
    ),
    Check(
        "transport.crlf",
        "CRLF line endings read like LF, split at every byte boundary",
        crlf,
    ),
    Check(
        "transport.in_band_error",
        "an in-band error event fails the call with one Failed",
        in_band_error,
    ),
    Check(
        "transport.truncation",
        "a stream cut at any event boundary, or a body cut short, fails instead of completing",
        truncation,
    ),
    Check(
        "transport.fault_matrix",
        "HTTP and payload faults map to stable codes on both paths, without retries",
        fault_matrix,
    ),
    Check(
        "transport.size_bounds",
        "oversized bodies, outputs, lines and streams fail naming the limit",
        size_bounds,
    ),
    Check(
        "transport.cancellation",
        "a set cancel token ends a silent stream within 1 s and closes the connection",
        wire_cancellation,
    ),
    Check(
        "transport.recordings",
        "recorded responses replay to their output and deltas, and fail when cut",
        recordings,
    ),
)
