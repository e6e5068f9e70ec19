"""The non-streamed path and request shape, failure mapping and completion rules of both paths."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from templiqx_conformance.loopback import LoopbackServer, Reply, sse_frame
from templiqx_contracts import Failed, fingerprint
from templiqx_ports import RuntimeFailureCode, RuntimeFailureError
from templiqx_runtime_openai import Detail, OpenAIRuntime, OpenAISettings, retry_after_ms

Serve = Callable[..., LoopbackServer]
RuntimeFor = Callable[..., OpenAIRuntime]


def failure_of(action: Callable[[], object]) -> RuntimeFailureError:
    with pytest.raises(RuntimeFailureError) as caught:
        action()
    return caught.value


def test_request_shape_for_structured_output(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(Reply.json(wire.completion('{"ok":true}')))
    policy = {
        "temperature": 0.2,
        "top_p": 1,
        "max_tokens": 64,
        "seed": 7,
        "stop": ["\n\n"],
        "presence_penalty": 1.5,  # not forwarded
    }
    messages = [("system", "s"), ("developer", "d"), ("user", "u"), ("assistant", "a")]
    request = wire.request(policy=policy, messages=messages)
    receipt = runtime_for(server).execute(request)

    (recorded,) = server.requests
    assert (recorded.method, recorded.path) == ("POST", "/chat/completions")
    assert recorded.header("Authorization") == f"Bearer {wire.CANARY_KEY}"
    assert recorded.header("Content-Type") == "application/json"
    assert recorded.json == {
        "model": "test-model",
        "messages": [{"role": role, "content": content} for role, content in messages],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "templiqx_output", "strict": True, "schema": wire.OK_SCHEMA},
        },
        "temperature": 0.2,
        "top_p": 1,
        "max_tokens": 64,
        "seed": 7,
        "stop": ["\n\n"],
    }
    assert receipt.request_fingerprint == fingerprint(recorded.json)
    assert receipt.adapter.id == "templiqx-runtime-openai"
    assert receipt.adapter.version == "0.2.0"


def test_text_interactions_send_no_response_format(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(Reply.json(wire.completion("plain words")))
    receipt = runtime_for(server).execute(wire.request(structured=False, schema={"type": "string"}))
    assert "response_format" not in server.requests[0].json
    assert receipt.output == "plain words"
    assert receipt.output_schema_valid is True


@pytest.mark.parametrize(
    ("policy", "detail"),
    [
        ({"temperature": "hot"}, "runtime_policy.temperature must be a number"),
        ({"top_p": True}, "runtime_policy.top_p must be a number"),
        ({"max_tokens": 0}, "runtime_policy.max_tokens must be a positive integer"),
        ({"seed": 1.5}, "runtime_policy.seed must be an integer"),
        ({"stop": ["a", 1]}, "runtime_policy.stop must be a string or a list of strings"),
    ],
)
def test_bad_sampling_settings_fail_before_any_request(
    policy: dict[str, object],
    detail: str,
    serve: Serve,
    runtime_for: RuntimeFor,
    wire: SimpleNamespace,
) -> None:
    server = serve(Reply.json(wire.completion('{"ok":true}')))
    runtime = runtime_for(server)
    for action in (
        lambda: runtime.execute(wire.request(policy=policy)),
        lambda: runtime.execute_streaming(wire.request(policy=policy), wire.Collector()),
    ):
        error = failure_of(action)
        assert error.failure.code is RuntimeFailureCode.PERMANENT
        assert error.failure.detail == detail
    assert server.requests == []


def test_base_url_path_prefix_and_trailing_slash(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(routes={"/v1/chat/completions": Reply.json(wire.completion('{"ok":true}'))})
    runtime = runtime_for(server, base_url=server.base_url + "/v1/")
    assert runtime.execute(wire.request()).output == {"ok": True}
    assert server.requests[0].path == "/v1/chat/completions"


def test_redirects_are_never_followed(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(
        Reply(status=302, headers=[("Location", "/elsewhere")]),
        routes={"/elsewhere": Reply.json(wire.completion('{"ok":true}'))},
    )
    error = failure_of(lambda: runtime_for(server).execute(wire.request()))
    assert error.failure.code is RuntimeFailureCode.PERMANENT
    assert error.failure.detail == Detail.REDIRECT
    assert [r.path for r in server.requests] == ["/chat/completions"]


def test_connection_refused_is_unavailable(runtime_for: RuntimeFor, wire: SimpleNamespace) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = SimpleNamespace(base_url=f"http://127.0.0.1:{port}")
    runtime = runtime_for(server)
    plain = failure_of(lambda: runtime.execute(wire.request()))
    sink = wire.Collector()
    streamed = failure_of(lambda: runtime.execute_streaming(wire.request(), sink))
    for error in (plain, streamed):
        assert error.failure.code is RuntimeFailureCode.UNAVAILABLE
        assert error.code == "TQX_RUNTIME_UNAVAILABLE"
        assert error.failure.retryable is True
        assert error.failure.retry_after_ms is None
        assert error.failure.detail == Detail.CONNECT
    assert plain.failure == streamed.failure
    assert sink.events == [Failed(code="TQX_RUNTIME_UNAVAILABLE", message=str(streamed))]


@pytest.mark.parametrize("phase", ["headers", "body"])
def test_non_streamed_deadline_covers_headers_and_body(
    phase: str, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    if phase == "headers":
        reply = Reply.json(wire.completion('{"ok":true}'), delay_s=2)
    else:
        reply = Reply.stream([b'{"choices":'], framing="close", after="hang")
    server = serve(reply)
    started = time.monotonic()
    error = failure_of(lambda: runtime_for(server, timeout_ms=250).execute(wire.request()))
    assert error.failure.code is RuntimeFailureCode.TIMEOUT
    assert error.failure.detail == "model request exceeded the 250 ms deadline"
    assert time.monotonic() - started < 1.2


@pytest.mark.parametrize(
    ("body", "code", "detail"),
    [
        (b"{", RuntimeFailureCode.INVALID_RESPONSE, Detail.NOT_COMPLETION),
        (b"not json at all", RuntimeFailureCode.INVALID_RESPONSE, Detail.NOT_COMPLETION),
        (b'{"choices":[]}', RuntimeFailureCode.INVALID_RESPONSE, Detail.NO_CHOICES),
        (b'{"object":"chat.completion"}', RuntimeFailureCode.INVALID_RESPONSE, Detail.NO_CHOICES),
        (
            b'{"choices":[{"message":{"content":5}}]}',
            RuntimeFailureCode.INVALID_RESPONSE,
            Detail.NOT_COMPLETION,
        ),
        (b'{"choices":[{"index":0}]}', RuntimeFailureCode.INVALID_RESPONSE, Detail.NOT_COMPLETION),
        (
            b'{"choices":[{"message":{"content":"not-json"}}]}',
            RuntimeFailureCode.INVALID_RESPONSE,
            Detail.NOT_JSON,
        ),
        (
            b'{"choices":[{"message":{"content":null}}]}',
            RuntimeFailureCode.INVALID_RESPONSE,
            Detail.NO_CONTENT,
        ),
        (
            b'{"error":{"message":"slow down","type":"rate_limit_exceeded"}}',
            RuntimeFailureCode.RATE_LIMITED,
            Detail.IN_BAND_ERROR,
        ),
        (
            b'{"error":{"message":"bad","type":"invalid_request_error"}}',
            RuntimeFailureCode.PERMANENT,
            Detail.IN_BAND_ERROR,
        ),
        (
            b'{"error":{"message":"boom","type":"server_error"}}',
            RuntimeFailureCode.UNAVAILABLE,
            Detail.IN_BAND_ERROR,
        ),
    ],
)
def test_malformed_non_streamed_responses(
    body: bytes,
    code: RuntimeFailureCode,
    detail: str,
    serve: Serve,
    runtime_for: RuntimeFor,
    wire: SimpleNamespace,
) -> None:
    server = serve(Reply(body=body, headers=[("Content-Type", "application/json")]))
    error = failure_of(lambda: runtime_for(server).execute(wire.request()))
    assert (error.failure.code, error.failure.detail) == (code, detail)


def test_compressed_bodies_are_decoded_and_bad_compression_is_invalid(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    payload = gzip.compress(b'{"choices":[{"message":{"content":"{\\"ok\\":true}"}}]}')
    headers = [("Content-Type", "application/json"), ("Content-Encoding", "gzip")]
    server = serve([Reply(body=payload, headers=headers), Reply(body=b"nope", headers=headers)])
    runtime = runtime_for(server)
    assert runtime.execute(wire.request()).output == {"ok": True}
    error = failure_of(lambda: runtime.execute(wire.request()))
    assert (error.failure.code, error.failure.detail) == (
        RuntimeFailureCode.INVALID_RESPONSE,
        Detail.DECODING,
    )


def test_numbers_keep_integer_and_float_identity(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(Reply.json(wire.completion('{"ok":true,"n":1.0,"m":1}')))
    receipt = runtime_for(server).execute(wire.request(schema={"type": "object"}))
    assert receipt.output == {"ok": True, "n": 1.0, "m": 1}
    assert isinstance(receipt.output["n"], float)
    assert isinstance(receipt.output["m"], int)
    assert receipt.output_fingerprint == fingerprint({"ok": True, "n": 1.0, "m": 1})


# --- completion rules, on both paths -------------------------------------------------------


def both_paths(
    serve: Serve,
    runtime_for: RuntimeFor,
    wire: SimpleNamespace,
    whole: dict[str, object],
    frames: list[dict[str, object]],
    **request: object,
) -> list[RuntimeFailureError]:
    server = serve([Reply.json(whole), Reply.sse(frames)])
    runtime = runtime_for(server)
    first = failure_of(lambda: runtime.execute(wire.request(**request)))
    sink = wire.Collector()
    second = failure_of(lambda: runtime.execute_streaming(wire.request(**request), sink))
    assert sink.kinds[-1] == "Failed"
    assert first.failure == second.failure
    return [first, second]


def test_refusal_is_permanent_and_the_text_is_never_kept(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    refusal = "I cannot help with SECRET-REFUSAL-TEXT."
    errors = both_paths(
        serve,
        runtime_for,
        wire,
        wire.completion(None, refusal=refusal),
        [
            wire.chunk(refusal=refusal[:10]),
            wire.chunk(refusal=refusal[10:]),
            wire.chunk(finish="stop"),
        ],
    )
    for error in errors:
        assert error.failure.code is RuntimeFailureCode.PERMANENT
        assert error.failure.detail == Detail.REFUSED
        assert "SECRET-REFUSAL-TEXT" not in str(error)


def test_content_filter_is_permanent(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    errors = both_paths(
        serve,
        runtime_for,
        wire,
        wire.completion('{"ok":', finish="content_filter"),
        wire.content_stream('{"ok":', finish="content_filter"),
    )
    assert errors[0].failure.code is RuntimeFailureCode.PERMANENT


def test_structured_output_cut_off_at_length_is_invalid(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    errors = both_paths(
        serve,
        runtime_for,
        wire,
        wire.completion('{"ok":true}', finish="length"),
        wire.content_stream('{"ok":true}', finish="length"),
    )
    assert errors[0].failure.detail == Detail.TRUNCATED


def test_structured_output_that_is_not_json_is_invalid(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    errors = both_paths(
        serve,
        runtime_for,
        wire,
        wire.completion("Sure! Here it is"),
        wire.content_stream("Sure! ", "Here it is"),
    )
    assert errors[0].failure.detail == Detail.NOT_JSON


def test_stream_without_choices_is_invalid(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    errors = both_paths(
        serve, runtime_for, wire, {"choices": []}, [wire.usage_chunk(), {"choices": []}]
    )
    assert errors[0].failure.detail == Detail.NO_CHOICES


def test_reasoning_fragments_and_other_choices_are_not_deltas(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    thinking = wire.chunk()
    thinking["choices"][0]["delta"]["reasoning_content"] = "let me think"
    other = wire.chunk("ignored", index=1)
    frames = [thinking, wire.chunk('{"ok":'), other, wire.chunk("true}"), wire.chunk(finish="stop")]
    server = serve(Reply.sse(frames))
    sink = wire.Collector()
    receipt = runtime_for(server).execute_streaming(wire.request(), sink)
    assert sink.kinds == ["Delta", "Delta", "Complete"]
    assert receipt.output == {"ok": True}


def test_json_answer_to_a_streaming_request_is_invalid(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(Reply.json(wire.completion('{"ok":true}')))
    sink = wire.Collector()
    error = failure_of(lambda: runtime_for(server).execute_streaming(wire.request(), sink))
    assert error.failure.detail == Detail.NOT_EVENT_STREAM
    assert sink.kinds == ["Failed"]


def test_streamed_tool_calls_without_index_are_told_apart_by_id(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    def part(**fields: object) -> dict[str, object]:
        return {key: value for key, value in fields.items() if value is not None}

    frames = [
        wire.chunk(tool_calls=[part(id="a", function={"name": "f", "arguments": '{"x":'})]),
        wire.chunk(tool_calls=[part(function={"arguments": "1}"})]),
        wire.chunk(tool_calls=[part(id="b", function={"name": "g", "arguments": "{}"})]),
        wire.chunk(finish="tool_calls"),
    ]
    server = serve(Reply.sse(frames))
    receipt = runtime_for(server).execute_streaming(wire.request(), wire.Collector())
    assert receipt.output == {
        "tool_calls": [
            {"id": "a", "name": "f", "arguments": {"x": 1}},
            {"id": "b", "name": "g", "arguments": {}},
        ]
    }


def test_concurrent_calls_share_one_runtime(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(Reply.json(wire.completion('{"ok":true}')))
    runtime = runtime_for(server)
    outputs: list[object] = []

    def work() -> None:
        for _ in range(3):
            outputs.append(runtime.execute(wire.request()).output)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert outputs == [{"ok": True}] * 12


def test_retry_after_header_precedence() -> None:
    class Headers(dict[str, str]):
        def get(self, key: str, default: object = None) -> str | None:  # type: ignore[override]
            return super().get(key.lower())

    assert retry_after_ms(Headers({"retry-after": "3"})) == 3000
    assert retry_after_ms(Headers({"x-retry-after-ms": "250", "retry-after": "3"})) == 250
    assert retry_after_ms(Headers({"x-retry-after-ms": "soon", "retry-after": "2"})) == 2000
    assert retry_after_ms(Headers({"retry-after-ms": "40"})) == 40
    assert retry_after_ms(Headers({"retry-after": "-1"})) is None
    assert retry_after_ms(Headers({"retry-after": "1.5"})) is None
    assert retry_after_ms(Headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0
    assert retry_after_ms(Headers({"retry-after": str(1 << 64)})) is None
    assert retry_after_ms(Headers()) is None


def test_failure_fingerprints_are_payload_free_and_stable(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve([Reply.error(503), Reply.error(503, body={"other": "body"})])
    runtime = runtime_for(server)
    first = failure_of(lambda: runtime.execute(wire.request()))
    second = failure_of(lambda: runtime.execute(wire.request()))
    # What the server said differs (an error message, then a body without one) ...
    assert (first.failure.provider_message, second.failure.provider_message) == ("HTTP 503", None)
    # ... but never the fingerprint, which covers only the fixed detail.
    assert first.failure.fingerprint == second.failure.fingerprint
    assert first.failure.fingerprint == fingerprint(
        {
            "adapter": "templiqx-runtime-openai",
            "code": "TQX_RUNTIME_UNAVAILABLE",
            "detail": "model server returned HTTP 503",
        }
    )
    host = server.base_url.split("//", 1)[1].split("/", 1)[0]
    assert str(second) == (
        f"runtime failure TQX_RUNTIME_UNAVAILABLE: model server returned HTTP 503 ({host})"
    )


def test_runtime_is_reusable_after_close(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(Reply.json(wire.completion('{"ok":true}')))
    runtime = runtime_for(server)
    runtime.execute(wire.request())
    runtime.close()
    assert runtime.execute(wire.request()).output == {"ok": True}
    assert isinstance(runtime.settings, OpenAISettings)


def test_an_exception_in_the_sink_propagates_and_closes_the_connection(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    class SinkBrokeError(Exception):
        pass

    events: list[object] = []

    def sink(event: object) -> None:
        events.append(event)
        raise SinkBrokeError

    ticks = [sse_frame(wire.chunk(f"t{i}")) for i in range(3)]
    server = serve(Reply.stream([*ticks], after="hang"))
    with pytest.raises(SinkBrokeError):
        runtime_for(server).execute_streaming(wire.request(), sink)
    assert len(events) == 1  # no Failed is sent to a sink that just failed
    assert server.exchanges[0].wait(1.0)
    assert server.exchanges[0].client_closed


def test_sessions_of_finished_threads_are_released(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    import gc

    server = serve(Reply.json(wire.completion('{"ok":true}')))
    runtime = runtime_for(server)
    for _ in range(5):
        thread = threading.Thread(target=lambda: runtime.execute(wire.request()))
        thread.start()
        thread.join(5)
    gc.collect()
    assert len(runtime.client.transport._sessions) <= 1


def test_a_repeated_tool_name_does_not_change_the_call_name(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    t = wire.tool
    frames = [
        wire.chunk(tool_calls=[t(0, id="c1", name="lookup", args='{"q":')]),
        wire.chunk(tool_calls=[t(0, name="lookup", args='"x"}')]),
        wire.chunk(finish="tool_calls"),
    ]
    server = serve(Reply.sse(frames))
    sink = wire.Collector()
    receipt = runtime_for(server).execute_streaming(wire.request(), sink)
    assert [e.name for e in sink.events[:-1]] == ["lookup", "lookup"]
    assert receipt.output["tool_calls"][0]["name"] == "lookup"


@pytest.mark.parametrize("structured", [True, False])
def test_the_request_fingerprint_is_known_before_the_call(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace, structured: bool
) -> None:
    """Batch runs key dedupe and the result cache by it (issue #31): it must be the receipt's."""
    content = '{"ok":true}' if structured else "words"
    server = serve(Reply.json(wire.completion(content)))
    request = wire.request(structured=structured, schema=None if structured else {"type": "string"})
    runtime = runtime_for(server)
    predicted = runtime.request_fingerprint(request)
    assert server.requests == []  # nothing was sent to know it
    assert predicted == runtime.execute(request).request_fingerprint
