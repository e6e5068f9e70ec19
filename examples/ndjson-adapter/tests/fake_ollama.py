"""A fake Ollama-style server for trying the adapter by hand and for its own tests.

Standard library only. ``POST /api/chat`` answers from a :class:`Script` — the content
fragments to stream, or tool calls, or an error (as an HTTP status, or as an ``{"error": ...}``
line after some content) — in Ollama's shape: NDJSON lines ending with ``"done": true`` when the
request streams (the default), one JSON object when it says ``"stream": false``. The requests it
received are kept in :attr:`FakeOllama.requests`.

Run it alone (``python tests/fake_ollama.py``) and point the runtime at it::

    ACME_OLLAMA_BASE_URL=http://127.0.0.1:<port> ACME_OLLAMA_MODEL=fake \\
        templiqx execute hello --runtime acme-ollama ...
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOllama", "Script"]

_CREATED = "2026-01-15T09:30:00Z"


@dataclass
class Script:
    """What the fake model says next: content fragments, or tool calls ``(name, arguments)``,
    or an error (``status`` >= 400 with ``error``; or ``error`` alone: a line after the
    fragments)."""

    fragments: list[str] = field(default_factory=lambda: ["Hello", " from", " the fake."])
    calls: list[tuple[str, Any]] = field(default_factory=list)
    done_reason: str = "stop"
    error: str | None = None
    status: int = 200


class FakeOllama:
    """The server: ``with FakeOllama() as fake: ... fake.base_url ...``."""

    def __init__(self, script: Script | None = None) -> None:
        self.script = script or Script()
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeOllama:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def lines(self, model: str) -> Iterator[dict[str, Any]]:
        """The NDJSON lines of a streamed answer to the current script."""
        script = self.script

        def line(message: dict[str, Any], done: bool = False) -> dict[str, Any]:
            return {
                "model": model,
                "created_at": _CREATED,
                "message": {"role": "assistant", **message},
                "done": done,
            }

        for piece in script.fragments:
            yield line({"content": piece})
        if script.error is not None:
            yield {"error": script.error}
            return
        for name, arguments in script.calls:
            yield line(
                {
                    "content": "",
                    "tool_calls": [{"function": {"name": name, "arguments": arguments}}],
                }
            )
        yield {**line({"content": ""}, done=True), "done_reason": script.done_reason}

    def whole(self, model: str) -> dict[str, Any]:
        """The JSON object of an answer to the current script, not streamed."""
        script = self.script
        message: dict[str, Any] = {"role": "assistant", "content": "".join(script.fragments)}
        if script.calls:
            message["tool_calls"] = [
                {"function": {"name": name, "arguments": arguments}}
                for name, arguments in script.calls
            ]
        return {
            "model": model,
            "created_at": _CREATED,
            "message": message,
            "done": True,
            "done_reason": script.done_reason,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                fake.requests.append(body)
                if self.path != "/api/chat":
                    return self._send(404, {"error": f"unknown path {self.path}"})
                script, model = fake.script, str(body.get("model", ""))
                if script.status >= 400:
                    return self._send(script.status, {"error": script.error or "failed"})
                if body.get("stream", True) is False:
                    if script.error is not None:
                        return self._send(500, {"error": script.error})
                    return self._send(200, fake.whole(model))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                for line in fake.lines(model):
                    data = json.dumps(line).encode() + b"\n"
                    self.wfile.write(b"%x\r\n%b\r\n" % (len(data), data))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                return None

            def _send(self, status: int, value: Any) -> None:
                data = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)

        return Handler


if __name__ == "__main__":
    with FakeOllama() as server:
        print(f"fake Ollama on {server.base_url} (Ctrl-C to stop)", flush=True)
        threading.Event().wait()
