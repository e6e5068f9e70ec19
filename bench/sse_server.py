"""A loopback chat-completions server for P1, run as its own process.

``python sse_server.py DELTAS`` builds one OpenAI-style event stream of ``DELTAS`` content
deltas, prints ``<port> <body bytes> <sha256 of the decoded body>`` and then answers every
``POST /chat/completions`` asking for ``"stream": true`` with that stream:
``Transfer-Encoding: chunked``, one HTTP chunk per event (as OpenAI sends them), written in
64 KiB blocks so the server is never the bottleneck. A request without ``"stream": true`` gets
the same content as one JSON chat completion.
Each exchange is one connection (``Connection: close``). It serves until its stdin closes.

Being a separate process, its work never competes with the measured client for the GIL.
The content is a JSON object (``{"summary": "..."}``) so a structured-output interaction can
check and fingerprint the assembled output; :func:`expected_summary` gives the text.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import threading

__all__ = ["build_stream", "expected_summary"]

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
    b"Connection: close\r\n\r\n"
)


def _read_request(conn: socket.socket) -> bytes | None:
    """The body of a ``POST /chat/completions``, or ``None`` for anything else."""
    data = b""
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
    request_line = head.split(b"\r\n", 1)[0]
    if not request_line.startswith(b"POST ") or b"/chat/completions" not in request_line:
        return None
    return body


def _completion(deltas: int) -> bytes:
    """The non-streamed answer with the same content (for the receipt-equality check)."""
    message = {"role": "assistant", "content": "".join(_pieces(deltas))}
    payload = {
        **_BASE,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": deltas, "total_tokens": deltas + 12},
    }
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
    )
    return head + body


def _answer(conn: socket.socket, stream: memoryview, whole: bytes) -> None:
    not_found = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    with conn:
        try:
            body = _read_request(conn)
            if body is None:
                conn.sendall(not_found)
                return
            response = stream if json.loads(body).get("stream") is True else memoryview(whole)
            for start in range(0, len(response), 65536):
                conn.sendall(response[start : start + 65536])
            conn.shutdown(socket.SHUT_WR)
            while conn.recv(65536):  # drain until the client closes its end
                pass
        except OSError:
            return


def _serve(listener: socket.socket, stream: bytes, whole: bytes) -> None:
    view = memoryview(stream)
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_answer, args=(conn, view, whole), daemon=True).start()


def main() -> int:
    deltas = int(sys.argv[1])
    events = build_stream(deltas)
    body = b"".join(events)
    response = _HEAD + _chunked(events)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)  # P11 opens 20 connections at once
    whole = _completion(deltas)
    threading.Thread(target=_serve, args=(listener, response, whole), daemon=True).start()
    port = listener.getsockname()[1]
    print(port, len(body), hashlib.sha256(body).hexdigest(), flush=True)
    sys.stdin.read()  # serve until the parent closes our stdin
    listener.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
