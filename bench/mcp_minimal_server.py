"""P5's floor: the smallest MCP server on the same official SDK, answering without any work.

``python mcp_minimal_server.py ANSWERS.json`` serves over stdio with the SDK's own
``stdio_server()`` and low-level ``Server``, as the SDK's documentation shows a server written.
``ANSWERS.json`` holds what ``templiqx-mcp`` answered in the benchmark process: its
``tools/list`` result (so the SDK validates the same arguments against the same input schemas
on both sides, and the client the same results against the same output schemas) and one
``compile_contract`` result. Every ``tools/call`` of a listed tool returns that result as it is:
the same bytes on the wire, no compile, no reading of files. What ``templiqx-mcp`` spends per
call beyond this server is templiqx's own.

``python mcp_minimal_server.py ANSWERS.json templiqx`` serves the same answers over
``templiqx-mcp``'s own stdio wire (:func:`templiqx_mcp.server.serve_stdio`) instead of the SDK's
``stdio_server()``, which hands every line to a worker thread: P5w, the floor without that
difference, so what is left is the tool handler and the compile.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def build(answers: dict[str, Any]) -> Server[Any]:
    tools = types.ListToolsResult.model_validate(answers["tools"])
    result = types.CallToolResult.model_validate(answers["result"])
    names = {tool.name for tool in tools.tools}

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return tools

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in names:
            raise ValueError(f"unknown tool {params.name}")
        return result

    return Server("minimal", version="0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main(path: str, wire: str) -> None:
    server = build(json.loads(Path(path).read_text("utf-8")))
    if wire == "templiqx":  # the same server over templiqx-mcp's stdio wire (P5w)
        from templiqx_mcp.server import serve_stdio

        await serve_stdio(server)
        return
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "sdk")
