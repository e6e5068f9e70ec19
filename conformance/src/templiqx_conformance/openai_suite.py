"""The transport suite for OpenAI-compatible HTTP adapters.

The kit plays the model on a loopback server and checks what the adapter makes of real-looking
traffic: content and parallel tool calls split at every byte boundary, keep-alive comments and
usage chunks, CRLF line endings, in-band errors, truncated streams, the HTTP fault matrix, the
response-size bounds (DECISIONS 9) and cancellation while the server is silent (DECISIONS 6).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from templiqx_conformance.context import (
    Check,
    CheckContext,
    NotApplicableError,
    receipt_diff,
    show,
)
from templiqx_conformance.core_checks import (
    CANCEL_DEADLINE,
    check_cancelled,
    event_kinds,
    order_problems,
)
from templiqx_conformance.loopback import Chunk, RecordedRequest, Reply
from templiqx_conformance.openai_faults import (
    check_fault_matrix,
    check_in_band_error,
    check_size_bounds,
    check_truncation,
)
from templiqx_conformance.openai_rig import (
    COMPLETIONS_PATH,
    OpenAIRig,
    declares,
    fail_if,
    hanging_after,
    is_stream_request,
    main_probe,
    request_for,
    rig_of,
    served_for,
    ticking,
)
from templiqx_conformance.openai_streams import (
    ServedCompletion,
    ToolCallSpec,
    content_completion,
    stream_bytes,
    tool_call_completion,
)
from templiqx_conformance.probes import (
    KIT_COMPILER,
    STRUCTURED_OUTPUT,
    TEXT,
    TEXT_CAPABILITY,
)
from templiqx_conformance.recording import Outcome, describe_error, run_execute, run_streaming
from templiqx_conformance.schema import satisfies
from templiqx_contracts import (
    CompiledInteraction,
    CompiledMessage,
    Complete,
    Delta,
    ExecutionReceipt,
    ToolCallDelta,
)
from templiqx_ports import RuntimeAdapter

__all__ = ["OPENAI_CHECKS", "OpenAIRig", "tool_interaction"]

_WORKERS = 8
SPLIT_WINDOW = 48
SPLIT_PAUSE_S = 0.001
_EXAMPLES = 3

TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tool_calls": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "name": {"type": "string"},
                    "arguments": {"type": "object"},
                },
                "required": ["id", "name", "arguments"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["tool_calls"],
    "additionalProperties": False,
}

WEATHER = ToolCallSpec(
    id="call_kit_weather_01",
    name="get_weather",
    argument_fragments=('{"ci', 'ty": "Edi', "nburgh", '", "units', '": "c"}'),
)
STOCK = ToolCallSpec(
    id="call_kit_stock_02",
    name="get_stock_price",
    argument_fragments=('{"tick', 'er": "AA', 'PL", "exchange": ', '"NASDAQ"}'),
)


def tool_interaction() -> CompiledInteraction:
    """A structured interaction the model answers with tool calls."""
    return CompiledInteraction(
        compiler=KIT_COMPILER,
        contract_id="conformance-tools",
        contract_version="0.2.0",
        messages=[
            CompiledMessage(role="system", content="Use the tools to answer."),
            CompiledMessage(role="user", content="Weather in Edinburgh and the AAPL price?"),
        ],
        output_schema=TOOL_SCHEMA,
        required_capabilities=[STRUCTURED_OUTPUT],
        target_capabilities=[STRUCTURED_OUTPUT],
        runtime_policy={"temperature": 0},
        extensions={},
    )


# --- helpers ------------------------------------------------------------------------------


def _reference(
    ctx: CheckContext, served: ServedCompletion, interaction: CompiledInteraction
) -> ExecutionReceipt:
    """Execute ``served`` whole; its receipt must carry the expected output and validity."""
    rig = rig_of(ctx)
    rig.serve_completion(served)
    outcome = run_execute(ctx.new_adapter(), request_for(interaction), ctx.timeout)
    receipt = ctx.receipt_of(outcome, f"execute({served.name})")
    problems = []
    if show(receipt.output, 10**9) != show(served.output, 10**9):
        problems.append(
            f"{served.name}: execute produced output {show(receipt.output)}, "
            f"the model answered {show(served.output)}"
        )
    truth = satisfies(interaction.output_schema, receipt.output)
    if receipt.output_schema_valid is not truth:
        problems.append(
            f"{served.name}: output_schema_valid={receipt.output_schema_valid} but the output "
            f"{'satisfies' if truth else 'violates'} the schema"
        )
    fail_if("a completion served whole must become the receipt of its answer", problems)
    return receipt


def _expected_deltas(adapter: RuntimeAdapter, served: ServedCompletion) -> list[Any]:
    if type(adapter).execute_streaming is RuntimeAdapter.execute_streaming:
        return []  # the port's default streams nothing but the Complete
    return list(served.deltas)


def _stream_problems(
    label: str, outcome: Outcome, expected: list[Any], reference: ExecutionReceipt
) -> list[str]:
    if outcome.timed_out:
        return [f"{label}: still running after the call deadline"]
    problems = order_problems(label, outcome)
    if outcome.error is not None:
        problems.append(f"{label}: execute_streaming raised {describe_error(outcome.error)}")
        return problems
    deltas = [event for event in outcome.events if isinstance(event, (Delta, ToolCallDelta))]
    if deltas != expected:
        problems.append(f"{label}: {_delta_mismatch(deltas, expected)}")
    completes = [event for event in outcome.events if isinstance(event, Complete)]
    for event in completes[-1:]:
        diff = receipt_diff(reference, event.receipt, ("execute", "Complete"))
        if diff:
            problems.append(f"{label}: the Complete receipt differs from execute's:\n{diff}")
    return problems


def _delta_mismatch(got: list[Any], expected: list[Any]) -> str:
    for index, (a, b) in enumerate(zip(got, expected, strict=False)):
        if a != b:
            return (
                f"event {index} is {show(_plain(a))}, expected {show(_plain(b))} "
                f"(one delta per non-empty fragment, in arrival order)"
            )
    return (
        f"{len(got)} delta event(s) where the stream carried {len(expected)} non-empty "
        "fragment(s) (one delta per non-empty fragment)"
    )


def _plain(event: Any) -> Any:
    if isinstance(event, Delta):
        return {"kind": "Delta", "text": event.text}
    if isinstance(event, ToolCallDelta):
        return {"kind": "ToolCallDelta", "name": event.name, "arguments": event.arguments_fragment}
    return type(event).__name__


def _stream_served(
    ctx: CheckContext,
    served: ServedCompletion,
    interaction: CompiledInteraction,
    reference: ExecutionReceipt,
    *,
    label: str,
    line_end: str = "\n",
    shape: Callable[[list[bytes]], Reply] | None = None,
) -> list[str]:
    rig = rig_of(ctx)
    if shape is None:
        rig.serve_completion(served, line_end=line_end)
    else:
        rig.serve_completion(served, line_end=line_end, shape=shape)
    adapter = ctx.new_adapter()
    outcome = run_streaming(adapter, request_for(interaction), ctx.timeout)
    return _stream_problems(label, outcome, _expected_deltas(adapter, served), reference)


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


def _every_boundary(
    ctx: CheckContext,
    served: ServedCompletion,
    interaction: CompiledInteraction,
    reference: ExecutionReceipt,
    *,
    line_end: str = "\n",
) -> list[str]:
    """Stream ``served`` with a read boundary at every byte offset (see boundary_replies)."""
    rig = rig_of(ctx)
    data = b"".join(stream_bytes(served.frames, line_end=line_end))
    request = request_for(interaction)
    cases = boundary_replies(data)

    def one(index: int) -> list[str]:
        label, reply = cases[index]
        prefix = f"/split-{index}"
        rig.server.route(
            prefix + COMPLETIONS_PATH,
            lambda rec: reply if is_stream_request(rec) else Reply.json(served.whole),
        )
        adapter = ctx.require_adapter(
            rig.make_adapter_for(rig.server.base_url + prefix + "/v1"), "the adapter factory"
        )
        outcome = run_streaming(adapter, request, ctx.timeout)
        return _stream_problems(label, outcome, _expected_deltas(adapter, served), reference)

    with ThreadPoolExecutor(max_workers=_WORKERS) as pool:
        results = list(pool.map(one, range(len(cases))))
    failing = [found for found in results if found]
    if not failing:
        return []
    examples = [found[0] for found in failing[:_EXAMPLES]]
    crlf = " (CRLF)" if line_end != "\n" else ""
    return [
        f"{served.name}{crlf}: {len(failing)} of {len(results)} byte-boundary split patterns "
        "went wrong, e.g.",
        *(f"  {line}" for line in examples),
    ]


def _request_shape(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    probe = main_probe(ctx)
    rig.serve(probe)
    request = request_for(probe.interaction)
    before = len(rig.server.requests)
    problems = []
    executed = run_execute(ctx.new_adapter(), request, ctx.timeout)
    adapter = ctx.new_adapter()
    streamed = run_streaming(adapter, request, ctx.timeout)
    for name, outcome in (("execute", executed), ("execute_streaming", streamed)):
        if outcome.error is not None:
            problems.append(f"{name} raised {describe_error(outcome.error)}")
    requests = rig.server.requests[before:]
    if len(requests) != 2:
        problems.append(
            f"one call must be one HTTP request (adapters never retry): saw {len(requests)} "
            "request(s) for one execute and one execute_streaming"
        )
    expected_messages = [
        {"role": message.role, "content": message.content} for message in probe.interaction.messages
    ]
    for name, recorded in zip(("execute", "execute_streaming"), requests, strict=False):
        problems.extend(_shape_problems(name, recorded, expected_messages))
    if len(requests) == 2 and is_stream_request(requests[0]):
        problems.append('execute must not ask for a stream ("stream": true)')
    streams = type(adapter).execute_streaming is not RuntimeAdapter.execute_streaming
    if len(requests) == 2 and streams and not is_stream_request(requests[1]):
        problems.append('execute_streaming must ask for a stream ("stream": true in the body)')
    fail_if(
        "the adapter must POST the interaction's messages as JSON to {base_url}/chat/completions",
        problems,
    )


def _shape_problems(
    name: str, request: RecordedRequest, expected_messages: list[dict[str, str]]
) -> list[str]:
    problems = []
    if request.method != "POST" or request.path != COMPLETIONS_PATH:
        problems.append(
            f"{name}: sent {request.method} {request.path}, expected POST {COMPLETIONS_PATH} "
            "(the factory received the base URL ending in /v1)"
        )
    content_type = (request.header("Content-Type") or "").lower()
    if "application/json" not in content_type:
        problems.append(f"{name}: Content-Type is {content_type!r}, expected application/json")
    body = request.json
    if not isinstance(body, dict):
        problems.append(f"{name}: the body is not a JSON object")
        return problems
    sent = body.get("messages")
    trimmed = (
        [{"role": m.get("role"), "content": m.get("content")} for m in sent if isinstance(m, dict)]
        if isinstance(sent, list)
        else None
    )
    if trimmed != expected_messages:
        problems.append(
            f"{name}: messages {show(sent)} must be the interaction's messages "
            f"{show(expected_messages)}, in order"
        )
    return problems


def _content_stream(ctx: CheckContext) -> None:
    probe = main_probe(ctx)
    served = served_for(probe)
    interaction = probe.interaction
    reference = _reference(ctx, served, interaction)
    problems = []
    shapes: list[tuple[str, Callable[[list[bytes]], Reply]]] = [
        ("one write per event", Reply.stream),
        ("close-delimited body", lambda writes: Reply.stream(writes, framing="close")),
        ("one byte per write", lambda writes: Reply.stream(writes, split_bytes=True)),
    ]
    for label, shape in shapes:
        problems.extend(
            _stream_served(ctx, served, interaction, reference, label=label, shape=shape)
        )
    problems.extend(_every_boundary(ctx, served, interaction, reference))
    if declares(ctx, TEXT_CAPABILITY) and probe is not TEXT:
        text_reference = _reference(ctx, served_for(TEXT), TEXT.interaction)
        problems.extend(
            _stream_served(ctx, served_for(TEXT), TEXT.interaction, text_reference, label="text")
        )
        cut = content_completion("text-length", TEXT.content, TEXT.output, finish_reason="length")
        cut_reference = _reference(ctx, cut, TEXT.interaction)
        problems.extend(
            _stream_served(
                ctx, cut, TEXT.interaction, cut_reference, label="text cut at the token limit"
            )
        )
    fail_if(
        "a content stream must give one Delta per content fragment and the execute receipt, "
        "however the bytes are split",
        problems,
    )


def _tool_calls(ctx: CheckContext) -> None:
    if not declares(ctx, STRUCTURED_OUTPUT):
        raise NotApplicableError("tool calls are exercised through a structured_output request")
    interaction = tool_interaction()
    problems = []
    for served in (
        tool_call_completion("parallel-tool-calls", (WEATHER, STOCK)),
        tool_call_completion("interleaved-tool-calls", (WEATHER, STOCK), interleaved=True),
    ):
        reference = _reference(ctx, served, interaction)
        problems.extend(_stream_served(ctx, served, interaction, reference, label=f"{served.name}"))
        problems.extend(
            _stream_served(
                ctx,
                served,
                interaction,
                reference,
                label=f"{served.name}, one byte per write",
                shape=lambda writes: Reply.stream(writes, split_bytes=True),
            )
        )
    fail_if(
        "tool calls must stream one ToolCallDelta per argument fragment (name carried forward) "
        'and end in the receipt {"tool_calls": [...]} that execute builds',
        problems,
    )


def _keepalive_and_usage(ctx: CheckContext) -> None:
    probe = main_probe(ctx)
    plain = served_for(probe)
    served = content_completion(probe.name, probe.content, probe.output, keepalive=True)
    reference = _reference(ctx, plain, probe.interaction)
    problems = _stream_served(ctx, served, probe.interaction, reference, label="keep-alive")
    problems.extend(
        _stream_served(
            ctx,
            served,
            probe.interaction,
            reference,
            label="keep-alive, one byte per write",
            shape=lambda writes: Reply.stream(writes, split_bytes=True),
        )
    )
    fail_if(
        "keep-alive comments, the role chunk and the usage chunk must not produce events or "
        "change the receipt",
        problems,
    )


def _crlf(ctx: CheckContext) -> None:
    probe = main_probe(ctx)
    served = served_for(probe)
    reference = _reference(ctx, served, probe.interaction)
    problems = _stream_served(
        ctx, served, probe.interaction, reference, label="CRLF", line_end="\r\n"
    )
    problems.extend(_every_boundary(ctx, served, probe.interaction, reference, line_end="\r\n"))
    fail_if("a stream with CRLF line endings must read exactly like one with LF", problems)


def _cancel_midstream(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    adapter = ctx.new_adapter()
    if type(adapter).execute_streaming is RuntimeAdapter.execute_streaming:
        raise NotApplicableError(
            "the adapter keeps the port's default execute_streaming, which does not consult "
            "the cancel token (DECISIONS 5)"
        )
    probe = main_probe(ctx)
    request = request_for(probe.interaction)
    served = served_for(probe)
    opening = stream_bytes(served.frames[:3])
    scenarios: list[tuple[str, Reply, str]] = [
        ("cancelled after two deltas while the server is silent", hanging_after(opening), "delta"),
        ("cancelled before the server sent a byte", Reply.silence(), "time"),
        ("cancelled while the server sends only keep-alives", ticking(b": ping\n\n", 0.1), "time"),
    ]
    problems: list[str] = []
    for label, reply, trigger in scenarios:
        rig.reply_always(reply)
        before = len(rig.server.exchanges)
        token = threading.Event()
        set_at: list[float] = []
        seen = [0]

        def cancel_soon(token: threading.Event = token, set_at: list[float] = set_at) -> None:
            time.sleep(0.2)
            set_at.append(time.monotonic())
            token.set()

        def on_event(event: Any, trigger: str = trigger, seen: list[int] = seen) -> None:
            if trigger == "delta" and isinstance(event, Delta):
                seen[0] += 1
                if seen[0] == 2:
                    threading.Thread(target=cancel_soon, daemon=True).start()

        if trigger != "delta":
            threading.Thread(target=cancel_soon, daemon=True).start()
        outcome = run_streaming(
            ctx.new_adapter(), request, ctx.timeout, cancel=token, on_event=on_event, grace=0.05
        )
        if outcome.timed_out:
            problems.append(f"{label}: still running {ctx.timeout:g} s later")
            continue
        problems.extend(check_cancelled(label, outcome, set_at[0] if set_at else None))
        exchanges = rig.server.exchanges[before:]
        if exchanges:
            exchange = exchanges[-1]
            exchange.wait(CANCEL_DEADLINE)
            if not exchange.client_closed:
                problems.append(
                    f"{label}: the server never saw the connection close "
                    f"(outcome {exchange.outcome!r}); a cancelled call must close it"
                )
        if trigger == "delta":
            kinds = [type(event).__name__ for event in outcome.events]
            if kinds[:2] != ["Delta", "Delta"]:
                problems.append(
                    f"{label}: events {event_kinds(outcome.events)}, expected the two deltas first"
                )
    fail_if(
        f"a set cancel token must end the stream within {CANCEL_DEADLINE:g} s, even while the "
        "server sends nothing: close the connection, one Failed{TQX_RUNTIME_CANCELLED}, raise",
        problems,
    )


OPENAI_CHECKS: tuple[Check, ...] = (
    Check(
        "transport.request_shape",
        "one POST of the interaction's messages to {base_url}/chat/completions per call",
        _request_shape,
        ("openai",),
    ),
    Check(
        "transport.content_stream",
        "content streams give one Delta per fragment and the execute receipt, any byte split",
        _content_stream,
        ("openai",),
    ),
    Check(
        "transport.tool_calls",
        "parallel tool calls stream ToolCallDeltas and end in the execute receipt",
        _tool_calls,
        ("openai",),
    ),
    Check(
        "transport.keepalive_and_usage",
        "keep-alive comments and usage chunks produce no events",
        _keepalive_and_usage,
        ("openai",),
    ),
    Check(
        "transport.crlf",
        "CRLF line endings read like LF, split at every byte boundary",
        _crlf,
        ("openai",),
    ),
    Check(
        "transport.in_band_error",
        "an in-band error event fails the call with one Failed",
        check_in_band_error,
        ("openai",),
    ),
    Check(
        "transport.truncation",
        "a truncated response fails instead of completing",
        check_truncation,
        ("openai",),
    ),
    Check(
        "transport.fault_matrix",
        "HTTP and payload faults map to stable codes on both paths, without retries",
        check_fault_matrix,
        ("openai",),
    ),
    Check(
        "transport.size_bounds",
        "oversized bodies, outputs, lines and streams fail naming the limit",
        check_size_bounds,
        ("openai",),
    ),
    Check(
        "transport.cancellation",
        "a set cancel token ends a silent stream within 1 s and closes the connection",
        _cancel_midstream,
        ("openai",),
    ),
)
