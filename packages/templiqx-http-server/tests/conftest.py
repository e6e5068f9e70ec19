"""A real ``templiqx-http-server`` as a subprocess on 127.0.0.1 with an ephemeral port.

:func:`serving` starts ``python -m templiqx_http_server --addr 127.0.0.1:0 ...`` with a clean
environment plus the given variables, reads its JSON log lines as they come (the
``listening`` line gives the port), and stops it with SIGTERM at the end (then kills it if it
does not exit). Every line the server wrote, stdout and stderr, is kept for the test to read.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
WELCOME = REPO / "fixtures" / "packages" / "welcome"
SCENARIO = WELCOME / "scenarios" / "stream-vip"


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without templiqx, model or Langfuse settings, plus ``extra``."""
    drop = ("TEMPLIQX_", "MODEL_", "OPENAI_", "LANGFUSE_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(extra or {})
    return env


@dataclass
class Server:
    """One running server: its process, port and every line it wrote so far."""

    process: subprocess.Popen[bytes]
    port: int = 0
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    _events: queue.Queue[dict[str, Any]] = field(default_factory=queue.Queue)

    def connection(self, timeout: float = 30) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """One request on a fresh connection: status, headers (lower-case), body."""
        connection = self.connection()
        data = (
            json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body
        )
        sent = dict(headers or {})
        if body is not None and not isinstance(body, bytes):
            sent.setdefault("Content-Type", "application/json")
        try:
            connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            return (
                response.status,
                {k.lower(): v for k, v in response.getheaders()},
                response.read(),
            )
        finally:
            connection.close()

    def events(self, name: str) -> list[dict[str, Any]]:
        """The JSON log lines whose ``event`` is ``name``, so far."""
        found = []
        for line in list(self.stdout):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("event") == name:
                found.append(record)
        return found

    def wait_for(self, name: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for record in self.events(name):
                return record
            if self.process.poll() is not None:
                time.sleep(0.2)
                found = self.events(name)
                if found:
                    return found[0]
                raise AssertionError(
                    f"the server exited ({self.process.returncode}) before '{name}': "
                    + "\n".join(self.stderr + self.stdout)
                )
            time.sleep(0.02)
        raise AssertionError(f"no '{name}' line within {timeout} s: " + "\n".join(self.stdout))

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, then wait for the exit status (SIGKILL after ``timeout``)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
            raise AssertionError("the server did not stop within its grace period") from None


def _pump(stream: Any, into: list[str]) -> None:
    for raw in iter(stream.readline, b""):
        into.append(raw.decode("utf-8", "replace").rstrip("\n"))
    stream.close()


def start(*args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Server:
    """Start the server (no wait); read its output in the background."""
    process = subprocess.Popen(
        [sys.executable, "-m", "templiqx_http_server", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=clean_env(env),
        cwd=cwd,
    )
    server = Server(process)
    for stream, into in ((process.stdout, server.stdout), (process.stderr, server.stderr)):
        threading.Thread(target=_pump, args=(stream, into), daemon=True).start()
    return server


@contextmanager
def serving(
    *args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> Iterator[Server]:
    """A started server listening on 127.0.0.1 (ephemeral port), stopped at the end."""
    server = start("--addr", "127.0.0.1:0", *args, env=env, cwd=cwd)
    try:
        server.port = int(server.wait_for("listening")["port"])
        yield server
    finally:
        if server.process.poll() is None:
            server.stop()


@pytest.fixture
def packages(tmp_path: Path) -> Path:
    """A packages root holding a copy of the welcome package."""
    root = tmp_path / "packages"
    shutil.copytree(WELCOME, root / "welcome")
    return root


@pytest.fixture(scope="session")
def harness() -> Any:
    """This module (its helpers), for test modules: conftest is not importable by name."""
    return sys.modules[__name__]
