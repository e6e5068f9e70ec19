"""Serving: compose the service, build the app, run uvicorn, drain on SIGTERM.

On SIGTERM or SIGINT the server stops accepting connections and lets the requests in flight
finish for the grace period (``--grace``, default 10 s); then it cancels what still runs
through each call's cancel token, so every open event stream still ends in ``Failed``
(``TQX_RUNTIME_CANCELLED``) and its ``envelope``, and every JSON call answers; whatever has
not ended a few seconds later is cut off. Readiness answers 503 from the first signal on.

With ``--workers N`` uvicorn's supervisor runs N processes on one listening socket; each
builds its own app from the same configuration (:func:`worker_app`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
from collections.abc import Mapping
from types import FrameType
from typing import Any, Final

import uvicorn
from starlette.applications import Starlette

from templiqx_http import TempliqxHttp, create_app
from templiqx_http_server.checks import readiness_checks, runtime_problems
from templiqx_http_server.config import ServerConfig
from templiqx_http_server.logs import configure_logging, event

__all__ = ["CUT_OFF_S", "StartupError", "announce", "bind", "build_app", "run", "worker_app"]

CUT_OFF_S: Final = 5.0
"""After the grace period and the cancellations, how long streams get to end properly."""

FLAGS_ENV: Final = "TEMPLIQX_HTTP_SERVER_FLAGS"
"""How the parent hands its command-line flags to ``--workers`` processes (never the token:
each worker reads it where the parent did)."""

_apps: list[TempliqxHttp] = []


class StartupError(Exception):
    """The service or the app could not be built."""


def build_app(config: ServerConfig) -> Starlette:
    """Compose the service for ``config`` and build its app (``StartupError`` on failure)."""
    from templiqx_local.compose import RuntimeSelectionError, compose, load_runtime
    from templiqx_ports import PortError

    try:
        runtime = load_runtime(config.runtime)
    except RuntimeSelectionError as exc:
        raise StartupError(f"runtime mode {config.mode}: {exc}") from None
    try:
        service = compose(
            config.root,
            config.workspace,
            runtime,
            workspace_override_roots=config.workspace_override_roots or None,
            worker_threads=config.worker_threads,
        )
    except PortError as exc:
        raise StartupError(f"packages root {config.root}: {exc}") from None
    except OSError as exc:
        raise StartupError(f"packages root {config.root}: {exc.strerror}") from None
    except ValueError as exc:  # a service setting out of range (TEMPLIQX_RENDER_FUEL)
        raise StartupError(str(exc)) from None
    problems = runtime_problems(config.runtime, runtime)
    for problem in problems:
        event("not_ready", logging.WARNING, reason=problem)
    warm_up = getattr(runtime, "warm_up", None)
    if callable(warm_up) and not problems:  # the first model call then blocks nothing
        warm_up()
    app = create_app(
        service,
        config.http_settings(),
        readiness=readiness_checks(config.root, config.runtime, runtime),
        runtime_check=lambda: runtime_problems(config.runtime, runtime),
    )
    _apps.append(app.state.templiqx)
    return app


def _install_drain(grace_s: float) -> None:
    """Start the drain on the first SIGTERM/SIGINT: readiness 503 at once, the running calls
    cancelled after ``grace_s``.

    Called while the app is built, inside uvicorn's serving loop, after uvicorn installed its
    own signal handlers (which stop accepting and wait for the requests in flight): ours runs
    first, then uvicorn's. The same in a single process and in each ``--workers`` process.
    """
    loop = asyncio.get_running_loop()
    started = False

    def drain() -> None:
        running = sum(state.drain() for state in _apps)
        event("drain", pid=os.getpid(), cancelled=running)

    def begin() -> None:
        for state in _apps:
            state.inflight.draining = True
        event("shutdown", pid=os.getpid(), grace_s=grace_s)
        loop.call_later(grace_s, drain)

    for sig in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)

        def handler(signum: int, frame: FrameType | None, previous: Any = previous) -> None:
            nonlocal started
            if not started:
                started = True
                loop.call_soon_threadsafe(begin)
            if callable(previous):
                previous(signum, frame)

        signal.signal(sig, handler)


def bind(config: ServerConfig) -> socket.socket:
    """The listening socket (``OSError`` when the address cannot be bound)."""
    family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio turns Nagle's algorithm off only on sockets that say they are
    # TCP, and an accepted socket inherits the listener's protocol number. With 0, a response
    # written as headers then body waits for the client's delayed ACK: 40 ms a request.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((config.host, config.port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)  # connections queue from now on, before the loop accepts them
    sock.set_inheritable(True)
    return sock


def _uvicorn_config(app: Any, config: ServerConfig, **extra: Any) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
        proxy_headers=False,
        timeout_graceful_shutdown=int(config.grace_s + CUT_OFF_S + 0.999),
        timeout_keep_alive=max(1, round(config.keep_alive_s)),
        **extra,
    )


def run(
    config: ServerConfig, flags: Mapping[str, Any], sock: socket.socket, built: Starlette
) -> None:
    """Serve until a signal (SIGTERM/SIGINT), then drain (see the module docstring).

    ``built`` is the app :func:`build_app` made for ``config``: served as it is by a single
    process; with ``--workers`` each process builds its own.
    """
    if config.workers == 1:

        def app() -> Starlette:
            _install_drain(config.grace_s)
            return built

        uvicorn.Server(_uvicorn_config(app, config, factory=True)).run(sockets=[sock])
        event("shutdown_complete", pid=os.getpid())
        return
    from uvicorn.supervisors import Multiprocess

    os.environ[FLAGS_ENV] = json.dumps(dict(flags))
    uv_config = _uvicorn_config(
        "templiqx_http_server.serve:worker_app", config, factory=True, workers=config.workers
    )
    Multiprocess(uv_config, sockets=[sock]).run()
    event("shutdown_complete", pid=os.getpid())


def worker_app() -> Starlette:
    """The app of one ``--workers`` process, from the parent's flags and the environment."""
    configure_logging()
    flags = json.loads(os.environ.get(FLAGS_ENV, "{}"))
    config = ServerConfig.resolve(flags, os.environ)
    built = build_app(config)
    _install_drain(config.grace_s)
    return built


def announce(config: ServerConfig, sock: socket.socket) -> None:
    """The start lines: the configuration (no secret), warnings, and where it listens."""
    event("start", pid=os.getpid(), **config.public())
    for warning in config.warnings:
        event("config_warning", logging.WARNING, warning=warning)
    if config.runtime == "fake":
        event(
            "fake_runtime",
            logging.WARNING,
            note="deterministic-fake mode: execute_contract answers fixture_output, no model",
        )
    name = sock.getsockname()
    host = f"[{name[0]}]" if ":" in name[0] else name[0]
    event("listening", url=f"http://{host}:{name[1]}", port=name[1])
