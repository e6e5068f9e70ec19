"""The failure half of the transport suite: faults, truncation, in-band errors, size bounds.

Every case is driven through ``execute`` and ``execute_streaming`` alike (where the wire can say
it): the raised error must carry the stable code for the fault, the stream must end in exactly
one ``Failed`` equal to it, and one call must be one HTTP request (adapters never retry).

Provider text: every error the kit's provider sends (:meth:`WireRig.provider_message`) starts
with a canary, carries terminal control characters, echoes the adapter's credentials and runs
on far past any display cap. DECISIONS 20 lets a failure show it *sanitised*: control characters
removed, capped at about 300 characters, credentials redacted. A refusal's text is never shown
(DECISIONS 7b).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from templiqx_conformance.context import CheckContext, fail_if, streams_by_default
from templiqx_conformance.failure_checks import driving_probe
from templiqx_conformance.loopback import RecordedRequest, Reply, SSEEvent, sse_comment
from templiqx_conformance.probes import STRUCTURED_OUTPUT
from templiqx_conformance.recording import Outcome, describe_error, run_execute, run_streaming
from templiqx_conformance.transport_streams import in_parallel, rig_of, summarise
from templiqx_conformance.verdicts import check_failed_stream
from templiqx_conformance.wire import Answer, fragments
from templiqx_conformance.wire_rig import (
    IN_BAND_DELTAS,
    MAX_LINE_BYTES,
    MAX_RESPONSE_BYTES,
    MAX_STREAM_BYTES,
    PROVIDER_CONTROL,
    PROVIDER_HEAD,
    PROVIDER_TAIL,
    RUNTIME_CODES,
    WireRig,
    answer_for,
    opening,
    per_frame,
    render,
    request_for,
)
from templiqx_contracts import Delta, Failed
from templiqx_ports import PortError, RuntimeFailureCode

__all__ = [
    "fault_matrix",
    "in_band_error",
    "provider_text_problems",
    "size_bounds",
    "truncation",
]

Arrange = Callable[[], None]
_CONTROL = frozenset(char for char in PROVIDER_CONTROL if not char.isprintable())


def _shown(error: BaseException | None, events: Sequence[Any]) -> list[str]:
    texts = []
    if error is not None:
        texts.append(str(error))
        for attribute in ("detail", "help"):
            value = getattr(error, attribute, None)
            if isinstance(value, str):
                texts.append(value)
        failure = getattr(error, "failure", None)
        if failure is not None:
            texts.append(str(getattr(failure, "detail", "")))
    texts.extend(event.message for event in events if isinstance(event, Failed))
    return texts


def provider_text_problems(
    label: str, error: BaseException | None, events: Sequence[Any], *, quiet: bool = False
) -> list[str]:
    """Problems with how a failure shows the provider's own error text (see the module doc)."""
    texts = _shown(error, events)
    problems = []
    if quiet and any(PROVIDER_HEAD in text for text in texts):
        problems.append(
            f"{label}: the failure repeats the provider's text; a refusal's words are never "
            "shown (DECISIONS 7b): use a fixed sentence such as 'the model refused'"
        )
    if any(PROVIDER_TAIL in text for text in texts):
        problems.append(
            f"{label}: the failure shows the provider's error text uncapped; cut it to about "
            "300 characters (DECISIONS 20)"
        )
    if any(char in text for text in texts for char in _CONTROL):
        problems.append(
            f"{label}: the failure passes on control characters from the provider's error text; "
            "remove them (DECISIONS 20)"
        )
    return problems


def _runtime_failure(label: str, outcome: Outcome, problems: list[str]) -> str | None:
    if outcome.timed_out:
        problems.append(f"{label}: still running after the call deadline")
        return None
    if outcome.error is None:
        problems.append(f"{label}: returned {type(outcome.result).__name__} instead of failing")
        return None
    if not isinstance(outcome.error, PortError):
        problems.append(
            f"{label}: raised {describe_error(outcome.error)}, not a templiqx_ports.PortError"
        )
        return None
    if outcome.error.code not in RUNTIME_CODES:
        problems.append(f"{label}: code {outcome.error.code!r} is not a runtime failure code")
    return outcome.error.code


# --- in-band errors ----------------------------------------------------------------------------


def in_band_error(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    probe = driving_probe(ctx)
    request = request_for(probe.interaction)
    rig.respond(rig.in_band_error(rig.provider_message(), probe.interaction))
    problems: list[str] = []
    executed = run_execute(ctx.new_adapter(), request, ctx.timeout)
    execute_code = _runtime_failure("execute", executed, problems)
    problems.extend(provider_text_problems("execute", executed.error, []))
    adapter = ctx.new_adapter()
    outcome = run_streaming(adapter, request, ctx.timeout, grace=0.05)
    found, error = check_failed_stream("execute_streaming", outcome, execute_code)
    problems.extend(found)
    problems.extend(provider_text_problems("execute_streaming", error, outcome.events))
    if error is not None and error.code not in RUNTIME_CODES:
        problems.append(f"execute_streaming: {error.code!r} is not a runtime failure code")
    deltas = [event for event in outcome.events if isinstance(event, Delta)]
    expected = 0 if streams_by_default(adapter) else IN_BAND_DELTAS
    if len(deltas) != expected:
        problems.append(
            f"execute_streaming: {len(deltas)} delta(s) before the error, expected {expected}"
        )
    fail_if(
        "an in-band error event must fail the call with a runtime code: deltas so far, then one "
        "Failed equal to the raised error (the same code execute raises)",
        problems,
    )


# --- truncation --------------------------------------------------------------------------------


def truncation(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    probe = driving_probe(ctx)
    answer = answer_for(probe)
    request = request_for(probe.interaction)
    writes = rig.stream_writes(answer)
    opened = render(opening(rig.wire, answer, IN_BAND_DELTAS))
    cases = [
        (f"stream ended after {count} of its {len(writes)} events", Reply.stream(writes[:count]))
        for count in range(len(writes))
    ]
    cases.append(("connection dropped mid-stream", Reply.stream(opened, after="drop")))
    cases.append(("close-delimited stream ended early", Reply.stream(opened, framing="close")))
    whole = rig.whole_reply(answer)

    def one(index: int) -> list[str]:
        label, reply = cases[index]
        base_url = rig.at_prefix(f"/cut-{index}", rig.split(reply, whole))
        adapter = ctx.require_adapter(rig.make_adapter_for(base_url), "the adapter factory")
        outcome = run_streaming(adapter, request, ctx.timeout, grace=0.05)
        if outcome.timed_out:
            return [f"{label}: still running after the call deadline"]
        found, error = check_failed_stream(label, outcome, None)
        if error is not None and error.code not in RUNTIME_CODES:
            found.append(f"{label}: {error.code!r} is not a runtime failure code")
        return found

    problems: list[str] = []
    if not streams_by_default(ctx.new_adapter()):  # a default streamer never asks for a stream
        problems.extend(
            summarise("streams cut at an event boundary", in_parallel(ctx, len(cases), one))
        )
    body = whole.body
    rig.reply_always(
        Reply(
            status=200,
            headers=(("Content-Type", "application/json"),),
            chunks=[body[: len(body) // 2]],
            framing="close",
        )
    )
    executed = run_execute(ctx.new_adapter(), request, ctx.timeout)
    _runtime_failure("execute of a body cut short", executed, problems)
    fail_if(
        "a truncated response (cut at any event boundary before the stream's last event, or "
        "mid-body) must fail with a runtime code: one Failed, no Complete",
        problems,
    )


# --- the fault matrix --------------------------------------------------------------------------

Fault = tuple[str, Arrange, str, int | None, bool, tuple[str, ...]]
"""label, arrange, code, retry_after_ms, quiet, modes."""

_BOTH = ("execute", "execute_streaming")


def _malformed(rig: WireRig, answer: Answer) -> Callable[[RecordedRequest], Reply]:
    """A plain body and a stream event whose JSON is cut in half."""
    body = rig.whole_reply(answer).body
    plain = Reply(
        status=200, headers=(("Content-Type", "application/json"),), body=body[: len(body) // 2]
    )
    events = opening(rig.wire, answer, 1)
    last = events[-1]
    text = last.data if isinstance(last.data, str) else json.dumps(last.data)
    broken = [*events[:-1], SSEEvent(text[: len(text) // 2], event=last.event)]
    return rig.split(per_frame(render(broken)), plain)


def _fault_cases(ctx: CheckContext, rig: WireRig) -> list[Fault]:
    message = rig.provider_message()
    invalid = RuntimeFailureCode.INVALID_RESPONSE.value
    answer = answer_for(driving_probe(ctx))

    def always(reply: Reply) -> Arrange:
        return lambda: rig.reply_always(reply)

    def error(status: int, headers: Sequence[tuple[str, str]] = ()) -> Reply:
        return Reply.error(status, headers=headers, body=rig.wire.encode_error(status, message))

    cases: list[Fault] = [
        (
            "HTTP 429 with Retry-After: 3",
            always(error(429, [("Retry-After", "3")])),
            RuntimeFailureCode.RATE_LIMITED.value,
            3000,
            False,
            _BOTH,
        )
    ]
    for status in (500, 502, 503):
        cases.append(
            (
                f"HTTP {status}",
                always(error(status)),
                RuntimeFailureCode.UNAVAILABLE.value,
                None,
                False,
                _BOTH,
            )
        )
    for status in (400, 401, 403, 404):
        cases.append(
            (
                f"HTTP {status}",
                always(error(status)),
                RuntimeFailureCode.PERMANENT.value,
                None,
                False,
                _BOTH,
            )
        )
    cases.append(
        (
            "malformed JSON",
            lambda: rig.respond(_malformed(rig, answer)),
            invalid,
            None,
            False,
            _BOTH,
        )
    )
    for fault in rig.wire.extra_faults(message):
        stream = per_frame(render(fault.events)) if fault.events is not None else None
        whole = Reply.json(fault.whole) if fault.whole is not None else None
        modes = tuple(
            mode
            for mode, present in (("execute", whole), ("execute_streaming", stream))
            if present is not None
        )
        responder = rig.split(stream or Reply.error(500), whole)
        cases.append(
            (fault.label, partial(rig.respond, responder), fault.code, None, fault.quiet, modes)
        )
    if STRUCTURED_OUTPUT in ctx.descriptor().capabilities:
        for cut in (
            Answer(
                "structured content that is not JSON",
                fragments("Sure! Here it is."),
                structured=True,
            ),
            Answer(
                "structured output cut at the token limit",
                fragments('{"note": "conformant, but'),
                structured=True,
                stop="length",
            ),
        ):
            label = cut.name
            cases.append(
                (label, partial(rig.serve_any, cut), invalid, None, False, rig.modes_for(cut))
            )
    return cases


def fault_matrix(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    probe = driving_probe(ctx)
    request = request_for(probe.interaction)
    problems: list[str] = []
    for label, arrange, code, retry_after, quiet, modes in _fault_cases(ctx, rig):
        for mode in modes:
            arrange()
            before = len(rig.recorded_requests())
            adapter = ctx.new_adapter()
            name = f"{label} via {mode}"
            error: BaseException | None
            if mode == "execute":
                outcome = run_execute(adapter, request, ctx.timeout)
                raised = _runtime_failure(name, outcome, problems)
                if raised is not None and raised != code:
                    problems.append(f"{name}: raised {raised!r}, expected {code!r}")
                error = outcome.error
            else:
                outcome = run_streaming(adapter, request, ctx.timeout, grace=0.05)
                if outcome.timed_out:
                    problems.append(f"{name}: still running after the call deadline")
                    continue
                found, error = check_failed_stream(name, outcome, code)
                problems.extend(found)
            problems.extend(provider_text_problems(name, error, outcome.events, quiet=quiet))
            if retry_after is not None and error is not None:
                got = getattr(getattr(error, "failure", None), "retry_after_ms", None)
                if got != retry_after:
                    problems.append(f"{name}: retry_after_ms is {got!r}, expected {retry_after}")
            sent = len(rig.recorded_requests()) - before
            if sent != 1:
                problems.append(f"{name}: {sent} HTTP requests for one call (adapters never retry)")
    problems.extend(_connection_refused(ctx, rig, request))
    fail_if(
        "each provider failure must map to its stable code, identically for execute and "
        "execute_streaming, with no retry and the provider's text shown only sanitised",
        problems,
    )


def _connection_refused(ctx: CheckContext, rig: WireRig, request: Any) -> list[str]:
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        port = probe_socket.getsockname()[1]
    unavailable = RuntimeFailureCode.UNAVAILABLE.value
    problems: list[str] = []
    for mode in _BOTH:
        adapter = ctx.require_adapter(
            rig.make_adapter_for(f"http://127.0.0.1:{port}{rig.wire.base_path}"),
            "the adapter factory",
        )
        name = f"connection refused via {mode}"
        if mode == "execute":
            outcome = run_execute(adapter, request, ctx.timeout)
            raised = _runtime_failure(name, outcome, problems)
            if raised is not None and raised != unavailable:
                problems.append(f"{name}: raised {raised!r}, expected {unavailable}")
        else:
            outcome = run_streaming(adapter, request, ctx.timeout)
            problems.extend(check_failed_stream(name, outcome, unavailable)[0])
    return problems


# --- size bounds -------------------------------------------------------------------------------


def _text(name: str, pieces: Sequence[str]) -> Answer:
    return Answer(name=name, fragments=tuple(pieces))


def _unended_line(rig: WireRig) -> Reply:
    """A stream whose content event never ends its line: over 1 MiB of it, in 64 KiB writes."""
    writes = rig.stream_writes(_text("long-line", ["a" * (MAX_LINE_BYTES + 131_072)]))
    index = next(i for i, write in enumerate(writes) if len(write) > MAX_LINE_BYTES)
    big = writes[index][: MAX_LINE_BYTES + 65_536]
    pieces = [big[start : start + 65_536] for start in range(0, len(big), 65_536)]
    return Reply.stream([*writes[:index], *pieces])


def size_bounds(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    request = request_for(driving_probe(ctx).interaction)
    invalid = RuntimeFailureCode.INVALID_RESPONSE.value
    piece = "a" * 65_536
    many = _text("long", [piece] * (MAX_RESPONSE_BYTES // len(piece) + 2))
    keepalive = sse_comment("k" * 1_000) * 64
    flood = [keepalive] * (MAX_STREAM_BYTES // len(keepalive) + 2)
    cases: list[tuple[str, str, Reply, int]] = [
        (
            f"a non-streamed body over {MAX_RESPONSE_BYTES} bytes",
            "execute",
            rig.whole_reply(_text("big", ["a" * (MAX_RESPONSE_BYTES + 1)])),
            MAX_RESPONSE_BYTES,
        ),
        (
            f"a stream whose content exceeds {MAX_RESPONSE_BYTES} bytes",
            "execute_streaming",
            Reply.stream(rig.stream_writes(many)),
            MAX_RESPONSE_BYTES,
        ),
        (
            f"one event-stream line over {MAX_LINE_BYTES} bytes",
            "execute_streaming",
            _unended_line(rig),
            MAX_LINE_BYTES,
        ),
        (
            f"a stream over {MAX_STREAM_BYTES} raw bytes",
            "execute_streaming",
            Reply.stream(flood),
            MAX_STREAM_BYTES,
        ),
    ]
    problems: list[str] = []
    for label, mode, reply, limit in cases:
        rig.reply_always(reply)
        adapter = ctx.new_adapter()
        if mode == "execute_streaming" and streams_by_default(adapter):
            continue  # a default-streaming adapter never asks for a stream
        if mode == "execute":
            outcome = run_execute(adapter, request, ctx.timeout)
            raised = _runtime_failure(label, outcome, problems)
            error = outcome.error
            if raised is not None and raised != invalid:
                problems.append(f"{label}: raised {raised!r}, expected {invalid!r}")
        else:
            outcome = run_streaming(adapter, request, ctx.timeout)
            if outcome.timed_out:
                problems.append(f"{label}: still running after the call deadline")
                continue
            found, error = check_failed_stream(label, outcome, invalid)
            problems.extend(found)
        if error is not None and str(limit) not in str(error):
            problems.append(f"{label}: the message {str(error)!r} must name the {limit} byte limit")
    fail_if(
        "responses are bounded (DECISIONS 9): exceeding a limit is TQX_RUNTIME_INVALID_RESPONSE "
        "naming the limit",
        problems,
    )
