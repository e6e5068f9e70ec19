"""The stream half of the transport suite: any wire's traffic, split and framed every way.

The kit plays the model on a loopback server in the wire's own bytes and checks what the
adapter makes of them: content and parallel tool calls split at every byte boundary, one byte
per write, close-delimited bodies, keep-alive comments, CRLF line endings, and cancellation while
the server is silent (DECISIONS 6). The expected events are computed from the kit's
:class:`~templiqx_conformance.wire.Answer`, never from the wire's bytes.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from templiqx_conformance.context import (
    CheckContext,
    NotApplicableError,
    fail_if,
    receipt_diff,
    show,
    streams_by_default,
    validity_problem,
)
from templiqx_conformance.failure_checks import driving_probe
from templiqx_conformance.loopback import Chunk, Reply, sse_comment
from templiqx_conformance.probes import TEXT, TEXT_CAPABILITY, TOOL_CALLING, TOOL_CALLS
from templiqx_conformance.recording import Outcome, describe_error, run_execute, run_streaming
from templiqx_conformance.verdicts import (
    CANCEL_DEADLINE,
    cancel_cutoff,
    check_cancelled,
    delta_sequence_problem,
    event_kinds,
    order_problems,
)
from templiqx_conformance.wire import Answer
from templiqx_conformance.wire_rig import (
    IN_BAND_DELTAS,
    StreamShape,
    WireRig,
    answer_for,
    opening,
    per_frame,
    render,
    request_for,
    with_keepalives,
)
from templiqx_contracts import (
    CompiledInteraction,
    Complete,
    Delta,
    ExecutionReceipt,
    ToolCallDelta,
)
from templiqx_ports import RuntimeAdapter

__all__ = [
    "SPLIT_WINDOW",
    "boundary_replies",
    "content_stream",
    "crlf",
    "keepalive_and_usage",
    "request_shape",
    "rig_of",
    "stream_problems",
    "tool_calls",
    "wire_cancellation",
]

_WORKERS = 8
SPLIT_WINDOW = 48
SPLIT_PAUSE_S = 0.001
_EXAMPLES = 3
_CANCEL_AFTER_S = 0.2


def rig_of(ctx: CheckContext) -> WireRig:
    """The wire rig of a transport check."""
    rig = ctx.rig
    if not isinstance(rig, WireRig):  # pragma: no cover - the runner pairs them
        raise NotApplicableError("the transport checks run only with a transport")
    return rig


def _declares(ctx: CheckContext, capability: str) -> bool:
    return capability in ctx.descriptor().capabilities


def expected_deltas(adapter: RuntimeAdapter, answer: Answer) -> list[Delta | ToolCallDelta]:
    """The deltas ``adapter`` must emit for ``answer`` (none with the default projection)."""
    return [] if streams_by_default(adapter) else answer.expected_deltas()


def reference(
    ctx: CheckContext, answer: Answer, interaction: CompiledInteraction, output: Any
) -> ExecutionReceipt:
    """Execute ``answer`` served whole; its receipt must carry ``output`` and honest validity."""
    rig = rig_of(ctx)
    rig.serve_answer(answer)
    outcome = run_execute(ctx.new_adapter(), request_for(interaction), ctx.timeout)
    receipt = ctx.receipt_of(outcome, f"execute({answer.name})")
    problems = []
    if show(receipt.output, 10**9) != show(output, 10**9):
        problems.append(
            f"{answer.name}: execute produced output {show(receipt.output)}, "
            f"the model answered {show(output)}"
        )
    invalid = validity_problem(interaction, receipt)
    if invalid is not None:
        problems.append(f"{answer.name}: {invalid}")
    fail_if("an answer served whole must become the receipt of that answer", problems)
    return receipt


def stream_problems(
    label: str, outcome: Outcome, expected: list[Any], reference: ExecutionReceipt
) -> list[str]:
    """Problems with a stream that had to succeed with ``expected`` deltas and ``reference``."""
    if outcome.timed_out:
        return [f"{label}: still running after the call deadline"]
    problems = order_problems(label, outcome)
    if outcome.error is not None:
        problems.append(f"{label}: execute_streaming raised {describe_error(outcome.error)}")
        return problems
    deltas = [event for event in outcome.events if isinstance(event, (Delta, ToolCallDelta))]
    mismatch = delta_sequence_problem(deltas, expected)
    if mismatch is not None:
        problems.append(f"{label}: {mismatch}")
    for event in [e for e in outcome.events if isinstance(e, Complete)][-1:]:
        diff = receipt_diff(reference, event.receipt, ("execute", "Complete"))
        if diff:
            problems.append(f"{label}: the Complete receipt differs from execute's:\n{diff}")
    return problems


def stream_answer(
    ctx: CheckContext,
    answer: Answer,
    interaction: CompiledInteraction,
    reference: ExecutionReceipt,
    *,
    label: str,
    line_end: str = "\n",
    shape: StreamShape = per_frame,
) -> list[str]:
    """Stream ``answer`` served as ``shape`` says; the problems with what came out."""
    rig_of(ctx).serve_answer(answer, line_end=line_end, shape=shape)
    adapter = ctx.new_adapter()
    outcome = run_streaming(adapter, request_for(interaction), ctx.timeout)
    return stream_problems(label, outcome, expected_deltas(adapter, answer), reference)


def _bytewise(writes: list[bytes]) -> Reply:
    return Reply.stream(writes, split_bytes=True)


def boundary_replies(data: bytes, window: int = SPLIT_WINDOW) -> list[tuple[str, Reply]]:
    """Replies that, together, put a write boundary at every byte boundary of ``data``.

    Reply ``r`` cuts ``data`` at offsets ``r, r + window, r + 2 * window, ...`` and pauses briefly
    before each piece, so the reader's receive ends there; ``window`` replies cover every offset.
    """
    replies = []
    for residue in range(1, min(window, len(data) - 1) + 1):
        cuts = list(range(residue, len(data), window))
        bounds = [0, *cuts, len(data)]
        pieces = [data[a:b] for a, b in itertools.pairwise(bounds)]
        chunks: list[bytes | Chunk] = [pieces[0]]
        chunks.extend(Chunk(piece, SPLIT_PAUSE_S) for piece in pieces[1:])
        label = f"split at byte offsets {residue}, {residue + window}, ... of {len(data)}"
        replies.append((label, Reply.stream(chunks)))
    return replies


def in_parallel(ctx: CheckContext, count: int, one: Callable[[int], list[str]]) -> list[list[str]]:
    """``one(i)`` for every ``i`` below ``count``, on the kit's worker pool."""
    with ThreadPoolExecutor(max_workers=_WORKERS) as pool:
        return list(pool.map(one, range(count)))


def summarise(title: str, results: list[list[str]]) -> list[str]:
    """``title``: how many of the runs went wrong, with the first few problems as examples."""
    failing = [found for found in results if found]
    if not failing:
        return []
    examples = [found[0] for found in failing[:_EXAMPLES]]
    return [
        f"{title}: {len(failing)} of {len(results)} went wrong, e.g.",
        *(f"  {line}" for line in examples),
    ]


def every_boundary(
    ctx: CheckContext,
    answer: Answer,
    interaction: CompiledInteraction,
    reference: ExecutionReceipt,
    *,
    line_end: str = "\n",
) -> list[str]:
    """Stream ``answer`` with a read boundary at every byte offset (see boundary_replies)."""
    rig = rig_of(ctx)
    data = b"".join(rig.stream_writes(answer, line_end))
    whole = rig.whole_reply(answer)
    request = request_for(interaction)
    cases = boundary_replies(data)

    def one(index: int) -> list[str]:
        label, reply = cases[index]
        base_url = rig.at_prefix(f"/split-{index}", rig.split(reply, whole))
        adapter = ctx.require_adapter(rig.make_adapter_for(base_url), "the adapter factory")
        outcome = run_streaming(adapter, request, ctx.timeout)
        return stream_problems(label, outcome, expected_deltas(adapter, answer), reference)

    crlf = " (CRLF)" if line_end != "\n" else ""
    return summarise(
        f"{answer.name}{crlf}: byte-boundary split patterns", in_parallel(ctx, len(cases), one)
    )


# --- checks ------------------------------------------------------------------------------------


def request_shape(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    wire = rig.wire
    probe = driving_probe(ctx)
    rig.serve(probe)
    request = request_for(probe.interaction)
    before = len(rig.recorded_requests())
    problems = []
    executed = run_execute(ctx.new_adapter(), request, ctx.timeout)
    adapter = ctx.new_adapter()
    streamed = run_streaming(adapter, request, ctx.timeout)
    for name, outcome in (("execute", executed), ("execute_streaming", streamed)):
        if outcome.error is not None:
            problems.append(f"{name} raised {describe_error(outcome.error)}")
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
    streams = not streams_by_default(adapter)
    if len(requests) == 2 and streams and not wire.is_stream_request(requests[1]):
        problems.append('execute_streaming must ask for a stream (e.g. "stream": true)')
    fail_if(
        f"the adapter must send one JSON POST per call to {wire.request_path}, carrying the "
        f"interaction as the {wire.name} wire expects",
        problems,
    )


def content_stream(ctx: CheckContext) -> None:
    probe = driving_probe(ctx)
    answer = answer_for(probe)
    interaction = probe.interaction
    receipt = reference(ctx, answer, interaction, probe.output)
    problems = []
    shapes: list[tuple[str, StreamShape]] = [
        ("one write per event", per_frame),
        ("close-delimited body", lambda writes: Reply.stream(writes, framing="close")),
        ("one byte per write", _bytewise),
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
    wire = rig_of(ctx).wire
    if not wire.tool_calls:
        raise NotApplicableError(f"the {wire.name} wire says its provider sends no tool calls")
    interaction = TOOL_CALLS.interaction
    answers = [answer_for(TOOL_CALLS)]
    if wire.interleaves_tool_calls:
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
                shape=_bytewise,
            )
        )
    fail_if(
        "tool calls must stream one ToolCallDelta per argument fragment (name carried forward) "
        'and end in the receipt {"tool_calls": [...]} that execute builds',
        problems,
    )


def keepalive_and_usage(ctx: CheckContext) -> None:
    probe = driving_probe(ctx)
    answer = answer_for(probe)
    receipt = reference(ctx, answer, probe.interaction, probe.output)
    problems = []
    for label, shape in (
        ("keep-alive", lambda writes: per_frame(with_keepalives(writes))),
        ("keep-alive, one byte per write", lambda writes: _bytewise(with_keepalives(writes))),
    ):
        problems.extend(
            stream_answer(ctx, answer, probe.interaction, receipt, label=label, shape=shape)
        )
    fail_if(
        "keep-alive comments and the wire's non-content events (role, usage, ping) must not "
        "produce events or change the receipt",
        problems,
    )


def crlf(ctx: CheckContext) -> None:
    probe = driving_probe(ctx)
    answer = answer_for(probe)
    receipt = reference(ctx, answer, probe.interaction, probe.output)
    problems = stream_answer(ctx, answer, probe.interaction, receipt, label="CRLF", line_end="\r\n")
    problems.extend(every_boundary(ctx, answer, probe.interaction, receipt, line_end="\r\n"))
    fail_if("a stream with CRLF line endings must read exactly like one with LF", problems)


def wire_cancellation(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    if streams_by_default(ctx.new_adapter()):
        raise NotApplicableError(
            "the adapter keeps the port's default execute_streaming, which does not consult "
            "the cancel token (DECISIONS 5)"
        )
    probe = driving_probe(ctx)
    request = request_for(probe.interaction)
    answer = answer_for(probe)
    opened = render(opening(rig.wire, answer, IN_BAND_DELTAS))
    scenarios: list[tuple[str, Reply, int]] = [
        (
            f"cancelled after {IN_BAND_DELTAS} deltas while the server is silent",
            Reply.stream(opened, after="hang"),
            IN_BAND_DELTAS,
        ),
        ("cancelled before the server sent a byte", Reply.silence(), 0),
        (
            "cancelled while the server sends only keep-alives",
            Reply.stream(itertools.repeat(Chunk(sse_comment("ping"), 0.1))),
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
