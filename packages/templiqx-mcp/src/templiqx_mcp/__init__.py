"""templiqx-mcp: every catalog operation as an MCP tool, with live progress streaming.

``templiqx-mcp [ROOT [WORKSPACE]]`` serves the templiqx service over stdio with the official
``mcp`` SDK's low-level ``Server``: one tool per catalog operation, the resources
``templiqx://catalog``, ``templiqx://packages`` and ``templiqx://workspace``, and the prompts
``bootstrap`` and ``run-eval``.
"""

from templiqx_mcp.guidance import Guidance, ServerSetting, instructions
from templiqx_mcp.schemas import ENVELOPE_SCHEMA, input_schema, parameter_schema
from templiqx_mcp.server import build_server, main, serve_stdio, setting_from
from templiqx_mcp.tools import ToolSet, envelope_result, envelope_text

__version__ = "0.2.0"

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
    "parameter_schema",
    "serve_stdio",
    "setting_from",
]
