"""The loopback server: scripts, framings, faults and what it records (stdlib clients only)."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time

import pytest

from templiqx_conformance.loopback import (
    CHAT_COMPLETIONS_PATH,
    Chunk,
    LoopbackServer,
    RecordedRequest,
    Reply,
    SSEEvent,
    filler,
    sse_comment,
    sse_frame,
)


def post(
    server: LoopbackServer,
    path: str = CHAT_COMPLETIONS_PATH,
    body: object = None,
    headers: dict[str, str] | None = None,
) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    payload = json.dumps(body if body is not None else {"hello": "world"}).encode()
    connection.request(
        "POST", path, body=payload, headers={"Content-Type": "application/json", **(headers or {})}
    )
    return connection.getresponse()


def raw_exchange(server: LoopbackServer, path: str = CHAT_COMPLETIONS_PATH) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: 2\r\n\r\n{{}}".encode()
    )
    return sock


def read_all(sock: socket.socket) -> bytes:
    parts = []
    while True:
        data = sock.recv(65536)
        if not data:
            return b"".join(parts)
        parts.append(data)


def test_json_reply_and_recorded_request() -> None:
    with LoopbackServer(Reply.json({"ok": True}, headers=[("X-Extra", "1")])) as server:
        assert server.base_url == f"http://127.0.0.1:{server.port}"
        response = post(server, body={"model": "m"}, headers={"Authorization": "Bearer t"})
        assert response.status == 200
        assert response.getheader("Content-Type") == "application/json"
        assert response.getheader("X-Extra") == "1"
        assert json.loads(response.read()) == {"ok": True}
        (request,) = server.requests
        assert isinstance(request, RecordedRequest)
        assert (request.method, request.path) == ("POST", CHAT_COMPLETIONS_PATH)
        assert request.header("authorization") == "Bearer t"
        assert request.json == {"model": "m"}
        (exchange,) = server.exchanges
        assert exchange.wait(2)
        assert exchange.outcome == "completed"
        assert not exchange.client_closed


def test_sse_reply_is_chunked_one_chunk_per_event() -> None:
    with LoopbackServer(Reply.sse([{"a": 1}, "text"])) as server:
        sock = raw_exchange(server)
        raw = read_all(sock)
        head, _, body = raw.partition(b"\r\n\r\n")
        assert b"Transfer-Encoding: chunked" in head
        assert b"Content-Type: text/event-stream" in head
        frames = [sse_frame({"a": 1}), sse_frame("text"), sse_frame("[DONE]")]
        expected = b"".join(b"%x\r\n%b\r\n" % (len(f), f) for f in frames) + b"0\r\n\r\n"
        assert body == expected


def test_split_bytes_writes_every_byte_as_its_own_http_chunk() -> None:
    data = b"data: x\n\n"
    with LoopbackServer(Reply.stream([data], split_bytes=True)) as server:
        body = read_all(raw_exchange(server)).partition(b"\r\n\r\n")[2]
        assert body == b"".join(b"1\r\n%b\r\n" % bytes([b]) for b in data) + b"0\r\n\r\n"
        response = post(server, body={})
        assert response.read() == data


@pytest.mark.parametrize("framing", ["length", "close", "chunked"])
def test_framings_deliver_the_same_body(framing: str) -> None:
    pieces = [b"one ", Chunk(b"two ", 0.01), b"three"]
    with LoopbackServer(Reply.stream(pieces, framing=framing)) as server:  # type: ignore[arg-type]
        response = post(server)
        assert response.read() == b"one two three"
        if framing == "length":
            assert response.getheader("Content-Length") == "13"


def test_sequence_script_then_exhaustion_answers_500() -> None:
    replies = [Reply.json({"n": 1}), Reply.error(503, headers=[("Retry-After", "3")])]
    with LoopbackServer(replies) as server:
        assert json.loads(post(server).read()) == {"n": 1}
        second = post(server)
        assert (second.status, second.getheader("Retry-After")) == (503, "3")
        assert post(server).status == 500
        assert len(server.unexpected) == 1
        assert len(server.requests) == 3


def test_routes_responders_enqueue_and_unknown_paths() -> None:
    seen: list[str] = []

    def responder(request: RecordedRequest) -> Reply:
        seen.append(request.path)
        return Reply.json({"echo": request.json}, status=207)

    with LoopbackServer(routes={"/api/public/ingestion": responder}) as server:
        answer = post(server, "/api/public/ingestion", body={"batch": []})
        assert answer.status == 207
        assert json.loads(answer.read()) == {"echo": {"batch": []}}
        assert post(server, "/nowhere").status == 404
        server.enqueue(CHAT_COMPLETIONS_PATH, Reply.json({"late": True}))
        assert json.loads(post(server).read()) == {"late": True}
        assert seen == ["/api/public/ingestion"]
        assert [r.path for r in server.unexpected] == ["/nowhere"]
        assert [r.path for r in server.requests_to("/api/public/ingestion")] == [
            "/api/public/ingestion"
        ]


def test_drop_ends_a_chunked_body_without_the_final_chunk() -> None:
    with LoopbackServer(Reply.stream([b"data: 1\n\n"], after="drop")) as server:
        response = post(server)
        with pytest.raises(http.client.IncompleteRead):
            response.read()
        exchange = server.exchanges[0]
        assert exchange.wait(2)
        assert exchange.outcome == "dropped"


def test_silence_records_when_the_client_closes() -> None:
    with LoopbackServer(Reply.silence()) as server:
        sock = raw_exchange(server)
        assert server.wait_for_requests(1)
        sock.settimeout(0.2)
        with pytest.raises(TimeoutError):
            sock.recv(1)
        closed = time.monotonic()
        sock.close()
        exchange = server.exchanges[0]
        assert exchange.wait(2)
        assert exchange.outcome == "client_closed"
        assert exchange.client_closed
        assert exchange.client_closed_at is not None
        assert 0 <= exchange.client_closed_at - closed < 1.0
        assert exchange.bytes_sent == 0


def test_hang_after_body_keeps_the_socket_open() -> None:
    with LoopbackServer(Reply.stream([b"data: 1\n\n"], after="hang")) as server:
        sock = raw_exchange(server)
        sock.settimeout(0.3)
        received = b""
        while not received.endswith(b"data: 1\n\n\r\n"):
            received += sock.recv(65536)
        with pytest.raises(TimeoutError):
            sock.recv(1)
        sock.close()
        assert server.exchanges[0].wait(2)
        assert server.exchanges[0].client_closed


def test_endless_ticking_stream_stops_when_the_client_leaves() -> None:
    with LoopbackServer(Reply.ticking(sse_frame({"tick": 1}), every_s=0.02)) as server:
        response = post(server)
        first = response.read1(65536)  # type: ignore[attr-defined]
        assert b"tick" in first
        response.close()
        exchange = server.exchanges[0]
        assert exchange.wait(2)
        assert exchange.outcome == "client_closed"


def test_delays_before_headers_and_between_chunks() -> None:
    reply = Reply.stream([Chunk(b"a", 0.15), Chunk(b"b", 0.15)], delay_s=0.1)
    with LoopbackServer(reply) as server:
        started = time.monotonic()
        assert post(server).read() == b"ab"
        assert time.monotonic() - started >= 0.38


def test_filler_produces_exactly_the_requested_bytes_lazily() -> None:
    pieces = list(filler(200_000, prefix=b"data: ", size=65536))
    assert pieces[0] == b"data: "
    assert sum(len(p) for p in pieces[1:]) == 200_000
    assert max(len(p) for p in pieces) == 65536
    assert b"\n" not in b"".join(pieces)


def test_stop_ends_silent_exchanges() -> None:
    server = LoopbackServer(Reply.silence()).start()
    sock = raw_exchange(server)
    assert server.wait_for_requests(1)
    server.stop()
    assert server.exchanges[0].outcome == "server_stopped"
    assert read_all(sock) == b""
    sock.close()


def test_port_requires_a_running_server() -> None:
    server = LoopbackServer()
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.port
    server.stop()  # stopping a server that never started is harmless


def test_concurrent_requests_are_served_in_parallel() -> None:
    with LoopbackServer(Reply.stream([Chunk(b"slow", 0.3)], framing="length")) as server:
        results: list[bytes] = []

        def fetch() -> None:
            results.append(post(server).read())

        threads = [threading.Thread(target=fetch) for _ in range(4)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(5)
        assert results == [b"slow"] * 4
        assert time.monotonic() - started < 1.0


def test_sse_frame_forms() -> None:
    assert sse_frame({"a": "é"}) == 'data: {"a":"é"}\n\n'.encode()
    assert sse_frame("x\ny", line_end="\r\n") == b"data: x\r\ndata: y\r\n\r\n"
    assert sse_frame(b"[DONE]") == b"data: [DONE]\n\n"


def test_named_event_frames_and_no_done_sentinel() -> None:
    assert sse_frame({"type": "ping"}, event="ping") == b'event: ping\ndata: {"type":"ping"}\n\n'
    assert SSEEvent("x", event="e").encode("\r\n") == b"event: e\r\ndata: x\r\n\r\n"
    assert sse_comment("k", line_end="\r\n") == b": k\r\n\r\n"
    reply = Reply.sse([SSEEvent({"a": 1}, event="first"), {"b": 2}], done=False)
    with LoopbackServer(reply) as server:
        body = post(server).read()
    assert body == b'event: first\ndata: {"a":1}\n\ndata: {"b":2}\n\n'


def test_a_held_chunk_waits_for_its_event_and_no_longer() -> None:
    release = threading.Event()
    reply = Reply.stream([b"first ", Chunk(b"second", 5.0, release)])
    with LoopbackServer(reply) as server:
        response = post(server)
        assert response.read1(64) == b"first "
        start = time.monotonic()
        threading.Timer(0.2, release.set).start()
        assert response.read() == b"second"
        assert 0.15 < time.monotonic() - start < 2.0
    unreleased = Reply.stream([b"a", Chunk(b"b", 0.3, threading.Event())])
    with LoopbackServer(unreleased) as server:
        start = time.monotonic()
        assert post(server).read() == b"ab"
        assert time.monotonic() - start < 2.0  # at most delay_s when the event is never set
