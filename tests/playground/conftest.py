"""The playground in a real browser: Debian's chromium driven by Playwright for Python.

A module-scoped server — the templiqx-http application under uvicorn, in this process, on
127.0.0.1 with an ephemeral port — serves a copy of the welcome package on the scripted mock
runtime replaying ``scenarios/stream-vip`` paced so each delta
arrives on its own (:data:`PACE_MS`). One browser serves the whole module; each test gets a
fresh page (1280x800) whose console errors and uncaught exceptions fail the test.

Chromium is ``TEMPLIQX_CHROMIUM``, else ``chromium`` on ``PATH``, else ``/usr/bin/chromium``
(``apt-get install chromium``; Playwright downloads no browser here). Missing, it fails the
tests under CI (``CI`` or ``TEMPLIQX_REFERENCE`` set, as ``.ci/run`` does) and skips them with
one message elsewhere. Screenshots go to ``TEMPLIQX_PLAYGROUND_SCREENSHOTS`` (``nox -s
playground`` sets it to docs/images) or a temporary folder.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from templiqx_contracts import ExecutionRequest, StreamEvent
from templiqx_http import HttpSettings, create_app
from templiqx_local import compose
from templiqx_mock import ScriptedRuntime
from templiqx_mock.scenario import ScenarioManifest
from templiqx_ports import CancelToken, RuntimeFailureCode

REPO = Path(__file__).resolve().parents[2]
WELCOME = REPO / "fixtures" / "packages" / "welcome"
SCENARIO = WELCOME / "scenarios" / "stream-vip" / "manifest.json"
SUPPORT_DESK = REPO / "fixtures" / "packages" / "support-desk"
PACE_MS = 60
"""Real milliseconds between two streamed deltas (18 deltas: about a second a run)."""
TOKEN = "playground-test-token"


def _chromium() -> str:
    configured = os.environ.get("TEMPLIQX_CHROMIUM")
    found = configured or shutil.which("chromium") or "/usr/bin/chromium"
    if Path(found).is_file():
        return found
    message = (
        f"no chromium at {found}: install it (apt-get install -y chromium) or point "
        "TEMPLIQX_CHROMIUM at one; the playground's browser tests need it"
    )
    if os.environ.get("CI") or os.environ.get("TEMPLIQX_REFERENCE"):
        pytest.fail(message + " (CI: a missing browser is a failure)", pytrace=False)
    pytest.skip(message)


class WatchedRuntime(ScriptedRuntime):
    """The scripted mock, noting each stream the server stopped before its end (a cancel)."""

    stopped_early: list[int]

    async def aexecute_streaming(
        self, request: ExecutionRequest, *, cancel: CancelToken | None = None
    ) -> AsyncIterator[StreamEvent]:
        relayed = 0
        finished = False
        try:
            async for event in super().aexecute_streaming(request, cancel=cancel):
                relayed += 1
                yield event
            finished = True
        finally:
            if not finished:
                self.stopped_early.append(relayed)


def watched_runtime(scenario: Path = SCENARIO) -> WatchedRuntime:
    manifest = ScenarioManifest.load(scenario)
    runtime = WatchedRuntime.from_manifest(manifest, pace_ms=PACE_MS)
    assert isinstance(runtime, WatchedRuntime)
    runtime.stopped_early = []
    return runtime


@dataclass
class Served:
    url: str
    root: Path
    runtime: ScriptedRuntime
    access: list[str] = field(default_factory=list)


class _Lines(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__()
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record.getMessage())


@contextlib.contextmanager
def serving(root: Path, runtime: ScriptedRuntime, settings: HttpSettings) -> Iterator[Served]:
    """The application under uvicorn on 127.0.0.1 (ephemeral port), stopped at the end."""
    app = create_app(compose(root, runtime=runtime), settings)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    served = Served(f"http://127.0.0.1:{port}", root, runtime)
    handler = _Lines(served.access)
    access = logging.getLogger("templiqx_http.access")
    access.addHandler(handler)
    access.setLevel(logging.INFO)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert thread.is_alive(), "uvicorn stopped while starting"
        assert time.monotonic() < deadline, "uvicorn did not start within 15 s"
        time.sleep(0.01)
    try:
        yield served
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()
        access.removeHandler(handler)


def packages_root(root: Path) -> Path:
    """A packages root holding a copy of the welcome package."""
    shutil.copytree(WELCOME, root / "welcome")
    return root


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = packages_root(tmp_path_factory.mktemp("packages"))
    with serving(root, watched_runtime(), HttpSettings()) as served:
        yield served


@pytest.fixture(scope="module")
def tools_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """support-desk on the mock replaying triage-refund: a model that calls two tools."""
    root = tmp_path_factory.mktemp("packages")
    shutil.copytree(SUPPORT_DESK, root / "support-desk")
    runtime = watched_runtime(SUPPORT_DESK / "scenarios" / "triage-refund" / "manifest.json")
    with serving(root, runtime, HttpSettings()) as served:
        yield served


@pytest.fixture(scope="module")
def failing_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """welcome on a mock whose first call fails as rate limited."""
    root = packages_root(tmp_path_factory.mktemp("packages"))
    runtime = ScriptedRuntime.failure("rate-limited", RuntimeFailureCode.RATE_LIMITED)
    with serving(root, runtime, HttpSettings()) as served:
        yield served


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = packages_root(tmp_path_factory.mktemp("packages"))
    with serving(root, watched_runtime(), HttpSettings(token=TOKEN)) as served:
        yield served


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the browser tests (they are one module), closed after them: Playwright's
    sync API keeps an event loop of its own, which must not outlive the module."""
    executable = _chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable,
            headless=True,
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Console:
    """What the page said on its console, and the exceptions it did not catch."""

    errors: list[str] = field(default_factory=list)
    http_statuses: list[str] = field(default_factory=list)


@pytest.fixture
def console() -> Console:
    return Console()


def _watch(page: Any, console: Console) -> None:
    def on_console(message: Any) -> None:
        if message.type != "error":
            return
        text = message.text
        # Chromium logs every 4xx/5xx answer as "Failed to load resource"; the API answers
        # a contract that is not valid with 422 by design: those are kept apart and checked
        if text.startswith("Failed to load resource: the server responded with a status of"):
            console.http_statuses.append(text)
        else:
            console.errors.append(text)

    page.on("console", on_console)
    page.on("pageerror", lambda error: console.errors.append(f"uncaught: {error}"))


@pytest.fixture
def page(browser: Any, console: Console) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light")
    opened = context.new_page()
    _watch(opened, console)
    opened.set_default_timeout(10_000)
    try:
        yield opened
    finally:
        context.close()
    assert console.errors == [], console.errors
    _only_deliberate(console)


@pytest.fixture
def new_page(browser: Any, console: Console) -> Iterator[Any]:
    """Another page maker (other viewports and colour schemes), console watched the same."""
    contexts: list[Any] = []

    def make(**options: Any) -> Any:
        context = browser.new_context(**options)
        contexts.append(context)
        made = context.new_page()
        _watch(made, console)
        made.set_default_timeout(10_000)
        return made

    yield make
    for context in contexts:
        context.close()
    assert console.errors == [], console.errors
    _only_deliberate(console)


def _only_deliberate(console: Console) -> None:
    """The API's non-2xx answers the page meets by design: 401 (asks for the token), 409 (a
    stale CAS token), 422 (a contract or values that are not valid) and 501 (the runtime lacks a
    capability the contract needs: account-digest's `text` on the mock, in the evals)."""
    for line in console.http_statuses:
        assert any(f" {status} " in line for status in (401, 409, 422, 501)), line


@pytest.fixture(scope="session")
def shots() -> Path:
    configured = os.environ.get("TEMPLIQX_PLAYGROUND_SCREENSHOTS")
    folder = (
        Path(configured)
        if configured
        else Path(os.environ.get("TMPDIR", "/tmp")) / "templiqx-playground-shots"
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder
