"""The seven streaming proofs of adapters.md §6, each a named test, against a loopback server.

Every proof runs on both twins of the runtime (the ``twin`` fixture): the synchronous port and
the native async one (``aexecute_streaming``), with one test body.
"""

from __future__ import annotations

import itertools
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from templiqx_conformance.loopback import Chunk, LoopbackServer, Reply, filler, sse_frame
from templiqx_contracts import Complete, Delta, Failed, ToolCallDelta, fingerprint
from templiqx_ports import RuntimeFailureCode, RuntimeFailureError, validate_event_order
from templiqx_runtime_openai import OpenAIRuntime, build_body

from .conftest import Twin

Serve = Callable[..., LoopbackServer]
RuntimeFor = Callable[..., OpenAIRuntime]


def run_stream(
    twin: Twin, runtime: OpenAIRuntime, request: Any, sink: Any, cancel: Any = None
) -> tuple[Any, RuntimeFailureError | None]:
    try:
        return twin.execute_streaming(runtime, request, sink, cancel=cancel), None
    except RuntimeFailureError as error:
        return None, error


def assert_quiet_after_return(sink: Any, wait_s: float = 0.15) -> None:
    """The sink is never called after execute_streaming has returned or raised."""
    count = len(sink.events)
    time.sleep(wait_s)
    assert len(sink.events) == count


# --- 1 ---------------------------------------------------------------------------------------


def test_proof_1_delta_ordering(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(Reply.sse(wire.content_stream('{"ok"', ":", "true}")))
    sink = wire.Collector()
    receipt = twin.execute_streaming(runtime_for(server), wire.request(), sink)

    validate_event_order(sink.events)
    assert sink.events[:3] == [Delta(text='{"ok"'), Delta(text=":"), Delta(text="true}")]
    assert sink.kinds == ["Delta", "Delta", "Delta", "Complete"]  # role/finish/usage: no Delta
    assert "".join(e.text for e in sink.events if isinstance(e, Delta)) == '{"ok":true}'
    assert receipt.output == {"ok": True}
    assert receipt.output_schema_valid is True
    assert sink.events[-1] == Complete.of(receipt)
    assert sink.threads == {threading.get_ident()}  # delivered on the caller's thread
    assert_quiet_after_return(sink)


# --- 2 ---------------------------------------------------------------------------------------


def interleaved_tool_stream(wire: SimpleNamespace) -> list[dict[str, Any]]:
    t = wire.tool
    return [
        wire.chunk(role="assistant", tool_calls=[t(0, id="call_a", name="get_weather", args="")]),
        wire.chunk(tool_calls=[t(1, id="call_b", name="get_time", args="")]),
        wire.chunk(tool_calls=[t(0, args='{"city"')]),
        wire.chunk(tool_calls=[t(1, args='{"zone":')]),
        wire.chunk(tool_calls=[t(0, args=': "Edinburgh"}')]),
        wire.chunk(tool_calls=[t(1, args=' "UTC"}')]),
        wire.chunk(finish="tool_calls"),
        wire.usage_chunk(),
    ]


def test_proof_2_tool_call_fragment_assembly(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    whole = wire.completion(
        None,
        finish="tool_calls",
        tool_calls=[
            wire.whole_tool_call("call_a", "get_weather", '{"city": "Edinburgh"}'),
            wire.whole_tool_call("call_b", "get_time", '{"zone": "UTC"}'),
        ],
    )
    server = serve([Reply.sse(interleaved_tool_stream(wire)), Reply.json(whole)])
    runtime = runtime_for(server)
    sink = wire.Collector()
    receipt = twin.execute_streaming(runtime, wire.request(), sink)

    validate_event_order(sink.events)
    assert sink.events[:-1] == [
        ToolCallDelta(name="get_weather", arguments_fragment='{"city"'),
        ToolCallDelta(name="get_time", arguments_fragment='{"zone":'),
        ToolCallDelta(name="get_weather", arguments_fragment=': "Edinburgh"}'),
        ToolCallDelta(name="get_time", arguments_fragment=' "UTC"}'),
    ]
    assert receipt.output == {
        "tool_calls": [
            {"id": "call_a", "name": "get_weather", "arguments": {"city": "Edinburgh"}},
            {"id": "call_b", "name": "get_time", "arguments": {"zone": "UTC"}},
        ]
    }
    # Validity is computed against the contract's schema like any output (DECISIONS 7).
    assert receipt.output_schema_valid is False
    # The non-streamed message with the same calls gives the identical receipt.
    assert twin.execute(runtime, wire.request()) == receipt


def test_proof_2_unparseable_tool_arguments_are_invalid_response(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    raw = '{"city": "RAW-ARGUMENTS-TEXT'  # never closed: not JSON
    t = wire.tool
    frames = [
        wire.chunk(tool_calls=[t(0, id="c", name="f", args=raw[:9])]),
        wire.chunk(tool_calls=[t(0, args=raw[9:])]),
        wire.chunk(finish="tool_calls"),
    ]
    whole = wire.completion(
        None, finish="tool_calls", tool_calls=[wire.whole_tool_call("c", "f", raw)]
    )
    server = serve([Reply.sse(frames), Reply.json(whole)])
    runtime = runtime_for(server)
    sink = wire.Collector()
    _, streamed = run_stream(twin, runtime, wire.request(), sink)
    with pytest.raises(RuntimeFailureError) as caught:
        twin.execute(runtime, wire.request())
    plain = caught.value

    assert streamed is not None
    for error in (streamed, plain):
        assert error.failure.code is RuntimeFailureCode.INVALID_RESPONSE
        assert error.failure.detail == "model tool call arguments were not valid JSON"
        assert "RAW-ARGUMENTS-TEXT" not in str(error)
        assert "RAW-ARGUMENTS-TEXT" not in repr(error.failure)
    assert plain.failure == streamed.failure  # same code, detail and fingerprint on both paths
    # The fragments were streamed as they came; the failure is the one terminal event after them.
    assert sink.events == [
        ToolCallDelta(name="f", arguments_fragment=raw[:9]),
        ToolCallDelta(name="f", arguments_fragment=raw[9:]),
        Failed(code="TQX_RUNTIME_INVALID_RESPONSE", message=str(streamed)),
    ]
    assert "RAW-ARGUMENTS-TEXT" not in sink.events[-1].message


# --- 3 ---------------------------------------------------------------------------------------


def _fault_cases(wire: SimpleNamespace) -> dict[str, tuple[Reply, dict[str, Any], str | None]]:
    ok = wire.content_stream('{"ok":', "true}")
    return {
        "success": (Reply.sse(ok), {}, None),
        "http_error_before_stream": (Reply.error(503), {}, "TQX_RUNTIME_UNAVAILABLE"),
        "in_band_error": (
            Reply.sse(
                [wire.chunk('{"ok":'), {"error": {"message": "overloaded", "type": "server_error"}}]
            ),
            {},
            "TQX_RUNTIME_UNAVAILABLE",
        ),
        "malformed_frame": (
            Reply.sse([wire.chunk('{"ok":'), "{not json"]),
            {},
            "TQX_RUNTIME_INVALID_RESPONSE",
        ),
        "drop_without_done": (
            Reply.sse([wire.chunk('{"ok":'), wire.chunk("true}")], done=False, after="drop"),
            {},
            "TQX_RUNTIME_UNAVAILABLE",
        ),
        "clean_close_without_done": (
            Reply.sse([wire.chunk('{"ok":'), wire.chunk("true}")], done=False),
            {},
            "TQX_RUNTIME_UNAVAILABLE",
        ),
        "deadline": (
            Reply.stream([sse_frame(wire.chunk('{"ok":'))], after="hang"),
            {"timeout_ms": 300},
            "TQX_RUNTIME_TIMEOUT",
        ),
        "oversize": (
            Reply.sse([wire.chunk("x" * 600), wire.chunk("y" * 600)]),
            {"max_response_bytes": 1000},
            "TQX_RUNTIME_INVALID_RESPONSE",
        ),
        "cancel": (Reply.stream([sse_frame(wire.chunk('{"ok":'))], after="hang"), {}, "cancel"),
    }


FAULTS = [
    "success",
    "http_error_before_stream",
    "in_band_error",
    "malformed_frame",
    "drop_without_done",
    "clean_close_without_done",
    "deadline",
    "oversize",
    "cancel",
]


@pytest.mark.parametrize("case", FAULTS)
def test_proof_3_exactly_one_terminal_event(
    twin: Twin, case: str, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    reply, settings, expected = _fault_cases(wire)[case]
    server = serve(reply)
    cancel = threading.Event()
    sink = wire.Collector()
    if expected == "cancel":
        threading.Timer(0.2, cancel.set).start()
        expected = "TQX_RUNTIME_CANCELLED"
    receipt, error = run_stream(twin, runtime_for(server, **settings), wire.request(), sink, cancel)

    validate_event_order(sink.events)
    terminals = [e for e in sink.events if isinstance(e, (Complete, Failed))]
    assert len(terminals) == 1
    assert terminals[0] is sink.events[-1]
    if expected is None:
        assert error is None
        assert sink.events[-1] == Complete.of(receipt)
    else:
        assert receipt is None
        assert error is not None
        assert error.code == expected
        assert sink.events[-1] == Failed(code=expected, message=str(error))
    assert_quiet_after_return(sink)


# --- 4 ---------------------------------------------------------------------------------------

PROVIDER_BODY_MARKER = "PROVIDER-BODY-TEXT-shown-sanitised"


def _leaky_error(status: int, headers: list[tuple[str, str]], key: str) -> Reply:
    body = {"error": {"message": f"{PROVIDER_BODY_MARKER} key={key}", "type": "x"}}
    return Reply.error(status, headers=headers, body=body)


@pytest.mark.parametrize(
    ("status", "headers", "code", "retry"),
    [
        (429, [("Retry-After", "3")], RuntimeFailureCode.RATE_LIMITED, 3000),
        (
            429,
            [("x-retry-after-ms", "1500"), ("Retry-After", "9")],
            RuntimeFailureCode.RATE_LIMITED,
            1500,
        ),
        (
            429,
            [("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT")],
            RuntimeFailureCode.RATE_LIMITED,
            0,
        ),
        (503, [("Retry-After", "3")], RuntimeFailureCode.UNAVAILABLE, 3000),
        (500, [], RuntimeFailureCode.UNAVAILABLE, None),
        (400, [], RuntimeFailureCode.PERMANENT, None),
        (401, [], RuntimeFailureCode.PERMANENT, None),
        (404, [], RuntimeFailureCode.PERMANENT, None),
        (307, [("Location", "http://127.0.0.1:9/elsewhere")], RuntimeFailureCode.PERMANENT, None),
    ],
)
def test_proof_4_failure_projection_of_http_errors(
    twin: Twin,
    status: int,
    headers: list[tuple[str, str]],
    code: RuntimeFailureCode,
    retry: int | None,
    serve: Serve,
    runtime_for: RuntimeFor,
    wire: SimpleNamespace,
) -> None:
    server = serve(_leaky_error(status, headers, wire.CANARY_KEY))
    sink = wire.Collector()
    _, error = run_stream(twin, runtime_for(server), wire.request(), sink)

    assert error is not None
    assert error.failure.code is code
    assert error.failure.retry_after_ms == retry
    assert error.failure.adapter_id == "templiqx-runtime-openai"
    assert sink.events == [Failed(code=error.code, message=str(error))]
    assert PROVIDER_BODY_MARKER not in error.failure.detail  # the fingerprinted part
    # DECISIONS 20: the server's message is shown (not for a redirect), its key redacted.
    assert (PROVIDER_BODY_MARKER in str(error)) is (status != 307)
    for text in (str(error), error.failure.detail, sink.events[0].message):
        assert wire.CANARY_KEY not in text
    assert len(server.requests) == 1  # no retries, no redirect followed


def test_proof_4_failure_projection_mid_stream(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    malformed = f'{{"error": {PROVIDER_BODY_MARKER}'
    server = serve(
        [
            Reply.sse([wire.chunk('{"ok"'), wire.chunk(":"), malformed]),
            Reply.sse([wire.chunk('{"ok"')], done=False, after="drop"),
        ]
    )
    runtime = runtime_for(server)
    for code, deltas in (
        (RuntimeFailureCode.INVALID_RESPONSE, 2),
        (RuntimeFailureCode.UNAVAILABLE, 1),
    ):
        sink = wire.Collector()
        _, error = run_stream(twin, runtime, wire.request(), sink)
        assert error is not None
        assert error.failure.code is code
        assert sink.kinds == ["Delta"] * deltas + ["Failed"]
        failed = sink.events[-1]
        assert failed == Failed(code=error.code, message=str(error))
        assert PROVIDER_BODY_MARKER not in failed.message
        assert wire.CANARY_KEY not in failed.message


# --- 5 ---------------------------------------------------------------------------------------


def cancel_once_requested(server: Any, trigger: Callable[[], None], after: float = 0.3) -> None:
    """Call ``trigger`` ``after`` seconds once the server holds the request (not from the start).

    The proofs are about cancelling a call the server is sitting on; on a loaded machine the
    first call's set-up can take longer than a fixed timer, which would cancel before the
    request was even sent and prove nothing about the connection.
    """

    def wait_then_trigger() -> None:
        deadline = time.monotonic() + 30.0
        while not server.exchanges and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(after)
        trigger()

    threading.Thread(target=wait_then_trigger, daemon=True).start()


def test_proof_5_cancellation_against_a_silent_server(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(Reply.silence())
    cancel = threading.Event()
    sink = wire.Collector()
    set_at: list[float] = []

    def trigger() -> None:
        set_at.append(time.monotonic())
        cancel.set()

    cancel_once_requested(server, trigger)
    _, error = run_stream(
        twin, runtime_for(server, timeout_ms=30_000), wire.request(), sink, cancel
    )
    returned = time.monotonic()

    assert error is not None
    assert error.failure.code is RuntimeFailureCode.CANCELLED
    assert returned - set_at[0] < 1.0
    assert sink.events == [Failed(code="TQX_RUNTIME_CANCELLED", message=str(error))]
    exchange = server.exchanges[0]
    assert exchange.wait(1.0)
    assert exchange.client_closed
    assert exchange.client_closed_at is not None
    assert exchange.client_closed_at - set_at[0] < 1.0
    assert_quiet_after_return(sink)


def test_proof_5_cancellation_from_inside_the_sink_after_two_deltas(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    ticks = (Chunk(sse_frame(wire.chunk(f"t{i} ")), 0.1) for i in itertools.count())
    server = serve(Reply.stream(ticks))
    cancel = threading.Event()
    set_at: list[float] = []

    def on_event(sink: Any, event: Any) -> None:
        if sum(isinstance(e, Delta) for e in sink.events) == 2 and not cancel.is_set():
            set_at.append(time.monotonic())
            cancel.set()

    sink = wire.Collector(on_event)
    _, error = run_stream(
        twin, runtime_for(server, timeout_ms=30_000), wire.request(), sink, cancel
    )
    returned = time.monotonic()

    assert error is not None
    assert error.failure.code is RuntimeFailureCode.CANCELLED
    assert sink.kinds == ["Delta", "Delta", "Failed"]
    assert returned - set_at[0] < 1.0
    exchange = server.exchanges[0]
    assert exchange.wait(1.0)
    assert exchange.client_closed
    assert_quiet_after_return(sink, 0.3)


def test_proof_5_cancellation_after_headers_while_the_server_is_silent(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(Reply.stream([sse_frame(wire.chunk("first"))], after="hang"))
    cancel = threading.Event()
    sink = wire.Collector()
    set_at: list[float] = []

    def trigger() -> None:
        set_at.append(time.monotonic())
        cancel.set()

    cancel_once_requested(server, trigger)
    _, error = run_stream(
        twin, runtime_for(server, timeout_ms=30_000), wire.request(), sink, cancel
    )
    assert error is not None
    assert error.failure.code is RuntimeFailureCode.CANCELLED
    assert time.monotonic() - set_at[0] < 1.0
    assert sink.kinds == ["Delta", "Failed"]
    assert server.exchanges[0].wait(1.0)
    assert server.exchanges[0].client_closed


def test_proof_5_cancel_already_set_sends_nothing(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(Reply.sse(wire.content_stream("x")))
    cancel = threading.Event()
    cancel.set()
    sink = wire.Collector()
    _, error = run_stream(twin, runtime_for(server), wire.request(), sink, cancel)
    assert error is not None
    assert error.failure.code is RuntimeFailureCode.CANCELLED
    assert sink.kinds == ["Failed"]
    assert server.requests == []


@pytest.mark.parametrize("phase", ["before_headers", "mid_stream"])
def test_proof_5_whole_call_deadline_is_timeout(
    twin: Twin, phase: str, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    ticks = (Chunk(sse_frame(wire.chunk("t")), 0.05) for _ in itertools.count())
    reply = Reply.silence() if phase == "before_headers" else Reply.stream(ticks)
    server = serve(reply)
    sink = wire.Collector()
    started = time.monotonic()
    _, error = run_stream(twin, runtime_for(server, timeout_ms=400), wire.request(), sink)
    elapsed = time.monotonic() - started
    assert error is not None
    assert error.failure.code is RuntimeFailureCode.TIMEOUT
    assert error.failure.detail == "model request exceeded the 400 ms deadline"
    assert 0.35 < elapsed < 1.4  # one deadline for the whole call, even while bytes trickle in
    assert sink.kinds[-1] == "Failed"
    assert server.exchanges[0].wait(1.0)
    assert server.exchanges[0].client_closed


# --- 6 ---------------------------------------------------------------------------------------

LIMIT = 2_097_152


def test_proof_6_output_bound_with_many_small_frames(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    piece = "abcdefghij" * 100  # 1000 bytes of content per frame
    # 30 MB of content, far above the 2 MiB output bound — and more than the loopback socket
    # buffers can absorb, so the server is still writing when the client stops at the bound.
    frames = 30_000
    frame = sse_frame(wire.chunk(piece))
    stream = (Chunk(frame) for _ in range(frames))
    server = serve(Reply.stream(stream))
    sink = wire.Collector()
    _, error = run_stream(twin, runtime_for(server), wire.request(), sink)

    assert error is not None
    assert error.failure.code is RuntimeFailureCode.INVALID_RESPONSE
    assert error.failure.detail == f"model response exceeded {LIMIT} byte limit"
    assert sink.kinds == ["Delta"] * (LIMIT // 1000) + ["Failed"]
    exchange = server.exchanges[0]
    assert exchange.wait(2.0)
    assert exchange.client_closed  # reading stopped at the bound, before the server finished
    assert exchange.bytes_sent < frames * len(frame)


def test_proof_6_one_huge_frame_without_newline(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    total = 64 * 1024 * 1024
    server = serve(Reply.stream(filler(total, prefix=b'data: {"choices":[{"delta":{"content":"')))
    sink = wire.Collector()
    tracemalloc.start()
    try:
        _, error = run_stream(twin, runtime_for(server), wire.request(), sink)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert error is not None
    assert error.failure.code is RuntimeFailureCode.INVALID_RESPONSE
    assert error.failure.detail == "model stream line exceeded 1048576 byte limit"
    assert sink.kinds == ["Failed"]
    assert peak < 8 * 1024 * 1024  # a 1 MiB line bound, not the 64 MiB the server offered
    exchange = server.exchanges[0]
    assert exchange.wait(2.0)
    assert exchange.client_closed
    assert exchange.bytes_sent < total


def _padded_frame(wire: SimpleNamespace, text: str, pad: int) -> bytes:
    frame = wire.chunk(text)
    frame["padding"] = "p" * pad  # an unknown field: costs raw bytes, adds nothing to output
    return sse_frame(frame)


def test_proof_6_long_stream_large_in_raw_bytes_completes_with_bounded_memory(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    frames = 1500
    frame = _padded_frame(wire, "ab", 16_000)
    raw_total = frames * len(frame)
    assert raw_total > 10 * LIMIT  # ~24 MB raw, 3 KB of output

    def body() -> Iterator[bytes]:
        yield sse_frame(wire.chunk("", role="assistant"))
        for _ in range(frames):
            yield frame
        yield sse_frame(wire.chunk(finish="stop"))
        yield sse_frame("[DONE]")

    server = serve(Reply.stream(body()))
    count = [0]

    def sink(event: Any) -> None:
        count[0] += 1

    tracemalloc.start()
    try:
        receipt = twin.execute_streaming(
            runtime_for(server, timeout_ms=30_000),
            wire.request(structured=False, schema={"type": "string"}),
            sink,
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert receipt.output == "ab" * frames
    assert receipt.output_schema_valid is True
    assert count[0] == frames + 1
    assert peak < 4 * 1024 * 1024


def test_proof_6_raw_byte_bound(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    frame = _padded_frame(wire, "a", 1000)
    server = serve(Reply.stream([frame] * 200))
    sink = wire.Collector()
    _, error = run_stream(twin, runtime_for(server, max_stream_bytes=50_000), wire.request(), sink)
    assert error is not None
    assert error.failure.code is RuntimeFailureCode.INVALID_RESPONSE
    assert error.failure.detail == "model stream exceeded 50000 byte limit"
    assert sink.kinds[-1] == "Failed"
    assert 0 < len(sink.events) - 1 < 50


def test_proof_6_non_streamed_body_bound(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    exact = wire.completion('{"ok":true}')
    server = serve(
        [
            Reply(body=b" " * (LIMIT + 1), headers=[("Content-Type", "application/json")]),
            Reply.stream(filler(LIMIT + 1, unit=b" "), framing="close"),
            Reply.json(exact),
        ]
    )
    runtime = runtime_for(server)
    for _ in range(2):
        with pytest.raises(RuntimeFailureError) as caught:
            twin.execute(runtime, wire.request())
        assert caught.value.failure.detail == f"model response exceeded {LIMIT} byte limit"
    assert twin.execute(runtime, wire.request()).output == {"ok": True}


# --- 7 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "valid"),
    [('{"ok":true}', True), ('{"ok":"yes"}', False)],
    ids=["schema_valid", "schema_invalid"],
)
def test_proof_7_parity_of_execute_and_execute_streaming(
    twin: Twin,
    content: str,
    valid: bool,
    serve: Serve,
    runtime_for: RuntimeFor,
    wire: SimpleNamespace,
) -> None:
    fragments = [content[i : i + 3] for i in range(0, len(content), 3)]
    server = serve(
        [Reply.json(wire.completion(content)), Reply.sse(wire.content_stream(*fragments))]
    )
    runtime = runtime_for(server)
    request = wire.request(policy={"temperature": 0, "seed": 7})

    plain = twin.execute(runtime, request)
    sink = wire.Collector()
    streamed = twin.execute_streaming(runtime, request, sink)

    assert plain == streamed
    assert plain.adapter == streamed.adapter == runtime.descriptor()
    assert plain.request_fingerprint == streamed.request_fingerprint
    assert plain.output_fingerprint == streamed.output_fingerprint == fingerprint(plain.output)
    assert plain.output == streamed.output
    assert plain.output_schema_valid is streamed.output_schema_valid is valid
    assert sink.events[-1] == Complete.of(plain)

    first, second = server.requests
    assert "stream" not in first.json
    assert "stream_options" not in first.json
    assert second.json["stream"] is True
    assert second.json["stream_options"] == {"include_usage": True}
    # The fingerprint names the request without the stream flag.
    expected_body = build_body(request.interaction, "test-model")
    assert plain.request_fingerprint == fingerprint(expected_body)
    assert {k: v for k, v in second.json.items() if not k.startswith("stream")} == first.json


def test_proof_7_parity_for_text_interactions(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    text = "Hello there — plain text, even when cut off"
    server = serve(
        [
            Reply.json(wire.completion(text, finish="length")),
            Reply.sse(wire.content_stream(text[:10], text[10:], finish="length")),
        ]
    )
    runtime = runtime_for(server)
    request = wire.request(structured=False, schema={"type": "string", "minLength": 1})
    plain = twin.execute(runtime, request)
    streamed = twin.execute_streaming(runtime, request, wire.Collector())
    assert plain == streamed
    assert plain.output == text
    assert plain.output_schema_valid is True
    assert "response_format" not in server.requests[0].json
