"""Canary credentials never appear in receipts, events, errors or logs (DECISIONS 10), on both
twins of the runtime (``twin``)."""

from __future__ import annotations

import logging
import pickle
import threading
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from templiqx_conformance.loopback import LoopbackServer, RecordedRequest, Reply, sse_frame
from templiqx_contracts import canonical_json, encode_stream_event
from templiqx_ports import RuntimeFailureError
from templiqx_runtime_openai import OpenAIRuntime

from .conftest import Twin

Serve = Callable[..., LoopbackServer]
RuntimeFor = Callable[..., OpenAIRuntime]


def echoing(wire: SimpleNamespace) -> Callable[[RecordedRequest], Reply]:
    """A hostile server that reflects the Authorization header into everything it sends."""
    replies: list[Callable[[str], Reply]] = [
        lambda auth: Reply.json(wire.completion('{"ok":true}'), headers=[("X-Echo", auth)]),
        lambda auth: Reply.sse(
            [wire.chunk('{"ok":'), wire.chunk("true}"), wire.chunk(finish="stop")],
            headers=[("X-Echo", auth)],
        ),
        lambda auth: Reply.error(401, headers=[("WWW-Authenticate", auth)], body={"error": auth}),
        lambda auth: Reply.error(429, headers=[("Retry-After", "1")], body={"error": auth}),
        lambda auth: Reply.error(500, body={"error": {"message": auth}}),
        lambda auth: Reply.sse([wire.chunk("x"), {"error": {"message": auth, "type": auth}}]),
        lambda auth: Reply.sse([wire.chunk("x"), f"not json {auth}"]),
        lambda auth: Reply.json(wire.completion(f"not json {auth}")),
        lambda auth: Reply.json(wire.completion(None, refusal=auth)),
        lambda auth: Reply.stream([sse_frame(wire.chunk(auth[:3]))], after="drop"),
        lambda auth: Reply(status=302, headers=[("Location", f"http://{auth}@127.0.0.1:9/")]),
        lambda auth: Reply.stream([b"data: " + auth.encode() * 100], after="hang"),
    ]
    counter = iter(range(1_000_000))

    def respond(request: RecordedRequest) -> Reply:
        index = next(counter) // 2 % len(replies)
        return replies[index](request.header("Authorization") or "")

    return respond


def test_canary_key_never_leaves_the_process(
    twin: Twin,
    serve: Serve,
    runtime_for: RuntimeFor,
    wire: SimpleNamespace,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    server = serve(echoing(wire))
    runtime = runtime_for(server, timeout_ms=400, max_line_bytes=2000)
    seen: list[str] = [repr(runtime), repr(runtime.settings), repr(runtime.client)]
    outcomes = 0
    for _ in range(12):
        for streaming in (False, True):
            sink = wire.Collector()
            cancel = threading.Event()
            try:
                if streaming:
                    receipt = twin.execute_streaming(runtime, wire.request(), sink, cancel=cancel)
                else:
                    receipt = twin.execute(runtime, wire.request())
                seen.append(canonical_json(receipt).decode())
                seen.append(repr(receipt))
            except RuntimeFailureError as error:
                seen.extend(
                    [str(error), repr(error), repr(error.failure), error.failure.help_text()]
                )
                seen.append(pickle.dumps(error).decode("latin-1"))
                if error.__cause__ is not None or error.__context__ is not None:
                    seen.append(repr(error.__cause__) + repr(error.__context__))
            seen.extend(encode_stream_event(event).decode() for event in sink.events)
            outcomes += 1
    # The key really was sent, and reflected back at us.
    assert all(r.header("Authorization") == f"Bearer {wire.CANARY_KEY}" for r in server.requests)
    captured = capfd.readouterr()
    seen.extend([caplog.text, captured.out, captured.err])
    assert outcomes == 24
    for text in seen:
        assert wire.CANARY_KEY not in text
