"""Shared harness for the cross-surface tests: the three ways to reach the same service.

* Python: :func:`templiqx_local.compose.compose` in-process, then ``service.invoke``;
* CLI: ``python -m templiqx_cli --root R --json …`` as a subprocess;
* MCP: ``python -m templiqx_mcp R`` as a subprocess, driven by the official ``mcp`` client over
  stdio.

Every helper starts its own processes and stops them; nothing is left running after a test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[2]
WELCOME = REPO / "fixtures" / "packages" / "welcome"
SCENARIO = "scenarios/stream-vip/manifest.json"


def cli_argv(root: Path, *args: str) -> list[str]:
    """The CLI command line for ``args`` over ``root`` with ``--json``."""
    return [sys.executable, "-m", "templiqx_cli", "--root", str(root), "--json", *args]


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The test process environment without templiqx settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPLIQX_")}
    env.update(extra or {})
    return env


@dataclass
class CliResult:
    """One finished CLI run."""

    code: int
    stdout: str
    stderr: str

    def envelope(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.stdout)
        return data


def run_cli(
    root: Path, *args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> CliResult:
    """Run the CLI to completion (60 s at most)."""
    done = subprocess.run(
        cli_argv(root, *args),
        capture_output=True,
        text=True,
        env=child_env(env),
        cwd=cwd,
        timeout=60,
        check=False,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


@asynccontextmanager
async def mcp_session(
    root: Path,
    *,
    env: Mapping[str, str] | None = None,
    errlog: Path,
    message_handler: Callable[[Any], Any] | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized client session on a fresh ``templiqx-mcp ROOT`` subprocess."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "templiqx_mcp", str(root)],
        env={k: v for k, v in child_env(env).items() if k.startswith(("TEMPLIQX_", "PYTHON"))},
        cwd=str(root.parent),
    )
    with errlog.open("a", encoding="utf-8") as log:
        async with stdio_client(params, errlog=log) as (read, write):
            kwargs: dict[str, Any] = {}
            if message_handler is not None:
                kwargs["message_handler"] = message_handler
            async with ClientSession(read, write, **kwargs) as session:
                await session.initialize()
                yield session


def fresh_sandbox(sandbox: Path) -> Path:
    """``sandbox`` rebuilt from scratch: the welcome package and one workspace artifact.

    Returns the packages root (``sandbox/packages``).
    """
    if sandbox.exists():
        shutil.rmtree(sandbox)
    root = sandbox / "packages"
    shutil.copytree(WELCOME, root / "welcome")
    artifacts = root / ".templiqx-workspace" / "welcome"
    artifacts.mkdir(parents=True)
    (artifacts / "notes.txt").write_text("parity-proof", encoding="utf-8")
    return root


def scenario_request() -> dict[str, Any]:
    """The inputs and context of the streaming scenario (``{"inputs": …, "context": …}``)."""
    data: dict[str, Any] = json.loads((WELCOME / "scenarios/stream-vip/request.json").read_text())
    return data


def scenario_output() -> Any:
    """The output the streaming scenario finishes with (valid for ``onboarding-summary``)."""
    manifest = json.loads((WELCOME / SCENARIO).read_text())
    return manifest["events"][-1]["output"]


@pytest.fixture
def welcome_root(tmp_path: Path) -> Path:
    """A packages root holding a copy of the welcome package."""
    return fresh_sandbox(tmp_path / "sandbox")


def mock_env(root: Path, pace_ms: int) -> dict[str, str]:
    """Settings selecting the scripted mock on the welcome streaming scenario."""
    return {
        "TEMPLIQX_MOCK_SCENARIO": str(root / "welcome" / SCENARIO),
        "TEMPLIQX_MOCK_PACE_MS": str(pace_ms),
    }


@pytest.fixture(scope="session")
def harness() -> Any:
    """This module: the helpers above, for test modules (conftest is not importable by name)."""
    return sys.modules[__name__]
