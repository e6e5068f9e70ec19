"""The stream half of the transport suite: any wire's traffic, split and framed every way.

The kit plays the model on a loopback server in the wire's own framing and checks what the
adapter makes of it: content and parallel tool calls split at every byte boundary, one byte per
write, close-delimited bodies, keep-alives and events that say nothing, CRLF line endings, and
cancellation while the server is silent (DECISIONS 6). The expected events are computed from
the kit's :class:`~templiqx_conformance.wires.Answer`, never from the wire's bytes.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import replace
from typing import Any, Final

from templiqx_conformance.checks.context import (
    CheckContext,
    NotApplicableError,
    fail_if,
    streams_by_default,
)
from templiqx_conformance.checks.failures import driving_probe
from templiqx_conformance.checks.transport.common import (
    every_boundary,
    reference,
    rig_of,
    stream_answer,
)
from templiqx_conformance.checks.verdicts import (
    CANCEL_DEADLINE,
    cancel_cutoff,
    check_cancelled,
    event_kinds,
)
from templiqx_conformance.loopback import Chunk, Reply
from templiqx_conformance.probes import TEXT, TEXT_CAPABILITY, TOOL_CALLING, TOOL_CALLS
from templiqx_conformance.rig.calls import Outcome, run_execute, run_streaming
from templiqx_conformance.rig.wire_rig import (
    IN_BAND_DELTAS,
    StreamShape,
    answer_for,
    request_for,
    with_keepalives,
)
from templiqx_conformance.wires.answer import Answer
from templiqx_contracts import Delta, ToolCallDelta

__all__ = [
    "content_stream",
    "crlf",
    "idle_events",
    "request_shape",
    "tool_calls",
    "wire_cancellation",
]

_CANCEL_AFTER_S: Final = 0.2


def _declares(ctx: CheckContext, capability: str) -> bool:
    return capability in ctx.descriptor().capabilities


def _no_stream(ctx: CheckContext, what: str) -> None:
    framing = rig_of(ctx).framing
    if not framing.streams:
        raise NotApplicableError(
            f"the {rig_of(ctx).wire.name} wire's provider does not stream ({framing.name} "
            f"framing): there is no {what}"
        )


# --- requests ----------------------------------------------------------------------------------


def request_shape(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    wire = rig.wire
    probe = driving_probe(ctx)
    rig.serve(probe)
    request = request_for(probe.interaction)
    before = len(rig.recorded_requests())
    problems = []
    run_execute(ctx.new_adapter(), request, ctx.timeout)  # what came back is other checks' job
    adapter = ctx.new_adapter()
    run_streaming(adapter, request, ctx.timeout)
    requests = rig.recorded_requests()[before:]
    if len(requests) != 2:
        problems.append(
            f"one call must be one HTTP request (adapters never retry): saw {len(requests)} "
            "request(s) for one execute and one execute_streaming"
        )
    for name, recorded in zip(("execute", "execute_streaming"), requests, strict=False):
        if recorded.method != "POST" or recorded.path != wire.request_path:
            problems.append(
                f"{name}: sent {recorded.method} {recorded.path}, expected POST "
                f"{wire.request_path} (the factory received the base URL {rig.base_url})"
            )
        content_type = (recorded.header("Content-Type") or "").lower()
        if "application/json" not in content_type:
            problems.append(f"{name}: Content-Type is {content_type!r}, expected application/json")
        problems.extend(
            f"{name}: {line}" for line in wire.request_problems(recorded, probe.interaction)
        )
    if len(requests) == 2 and wire.is_stream_request(requests[0]):
        problems.append("execute must not ask for a stream")
    streams = not streams_by_default(adapter) and rig.framing.streams
    if len(requests) == 2 and streams and not wire.is_stream_request(requests[1]):
        problems.append(
            f"execute_streaming must ask for a stream, as the {wire.name} wire's "
            "is_stream_request reads it"
        )
    fail_if(
        f"the adapter must send one JSON POST per call to {wire.request_path}, carrying the "
        f"interaction as the {wire.name} wire expects",
        problems,
    )


# --- content -----------------------------------------------------------------------------------


def content_stream(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    probe = driving_probe(ctx)
    answer = answer_for(probe)
    interaction = probe.interaction
    receipt = reference(ctx, answer, interaction, probe.output)
    problems = []
    shapes: list[tuple[str, StreamShape]] = [
        ("one write per frame", rig.stream_reply),
        ("close-delimited body", lambda writes: rig.stream_reply(writes, framing="close")),
        ("one byte per write", lambda writes: rig.stream_reply(writes, split_bytes=True)),
    ]
    for label, shape in shapes:
        problems.extend(stream_answer(ctx, answer, interaction, receipt, label=label, shape=shape))
    problems.extend(every_boundary(ctx, answer, interaction, receipt))
    if _declares(ctx, TEXT_CAPABILITY) and probe is not TEXT:
        text = answer_for(TEXT)
        text_receipt = reference(ctx, text, TEXT.interaction, TEXT.output)
        problems.extend(stream_answer(ctx, text, TEXT.interaction, text_receipt, label="text"))
    if _declares(ctx, TEXT_CAPABILITY):
        cut = Answer(name="text-length", fragments=answer_for(TEXT).fragments, stop="length")
        cut_receipt = reference(ctx, cut, TEXT.interaction, TEXT.output)
        problems.extend(
            stream_answer(
                ctx, cut, TEXT.interaction, cut_receipt, label="text cut at the token limit"
            )
        )
    fail_if(
        "a content stream must give one Delta per content fragment and the execute receipt, "
        "however the bytes are split",
        problems,
    )


def tool_calls(ctx: CheckContext) -> None:
    if not _declares(ctx, TOOL_CALLING):
        raise NotApplicableError(
            f"the adapter does not declare {TOOL_CALLING!r}: the application never sends it an "
            "interaction with tools, so its model never calls one"
        )
    rig = rig_of(ctx)
    wire = rig.wire
    if not wire.tool_calls:
        raise NotApplicableError(f"the {wire.name} wire says its provider sends no tool calls")
    interaction = TOOL_CALLS.interaction
    answers = [answer_for(TOOL_CALLS)]
    if wire.interleaves_tool_calls and not wire.whole_tool_arguments:
        answers.append(replace(answers[0], name="interleaved-tool-calls", interleaved=True))
    problems = []
    for answer in answers:
        receipt = reference(ctx, answer, interaction, TOOL_CALLS.output)
        problems.extend(stream_answer(ctx, answer, interaction, receipt, label=answer.name))
        problems.extend(
            stream_answer(
                ctx,
                answer,
                interaction,
                receipt,
                label=f"{answer.name}, one byte per write",
                shape=lambda writes: rig.stream_reply(writes, split_bytes=True),
            )
        )
    each = (
        "one ToolCallDelta per call, carrying its whole arguments"
        if wire.whole_tool_arguments
        else "one ToolCallDelta per argument fragment (name carried forward)"
    )
    fail_if(
        f"tool calls must stream {each} and end in the receipt "
        '{"tool_calls": [...]} that execute builds',
        problems,
    )


def idle_events(ctx: CheckContext) -> None:
    _no_stream(ctx, "stream to send idle events in")
    rig = rig_of(ctx)
    probe = driving_probe(ctx)
    answer = answer_for(probe)
    receipt = reference(ctx, answer, probe.interaction, probe.output)
    idle = answer.with_idle_fragments()
    problems = stream_answer(ctx, idle, probe.interaction, receipt, label=idle.name)
    keepalive = rig.framing.keepalive()
    if keepalive is not None:
        for label, options in (
            ("keep-alives", {}),
            ("keep-alives, one byte per write", {"split_bytes": True}),
        ):

            def shape(writes: list[bytes], options: dict[str, Any] = options) -> Reply:
                return rig.stream_reply(with_keepalives(writes, keepalive), **options)

            problems.extend(
                stream_answer(ctx, answer, probe.interaction, receipt, label=label, shape=shape)
            )
    kinds = "keep-alives and events" if keepalive is not None else "events"
    fail_if(
        f"{kinds} that say nothing (empty content, role, usage, ping) must produce no delta and "
        "leave the receipt unchanged",
        problems,
    )


def crlf(ctx: CheckContext) -> None:
    _no_stream(ctx, "line ending to vary")
    probe = driving_probe(ctx)
    answer = answer_for(probe)
    receipt = reference(ctx, answer, probe.interaction, probe.output)
    problems = stream_answer(ctx, answer, probe.interaction, receipt, label="CRLF", line_end="\r\n")
    problems.extend(every_boundary(ctx, answer, probe.interaction, receipt, line_end="\r\n"))
    fail_if("a stream with CRLF line endings must read exactly like one with LF", problems)


# --- cancellation ------------------------------------------------------------------------------


def wire_cancellation(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    if streams_by_default(ctx.new_adapter()):
        raise NotApplicableError(
            "the adapter keeps the port's default execute_streaming, which does not consult "
            "the cancel token (DECISIONS 5)"
        )
    probe = driving_probe(ctx)
    request = request_for(probe.interaction)
    scenarios: list[tuple[str, Reply, int]] = [
        ("cancelled before the server sent a byte", Reply.silence(), 0)
    ]
    if rig.framing.streams:
        opened = rig.prefix_writes(answer_for(probe), IN_BAND_DELTAS)
        idle = rig.idle_write()
        what = "keep-alives" if rig.framing.keepalive() is not None else "events that say nothing"
        scenarios = [
            (
                f"cancelled after {IN_BAND_DELTAS} deltas while the server is silent",
                rig.stream_reply(opened, after="hang"),
                IN_BAND_DELTAS,
            ),
            *scenarios,
            (
                f"cancelled while the server sends only {what}",
                rig.stream_reply(itertools.repeat(Chunk(idle, 0.1))),
                0,
            ),
        ]
    problems: list[str] = []
    for label, reply, deltas in scenarios:
        rig.reply_always(reply)
        before = len(rig.exchanges())
        outcome = _cancel_while_waiting(ctx, label, request, deltas, problems)
        exchanges = rig.exchanges()[before:]
        if exchanges and not outcome.timed_out:  # a deaf adapter is already reported
            exchange = exchanges[-1]
            exchange.wait(CANCEL_DEADLINE)
            if not exchange.client_closed:
                problems.append(
                    f"{label}: the server never saw the connection close "
                    f"(outcome {exchange.outcome!r}); a cancelled call must close it"
                )
    fail_if(
        f"a set cancel token must end the stream within {CANCEL_DEADLINE:g} s, even while the "
        "server sends nothing: close the connection, one Failed{TQX_RUNTIME_CANCELLED}, raise",
        problems,
    )


def _cancel_while_waiting(
    ctx: CheckContext, label: str, request: Any, deltas: int, problems: list[str]
) -> Outcome:
    """Set the token from another thread once ``deltas`` deltas arrived (plus a short wait);
    add the problems with what followed to ``problems``."""
    token = threading.Event()
    set_at: list[float] = []
    seen = threading.Semaphore(0)

    def cancel_soon() -> None:
        for _ in range(deltas):
            if not seen.acquire(timeout=ctx.timeout):
                return
        time.sleep(_CANCEL_AFTER_S)
        set_at.append(time.monotonic())
        token.set()

    def on_event(event: Any) -> None:
        if isinstance(event, (Delta, ToolCallDelta)):
            seen.release()

    threading.Thread(target=cancel_soon, daemon=True).start()
    outcome = run_streaming(
        ctx.new_adapter(),
        request,
        ctx.timeout,
        cancel=token,
        on_event=on_event,
        grace=0.05,
        cutoff=cancel_cutoff(set_at),
    )
    problems.extend(check_cancelled(label, outcome, set_at[0] if set_at else None))
    kinds = [type(event).__name__ for event in outcome.events]
    if deltas and kinds[:deltas] != ["Delta"] * deltas:
        problems.append(
            f"{label}: events {event_kinds(outcome.events)}, expected the {deltas} deltas first"
        )
    return outcome
