"""The MCP tools: one per catalog operation, named as the operation.

A call's arguments are checked against the operation's parameters by the application's own
binder, once: what it binds goes to ``TempliqxService.invoke_bound``. A mismatch (unknown,
missing or mistyped argument) is an ``isError`` result whose text names each offending argument;
every other outcome — ``ok:false`` included — is a normal result carrying the envelope as
``structuredContent`` and as compact, key-sorted JSON text. An unknown tool is the JSON-RPC
error -32602.

Where a call runs depends on its operation. The operations in :data:`ON_THE_LOOP` only read one
or two contracts and compute, in milliseconds: they run on the event loop itself, since handing
them to a worker thread costs two thread wake-ups per call, which on a busy machine cost more
than the work. Every other operation goes through the service's public async API
(``ainvoke_bound``: its bounded worker pool, or a natively async runtime awaited on the loop),
so the server keeps reading while it works; a streamed ``execute_contract`` with a progress
token is read event by event (:func:`~templiqx_mcp.calls.stream_with_progress`), and a
cancelled call cancels its runtime.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import mcp.types as types
import msgspec
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from templiqx_application import CATALOG, TempliqxService, bind_arguments
from templiqx_contracts import OperationEnvelope
from templiqx_mcp.calls import stream_with_progress
from templiqx_mcp.schemas import ENVELOPE_SCHEMA, input_schema

__all__ = ["INVALID_PARAMS", "ON_THE_LOOP", "ToolSet", "envelope_result", "envelope_text"]

INVALID_PARAMS = -32602

ON_THE_LOOP = frozenset(
    {
        "catalog",
        "compile_contract",
        "diff_contract",
        "explain_contract",
        "inspect_contract",
        "render_contract",
        "validate_contract",
    }
)
"""The operations run on the event loop: each reads at most two contracts and computes."""

_STREAMS = "execute_contract"


_encode_sorted = msgspec.json.Encoder(order="sorted").encode
_encode_msgpack = msgspec.msgpack.Encoder().encode
_FLOAT64 = b"\xcb"  # msgpack's float64 marker; msgspec writes every float as one
_read_double = struct.Struct(">d").unpack_from


def _floats_print_alike(packed: bytes) -> bool:
    """Whether every float in this msgpack encoding prints the same in msgspec and ``json``.

    The two agree on zero and on magnitudes from 1e-4 below 1e16 (plain digits); ``json``
    writes others as ``1e+16`` or ``1e-05`` where msgspec writes ``1e16`` and ``0.00001``, and
    NaN and infinities as ``NaN``/``Infinity`` where msgspec writes ``null``. A ``0xcb`` byte
    inside a string or an integer reads as a false alarm, which only costs the slow path.
    """
    at = packed.find(_FLOAT64)
    last = len(packed) - 9
    while 0 <= at <= last:
        value = _read_double(packed, at + 1)[0]
        if not (value == 0.0 or 1e-4 <= abs(value) < 1e15):
            return False
        at = packed.find(_FLOAT64, at + 1)
    return True


def envelope_text(data: Any) -> str:
    """Compact JSON with keys sorted at every level and raw UTF-8.

    For JSON data (what ``to_builtins`` returns) the text is byte for byte
    ``json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=False)``, written by
    msgspec (several times faster). What msgspec writes differently or refuses (floats printed
    with an exponent, NaN and infinities, integers outside 64 bits, non-string keys) goes to
    ``json.dumps`` itself.
    """
    try:
        text = _encode_sorted(data)
        if _floats_print_alike(_encode_msgpack(data)):
            return text.decode("utf-8")
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
        pass
    return json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def envelope_result(envelope: OperationEnvelope) -> types.CallToolResult:
    """The tool result of an envelope (``isError`` is false even when ``ok`` is false)."""
    data = envelope.to_builtins()
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=envelope_text(data))],
        structured_content=data,
        is_error=False,
    )


def _argument_error(text: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"failed to deserialize parameters: {text}")],
        is_error=True,
    )


def _has_progress_token(ctx: ServerRequestContext[Any, Any]) -> bool:
    meta = ctx.meta
    return meta is not None and meta.get("progress_token") is not None


class ToolSet:
    """The tools of one service."""

    def __init__(self, service: TempliqxService) -> None:
        self._service = service
        self._specs = {spec.name: spec for spec in CATALOG}
        self._tools = [
            types.Tool(
                name=spec.name,
                description=spec.summary,
                input_schema=input_schema(spec),
                output_schema=ENVELOPE_SCHEMA,
            )
            for spec in sorted(CATALOG, key=lambda spec: spec.name)
        ]

    @property
    def tools(self) -> list[types.Tool]:
        """Every tool, sorted by name."""
        return list(self._tools)

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """``tools/list``: every tool, no pagination."""
        return types.ListToolsResult(tools=self.tools)

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """``tools/call``: run the operation and return its envelope."""
        spec = self._specs.get(params.name)
        if spec is None:
            raise MCPError(code=INVALID_PARAMS, message="tool not found")
        bound, problems = bind_arguments(spec, params.arguments or {})
        if problems:
            return _argument_error("; ".join(d.message for d in problems))
        name = spec.name
        service = self._service
        if name in ON_THE_LOOP:
            envelope = service.invoke_bound(name, bound)
        elif name == _STREAMS and bound.get("stream") is True and _has_progress_token(ctx):
            envelope = await stream_with_progress(service, bound, ctx.session.report_progress)
        else:
            envelope = await service.ainvoke_bound(name, bound)
        return envelope_result(envelope)
