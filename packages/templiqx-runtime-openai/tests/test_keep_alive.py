"""Connection reuse (issue #15 item 2): a complete stream gives its connection back to the pool.

The kit's loopback server closes every connection, so these tests run their own small HTTP/1.1
keep-alive server on 127.0.0.1 (ephemeral port, stopped at teardown) that counts the TCP
connections it accepts. Sequential calls on one thread share one connection when every
response was read to its end; a cancelled, partly read or slow-to-finish response is discarded
and the next call connects again. Every test runs on both twins (``twin``): the async one keeps
one event loop for the whole test, whose connection pool is the one reused.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest

from templiqx_ports import RuntimeFailureCode, RuntimeFailureError
from templiqx_runtime_openai import OpenAIRuntime, OpenAISettings

from .conftest import Twin

KEY = "sk-keep-alive-canary-77a0"


class KeepAliveServer(ThreadingHTTPServer):
    """Answers ``/chat/completions`` per ``mode`` with HTTP/1.1 keep-alive; counts connections."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.connections = 0
        self.requests = 0
        self.mode = "ok"
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: KeepAliveServer

    def log_message(self, format: str, *args: Any) -> None:  # stdlib signature
        pass

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections += 1

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        with self.server.lock:
            self.server.requests += 1
        mode = self.server.mode
        if mode == "401":
            self._json(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
        elif body.get("stream"):
            self._stream(mode)
        else:
            message = {"role": "assistant", "content": '{"ok":true}'}
            self._json(200, {"choices": [{"index": 0, "message": message}]})

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _stream(self, mode: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in ('{"ok":', "true}"):
            frame = {"choices": [{"index": 0, "delta": {"content": piece}}]}
            self._chunk(b"data: " + json.dumps(frame).encode() + b"\n\n")
        try:
            if mode == "endless":
                while True:  # never finishes: the client must cancel
                    time.sleep(0.05)
                    self._chunk(b": tick\n\n")
            self._chunk(b"data: [DONE]\n\n")
            if mode == "slow_end":
                time.sleep(1.0)  # the terminating chunk comes late: not worth waiting for
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True


@pytest.fixture
def keep_alive() -> Iterator[KeepAliveServer]:
    server = KeepAliveServer()
    server.thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def runtime(keep_alive: KeepAliveServer) -> Iterator[OpenAIRuntime]:
    settings = OpenAISettings(base_url=keep_alive.base_url, api_key=KEY, model="m", timeout_ms=5000)
    runtime = OpenAIRuntime(settings)
    yield runtime
    runtime.close()


def _stream(twin: Twin, runtime: OpenAIRuntime, wire: SimpleNamespace, **options: Any) -> Any:
    return twin.execute_streaming(runtime, wire.request(), wire.Collector(), **options)


def test_sequential_streamed_calls_share_one_connection(
    twin: Twin, keep_alive: KeepAliveServer, runtime: OpenAIRuntime, wire: SimpleNamespace
) -> None:
    for _ in range(6):
        assert _stream(twin, runtime, wire).output == {"ok": True}
    assert twin.execute(runtime, wire.request()).output == {"ok": True}
    assert (keep_alive.requests, keep_alive.connections) == (7, 1)


def test_an_error_answer_read_to_its_end_keeps_the_connection(
    twin: Twin, keep_alive: KeepAliveServer, runtime: OpenAIRuntime, wire: SimpleNamespace
) -> None:
    keep_alive.mode = "401"
    with pytest.raises(RuntimeFailureError) as caught:
        _stream(twin, runtime, wire)
    assert caught.value.failure.provider_message == "bad key"
    keep_alive.mode = "ok"
    assert _stream(twin, runtime, wire).output == {"ok": True}
    assert (keep_alive.requests, keep_alive.connections) == (2, 1)


def test_a_cancelled_stream_is_discarded(
    twin: Twin, keep_alive: KeepAliveServer, runtime: OpenAIRuntime, wire: SimpleNamespace
) -> None:
    assert _stream(twin, runtime, wire).output == {"ok": True}
    keep_alive.mode = "endless"
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    with pytest.raises(RuntimeFailureError) as caught:
        _stream(twin, runtime, wire, cancel=cancel)
    assert caught.value.failure.code is RuntimeFailureCode.CANCELLED
    keep_alive.mode = "ok"
    assert _stream(twin, runtime, wire).output == {"ok": True}
    assert keep_alive.connections == 2  # the cancelled one was never reused


def test_a_stream_whose_end_comes_late_is_not_waited_for(
    twin: Twin, keep_alive: KeepAliveServer, runtime: OpenAIRuntime, wire: SimpleNamespace
) -> None:
    keep_alive.mode = "slow_end"
    started = time.monotonic()
    assert _stream(twin, runtime, wire).output == {"ok": True}
    assert time.monotonic() - started < 0.9  # the drain gives up after DRAIN_S (0.25 s)
    keep_alive.mode = "ok"
    assert _stream(twin, runtime, wire).output == {"ok": True}
    assert keep_alive.connections == 2


def test_a_sink_that_raises_discards_the_connection(
    twin: Twin, keep_alive: KeepAliveServer, runtime: OpenAIRuntime, wire: SimpleNamespace
) -> None:
    class SinkBrokeError(Exception):
        pass

    def sink(event: object) -> None:
        raise SinkBrokeError

    with pytest.raises(SinkBrokeError):
        twin.execute_streaming(runtime, wire.request(), sink)
    assert _stream(twin, runtime, wire).output == {"ok": True}
    assert keep_alive.connections == 2
