"""A raw-pipe driver for the ``templiqx-mcp`` server (no client library, so anything can be sent).

:func:`start` launches ``python -m templiqx_mcp ROOT`` with the given environment, performs the
``initialize`` handshake and returns a :class:`McpPipe`: ``send`` writes raw bytes, ``request``
sends one JSON-RPC request and ``wait_for`` blocks for its response. A reader thread sorts what
the server writes into responses (by id), notifications, and lines that are not JSON-RPC at
all (which the server must never write); every line is also kept verbatim for scanning.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["McpPipe", "line", "start"]


def line(message: Any) -> bytes:
    """One JSON-RPC message as a line."""
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


@dataclass
class McpPipe:
    """A running server and what it has written so far."""

    process: subprocess.Popen[bytes]
    stderr: Path
    responses: dict[Any, dict[str, Any]] = field(default_factory=dict)
    notifications: int = 0
    non_protocol: list[bytes] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)
    arrived: threading.Condition = field(default_factory=threading.Condition)
    next_id: int = 1000

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def request(self, method: str, params: Any = None) -> int:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(line(message))
        return self.next_id

    def call(self, name: str, arguments: Mapping[str, Any], timeout: float = 30.0) -> Any:
        """``tools/call`` and wait: the response message (``None`` when none came)."""
        return self.wait_for(
            self.request("tools/call", {"name": name, "arguments": dict(arguments)}), timeout
        )

    def wait_for(self, request_id: Any, timeout: float = 10.0) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while request_id not in self.responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    return None
                self.arrived.wait(left)
            found = self.responses[request_id]
        if "_raw" in found:
            found = json.loads(found["_raw"])
        return found

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def close(self, timeout: float = 10.0) -> int:
        """Close stdin and wait for the exit code (killing the server if it does not exit)."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return -9


_LARGE = 1 << 20
_HEAD = re.compile(rb'^\{"jsonrpc":"2\.0","id":(-?[0-9]+|"[^"\\]*"),"(?:result|error)":')


def _read(pipe: McpPipe) -> None:
    assert pipe.process.stdout is not None
    for raw in pipe.process.stdout:
        pipe.raw.append(raw)
        head = _HEAD.match(raw[:256]) if len(raw) > _LARGE else None
        if head is not None:  # a large response: parsed when asked for, not on this thread
            with pipe.arrived:
                pipe.responses[json.loads(head.group(1))] = {"_raw": raw}
                pipe.arrived.notify_all()
            continue
        try:
            message = json.loads(raw)
        except ValueError:
            pipe.non_protocol.append(raw[:200])
            continue
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            pipe.non_protocol.append(raw[:200])
            continue
        with pipe.arrived:
            if "id" in message and ("result" in message or "error" in message):
                key = message["id"]
                if isinstance(key, (dict, list)):
                    key = json.dumps(key, sort_keys=True)
                pipe.responses[key] = message
            else:
                pipe.notifications += 1
            pipe.arrived.notify_all()


def start(root: Path, env: Mapping[str, str], workdir: Path) -> McpPipe:
    """A server over ``root`` with exactly ``env`` added to a clean environment, initialized."""
    child = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPLIQX_", "MODEL_"))}
    child = {k: v for k, v in child.items() if not k.startswith("LANGFUSE_")}
    child.update(env)
    stderr = workdir / f"mcp-stderr-{time.monotonic_ns()}.txt"
    with stderr.open("wb") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "templiqx_mcp", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            env=child,
            cwd=workdir,
        )
    pipe = McpPipe(process, stderr)
    threading.Thread(target=_read, args=(pipe,), daemon=True).start()
    initialize = pipe.request(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "templiqx-reliability", "version": "0"},
        },
    )
    if pipe.wait_for(initialize, 30.0) is None:
        pipe.close(2.0)
        raise AssertionError(f"the MCP server did not initialize: {stderr.read_text()[:2000]}")
    pipe.send(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    return pipe
