"""Fixtures for the HTTP surface tests: a packages root, and clients on an in-process app.

The app is driven in-process through Starlette's test client (httpx2 over ASGI); tests that
need a real socket (disconnects, signals, the server command) live in templiqx-http-server.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from templiqx_http import HttpSettings, create_app
from templiqx_local import compose
from templiqx_ports import RuntimeAdapter

REPO = Path(__file__).resolve().parents[3]
WELCOME = REPO / "fixtures" / "packages" / "welcome"
SCENARIO = WELCOME / "scenarios" / "stream-vip"
OS = "onboarding-summary"
EXECUTE = f"/operations/v1/packages/welcome/contracts/{OS}/execute"
COMPILE = f"/operations/v1/packages/welcome/contracts/{OS}/compile"

ClientFactory = Callable[..., TestClient]


def scenario_values() -> dict[str, Any]:
    """``{"inputs": ..., "context": ...}`` of the welcome streaming scenario."""
    data: dict[str, Any] = json.loads((SCENARIO / "request.json").read_text(encoding="utf-8"))
    return data


def scenario_output() -> Any:
    """The answer the streaming scenario ends with (valid for onboarding-summary)."""
    manifest = json.loads((SCENARIO / "manifest.json").read_text(encoding="utf-8"))
    return manifest["events"][-1]["output"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A packages root with the welcome package and one workspace artifact."""
    packages = tmp_path / "packages"
    shutil.copytree(WELCOME, packages / "welcome")
    artifacts = packages / ".templiqx-workspace" / "welcome"
    artifacts.mkdir(parents=True)
    (artifacts / "notes.txt").write_text("parity-proof", encoding="utf-8")
    return packages


@pytest.fixture
def client_for(root: Path) -> Iterator[ClientFactory]:
    """``client_for(settings=..., runtime=..., **create_app_options)``: a client on a fresh app
    over ``root`` (services closed at the end)."""
    services: list[Any] = []

    def factory(
        settings: HttpSettings | None = None,
        runtime: RuntimeAdapter | None = None,
        **options: Any,
    ) -> TestClient:
        service = compose(root, runtime=runtime)
        services.append(service)
        return TestClient(create_app(service, settings, **options), raise_server_exceptions=True)

    yield factory
    for service in services:
        service.close()


@pytest.fixture
def client(client_for: ClientFactory) -> TestClient:
    """A client on the default app (fake runtime, default settings)."""
    return client_for()
