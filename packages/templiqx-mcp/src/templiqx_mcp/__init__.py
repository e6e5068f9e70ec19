"""templiqx-mcp: every catalog operation as an MCP tool, with live progress streaming.

``templiqx-mcp --root DIR`` serves the templiqx service over stdio with the official ``mcp``
SDK's low-level ``Server``: one tool per catalog operation (annotated with what it does to the
world), the resources ``templiqx://catalog``, ``templiqx://packages`` and
``templiqx://workspace``, and the prompts ``bootstrap`` and ``run-eval``.

The names below are imported when first used, so the command starts without loading what it
does not need before it has parsed its arguments.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from templiqx_mcp.cli import main
    from templiqx_mcp.guidance import Guidance, instructions
    from templiqx_mcp.schemas import ENVELOPE_SCHEMA, input_schema, output_schema, parameter_schema
    from templiqx_mcp.server import build_server, serve_stdio, serve_until_interrupted
    from templiqx_mcp.setting import ServerSetting
    from templiqx_mcp.tools import ToolSet, envelope_result, envelope_text

__version__ = "0.2.0"

_WHERE = {
    "ENVELOPE_SCHEMA": "schemas",
    "Guidance": "guidance",
    "ServerSetting": "setting",
    "ToolSet": "tools",
    "build_server": "server",
    "envelope_result": "tools",
    "envelope_text": "tools",
    "input_schema": "schemas",
    "instructions": "guidance",
    "main": "cli",
    "output_schema": "schemas",
    "parameter_schema": "schemas",
    "serve_stdio": "server",
    "serve_until_interrupted": "server",
}

__all__ = [
    "ENVELOPE_SCHEMA",
    "Guidance",
    "ServerSetting",
    "ToolSet",
    "__version__",
    "build_server",
    "envelope_result",
    "envelope_text",
    "input_schema",
    "instructions",
    "main",
    "output_schema",
    "parameter_schema",
    "serve_stdio",
    "serve_until_interrupted",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'templiqx_mcp' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"templiqx_mcp.{module}"), name)
    globals()[name] = value
    return value
