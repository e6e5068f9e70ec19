"""A loopback chat-completions server for P1 and P7, run as its own process.

``python sse_server.py DELTAS [--keep-alive]`` builds one OpenAI-style event stream of
``DELTAS`` content deltas, prints ``<port> <body bytes> <sha256 of the decoded body>`` and then
answers every ``POST /chat/completions`` asking for ``"stream": true`` with that stream:
``Transfer-Encoding: chunked``, one HTTP chunk per event (as OpenAI sends them), written in
64 KiB blocks so the server is never the bottleneck. A request without ``"stream": true`` gets
the same content as one JSON chat completion.

With ``--pace-ms=N`` a stream is written one event at a time, N ms apart, as a model writes.

By default each exchange is one connection (``Connection: close``). With ``--keep-alive`` a
connection serves requests until the client closes it, as an HTTPS provider's does, so a client
that reuses its connections opens one. It serves until its stdin closes; each line ``stats``
written to its stdin is answered on stdout with ``<connections accepted> <requests answered>``
(counted without opening a connection). :class:`LoopbackServer` runs it from a benchmark.

Being a separate process, its work never competes with the measured client for the GIL.
The content is a JSON object (``{"summary": "..."}``) so a structured-output interaction can
check and fingerprint the assembled output; :func:`expected_summary` gives the text.
"""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

__all__ = ["LoopbackServer", "build_stream", "expected_summary"]

_WORDS = ("contract", " clause", " términos", " notice", " period", " Überblick", " 12", ".")
_BASE = {
    "id": "chatcmpl-bench",
    "object": "chat.completion.chunk",
    "created": 1767225600,
    "model": "gpt-4o-mini",
}


def _pieces(deltas: int) -> list[str]:
    """The content fragments: an opening, ``deltas - 2`` words, a closing (``deltas`` total)."""
    words = [_WORDS[i % len(_WORDS)] for i in range(deltas - 2)]
    return ['{"summary": "', *words, '"}']


def expected_summary(deltas: int) -> str:
    """The ``summary`` the assembled output must hold."""
    return "".join(_pieces(deltas)[1:-1])


def _event(choices: list[dict[str, object]], **extra: object) -> bytes:
    payload = {**_BASE, "choices": choices, **extra}
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return b"data: " + text.encode("utf-8") + b"\n\n"


def build_stream(deltas: int) -> list[bytes]:
    """Every event of the stream, in order: role, ``deltas`` content deltas, stop, usage, DONE."""
    events = [
        _event(
            [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "content": ""},
                    "finish_reason": None,
                }
            ]
        )
    ]
    for piece in _pieces(deltas):
        events.append(_event([{"index": 0, "delta": {"content": piece}, "finish_reason": None}]))
    events.append(_event([{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}]))
    usage = {"prompt_tokens": 12, "completion_tokens": deltas, "total_tokens": deltas + 12}
    events.append(_event([], usage=usage))
    events.append(b"data: [DONE]\n\n")
    return events


def _chunked(events: list[bytes]) -> bytes:
    framed = [b"%x\r\n%s\r\n" % (len(event), event) for event in events]
    return b"".join(framed) + b"0\r\n\r\n"


_HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: text/event-stream; charset=utf-8\r\n"
    b"Cache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n"
)
_CLOSE = b"Connection: close\r\n"
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class _Counts:
    """Connections accepted and requests answered (read through the ``stats`` command)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connections = 0
        self.requests = 0

    def add(self, *, connections: int = 0, requests: int = 0) -> None:
        with self.lock:
            self.connections += connections
            self.requests += requests


class _NotFoundError(Exception):
    """A request for anything but ``POST /chat/completions``."""


def _read_request(conn: socket.socket, pending: bytearray) -> bytes | None:
    """The body of the next ``POST /chat/completions`` (``None`` when the client is done).

    Anything else raises :class:`_NotFoundError`.
    ``pending`` holds what was received beyond the previous request, and keeps what is
    received beyond this one.
    """
    data = bytes(pending)
    pending.clear()
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return None
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        piece = conn.recv(65536)
        if not piece:
            return None
        body += piece
    pending += body[length:]
    body = body[:length]
    request_line = head.split(b"\r\n", 1)[0]
    if not request_line.startswith(b"POST ") or b"/chat/completions" not in request_line:
        raise _NotFoundError
    return body


def _completion(deltas: int, connection: bytes) -> bytes:
    """The non-streamed answer with the same content (for the receipt-equality check)."""
    message = {"role": "assistant", "content": "".join(_pieces(deltas))}
    payload = {
        **_BASE,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": deltas, "total_tokens": deltas + 12},
    }
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n" % (
        len(body),
        connection,
    )
    return head + body


class _Responses:
    """The prepared responses: the stream and the whole completion, framed for one mode."""

    def __init__(self, deltas: int, keep_alive: bool, pace_s: float = 0.0) -> None:
        connection = b"" if keep_alive else _CLOSE
        self.keep_alive = keep_alive
        self.pace_s = pace_s
        events = build_stream(deltas)
        self.stream = memoryview(_HEAD + connection + b"\r\n" + _chunked(events))
        self.head = _HEAD + connection + b"\r\n"
        self.events = [b"%x\r\n%s\r\n" % (len(event), event) for event in events]
        self.whole = memoryview(_completion(deltas, connection))


def _send(conn: socket.socket, response: memoryview) -> None:
    for start in range(0, len(response), 65536):
        conn.sendall(response[start : start + 65536])


def _answer(conn: socket.socket, responses: _Responses, counts: _Counts) -> None:
    pending = bytearray()
    with conn:
        try:
            while True:
                try:
                    body = _read_request(conn, pending)
                except _NotFoundError:
                    conn.sendall(_NOT_FOUND)
                    return
                if body is None:
                    return
                counts.add(requests=1)
                streamed = json.loads(body).get("stream") is True
                if streamed and responses.pace_s:  # one event at a time, as a model writes
                    conn.sendall(responses.head)
                    for event in responses.events:
                        conn.sendall(event)
                        time.sleep(responses.pace_s)
                    conn.sendall(b"0\r\n\r\n")
                else:
                    _send(conn, responses.stream if streamed else responses.whole)
                if not responses.keep_alive:
                    break
            conn.shutdown(socket.SHUT_WR)
            while conn.recv(65536):  # drain until the client closes its end
                pass
        except OSError:
            return


def _serve(listener: socket.socket, responses: _Responses, counts: _Counts) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        counts.add(connections=1)
        threading.Thread(target=_answer, args=(conn, responses, counts), daemon=True).start()


def main() -> int:
    deltas = int(sys.argv[1])
    keep_alive = "--keep-alive" in sys.argv[2:]
    pace = [a for a in sys.argv[2:] if a.startswith("--pace-ms=")]
    pace_s = float(pace[0].split("=", 1)[1]) / 1000 if pace else 0.0
    body = b"".join(build_stream(deltas))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)  # P11 opens 20 connections at once, P14 200
    counts = _Counts()
    responses = _Responses(deltas, keep_alive, pace_s)
    threading.Thread(target=_serve, args=(listener, responses, counts), daemon=True).start()
    port = listener.getsockname()[1]
    print(port, len(body), hashlib.sha256(body).hexdigest(), flush=True)
    for line in sys.stdin:  # serve until the parent closes our stdin
        if line.strip() == "stats":
            with counts.lock:
                print(counts.connections, counts.requests, flush=True)
    listener.close()
    return 0


class LoopbackServer:
    """This script as a child process; ``with`` starts it and stops it.

    ``port``, ``base_url``, ``body_bytes`` and ``body_sha256`` describe the running server;
    :meth:`stats` reads its counters.
    """

    def __init__(self, deltas: int, *, keep_alive: bool = False, pace_ms: float = 0) -> None:
        self.deltas = deltas
        self.keep_alive = keep_alive
        self.pace_ms = pace_ms

    def __enter__(self) -> LoopbackServer:
        argv = [sys.executable, str(Path(__file__)), str(self.deltas)]
        self.process = subprocess.Popen(
            argv
            + (["--keep-alive"] if self.keep_alive else [])
            + ([f"--pace-ms={self.pace_ms}"] if self.pace_ms else []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        line = self._line()
        if len(line) != 3:
            self.__exit__()
            raise RuntimeError("the SSE server did not start")
        self.port = int(line[0])
        self.body_bytes = int(line[1])
        self.body_sha256 = line[2].decode()
        self.base_url = f"http://127.0.0.1:{self.port}"
        return self

    def _line(self) -> list[bytes]:
        assert self.process.stdout is not None
        return self.process.stdout.readline().split()

    def stats(self) -> tuple[int, int]:
        """(connections accepted, requests answered) since the server started."""
        assert self.process.stdin is not None
        self.process.stdin.write(b"stats\n")
        self.process.stdin.flush()
        connections, requests = self._line()
        return int(connections), int(requests)

    def __exit__(self, *_: object) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


if __name__ == "__main__":
    sys.exit(main())
