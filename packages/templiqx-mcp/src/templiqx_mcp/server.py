"""The ``templiqx-mcp`` server: the official SDK's low-level ``Server`` over stdio.

Usage: ``templiqx-mcp [ROOT [WORKSPACE]]``. The packages root is the first argument, else
``$TEMPLIQX_PACKAGES_ROOT``, else ``.``; the workspace the second argument, else
``$TEMPLIQX_WORKSPACE_ROOT``, else ``ROOT/.templiqx-workspace``; the runtime for
``execute_contract`` is ``$TEMPLIQX_RUNTIME`` (an entry-point name in ``templiqx.runtimes``), else
the deterministic fake. Both folders are created when missing. stdout carries only the protocol.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from templiqx_application import TempliqxService
from templiqx_local.compose import RuntimeSelectionError, compose, load_runtime
from templiqx_local.workspace import DEFAULT_WORKSPACE_DIR
from templiqx_mcp.guidance import Guidance, ServerSetting, instructions
from templiqx_mcp.tools import ToolSet
from templiqx_mcp.wire import WireLines, WireWriter, claim_stdio
from templiqx_ports import PortError

__all__ = [
    "PACKAGES_ROOT_ENV",
    "RUNTIME_ENV",
    "SERVER_NAME",
    "WORKSPACE_ROOT_ENV",
    "build_server",
    "main",
    "serve_stdio",
    "setting_from",
]

SERVER_NAME = "templiqx-mcp"
VERSION = "0.2.0"
PACKAGES_ROOT_ENV = "TEMPLIQX_PACKAGES_ROOT"
WORKSPACE_ROOT_ENV = "TEMPLIQX_WORKSPACE_ROOT"
RUNTIME_ENV = "TEMPLIQX_RUNTIME"
USAGE = f"usage: {SERVER_NAME} [ROOT [WORKSPACE]]"
HELP = f"""{USAGE}

Serve every templiqx operation as an MCP tool over stdio: an MCP client starts this command
and talks JSON-RPC to it on stdin/stdout (one message per line). It is not meant to be run by
hand; stdout carries only the protocol.

arguments:
  ROOT       folder holding the package folders (default: $TEMPLIQX_PACKAGES_ROOT, else .)
  WORKSPACE  folder for workspace artifacts (default: $TEMPLIQX_WORKSPACE_ROOT,
             else ROOT/.templiqx-workspace)
  Both folders are created when missing.

environment:
  TEMPLIQX_PACKAGES_ROOT        the packages root when ROOT is not given
  TEMPLIQX_WORKSPACE_ROOT       the workspace when WORKSPACE is not given
  TEMPLIQX_RUNTIME              runtime for execute_contract, by name: fake (the default,
                                deterministic and offline), mock, openai, langfuse, or any
                                installed adapter (entry-point group templiqx.runtimes)
  MODEL_BASE_URL, MODEL_API_KEY, MODEL_ID, MODEL_TIMEOUT_MS
                                settings of the openai and langfuse runtimes
  LANGFUSE_HOST, LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY
                                also needed by the langfuse runtime
  TEMPLIQX_MOCK_SCENARIO        scenario manifest replayed by the mock runtime
  TEMPLIQX_PACKAGE_SIGNING_KEY  key for sign_package and signature checks

example client configuration (an "mcpServers" entry, e.g. in .mcp.json or
claude_desktop_config.json; use absolute paths):
  {{
    "mcpServers": {{
      "templiqx": {{
        "command": "/path/to/venv/bin/{SERVER_NAME}",
        "args": ["/path/to/packages"],
        "env": {{"TEMPLIQX_RUNTIME": "fake"}}
      }}
    }}
  }}

exit status: 0 when the client closes stdin, 1 when the service cannot be composed (unusable
root, unknown runtime, missing runtime settings), 2 for more than two arguments.
"""


def build_server(service: TempliqxService, setting: ServerSetting) -> Server[Any]:
    """A low-level ``Server`` exposing ``service``; instructions are computed now."""
    tools = ToolSet(service)
    guidance = Guidance(service, setting)
    return Server(
        SERVER_NAME,
        version=VERSION,
        instructions=instructions(service, setting),
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
        on_list_resources=guidance.list_resources,
        on_read_resource=guidance.read_resource,
        on_list_prompts=guidance.list_prompts,
        on_get_prompt=guidance.get_prompt,
    )


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over stdin/stdout until stdin closes.

    The SDK's stdio transport is given the wire's files (:mod:`templiqx_mcp.wire`), which read
    and write pipes from the event loop instead of on a worker thread per line.
    """
    with claim_stdio() as (wire_in, wire_out):
        async with stdio_server(WireLines(wire_in), WireWriter(wire_out)) as (
            read_stream,
            write_stream,
        ):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def setting_from(argv: list[str], environ: Mapping[str, str]) -> ServerSetting:
    """Roots and runtime name from the positional arguments and the environment."""
    root = argv[0] if argv else environ.get(PACKAGES_ROOT_ENV) or "."
    workspace = argv[1] if len(argv) > 1 else environ.get(WORKSPACE_ROOT_ENV) or None
    packages_root = os.path.abspath(root)
    return ServerSetting(
        packages_root=packages_root,
        workspace_root=os.path.abspath(workspace)
        if workspace
        else os.path.join(packages_root, DEFAULT_WORKSPACE_DIR),
        workspace_is_default=workspace is None,
        runtime=environ.get(RUNTIME_ENV) or "fake",
    )


def main(argv: list[str] | None = None) -> int:
    """Run the stdio server; the exit code (1 when the service cannot be composed)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["-h"], ["--help"]):
        sys.stdout.write(HELP)
        return 0
    if len(args) > 2:
        sys.stderr.write(f"{SERVER_NAME}: too many arguments\n{USAGE}\n")
        return 2
    setting = setting_from(args, os.environ)
    try:
        runtime = load_runtime(setting.runtime)
        service = compose(
            setting.packages_root,
            None if setting.workspace_is_default else setting.workspace_root,
            runtime,
        )
    except PortError as exc:
        sys.stderr.write(f"{SERVER_NAME}: compose local Templiqx service: {exc} [{exc.code}]\n")
        return 1
    except (RuntimeSelectionError, OSError) as exc:
        sys.stderr.write(f"{SERVER_NAME}: compose local Templiqx service: {exc}\n")
        return 1
    server = build_server(service, setting)
    try:
        anyio.run(serve_stdio, server)
    except KeyboardInterrupt:
        return 130
    return 0
