"""A loopback OpenAI-compatible chat-completions server for batch tests and benchmark P15.

Run as its own process (its work never competes with the client for the GIL)::

    python model_server.py --latency-ms 50 [--max-in-flight 4] [--retry-after-ms 200] ...

It prints its port on stdout, then answers ``POST /chat/completions`` (HTTP/1.1, keep-alive,
asyncio, standard library only) after ``--latency-ms``, until its stdin closes. The answer is
deterministic: for a request with a ``response_format`` the content is ``{"label": L}``, else
the text ``answer L``, where ``L`` is the first 12 hex digits of the SHA-256 of the request's
messages; usage is reported (prompt tokens = characters / 4, completion tokens = 5).

Faults, for the pacing tests:

* ``--max-in-flight N`` — a request arriving while N are being answered gets ``429`` at once,
  with ``retry-after-ms: --retry-after-ms``;
* ``--reject-first K`` — the first K requests get that ``429``;
* ``--permanent-marker TEXT`` — a request whose messages contain TEXT gets ``400`` (a permanent
  failure: never retried);
* ``--transient-marker TEXT`` — such a request gets ``503`` the first ``--transient-times``
  times its messages are seen, then an answer.

``GET /stats`` answers ``{"requests", "answered", "by_status", "max_in_flight", "arrivals",
"distinct"}`` (``arrivals``: seconds since start of the first 20,000 requests).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import time
from typing import Any

_ARRIVALS_KEPT = 20_000


class State:
    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.started = time.monotonic()
        self.requests = 0
        self.answered = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.by_status: dict[str, int] = {}
        self.arrivals: list[float] = []
        self.seen: dict[str, int] = {}

    def stats(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "answered": self.answered,
            "by_status": self.by_status,
            "max_in_flight": self.max_in_flight,
            "arrivals": self.arrivals,
            "distinct": len(self.seen),
        }


def _completion(body: dict[str, Any]) -> tuple[bytes, str]:
    messages = body.get("messages", [])
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    label = digest[:12]
    content = json.dumps({"label": label}) if body.get("response_format") else f"answer {label}"
    characters = sum(len(str(m.get("content", ""))) for m in messages)
    prompt = max(1, characters // 4)
    answer = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 1767225600,
        "model": body.get("model", "loopback"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5},
    }
    return json.dumps(answer).encode(), digest


def _response(status: int, body: bytes, headers: dict[str, str] | None = None) -> bytes:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests"}.get(
        status, "Service Unavailable"
    )
    lines = [f"HTTP/1.1 {status} {reason}", "Content-Type: application/json"]
    lines.append(f"Content-Length: {len(body)}")
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _error(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind}}).encode()


async def _answer(state: State, method: str, path: str, payload: bytes) -> bytes:
    options = state.options
    if method == "GET" and path.endswith("/stats"):
        return _response(200, json.dumps(state.stats()).encode())
    if method != "POST" or not path.endswith("/chat/completions"):
        return _response(404, _error("not found", "invalid_request_error"))
    state.requests += 1
    if len(state.arrivals) < _ARRIVALS_KEPT:
        state.arrivals.append(round(time.monotonic() - state.started, 4))
    retry = {"retry-after-ms": str(options.retry_after_ms)}
    if state.requests <= options.reject_first or (
        options.max_in_flight and state.in_flight >= options.max_in_flight
    ):
        return _status(state, 429, _error("rate limited", "rate_limit_error"), retry)
    body = json.loads(payload)
    text = json.dumps(body.get("messages", []))
    if options.permanent_marker and options.permanent_marker in text:
        return _status(state, 400, _error("refused", "invalid_request_error"))
    content, digest = _completion(body)
    seen = state.seen.get(digest, 0)
    state.seen[digest] = seen + 1
    transient = options.transient_marker and options.transient_marker in text
    if transient and seen < options.transient_times:
        return _status(state, 503, _error("busy", "server_error"))
    state.in_flight += 1
    state.max_in_flight = max(state.max_in_flight, state.in_flight)
    try:
        if options.latency_ms:
            await asyncio.sleep(options.latency_ms / 1000)
    finally:
        state.in_flight -= 1
    state.answered += 1
    return _status(state, 200, content)


def _status(state: State, status: int, body: bytes, headers: dict[str, str] | None = None) -> bytes:
    state.by_status[str(status)] = state.by_status.get(str(status), 0) + 1
    return _response(status, body, headers)


async def _serve_client(
    state: State, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            payload = await reader.readexactly(length) if length else b""
            writer.write(await _answer(state, method, path, payload))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def _main(options: argparse.Namespace) -> None:
    state = State(options)
    server = await asyncio.start_server(
        lambda r, w: _serve_client(state, r, w), "127.0.0.1", 0, backlog=1024
    )
    port = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"{port}\n")
    sys.stdout.flush()
    loop = asyncio.get_running_loop()
    closed = loop.create_future()

    def watch_stdin() -> None:
        sys.stdin.read()
        loop.call_soon_threadsafe(closed.set_result, None)

    loop.run_in_executor(None, watch_stdin)
    async with server:
        await closed


class ModelServer:
    """The server in a child process, for a ``with`` block: ``base_url``, ``stats()``."""

    def __init__(self, *arguments: str) -> None:
        import subprocess

        self._process = subprocess.Popen(
            [sys.executable, __file__, *arguments],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line.strip():
            self._process.kill()
            raise RuntimeError("the loopback model server did not start")
        self.port = int(line)
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        import urllib.request

        with urllib.request.urlopen(f"{self.base_url}/stats", timeout=10) as answer:
            found: dict[str, Any] = json.loads(answer.read())
        return found

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except Exception:
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> ModelServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--max-in-flight", type=int, default=0)
    parser.add_argument("--retry-after-ms", type=int, default=100)
    parser.add_argument("--reject-first", type=int, default=0)
    parser.add_argument("--permanent-marker", default="")
    parser.add_argument("--transient-marker", default="")
    parser.add_argument("--transient-times", type=int, default=1)
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
