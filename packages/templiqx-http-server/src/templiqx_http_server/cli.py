"""The ``templiqx-http-server`` command: check, serve, or probe a running server."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final

from templiqx_http.settings import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CONCURRENT,
    DEFAULT_REQUEST_TIMEOUT_S,
)
from templiqx_http_server.config import (
    DEFAULT_ADDR,
    DEFAULT_GRACE_S,
    DEFAULT_KEEP_ALIVE_S,
    DEFAULT_WORKER_THREADS,
    ENV,
    ConfigError,
    ServerConfig,
    parse_addr,
)

__all__ = ["PROG", "main", "parser"]

PROG: Final = "templiqx-http-server"
VERSION: Final = "0.2.0"
HEALTHCHECK_TIMEOUT_S: Final = 2.0
_PROBE: Final = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"

DESCRIPTION = """\
Serve the templiqx operations API over HTTP: every catalog operation at the reference's route
under /operations/v1, live Server-Sent Events for execute_contract (Accept: text/event-stream),
health and readiness probes, the OpenAPI document and an API docs page (/swagger-ui/).

Every setting is a flag or an environment variable (a flag wins; a blank variable is unset).
It binds 127.0.0.1:8080 by default; any other address needs a bearer token."""

EPILOG = f"""\
environment (the reference's names first, then the port's own):
  {ENV["addr"]:<40} bind address ip:port (default {DEFAULT_ADDR})
  {ENV["root"] + " / TEMPLIQX_PACKAGES_ROOT":<40} packages root (default .)
  {ENV["workspace"] + " / TEMPLIQX_WORKSPACE_ROOT":<40} workspace (default ROOT/.templiqx-workspace)
  {ENV["mode"] + " / TEMPLIQX_RUNTIME":<40} deterministic-fake (default), langfuse, or any
  {"":<40} runtime name: fake, mock, openai, langfuse, ...
  {ENV["token"]:<40} bearer token every operation route requires
  {ENV["token_file"]:<40} file holding the token (same as --token-file)
  {ENV["allow_unauthenticated"]:<40} 1: serve a public address without a token
  {ENV["allow_workspace_override"]:<40} 1: accept the workspace query parameter
  {ENV["workspace_override_roots"]:<40} folders (':'-separated) an override may lie in
  {ENV["max_body_bytes"]:<40} request body limit (default {DEFAULT_MAX_BODY_BYTES})
  {ENV["request_timeout"]:<40} request deadline in seconds (default {DEFAULT_REQUEST_TIMEOUT_S:g})
  {ENV["max_concurrent"]:<40} operation requests at once (default {DEFAULT_MAX_CONCURRENT})
  {ENV["cors_origins"]:<40} comma-separated browser origins (default: CORS off)
  {ENV["grace"]:<40} seconds in-flight requests get on SIGTERM (default {DEFAULT_GRACE_S:g})
  {ENV["keep_alive"]:<40} seconds an idle connection stays open (default {DEFAULT_KEEP_ALIVE_S:g})
  {ENV["workers"]:<40} worker processes (default 1)
  {ENV["worker_threads"]:<40} blocking-work threads per process (default {DEFAULT_WORKER_THREADS})
  MODEL_BASE_URL, MODEL_API_KEY, MODEL_ID, MODEL_TIMEOUT_MS, LANGFUSE_HOST,
  LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY   the openai and langfuse runtimes' settings
  TEMPLIQX_PACKAGE_SIGNING_KEY               key for sign_package and signature checks
  TEMPLIQX_RENDER_FUEL, TEMPLIQX_CACHE_BYTES, TEMPLIQX_AUTHORIZATION_KEY
                                             the service's own settings, as on every surface

examples:
  {PROG} --root fixtures/packages
  {PROG} --check                     # validate the configuration, list every problem
  {PROG} --healthcheck               # probe the server on this machine (for containers)
  TEMPLIQX_HTTP_TOKEN=... {PROG} --addr 0.0.0.0:8080 --root /packages

exit status: 0 after a clean shutdown (SIGTERM/SIGINT drain the requests in flight) or a
passing --check/--healthcheck; 1 when the configuration or start-up fails (every problem is
named on stderr); 2 for a usage error.

More: docs/http.md (run, configure, secure, put behind a reverse proxy, scale).
"""


def parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(
        prog=PROG,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    cli.add_argument("-V", "--version", action="version", version=f"{PROG} {VERSION}")
    mode = cli.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        action="store_true",
        help="check the configuration (address, root, workspace, runtime and its settings) "
        "and exit: 0 when it can serve, 1 listing every problem",
    )
    mode.add_argument(
        "--healthcheck",
        action="store_true",
        help="probe the server on this machine (GET /healthz on the configured port within "
        "2 s) and exit 0 when it answers 200, else 1",
    )
    cli.add_argument("--addr", metavar="IP:PORT", help=f"bind address (default {DEFAULT_ADDR})")
    cli.add_argument("--root", metavar="DIR", help="packages root (default .)")
    cli.add_argument(
        "--workspace", metavar="DIR", help="workspace folder (default ROOT/.templiqx-workspace)"
    )
    cli.add_argument(
        "--runtime-mode",
        dest="mode",
        metavar="MODE",
        help="deterministic-fake (default: no model, execute answers fixture_output), "
        "langfuse, or any installed runtime: fake, mock, openai, ...",
    )
    cli.add_argument(
        "--token-file",
        metavar="FILE",
        help="file holding the bearer token every operation route then requires (or set "
        "TEMPLIQX_HTTP_TOKEN; the token itself is never a flag: command lines are visible "
        "to every user; default: no token, which only a loopback bind allows)",
    )
    cli.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        default=None,
        help="serve a non-loopback address without a token (only behind something that "
        "authenticates every request)",
    )
    cli.add_argument(
        "--allow-workspace-override",
        action="store_true",
        default=None,
        help="accept the workspace query parameter on the artifact routes",
    )
    cli.add_argument(
        "--workspace-override-root",
        dest="workspace_override_roots",
        metavar="DIR",
        action="append",
        help="a folder an override may lie in (repeat; default: only the workspace)",
    )
    cli.add_argument(
        "--max-body-bytes",
        metavar="N",
        help=f"request body limit; larger bodies are 413 (default {DEFAULT_MAX_BODY_BYTES})",
    )
    cli.add_argument(
        "--request-timeout",
        metavar="SECONDS",
        help="deadline per request, the work included: past it the work is cancelled and the "
        f"answer is 504 (default {DEFAULT_REQUEST_TIMEOUT_S:g})",
    )
    cli.add_argument(
        "--max-concurrent",
        metavar="N",
        help="operation requests at once; beyond: 503 with Retry-After "
        f"(default {DEFAULT_MAX_CONCURRENT})",
    )
    cli.add_argument(
        "--cors-origin",
        dest="cors_origins",
        metavar="ORIGIN",
        action="append",
        help="a browser origin allowed to call (repeat; * for any; default: CORS off)",
    )
    cli.add_argument(
        "--grace",
        metavar="SECONDS",
        help="on SIGTERM, how long requests in flight may finish before the rest are "
        f"cancelled (default {DEFAULT_GRACE_S:g})",
    )
    cli.add_argument(
        "--keep-alive",
        metavar="SECONDS",
        help="how long an idle connection stays open; behind a proxy, longer than its idle "
        f"timeout (default {DEFAULT_KEEP_ALIVE_S:g})",
    )
    cli.add_argument("--workers", metavar="N", help="worker processes on one socket (default 1)")
    cli.add_argument(
        "--worker-threads",
        metavar="N",
        help=f"threads for blocking work per process (default {DEFAULT_WORKER_THREADS})",
    )
    return cli


def _flags(args: argparse.Namespace) -> dict[str, Any]:
    names = (
        "addr",
        "root",
        "workspace",
        "mode",
        "token_file",
        "allow_unauthenticated",
        "allow_workspace_override",
        "workspace_override_roots",
        "max_body_bytes",
        "request_timeout",
        "max_concurrent",
        "cors_origins",
        "grace",
        "keep_alive",
        "worker_threads",
        "workers",
    )
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


def _say(line: str) -> None:
    sys.stderr.write(f"{PROG}: {line}\n")


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run the command; the exit status."""
    args = parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    env = os.environ if environ is None else environ
    flags = _flags(args)
    if args.healthcheck:
        return healthcheck(flags, env)
    try:
        config = ServerConfig.resolve(flags, env)
    except ConfigError as exc:
        for problem in exc.problems:
            _say(problem)
        return 1
    if args.check:
        return check(config)
    return serve(config, flags)


def healthcheck(flags: Mapping[str, Any], environ: Mapping[str, str]) -> int:
    """``GET /healthz`` on the configured port of this machine; 0 on a 200 status line."""
    text = flags.get("addr") or (environ.get(ENV["addr"], "").strip() or DEFAULT_ADDR)
    try:
        host, port = parse_addr(str(text))
    except ValueError as exc:
        _say(f"healthcheck: {exc}")
        return 1
    targets = ["::1"] if ":" in host and host != "0.0.0.0" else ["127.0.0.1", "::1"]
    reason = "nothing answered"
    for target in targets:
        try:
            with socket.create_connection((target, port), timeout=HEALTHCHECK_TIMEOUT_S) as conn:
                conn.settimeout(HEALTHCHECK_TIMEOUT_S)
                conn.sendall(
                    b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
                )
                status = conn.recv(64).split(b"\r\n", 1)[0]
        except OSError as exc:
            reason = f"{target}:{port}: {exc.strerror or exc}"
            continue
        if status.startswith((b"HTTP/1.1 200", b"HTTP/1.0 200")):
            return 0
        reason = f"{target}:{port} answered {status.decode('latin-1', 'replace')!r}"
        break
    _say(f"healthcheck failed: {reason}")
    return 1


def service_problems(config: ServerConfig) -> list[str]:
    """Why the service cannot be composed over a readable root: a setting it reads from the
    environment is out of range (``TEMPLIQX_RENDER_FUEL``), as serving would find."""
    from templiqx_http_server.checks import root_problems
    from templiqx_local.compose import compose

    if root_problems(config.root):
        return []  # said already
    try:
        service = compose(config.root, config.workspace, worker_threads=1)
    except ValueError as exc:
        return [str(exc)]
    except Exception:  # the root's own problems are reported by root_problems
        return []
    service.close()
    return []


def check(config: ServerConfig) -> int:
    """Everything the server would check at start-up and in readiness, reported at once."""
    from templiqx_http_server.checks import root_problems, runtime_problems, workspace_problems
    from templiqx_local.compose import RuntimeSelectionError, load_runtime

    problems = [*root_problems(config.root), *workspace_problems(config.workspace_path)]
    try:
        runtime = load_runtime(config.runtime)
    except RuntimeSelectionError as exc:
        problems.append(f"runtime mode {config.mode}: {exc}")
    else:
        problems.extend(runtime_problems(config.runtime, runtime))
    problems.extend(service_problems(config))
    try:
        from templiqx_http_server.serve import bind

        bind(config).close()
    except OSError as exc:
        problems.append(f"cannot bind {config.address}: {exc.strerror or exc}")
    for warning in config.warnings:
        _say(f"warning: {warning}")
    for problem in problems:
        _say(problem)
    if problems:
        return 1
    auth = "a bearer token" if config.token else "no token (loopback)"
    if config.token is None and config.allow_unauthenticated:
        auth = "no token (waived)"
    sys.stdout.write(
        f"ok: would serve {config.root} on {config.address} with runtime {config.runtime} "
        f"({config.mode}), {auth}\n"
    )
    return 0


def serve(config: ServerConfig, flags: Mapping[str, Any]) -> int:
    from templiqx_http_server.logs import configure_logging
    from templiqx_http_server.serve import StartupError, announce, bind, build_app, run

    configure_logging()
    try:
        sock = bind(config)
    except OSError as exc:
        _say(f"cannot bind {config.address}: {exc.strerror or exc}")
        return 1
    try:
        app = build_app(config)  # fails here, before listening is announced, with the reason
    except StartupError as exc:
        _say(str(exc))
        sock.close()
        return 1
    announce(config, sock)
    stopped_by: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):  # uvicorn raises them again once drained
        signal.signal(sig, lambda signum, frame: stopped_by.append(signum))
    run(config, flags, sock, app)
    return 0  # a drained shutdown is a clean exit, whichever signal asked for it
