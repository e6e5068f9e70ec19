"""The failure half of the transport suite: faults, truncation, in-band errors, size bounds.

Every case is driven through ``execute`` and ``execute_streaming`` alike (where the wire can say
it): the raised error must carry the stable code for the fault, the stream must end in exactly
one ``Failed`` equal to it, and one call must be one HTTP request (adapters never retry). Every
case is played in the wire's framing: a line bound only where frames are lines, a flood of
keep-alives only where the framing has them (else of events that say nothing).

Provider text: every error the kit's provider sends (:meth:`WireRig.provider_message`) starts
with a canary, carries terminal control characters, echoes the credentials the request carried
and runs on far past any display cap. DECISIONS 20 lets a failure show it *sanitised*: control
characters removed, capped at about 300 characters, credentials redacted. A refusal's text is
never shown (DECISIONS 7b).
"""

from __future__ import annotations

import itertools
import socket
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from templiqx_conformance.checks.context import (
    CheckContext,
    NotApplicableError,
    fail_if,
    streams_by_default,
)
from templiqx_conformance.checks.failures import driving_probe
from templiqx_conformance.checks.transport.common import in_parallel, rig_of, summarise
from templiqx_conformance.checks.verdicts import check_failed_stream, event_kinds
from templiqx_conformance.loopback import RecordedRequest, Reply
from templiqx_conformance.probes import STRUCTURED_OUTPUT
from templiqx_conformance.rig.calls import Outcome, describe_error, run_execute, run_streaming
from templiqx_conformance.rig.wire_rig import (
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
    request_for,
)
from templiqx_conformance.wires.answer import Answer, fragments
from templiqx_contracts import Delta, Failed, ToolCallDelta
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


def _swallowed(label: str, outcome: Outcome, where: str) -> list[str]:
    """The problem when a stream that carried an in-band error completed anyway."""
    if outcome.error is not None or outcome.timed_out:
        return []
    return [
        f"{label}: execute_streaming returned a receipt although the stream carried the "
        f"provider's error {where} (and went on as if nothing had happened): an in-band error "
        "must fail the call — raise a runtime failure (one Failed) as soon as it arrives, never "
        "skip it"
    ]


def in_band_error(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    wire = rig.wire
    probe = driving_probe(ctx)
    request = request_for(probe.interaction)
    adapter = ctx.new_adapter()
    streams = rig.framing.streams and not streams_by_default(adapter)
    wanted = wire.in_band_error_code
    problems: list[str] = []
    exercised = False
    if wire.encode_whole_error("probe") is not None:
        exercised = True

        def whole(recorded: RecordedRequest) -> Reply:
            return Reply.json(wire.encode_whole_error(rig.provider_message(recorded)))

        rig.respond(whole)
        executed = run_execute(ctx.new_adapter(), request, ctx.timeout)
        code = _runtime_failure("an error body with HTTP 200 via execute", executed, problems)
        if code is not None and wanted is not None and code != wanted:
            problems.append(
                f"an error body with HTTP 200 via execute: raised {code!r}, expected {wanted!r}"
            )
        problems.extend(provider_text_problems("execute", executed.error, []))
    if streams and wire.encode_stream_error("probe") is not None:
        exercised = True
        answer = rig.main_answer(probe.interaction)
        full = rig.frames(answer)
        for count in (IN_BAND_DELTAS, 0):
            opened = rig.opening(answer, count)
            where = f"after {count} deltas" if count else "before any content"
            label = f"in-band error {where} via execute_streaming"

            def respond(recorded: RecordedRequest, opened: list[Any] = opened) -> Reply:
                error = list(wire.encode_stream_error(rig.provider_message(recorded)) or ())
                frames = [*opened, *error, *full[len(opened) :]]
                return rig.stream_reply(rig.render(frames))

            rig.respond(respond)
            outcome = run_streaming(ctx.new_adapter(), request, ctx.timeout, grace=0.05)
            swallowed = _swallowed(label, outcome, where)
            if swallowed:
                problems.extend(swallowed)
                continue
            found, error = check_failed_stream(label, outcome, wanted)
            problems.extend(found)
            problems.extend(provider_text_problems(label, error, outcome.events))
            if error is not None and error.code not in RUNTIME_CODES:
                problems.append(f"{label}: {error.code!r} is not a runtime failure code")
            deltas = [e for e in outcome.events if isinstance(e, (Delta, ToolCallDelta))]
            if len(deltas) != count:
                problems.append(
                    f"{label}: {len(deltas)} delta(s) before the error, expected {count} (the "
                    f"stream's fragments before it); events {event_kinds(outcome.events)}"
                )
    if not exercised:
        raise NotApplicableError(
            f"the {wire.name} wire says its provider reports errors only with an error status "
            "(the fault matrix plays those): it sends no error inside a stream "
            "(Wire.encode_stream_error) and no error body with a 200 (Wire.encode_whole_error)"
        )
    fail_if(
        "an error the provider reports in-band (inside a stream, or as the body of a 200) must "
        "fail the call at once with a runtime code: the deltas before it, then one Failed equal "
        "to the raised error",
        problems,
    )


# --- truncation --------------------------------------------------------------------------------


def truncation(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    probe = driving_probe(ctx)
    answer = answer_for(probe)
    request = request_for(probe.interaction)
    whole = rig.whole_reply(answer)
    if rig.framing.streams:
        writes = rig.writes(answer)
        opened = rig.prefix_writes(answer, IN_BAND_DELTAS)
        cases = [
            (
                f"stream ended after {count} of its {len(writes)} writes",
                rig.stream_reply(writes[:count]),
            )
            for count in range(len(writes))
        ]
        cases.append(("connection dropped mid-stream", rig.stream_reply(opened, after="drop")))
        cases.append(
            ("close-delimited stream ended early", rig.stream_reply(opened, framing="close"))
        )
    else:
        body = whole.body
        cases = [
            (
                f"body cut after byte {cut} of {len(body)}",
                rig.stream_reply([body[:cut]], framing="close"),
            )
            for cut in sorted({1, len(body) // 4, len(body) // 2, len(body) - 1})
        ]

    def one(index: int) -> list[str]:
        label, reply = cases[index]
        responder = rig.split(reply, whole) if rig.framing.streams else (lambda _r: reply)
        base_url = rig.at_prefix(f"/cut-{index}", responder)
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
            summarise("streams cut at a frame boundary", in_parallel(ctx, len(cases), one))
        )
    rig.reply_always(rig.cut_body(answer))
    executed = run_execute(ctx.new_adapter(), request, ctx.timeout)
    _runtime_failure("execute of a body cut short", executed, problems)
    fail_if(
        "a truncated response (cut at any frame boundary before the stream's last frame, or "
        "mid-body) must fail with a runtime code: one Failed, no Complete — the stream's final "
        "frame, not the end of the body, ends an answer",
        problems,
    )


# --- the fault matrix --------------------------------------------------------------------------

Fault = tuple[str, Arrange, str, int | None, bool, tuple[str, ...]]
"""label, arrange, code, retry_after_ms, quiet, modes."""

_BOTH = ("execute", "execute_streaming")


def _malformed(rig: WireRig, answer: Answer) -> Callable[[RecordedRequest], Reply]:
    """A plain body and a stream frame whose JSON is cut in half."""
    body = rig.whole_reply(answer).body
    plain = Reply(
        status=200, headers=(("Content-Type", "application/json"),), body=body[: len(body) // 2]
    )
    frames = rig.opening(answer, 1) if rig.framing.streams else rig.frames(answer)
    broken = [*frames[:-1], rig.framing.malformed(frames[-1])]
    return rig.split(rig.stream_reply(rig.render(broken)), plain)


def _fault_cases(ctx: CheckContext, rig: WireRig) -> list[Fault]:
    message = rig.provider_message()
    invalid = RuntimeFailureCode.INVALID_RESPONSE.value
    answer = answer_for(driving_probe(ctx))

    def error(status: int, headers: Sequence[tuple[str, str]] = ()) -> Arrange:
        responder = rig.error_responder(status, headers)
        return lambda: rig.respond(responder)

    cases: list[Fault] = [
        (
            "HTTP 429 with Retry-After: 3",
            error(429, [("Retry-After", "3")]),
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
                error(status),
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
                error(status),
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
        stream = rig.stream_reply(rig.render(fault.stream)) if fault.stream is not None else None
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
    """A stream whose content frame never ends its line: over 1 MiB of it, in 64 KiB writes."""
    writes = rig.writes(_text("long-line", ["a" * (MAX_LINE_BYTES + 131_072)]))
    index = next(i for i, write in enumerate(writes) if len(write) > MAX_LINE_BYTES)
    big = writes[index][: MAX_LINE_BYTES + 65_536]
    pieces = [big[start : start + 65_536] for start in range(0, len(big), 65_536)]
    return rig.stream_reply([*writes[:index], *pieces])


def _flood(rig: WireRig) -> tuple[str, Reply]:
    """Over 64 MiB of writes that say nothing: keep-alives, or else empty events."""
    idle = rig.idle_write(pad=16_000)
    block = idle * max(1, 65_536 // len(idle))
    count = MAX_STREAM_BYTES // len(block) + 2
    what = "keep-alives" if rig.framing.keepalive() is not None else "empty events"
    return what, rig.stream_reply(itertools.repeat(block, count))


def _size_cases(rig: WireRig) -> list[tuple[str, str, Reply, int]]:
    piece = "a" * 65_536
    many = _text("long", [piece] * (MAX_RESPONSE_BYTES // len(piece) + 2))
    big = _text("big", ["a" * (MAX_RESPONSE_BYTES + 1)])
    cases: list[tuple[str, str, Reply, int]] = [
        (
            f"a non-streamed body over {MAX_RESPONSE_BYTES} bytes",
            "execute",
            rig.whole_reply(big),
            MAX_RESPONSE_BYTES,
        )
    ]
    if not rig.framing.streams:
        cases.append(
            (
                f"a streamed body over {MAX_RESPONSE_BYTES} bytes",
                "execute_streaming",
                rig.stream_reply(rig.writes(big)),
                MAX_RESPONSE_BYTES,
            )
        )
        return cases
    cases.append(
        (
            f"a stream whose content exceeds {MAX_RESPONSE_BYTES} bytes",
            "execute_streaming",
            rig.stream_reply(rig.writes(many)),
            MAX_RESPONSE_BYTES,
        )
    )
    if rig.framing.lines:
        cases.append(
            (
                f"one {rig.framing.name} line over {MAX_LINE_BYTES} bytes",
                "execute_streaming",
                _unended_line(rig),
                MAX_LINE_BYTES,
            )
        )
    what, flood = _flood(rig)
    cases.append(
        (
            f"a stream of {what} over {MAX_STREAM_BYTES} raw bytes",
            "execute_streaming",
            flood,
            MAX_STREAM_BYTES,
        )
    )
    return cases


def size_bounds(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    request = request_for(driving_probe(ctx).interaction)
    invalid = RuntimeFailureCode.INVALID_RESPONSE.value
    cases = _size_cases(rig)
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
            problems.append(
                f"{label}: the message {str(error)!r} must name the {limit} byte limit (bound "
                "what you read: DECISIONS 9)"
            )
    fail_if(
        "responses are bounded (DECISIONS 9): exceeding a limit is TQX_RUNTIME_INVALID_RESPONSE "
        "naming the limit",
        problems,
    )
