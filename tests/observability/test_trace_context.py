"""Trace context across surfaces (issue #32 item 4): MCP continues the trace a request's
``_meta`` carries; the helper every surface uses (``continued_trace``) continues a caller's
``traceparent`` and keeps a server span an instrumentation already opened."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from conftest import Telemetry
from templiqx_local import compose
from templiqx_mcp.server import build_server
from templiqx_mcp.setting import ServerSetting
from templiqx_ports.telemetry import continued_trace

REMOTE_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
REMOTE_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{REMOTE_TRACE}-{REMOTE_SPAN}-01"


def _ancestors(telemetry: Telemetry, span: Any) -> list[str]:
    """The names of ``span``'s ancestors that were recorded, nearest first."""
    by_id = {s.context.span_id: s for s in telemetry.spans()}
    names = []
    parent = span.parent
    while parent is not None and parent.span_id in by_id:
        found = by_id[parent.span_id]
        names.append(found.name)
        parent = found.parent
    return names


def _setting(root: Path) -> ServerSetting:
    return ServerSetting(
        packages_root=str(root),
        workspace_root=str(root / ".templiqx"),
        workspace_is_default=True,
        runtime="fake",
    )


def test_mcp_tool_calls_join_the_callers_trace(otel: Telemetry, package_root: Path) -> None:
    service = compose(package_root)
    server = build_server(service, _setting(package_root))
    tracer = otel.provider.get_tracer("agent")

    async def main() -> None:
        async with Client(server) as client:
            with tracer.start_as_current_span("agent turn"):
                result = await client.call_tool(
                    "execute_contract",
                    {
                        "package": "obs",
                        "contract": "answer",
                        "inputs": {"question": "q"},
                        "fixture_output": {"ok": True},
                    },
                )
            assert result.structured_content is not None
            assert result.structured_content["ok"] is True

    anyio.run(main)
    agent = otel.one("agent turn")
    operation = otel.one("templiqx execute_contract")
    call = otel.one("chat")
    assert operation.context.trace_id == agent.context.trace_id
    assert call.context.trace_id == agent.context.trace_id
    chain = _ancestors(otel, operation)
    # The MCP SDK's server span continued the _meta trace context; ours is its child.
    assert chain[0] == "tools/call execute_contract"
    assert chain[-1] == "agent turn"
    assert _ancestors(otel, call)[0] == "templiqx execute_contract"


def test_a_traceparent_is_continued(otel: Telemetry, package_root: Path) -> None:
    service = compose(package_root)
    with continued_trace({"traceparent": TRACEPARENT, "other": "ignored"}):
        service.validate_contract("obs", "answer")
    span = otel.one("templiqx validate_contract")
    assert f"{span.context.trace_id:032x}" == REMOTE_TRACE
    assert span.parent is not None
    assert f"{span.parent.span_id:016x}" == REMOTE_SPAN
    assert span.parent.is_remote


def test_malformed_or_missing_context_starts_a_new_trace(
    otel: Telemetry, package_root: Path
) -> None:
    service = compose(package_root)
    for carrier in (None, {}, {"traceparent": "00-zz-yy-01"}, {"traceparent": 7}):
        with continued_trace(carrier):
            service.validate_contract("obs", "answer")
    for span in otel.named("templiqx validate_contract"):
        assert span.parent is None


def test_a_current_server_span_is_kept(otel: Telemetry, package_root: Path) -> None:
    service = compose(package_root)
    tracer = otel.provider.get_tracer("server")
    with (
        tracer.start_as_current_span("POST /operations") as server_span,
        continued_trace({"traceparent": TRACEPARENT}),
    ):
        service.validate_contract("obs", "answer")
    span = otel.one("templiqx validate_contract")
    assert span.parent is not None
    assert span.parent.span_id == server_span.get_span_context().span_id


def test_without_an_sdk_nothing_is_continued(package_root: Path) -> None:
    # No provider set (the otel fixture is not used): the block runs, nothing is imported.
    with continued_trace({"traceparent": TRACEPARENT}):
        assert compose(package_root).validate_contract("obs", "answer").ok
