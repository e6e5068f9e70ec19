"""Trace context over HTTP (issue #32 item 4): the operations API continues a caller's
``traceparent``, for JSON and streamed (SSE) executions alike, keeps a server span a host's
ASGI instrumentation opened, and reads no header (imports nothing) when nothing traces.

Driven in-process through Starlette's test client against ``create_app``, with the SDK's
in-memory exporter (the ``otel`` fixture); the real ``templiqx-http-server`` process is covered
by ``test_http_scenario.py``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode
from starlette.middleware import Middleware
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from conftest import Model, Telemetry, openai_runtime
from templiqx_http import HttpSettings, create_app
from templiqx_http.sse import SseDecoder
from templiqx_local import compose

REMOTE_TRACE = "0af7651916cd43dd8448eb211c80319c"
REMOTE_SPAN = "b7ad6b7169203331"
TRACEPARENT = f"00-{REMOTE_TRACE}-{REMOTE_SPAN}-01"
ANSWER = "/operations/v1/packages/obs/contracts/answer"
CHAT = "/operations/v1/packages/obs/contracts/chat"
BODY = {"render": {"inputs": {"question": "Is the trace continued?"}}}
EVENTS = {"accept": "text/event-stream"}
HELLO = {"fixture_output": "hello"}  # the fake runtime's answer to the text contract


def _hex(span: Any) -> tuple[str, str]:
    return f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"


def _parent(span: Any) -> tuple[str, str] | None:
    if span.parent is None:
        return None
    return f"{span.parent.trace_id:032x}", f"{span.parent.span_id:016x}"


@pytest.fixture
def client_with(package_root: Path) -> Iterator[Any]:
    """``client_with(runtime=None, middleware=())``: a test client on a fresh app over the
    ``obs`` package (services closed at the end)."""
    services: list[Any] = []
    clients: list[TestClient] = []

    def factory(runtime: Any = None, middleware: Any = ()) -> TestClient:
        service = compose(package_root, runtime=runtime)
        services.append(service)
        client = TestClient(create_app(service, middleware=list(middleware)))
        clients.append(client)
        return client

    yield factory
    for client in clients:
        client.close()
    for service in services:
        service.close()


def _sse(client: TestClient, path: str, body: Any, headers: dict[str, str]) -> list[Any]:
    with client.stream("POST", path, json=body, headers={**EVENTS, **headers}) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        raw = b"".join(response.iter_bytes())
    return SseDecoder().feed(raw)


def test_a_json_execution_continues_the_callers_trace(
    otel: Telemetry, model: Model, client_with: Any
) -> None:
    client = client_with(runtime=openai_runtime(model))
    headers = {"traceparent": TRACEPARENT, "tracestate": "vendor=opaque-1"}
    answer = client.post(ANSWER + "/execute", json=BODY, headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["ok"] is True
    operation = otel.one("templiqx execute_contract")
    assert _hex(operation)[0] == REMOTE_TRACE
    assert _parent(operation) == (REMOTE_TRACE, REMOTE_SPAN)
    assert operation.parent is not None
    assert operation.parent.is_remote
    assert operation.context.trace_state.get("vendor") == "opaque-1"
    assert operation.kind is SpanKind.INTERNAL
    (call,) = otel.children(operation)
    assert call.name == "chat obs-model"
    assert call.kind is SpanKind.CLIENT
    # The model server got the traceparent of the model-call span: the same trace, end to end.
    (request,) = model.requests
    sent = request.header("traceparent") or ""
    assert sent.split("-")[1:3] == list(_hex(call))
    assert request.header("tracestate") == "vendor=opaque-1"


def test_a_streamed_execution_continues_the_callers_trace(
    otel: Telemetry, model: Model, client_with: Any
) -> None:
    client = client_with(runtime=openai_runtime(model))
    messages = _sse(client, ANSWER + "/execute", BODY, {"traceparent": TRACEPARENT})
    assert [m.event for m in messages][-1] == "envelope"
    envelope = messages[-1].json()
    assert envelope["ok"] is True
    operation = otel.one("templiqx execute_contract")
    assert _parent(operation) == (REMOTE_TRACE, REMOTE_SPAN)
    attributes = dict(operation.attributes or {})
    assert attributes["templiqx.stream"] is True
    assert attributes["templiqx.ok"] is True
    assert attributes["templiqx.fingerprint.request"] == envelope["fingerprints"]["request"]
    (call,) = otel.children(operation)
    assert call.name == "chat obs-model"
    call_attributes = dict(call.attributes or {})
    assert call_attributes["gen_ai.request.stream"] is True
    assert call_attributes["gen_ai.response.time_to_first_chunk"] >= 0
    (request,) = model.requests
    assert (request.header("traceparent") or "").split("-")[1:3] == list(_hex(call))


def test_a_failed_call_over_http_is_an_error_in_the_callers_trace(
    otel: Telemetry, model: Model, client_with: Any
) -> None:
    client = client_with(runtime=openai_runtime(model))
    model.mode = "500"
    answer = client.post(ANSWER + "/execute", json=BODY, headers={"traceparent": TRACEPARENT})
    assert answer.status_code == 422
    assert answer.json()["diagnostics"][0]["code"] == "TQX_RUNTIME_UNAVAILABLE"
    operation = otel.one("templiqx execute_contract")
    assert _parent(operation) == (REMOTE_TRACE, REMOTE_SPAN)
    assert operation.status.status_code is StatusCode.ERROR
    assert dict(operation.attributes or {})["error.type"] == "TQX_RUNTIME_UNAVAILABLE"
    (call,) = otel.children(operation)
    assert call.status.status_code is StatusCode.ERROR
    assert dict(call.attributes or {})["error.type"] == "TQX_RUNTIME_UNAVAILABLE"


def test_operations_that_call_no_model_continue_it_too(otel: Telemetry, client_with: Any) -> None:
    client = client_with()
    headers = {"traceparent": TRACEPARENT}
    assert client.post(ANSWER + "/validate", headers=headers).status_code == 200
    compile_body = {**BODY, "capabilities": ["structured_output"]}
    assert client.post(ANSWER + "/compile", json=compile_body, headers=headers).status_code == 200
    assert client.get("/operations/v1/packages", headers=headers).status_code == 200
    for name in (
        "templiqx validate_contract",
        "templiqx compile_contract",
        "templiqx discover_packages",
    ):
        assert _parent(otel.one(name)) == (REMOTE_TRACE, REMOTE_SPAN), name


def test_without_a_usable_traceparent_each_request_starts_a_trace(
    otel: Telemetry, client_with: Any
) -> None:
    client = client_with()
    cases: list[list[tuple[str, str]]] = [
        [],
        [("traceparent", "00-not-a-trace-01")],
        [("traceparent", f"00-{'0' * 32}-{REMOTE_SPAN}-01")],  # an all-zero trace id
        [("traceparent", TRACEPARENT), ("traceparent", TRACEPARENT)],  # sent twice
        [("tracestate", "vendor=x")],  # state without a parent
    ]
    for headers in cases:
        answer = client.post(ANSWER + "/validate", headers=headers)
        assert answer.status_code == 200, headers
    spans = otel.named("templiqx validate_contract")
    assert len(spans) == len(cases)
    for span in spans:
        assert span.parent is None
        assert _hex(span)[0] != REMOTE_TRACE
    assert len({_hex(span)[0] for span in spans}) == len(cases)


def test_concurrent_requests_keep_their_own_callers(otel: Telemetry, client_with: Any) -> None:
    client = client_with()
    parents = [f"{index + 1:016x}" for index in range(8)]

    def call(index: int) -> None:
        headers = {"traceparent": f"00-{REMOTE_TRACE[:-2]}{index:02x}-{parents[index]}-01"}
        if index % 2:
            messages = _sse(client, CHAT + "/execute", HELLO, headers)
            assert messages[-1].json()["ok"] is True
        else:
            answer = client.post(CHAT + "/execute", json=HELLO, headers=headers)
            assert answer.json()["ok"] is True

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(call, range(8)))
    operations = otel.named("templiqx execute_contract")
    assert len(operations) == 8
    seen = sorted(_parent(span) or ("", "") for span in operations)
    assert seen == sorted((f"{REMOTE_TRACE[:-2]}{i:02x}", parents[i]) for i in range(8))
    for operation in operations:
        (call_span,) = otel.children(operation)
        assert _hex(call_span)[0] == _hex(operation)[0]


class _ServerSpan:
    """What an ASGI instrumentation does: a SERVER span current around the request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        tracer = trace.get_tracer("host")
        with tracer.start_as_current_span("POST execute", kind=SpanKind.SERVER):
            await self.app(scope, receive, send)


def test_a_host_server_span_stays_the_parent(otel: Telemetry, client_with: Any) -> None:
    client = client_with(middleware=[Middleware(_ServerSpan)])
    messages = _sse(client, CHAT + "/execute", HELLO, {"traceparent": TRACEPARENT})
    assert messages[-1].json()["ok"] is True
    server = otel.one("POST execute")
    operation = otel.one("templiqx execute_contract")
    assert operation.parent is not None
    assert operation.parent.span_id == server.context.span_id
    assert operation.context.trace_id == server.context.trace_id


def test_without_an_sdk_no_header_is_read_and_nothing_is_imported(package_root: Path) -> None:
    """A server process that never set up OpenTelemetry serves traced callers without
    importing it (JSON and streamed)."""
    script = textwrap.dedent(
        f"""
        import sys
        from starlette.testclient import TestClient
        from templiqx_http import create_app
        from templiqx_http.operations import trace_carrier
        from templiqx_local import compose
        client = TestClient(create_app(compose({str(package_root)!r})))
        headers = {{"traceparent": {TRACEPARENT!r}}}
        path = {CHAT + "/execute"!r}
        hello = {{"fixture_output": "hello"}}
        assert client.post(path, json=hello, headers=headers).json()["ok"]
        events = {{**headers, "accept": "text/event-stream"}}
        with client.stream("POST", path, json=hello, headers=events) as answer:
            assert b"event: envelope" in b"".join(answer.iter_bytes())
        scope = {{"headers": [(b"traceparent", {TRACEPARENT!r}.encode())]}}
        assert trace_carrier(scope) is None
        loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
        assert not loaded, loaded
        print("clean")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "clean"


def test_a_browser_may_send_the_trace_headers(package_root: Path) -> None:
    """CORS lets a traced browser page send its trace context (the preflight allows it)."""
    service = compose(package_root)
    app = create_app(service, HttpSettings(cors_origins=("https://app.example",)))
    with TestClient(app) as client:
        answer = client.options(
            ANSWER + "/execute",
            headers={
                "Origin": "https://app.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "traceparent, tracestate, baggage",
            },
        )
    service.close()
    assert answer.status_code == 200
    allowed = {h.strip().lower() for h in answer.headers["access-control-allow-headers"].split(",")}
    assert {"traceparent", "tracestate", "baggage"} <= allowed
