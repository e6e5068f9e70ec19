"""The ``templiqx-mcp`` server: the official SDK's low-level ``Server`` over stdio.

:func:`build_server` exposes a composed service: the tools (:mod:`templiqx_mcp.tools`), the
resources and prompts (:mod:`templiqx_mcp.guidance`) and the instructions. :func:`serve_stdio`
serves one client on stdin/stdout through the wire of :mod:`templiqx_mcp.wire` until stdin
closes or the client stops reading; :func:`serve_until_interrupted` does the same and also ends
on SIGINT. The command line is :mod:`templiqx_mcp.cli`.
"""

from __future__ import annotations

import signal
from typing import Any

import anyio
from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from templiqx_application import TempliqxService
from templiqx_mcp.guidance import Guidance, ServerSetting, instructions
from templiqx_mcp.tools import INVALID_PARAMS, ToolSet
from templiqx_mcp.wire import MAX_LINE_BYTES, WireLines, WireWriter, claim_stdio, stdio_transport

__all__ = [
    "INTERRUPTED",
    "SERVER_NAME",
    "VERSION",
    "build_server",
    "initialize_first",
    "serve_stdio",
    "serve_until_interrupted",
]

SERVER_NAME = "templiqx-mcp"
VERSION = "0.2.0"
INTERRUPTED = 130
"""The exit status after SIGINT (Ctrl-C), as shells report it (128 + 2)."""


def build_server(service: TempliqxService, setting: ServerSetting) -> Server[Any]:
    """A low-level ``Server`` exposing ``service``; instructions are computed now."""
    tools = ToolSet(service)
    guidance = Guidance(service, setting)
    server: Server[Any] = Server(
        SERVER_NAME,
        version=VERSION,
        instructions=instructions(service, setting),
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
        on_list_resources=guidance.list_resources,
        on_list_resource_templates=guidance.list_resource_templates,
        on_read_resource=guidance.read_resource,
        on_list_prompts=guidance.list_prompts,
        on_get_prompt=guidance.get_prompt,
    )
    server.middleware.append(initialize_first)
    return server


async def initialize_first(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
    """Say why a request before ``initialize`` is refused.

    The SDK refuses every request but ``ping`` until the client has initialized, with -32602
    ("Invalid request parameters") and empty ``data``, which reads as if the arguments were
    wrong. The code stays (clients may key off it); the message and ``data`` say what to do.
    """
    try:
        return await call_next(ctx)
    except MCPError as refused:
        error = refused.error
        if (
            error.code != INVALID_PARAMS
            or error.data != ""
            or ctx.request_id is None
            or ctx.session.client_params is not None
        ):
            raise
        raise MCPError(
            code=INVALID_PARAMS,
            message=(
                f"Invalid request: the session is not initialized, so '{ctx.method}' cannot be "
                "served yet; send initialize first (then notifications/initialized)"
            ),
            data={"method": ctx.method, "reason": "not initialized"},
        ) from None


async def serve_stdio(server: Server[Any], *, max_line: int = MAX_LINE_BYTES) -> None:
    """Serve one client over stdin/stdout until stdin closes or stdout is closed.

    ``max_line`` is the longest line read (:data:`~templiqx_mcp.wire.MAX_LINE_BYTES`).
    """
    with claim_stdio() as (wire_in, wire_out):
        lines = WireLines(wire_in, max_line=max_line)
        async with stdio_transport(lines, WireWriter(wire_out)) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_until_interrupted(server: Server[Any], *, max_line: int = MAX_LINE_BYTES) -> int:
    """:func:`serve_stdio` that also ends on SIGINT; the exit status (0, or 130 after SIGINT).

    The first SIGINT stops reading and cancels the calls in progress (each ends within its
    own time bound); a second one ends the process at once.
    """
    status = 0
    serving = anyio.CancelScope()
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            nonlocal status
            with anyio.open_signal_receiver(signal.SIGINT) as signals:
                async for _ in signals:
                    if status:
                        _exit_now()
                    status = INTERRUPTED
                    serving.cancel()

        async def serve() -> None:
            with serving:
                await serve_stdio(server, max_line=max_line)
            group.cancel_scope.cancel()

        group.start_soon(watch)
        group.start_soon(serve)
    return status


def _exit_now() -> None:
    import os

    os._exit(INTERRUPTED)
