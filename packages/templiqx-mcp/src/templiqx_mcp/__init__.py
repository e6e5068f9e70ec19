"""templiqx-mcp: every catalog operation as an MCP tool, with live progress streaming."""

__version__ = "0.2.0"

__all__ = ["__version__"]
