"""Fixtures for the MCP server tests: a packages root and a client session on a subprocess."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

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
        *args: str, env: Mapping[str, str] | None = None
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
                ClientSession(read, write) as session,
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
