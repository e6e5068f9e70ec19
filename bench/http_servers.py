"""Servers for the HTTP benchmarks (P12-P14), each in its own process on 127.0.0.1.

* :class:`TempliqxServer`: ``templiqx-http-server`` (``python -m templiqx_http_server``) on an
  ephemeral port, its JSON log lines written to a file (the port is read from its
  ``listening`` line), stopped with SIGTERM;
* :class:`MinimalServer`: ``minimal_app.py``, the smallest Starlette apps on the same uvicorn
  configuration: a host's hand-written route calling the service (P12's baseline), or fixed
  bytes for every POST (P12f, what HTTP itself costs);
* :func:`post_keep_alive`: one request on a kept-alive ``http.client`` connection.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import BenchmarkError

__all__ = [
    "MinimalServer",
    "TempliqxServer",
    "json_lines",
    "keep_alive_connection",
    "post_keep_alive",
    "rss_of",
    "threads_of",
]

HERE = Path(__file__).resolve().parent


def _clean_env(extra: Mapping[str, str]) -> dict[str, str]:
    drop = ("TEMPLIQX_", "MODEL_", "OPENAI_", "LANGFUSE_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(extra)
    return env


def _wait_for_port(process: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchmarkError(f"the server exited: {log.read_text(errors='replace')[-2000:]}")
        for line in log.read_text(errors="replace").splitlines():
            if '"event":"listening"' in line:
                return int(json.loads(line)["port"])
        time.sleep(0.05)
    raise BenchmarkError("the server did not announce its port")


class TempliqxServer:
    """``templiqx-http-server --root ROOT --addr 127.0.0.1:0 ARGS``, with ``env``."""

    def __init__(
        self, root: Path, log: Path, *, args: Sequence[str] = (), env: Mapping[str, str] = {}
    ) -> None:
        self.root, self.log, self.args, self.env = root, log, list(args), dict(env)

    def __enter__(self) -> TempliqxServer:
        self._out = self.log.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "templiqx_http_server",
                "--root",
                str(self.root),
                "--addr",
                "127.0.0.1:0",
                *self.args,
            ],
            stdout=self._out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_clean_env(self.env),
        )
        self.port = _wait_for_port(self.process, self.log)
        return self

    def __exit__(self, *_: object) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._out.close()


class MinimalServer:
    """``minimal_app.py``: ``fixed`` answers every POST with ``body``'s bytes; ``service``
    (``root`` given) is a host's hand-written route calling the service over ``root``."""

    def __init__(self, body: bytes, scratch: Path, *, root: Path | None = None) -> None:
        self.body_file = scratch / "minimal-body.json"
        self.body_file.write_bytes(body)
        self.root = root
        self.log = scratch / "minimal.log"

    def __enter__(self) -> MinimalServer:
        self._out = self.log.open("wb")
        mode = ["fixed", str(self.body_file)] if self.root is None else ["service", str(self.root)]
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "minimal_app.py"), *mode],
            stdout=self._out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_clean_env({}),
        )
        self.port = _wait_for_port(self.process, self.log)
        return self

    def __exit__(self, *_: object) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._out.close()


def keep_alive_connection(port: int) -> http.client.HTTPConnection:
    """A connection to 127.0.0.1:``port`` with Nagle's algorithm off, as real HTTP clients
    (urllib3, httpx) set it: ``http.client`` writes headers and body separately, and the
    second write would wait for the server's delayed ACK (~40 ms)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.connect()
    assert connection.sock is not None
    connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return connection


def post_keep_alive(
    connection: http.client.HTTPConnection, path: str, body: bytes
) -> tuple[int, bytes]:
    """POST ``body`` (JSON) on a kept-alive connection; the status and the response body."""
    connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, response.read()


def rss_of(pid: int) -> int:
    """The resident set of a process, in bytes (``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise BenchmarkError(f"no VmRSS for process {pid}")


def threads_of(pid: int) -> int:
    """The number of threads of a process (``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise BenchmarkError(f"no Threads for process {pid}")


def json_lines(log: Path) -> list[dict[str, Any]]:
    """The JSON lines of a server log."""
    found = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found
