"""Fixtures for the MCP server tests: a packages root and a client session on a subprocess."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import IO, Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

WELCOME = Path(__file__).resolve().parents[3] / "fixtures" / "packages" / "welcome"

SessionFactory = Callable[..., AbstractAsyncContextManager[ClientSession]]


def server_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Python settings of this process plus ``extra`` (templiqx settings only from ``extra``)."""
    env = {k: v for k, v in os.environ.items() if k.startswith("PYTHON")}
    env.update(extra or {})
    return env


@pytest.fixture
def packages_root(tmp_path: Path) -> Path:
    """A packages root holding a copy of the welcome example package."""
    root = tmp_path / "packages"
    shutil.copytree(WELCOME, root / "welcome")
    return root


@pytest.fixture
def open_session(tmp_path: Path) -> SessionFactory:
    """``open_session(*args, env=…)``: an initialized session on ``templiqx-mcp *args``."""

    @asynccontextmanager
    async def factory(
        *args: str, env: Mapping[str, str] | None = None, message_handler: Any = None
    ) -> AsyncIterator[ClientSession]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "templiqx_mcp", *args],
            env=server_env(env),
            cwd=str(tmp_path),
        )
        with (tmp_path / "server.log").open("a", encoding="utf-8") as log:
            async with (
                stdio_client(params, errlog=log) as (read, write),
                ClientSession(read, write, message_handler=message_handler) as session,
            ):
                await session.initialize()
                yield session

    return factory


@pytest.fixture
def session_result() -> dict[str, Any]:
    """A scratch dict for values computed inside ``anyio.run``."""
    return {}


class SharedSession:
    """One server for a whole test module, called synchronously through a blocking portal."""

    def __init__(self, portal: BlockingPortal, session: ClientSession, root: Path) -> None:
        self.portal = portal
        self.session = session
        self.root = root

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``await session.<method>(*args, **kwargs)`` on the portal's event loop."""
        return self.portal.call(partial(getattr(self.session, method), *args, **kwargs))


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedSession]:
    """A server over a copy of the welcome package, shared by the tests of one module."""
    base = tmp_path_factory.mktemp("shared-mcp")
    root = base / "packages"
    shutil.copytree(WELCOME, root / "welcome")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "templiqx_mcp", str(root)],
        env=server_env(),
        cwd=str(base),
    )

    @asynccontextmanager
    async def connect() -> AsyncIterator[ClientSession]:
        with (base / "server.log").open("a", encoding="utf-8") as log:
            async with (
                stdio_client(params, errlog=log) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                yield session

    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(connect()) as session,
    ):
        yield SharedSession(portal, session, root)


# --- a raw JSON-lines driver (no client library, so anything can be sent) -------------------

STARTUP_TIMEOUT = 30.0


class RawServer:
    """A server subprocess with a background reader collecting stdout lines."""

    def __init__(self, args: list[str], cwd: Path, env: Mapping[str, str] | None = None) -> None:
        self.log_path = cwd / "stderr.log"
        self.log = self.log_path.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "templiqx_mcp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            cwd=cwd,
            env=server_env(env),
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.raw: list[bytes] = []
        self.unclaimed: list[dict[str, Any]] = []
        self.arrays: list[list[Any]] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.raw.append(line)
            self.lines.put(line)

    @property
    def stdin(self) -> IO[bytes]:
        assert self.process.stdin is not None
        return self.process.stdin

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(message)

    def send_raw(self, value: Any) -> None:
        """Send any JSON value as one line (a batch, a value that is no message, ...)."""
        self.stdin.write(json.dumps(value).encode() + b"\n")
        self.stdin.flush()

    def answer(
        self, request_id: int | str | None, timeout: float = STARTUP_TIMEOUT
    ) -> dict[str, Any]:
        """The next answer with this id (``None``: the next error without one); answers to
        other ids that arrive first are kept for later."""
        for index, message in enumerate(self.unclaimed):
            if message.get("id") == request_id:
                return self.unclaimed.pop(index)
        while True:
            message: dict[str, Any] = json.loads(self.lines.get(timeout=timeout))
            if isinstance(message, list):
                self.arrays.append(message)
                continue  # a batch's answer: see batch_answer
            if "result" not in message and "error" not in message:
                continue  # a notification
            if message.get("id") == request_id:
                return message
            self.unclaimed.append(message)

    def batch_answer(self, timeout: float = STARTUP_TIMEOUT) -> list[Any]:
        """The next answer that is an array (a batch's); other answers are kept for later."""
        while not self.arrays:
            message = json.loads(self.lines.get(timeout=timeout))
            if isinstance(message, list):
                return message
            if "result" in message or "error" in message:
                self.unclaimed.append(message)
        return self.arrays.pop(0)

    def answered(self, request_id: int | str | None) -> bool:
        """Whether the answer to ``request_id`` has arrived (without waiting)."""
        while not self.lines.empty():
            message = json.loads(self.lines.get_nowait())
            if "result" in message or "error" in message:
                self.unclaimed.append(message)
        return any(message.get("id") == request_id for message in self.unclaimed)

    def initialize(self, version: str = "2025-06-18") -> dict[str, Any]:
        """The initialize handshake; the server's answer."""
        self.send(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "raw-test", "version": "1"},
                },
            }
        )
        reply = self.answer("init")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def call(self, request_id: int, name: str, arguments: dict[str, Any]) -> None:
        """Send a ``tools/call`` request (the answer comes with :meth:`answer`)."""
        self.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )

    def stderr(self) -> str:
        """What the server wrote on stderr so far."""
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(encoding="utf-8")

    def close(self) -> int:
        self.stdin.close()
        try:
            return self.process.wait(timeout=10)
        finally:
            self.process.kill()
            self.process.wait()
            self.log.close()


@pytest.fixture
def raw_server() -> Iterator[Callable[..., RawServer]]:
    """``raw_server(args, cwd, env)``: a raw server; any left running is stopped afterwards."""
    started: list[RawServer] = []

    def start(args: list[str], cwd: Path, env: Mapping[str, str] | None = None) -> RawServer:
        server = RawServer(args, cwd, env)
        started.append(server)
        return server

    yield start
    for server in started:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()
        server.log.close()


@pytest.fixture
def served(raw_server: Callable[..., RawServer], packages_root: Path, tmp_path: Path) -> RawServer:
    """An initialized raw server over ``packages_root`` (``--root``)."""
    server = raw_server(["--root", str(packages_root)], tmp_path)
    server.initialize()
    return server
