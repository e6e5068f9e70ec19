"""Issue #15 item 7 (bounds a hostile server cannot amplify) and the empty-answer decision.

* Tool-call names and ids are capped (256 bytes) and count toward the output bound with the
  arguments; every ``ToolCallDelta`` of a call shares one name string; refusal text counts
  toward the bound too. The hostile case of the issue — a 500 KB name, then 2,000 one-byte
  argument fragments — stays far below 64 MiB (measured with ``tracemalloc``, envelope
  encoding included).
* A text interaction whose model says nothing gets ``""`` (as the official SDK returns), with
  identical receipts streamed and not; a structured one fails ``TQX_RUNTIME_INVALID_RESPONSE``.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from templiqx_conformance.loopback import LoopbackServer, Reply, sse_frame
from templiqx_contracts import Failed, OperationEnvelope, ToolCallDelta
from templiqx_ports import RuntimeFailureCode, RuntimeFailureError
from templiqx_runtime_openai import MAX_TOOL_ID_BYTES, MAX_TOOL_NAME_BYTES, Detail, OpenAIRuntime

Serve = Callable[..., LoopbackServer]
RuntimeFor = Callable[..., OpenAIRuntime]

MiB = 1024 * 1024


def _tool_stream(wire: SimpleNamespace, name: str, fragments: int, id: str = "call_1") -> Reply:
    t = wire.tool
    frames = [sse_frame(wire.chunk(tool_calls=[t(0, id=id, name=name, args="{")]))]
    frames += [sse_frame(wire.chunk(tool_calls=[t(0, args=" ")])) for _ in range(fragments)]
    frames += [
        sse_frame(wire.chunk(tool_calls=[t(0, args="}")])),
        sse_frame(wire.chunk(finish="tool_calls")),
        sse_frame("[DONE]"),
    ]
    return Reply.stream(frames)


def _envelope_bytes(events: list[Any]) -> int:
    envelope = OperationEnvelope.build("execute_contract", stream_events=events)
    return len(msgspec.json.encode(envelope))


def test_the_amplification_case_stays_bounded(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    reply = _tool_stream(wire, "n" * 500_000, 2_000)
    server = serve(reply)
    runtime = runtime_for(server)
    sink = wire.Collector()
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeFailureError) as caught:
            runtime.execute_streaming(wire.request(), sink)
        size = _envelope_bytes(sink.events)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.failure.code is RuntimeFailureCode.INVALID_RESPONSE
    assert caught.value.failure.detail == Detail.tool_field_limit("name", MAX_TOOL_NAME_BYTES)
    assert sink.kinds == ["Failed"]  # failed at the name, before any fragment was emitted
    assert size < MiB
    assert peak < 64 * MiB, f"peak {peak / MiB:.1f} MiB"


def test_a_name_at_the_cap_is_shared_by_every_fragment(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    name = "n" * MAX_TOOL_NAME_BYTES
    server = serve(_tool_stream(wire, name, 2_000))
    runtime = runtime_for(server)
    sink = wire.Collector()
    tracemalloc.start()
    try:
        receipt = runtime.execute_streaming(wire.request(), sink)
        size = _envelope_bytes(sink.events)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    deltas = [event for event in sink.events if isinstance(event, ToolCallDelta)]
    assert len(deltas) == 2_002
    assert all(delta.name is deltas[0].name for delta in deltas)  # one string, never copied
    assert receipt.output == {"tool_calls": [{"id": "call_1", "name": name, "arguments": {}}]}
    assert size < 2 * MiB
    assert peak < 64 * MiB, f"peak {peak / MiB:.1f} MiB"


@pytest.mark.parametrize(
    ("name", "id", "detail"),
    [
        ("n" * (MAX_TOOL_NAME_BYTES + 1), "c", Detail.tool_field_limit("name", 256)),
        ("é" * 129, "c", Detail.tool_field_limit("name", 256)),  # 258 UTF-8 bytes
        ("lookup", "i" * (MAX_TOOL_ID_BYTES + 1), Detail.tool_field_limit("id", 256)),
    ],
)
def test_names_and_ids_over_the_cap_fail_on_both_paths(
    name: str,
    id: str,
    detail: str,
    serve: Serve,
    runtime_for: RuntimeFor,
    wire: SimpleNamespace,
) -> None:
    whole = wire.completion(
        None, finish="tool_calls", tool_calls=[wire.whole_tool_call(id, name, "{}")]
    )
    server = serve([Reply.json(whole), _tool_stream(wire, name, 1, id=id)])
    runtime = runtime_for(server)
    errors = []
    for call in (
        lambda: runtime.execute(wire.request()),
        lambda: runtime.execute_streaming(wire.request(), wire.Collector()),
    ):
        with pytest.raises(RuntimeFailureError) as caught:
            call()
        errors.append(caught.value)
    assert errors[0].failure == errors[1].failure
    assert errors[0].failure.detail == detail


def test_names_and_ids_count_toward_the_output_bound(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    # 200 + 200 bytes of name and id, then 150 of arguments: over a 500-byte bound.
    server = serve(_tool_stream(wire, "n" * 200, 148, id="i" * 200))
    runtime = runtime_for(server, max_response_bytes=500)
    with pytest.raises(RuntimeFailureError) as caught:
        runtime.execute_streaming(wire.request(), wire.Collector())
    assert caught.value.failure.detail == Detail.response_limit(500)


def test_refusal_text_counts_toward_the_output_bound(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    frames = [wire.chunk(refusal="r" * 300) for _ in range(4)] + [wire.chunk(finish="stop")]
    server = serve(Reply.sse(frames))
    runtime = runtime_for(server, max_response_bytes=1000)
    sink = wire.Collector()
    with pytest.raises(RuntimeFailureError) as caught:
        runtime.execute_streaming(wire.request(), sink)
    assert caught.value.failure.code is RuntimeFailureCode.INVALID_RESPONSE
    assert caught.value.failure.detail == Detail.response_limit(1000)
    assert sink.events == [Failed(code=caught.value.code, message=str(caught.value))]


# --- the empty answer ---------------------------------------------------------------------


EMPTY_STREAMS: dict[str, list[Any]] = {
    "no content key at all": [{"choices": [{"index": 0, "delta": {"role": "assistant"}}]}],
    "empty content": [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}],
    "null content": [{"choices": [{"index": 0, "delta": {"content": None}}]}],
}


@pytest.mark.parametrize("case", list(EMPTY_STREAMS))
def test_an_empty_text_answer_is_the_empty_string_on_both_paths(
    case: str, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    server = serve(
        [
            Reply.json(wire.completion(None)),
            Reply.sse([*EMPTY_STREAMS[case], finish, wire.usage_chunk()]),
        ]
    )
    runtime = runtime_for(server)
    request = wire.request(structured=False, schema={"type": "string"})
    plain = runtime.execute(request)
    sink = wire.Collector()
    streamed = runtime.execute_streaming(request, sink)
    assert plain.output == streamed.output == ""
    assert plain == streamed  # identical receipts, fingerprints included
    assert sink.kinds == ["Complete"]
    assert plain.output_schema_valid is True


def test_an_empty_structured_answer_is_invalid_on_both_paths(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(
        [
            Reply.json(wire.completion("")),
            Reply.sse([wire.chunk("", role="assistant"), wire.chunk(finish="stop")]),
        ]
    )
    runtime = runtime_for(server)
    errors = []
    for call in (
        lambda: runtime.execute(wire.request()),
        lambda: runtime.execute_streaming(wire.request(), wire.Collector()),
    ):
        with pytest.raises(RuntimeFailureError) as caught:
            call()
        errors.append(caught.value)
    assert errors[0].failure == errors[1].failure
    assert errors[0].failure.code is RuntimeFailureCode.INVALID_RESPONSE
    assert errors[0].failure.detail == Detail.NO_CONTENT
    assert "no content for a structured-output contract" in (errors[0].failure.remedy or "")
