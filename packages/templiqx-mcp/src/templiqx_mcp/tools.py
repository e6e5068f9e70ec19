"""The MCP tools: one per catalog operation, named as the operation.

Each tool carries the operation's title and behaviour as MCP tool annotations
(``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``: what a host reads
to decide what it may call without asking), an input schema from its parameters and an output
schema with its typed result (:mod:`templiqx_mcp.schemas`). ``execute_contract`` follows the
composed runtime's :class:`~templiqx_ports.RuntimeReach`: on a live runtime it is neither
read-only nor closed-world (hosts that auto-approve read-only tools must not auto-approve model
calls); on an offline one (the fake, the scripted mock) it reads and reaches nothing.

A call's arguments are checked against the operation's parameters by the application's own
binder, once: what it binds goes to ``TempliqxService.invoke_bound``. A mismatch (unknown,
missing or mistyped argument) is an ``isError`` result whose text names each offending argument;
every other outcome — ``ok:false`` included — is a normal result carrying the envelope as
``structuredContent`` and as compact, key-sorted JSON text (a large envelope once, see
:mod:`templiqx_mcp.results`). An unknown tool is the JSON-RPC error -32602.

No operation runs on the event loop, and neither does checking large arguments (walking 200,000
values takes a fraction of a second; :func:`~templiqx_mcp.weight.is_small` decides in a few
microseconds whether the check may run inline), nor turning a large envelope into its result:
every call goes through the service's public async API
(``ainvoke_bound``: the service's bounded worker pool, or a natively async runtime awaited on
the loop), inside its package's lane (:mod:`templiqx_mcp.lanes`), so the server keeps reading —
pings, cancellations, calls for other packages — however long a call takes. A streamed
``execute_contract`` with a progress token is read event by event
(:func:`~templiqx_mcp.calls.stream_with_progress`); a cancelled call cancels its runtime.
"""

from __future__ import annotations

import functools
import json
import re
import struct
import sys
from collections.abc import Mapping
from typing import Any

import anyio.to_thread
import mcp.types as types
import msgspec
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from templiqx_application import CATALOG, TempliqxService, bind_arguments
from templiqx_application.catalog import OperationSpec
from templiqx_contracts import OperationEnvelope, find_outside_strings, float_markers
from templiqx_mcp.calls import ProgressNote, SendProgress, stream_with_progress
from templiqx_mcp.lanes import Lanes
from templiqx_mcp.results import STRUCTURED_SINCE, bounded_result
from templiqx_mcp.schemas import input_schema, output_schema
from templiqx_mcp.weight import is_small
from templiqx_mcp.wire import MAX_LINE_BYTES
from templiqx_ports import LIVE_RUNTIME, RuntimeReach
from templiqx_ports.telemetry import continued_trace

__all__ = [
    "INVALID_PARAMS",
    "ToolSet",
    "envelope_result",
    "envelope_text",
    "lane_key",
    "tool",
    "tool_annotations",
]

INVALID_PARAMS = -32602

_STREAMS = "execute_contract"

_DESCRIPTION_NOTES = {
    "execute_contract": (
        " With stream: true the result's stream_events holds the deltas and the terminal "
        "event: Complete (its output_schema_valid is false, and ok false with "
        "TQX_OUTPUT_SCHEMA, when the output breaks the contract's schema) or Failed; a call "
        "refused before the runtime runs (bad values, a missing capability) has none. With a "
        "progressToken in the request's _meta the events are also sent while the model "
        "generates, as notifications/progress at most every 50 ms: message says how far the "
        "answer is, progress counts the events (total comes with the last notification), "
        "and _meta holds templiqx/events (the events since the previous notification) and, "
        "for a structured-output contract, templiqx/partial (the answer so far, when it "
        "changed). Cancelling the request cancels the runtime."
    ),
}
_LIVE_NOTE = (
    " On this server the runtime calls a live model: each execution reaches outside this "
    "machine, takes model time and may answer differently."
)
_PAID_NOTE = " It may cost money."

_PARAMETER_NOTES = {
    "execute_contract": {
        "stream": "Over MCP, pass a progressToken to receive the events live as "
        "notifications/progress (coalesced, at most every 50 ms).",
    },
}


_encode_sorted = msgspec.json.Encoder(order="sorted").encode
_encode_msgpack = msgspec.msgpack.Encoder().encode
_read_double = struct.Struct(">d").unpack_from
# msgpack's float64 marker (msgspec writes every float as one) when the double's exponent puts
# it outside [2**-14, 2**53) (zero too): the floats msgspec may print unlike ``json``. Only a
# lookahead, so that a marker's own bytes are searched again (``cc cb cb ..`` is 203, then a
# float).
_ODD_FLOAT = re.compile(
    rb"\xcb(?=[\x00-\x3e\x44-\x7f\x80-\xbe\xc4-\xff]|[\x3f\xbf][\x00-\x1f]|[\x43\xc3][\x40-\xff])"
)
# Outside strings, "e" then a digit: the exponent of a float msgspec wrote without its sign.
_UNSIGNED_EXPONENT = re.compile(rb"e[0-9]")


def _as_json_dumps_writes(text: bytes, packed: bytes) -> bytes | None:
    """msgspec's ``text`` as ``json.dumps`` writes it, or ``None`` when only ``json`` can.

    The two print floats alike at zero and at magnitudes from 1e-4 below 1e16. From 1e16 up
    msgspec writes ``1e16`` where ``json`` writes ``1e+16``: the sign is put in place. Below
    1e-4 (``0.00001`` against ``1e-05``) and for NaN and the infinities (``null`` against
    ``NaN``) ``json`` writes the text. Floats are found in the msgpack encoding ``packed`` of
    the same data: a marker byte with a suspect exponent, confirmed by
    :func:`~templiqx_contracts.float_markers` (a ``cb`` inside a string or an integer is not a
    float), then read.
    """
    suspects = [match.start() for match in _ODD_FLOAT.finditer(packed)]
    if not suspects:
        return text
    large = False
    for at in float_markers(packed, suspects):
        magnitude = abs(_read_double(packed, at + 1)[0])
        if magnitude == 0.0 or 1e-4 <= magnitude < 1e16:
            continue
        if not 1e16 <= magnitude <= sys.float_info.max:
            return None
        large = True
    if not large:
        return text
    pieces: list[bytes] = []
    start = 0
    for at in find_outside_strings(text, _UNSIGNED_EXPONENT):
        pieces.append(text[start : at + 1])  # up to and with the "e"
        start = at + 1
    pieces.append(text[start:])
    return b"+".join(pieces)


def envelope_text(data: Any) -> str:
    """Compact JSON with keys sorted at every level and raw UTF-8.

    For JSON data (what ``to_builtins`` returns) the text is byte for byte
    ``json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=False)``, written by
    msgspec (several times faster), with the sign ``json`` gives a large float's exponent put
    in place. What msgspec writes differently otherwise or refuses (floats below 1e-4, NaN and
    infinities, integers outside 64 bits, non-string keys) goes to ``json.dumps`` itself.
    """
    try:
        text = _as_json_dumps_writes(_encode_sorted(data), _encode_msgpack(data))
        if text is not None:
            return text.decode("utf-8")
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
        pass
    return json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def envelope_result(
    envelope: OperationEnvelope, *, structured: bool = True, budget: int = MAX_LINE_BYTES
) -> types.CallToolResult:
    """The tool result of an envelope (``isError`` is false even when ``ok`` is false).

    A small envelope comes as ``structuredContent`` and as compact, key-sorted JSON text; a
    large one once, saying what was left out (:mod:`templiqx_mcp.results`). ``structured`` is
    whether the client's protocol has ``structuredContent``; ``budget`` the answer's most bytes.
    """
    return bounded_result(envelope, envelope_text, structured=structured, budget=budget)


def _argument_error(text: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"failed to deserialize parameters: {text}")],
        is_error=True,
    )


def _progress_token(ctx: ServerRequestContext[Any, Any]) -> str | int | None:
    meta = ctx.meta
    token = meta.get("progress_token") if meta is not None else None
    return token if isinstance(token, (str, int)) else None


def _sender(ctx: ServerRequestContext[Any, Any], token: str | int) -> SendProgress:
    """Send a :class:`~templiqx_mcp.calls.ProgressNote` as the request's progress notification
    (its data in ``_meta``, where MCP puts what is not for people)."""

    async def send(note: ProgressNote) -> None:
        params = types.ProgressNotificationParams(
            progress_token=token,
            progress=note.progress,
            total=note.total,
            message=note.message,
            _meta=note.meta,
        )
        await ctx.session.send_notification(
            types.ProgressNotification(params=params), related_request_id=ctx.request_id
        )

    return send


def tool_annotations(
    spec: OperationSpec, reach: RuntimeReach = LIVE_RUNTIME
) -> types.ToolAnnotations:
    """The operation's behaviour flags as MCP tool annotations, on a runtime of ``reach``.

    The catalog states what an operation does to the packages and the workspace, and nothing
    else touches the world, except ``execute_contract`` through its runtime: on a live one
    (a model service, perhaps paid) it is neither read-only nor closed-world; on an offline one
    (the deterministic fake, the scripted mock) it reads and reaches nothing.
    """
    read_only, open_world = spec.read_only, spec.open_world
    if spec.name == _STREAMS:
        read_only = read_only and not reach.live
        open_world = open_world and reach.open_world
    return types.ToolAnnotations(
        title=spec.display_title,
        read_only_hint=read_only,
        destructive_hint=spec.destructive,
        idempotent_hint=spec.idempotent,
        open_world_hint=open_world,
    )


def tool(spec: OperationSpec, reach: RuntimeReach = LIVE_RUNTIME) -> types.Tool:
    """The MCP tool of one catalog operation, on a runtime of ``reach``."""
    description = spec.summary + _DESCRIPTION_NOTES.get(spec.name, "")
    if spec.name == _STREAMS and reach.live:
        description += _LIVE_NOTE + (_PAID_NOTE if reach.paid else "")
    return types.Tool(
        name=spec.name,
        title=spec.display_title,
        description=description,
        input_schema=input_schema(spec, _PARAMETER_NOTES.get(spec.name)),
        output_schema=output_schema(spec.name),
        annotations=tool_annotations(spec, reach),
    )


def lane_key(arguments: Mapping[str, Any]) -> str:
    """The lane a call runs in: its package (``""`` for operations over the whole root)."""
    for name in ("package", "left_package", "name"):
        value = arguments.get(name)
        if isinstance(value, str):
            return value
    return ""


class ToolSet:
    """The tools of one service.

    ``reach`` is what the service's runtime does beyond this process (it sets
    ``execute_contract``'s annotations; default: the service's own, or live and paid when there
    is no service); ``lanes`` runs the calls (a fresh pool by default).
    """

    def __init__(
        self,
        service: TempliqxService,
        *,
        reach: RuntimeReach | None = None,
        lanes: Lanes | None = None,
    ) -> None:
        self._service = service
        self._specs = {spec.name: spec for spec in CATALOG}
        if reach is None:
            reach = service.runtime_reach if service is not None else LIVE_RUNTIME
        self._reach = reach
        self._lanes = lanes if lanes is not None else Lanes()
        self._tools: list[types.Tool] | None = None

    @property
    def tools(self) -> list[types.Tool]:
        """Every tool, sorted by name (built on first use: schemas cost start-up time)."""
        if self._tools is None:
            self._tools = [
                tool(spec, self._reach) for spec in sorted(CATALOG, key=lambda spec: spec.name)
            ]
        return list(self._tools)

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """``tools/list``: every tool, no pagination."""
        return types.ListToolsResult(tools=self.tools)

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """``tools/call``: run the operation on a worker thread and return its envelope."""
        spec = self._specs.get(params.name)
        if spec is None:
            raise MCPError(code=INVALID_PARAMS, message="tool not found")
        arguments = params.arguments or {}
        if is_small(arguments):
            bound, problems = bind_arguments(spec, arguments)
        else:
            bound, problems = await anyio.to_thread.run_sync(bind_arguments, spec, arguments)
        if problems:
            return _argument_error("; ".join(d.message for d in problems))
        name = spec.name
        service = self._service
        # A traceparent in the request's _meta: the call's spans join the caller's trace.
        with continued_trace(ctx.meta):
            async with self._lanes.lane(lane_key(bound)):
                token = _progress_token(ctx)
                if name == _STREAMS and bound.get("stream") is True and token is not None:
                    envelope = await stream_with_progress(service, bound, _sender(ctx, token))
                else:
                    envelope = await service.ainvoke_bound(name, bound)
        structured = ctx.session.protocol_version >= STRUCTURED_SINCE
        if is_small(envelope.result) and is_small(envelope.stream_events):
            return envelope_result(envelope, structured=structured)
        return await anyio.to_thread.run_sync(
            functools.partial(envelope_result, envelope, structured=structured)
        )
