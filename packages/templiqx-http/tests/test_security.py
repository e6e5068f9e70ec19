"""Safe to expose (DECISIONS 28): token, concurrency, deadline, CORS, the access log.

Plus the limits' wire: 401 with ``WWW-Authenticate``, 503 with ``Retry-After``, 504 with the
work cancelled (the runtime sees its cancel token), one JSON access-log line per request that
carries no body, query, header value or secret.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from templiqx_contracts import (
    AdapterDescriptor,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
)
from templiqx_http import HttpSettings, create_app
from templiqx_local import compose
from templiqx_ports import (
    AsyncRuntimeAdapter,
    CancelToken,
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeFailureCode,
    RuntimeFailureError,
    StreamSink,
)

ClientFactory = Callable[..., TestClient]
SCENARIO = Path(__file__).resolve().parents[3] / "fixtures/packages/welcome/scenarios/stream-vip"
EXECUTE = "/operations/v1/packages/welcome/contracts/onboarding-summary/execute"
TOKEN = "tqx-test-token-8f2a61c0"
CANARY = "canary-5d1e9b"


def _values() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SCENARIO / "request.json").read_text(encoding="utf-8"))
    return data


class _Stuck(RuntimeAdapter):
    """A runtime that answers only when cancelled (then fails as cancelled), noting when."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled_at: float | None = None

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="stuck", version="1", capabilities=["structured_output"])

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        raise AssertionError("only the streaming path is used")

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        self.started.set()
        assert cancel is not None
        while not cancel.is_set():
            time.sleep(0.005)
        self.cancelled_at = time.monotonic()
        failure = RuntimeFailure(
            code=RuntimeFailureCode.CANCELLED,
            adapter_id="stuck",
            adapter_version="1",
            fingerprint="stuck-cancelled",
            detail="the call was cancelled",
        )
        sink(Failed(code=failure.code.value, message=failure.detail))
        raise RuntimeFailureError(failure)


class _Sleeper(RuntimeAdapter, AsyncRuntimeAdapter):
    """A natively async runtime whose call never ends by itself; notes its cancellation."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="sleeper", version="1", capabilities=["structured_output"])

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        raise AssertionError("the async twin is used")

    async def aexecute(self, request: ExecutionRequest) -> ExecutionReceipt:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        raise AssertionError("not reached")

    async def aexecute_streaming(
        self, request: ExecutionRequest, *, cancel: CancelToken | None = None
    ) -> AsyncIterator[StreamEvent]:
        raise AssertionError("not streamed here")
        yield  # pragma: no cover


def test_a_token_guards_operations_but_not_probes_or_docs(client_for: ClientFactory) -> None:
    client = client_for(HttpSettings(token=TOKEN))
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        refused = client.get("/operations/v1/catalog", headers=headers)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == 'Bearer realm="templiqx"'
        (diagnostic,) = refused.json()["diagnostics"]
        assert diagnostic["code"] == "TQX_HTTP_UNAUTHORIZED"
        assert TOKEN not in refused.text
        assert refused.json()["operation"] == "catalog"
    for header in (f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER  {TOKEN} "):  # RFC 9110 §11.1
        ok = client.get("/operations/v1/catalog", headers={"Authorization": header})
        assert ok.status_code == 200, header
    for header in (f"Basic {TOKEN}", f"Bearer {TOKEN}x", f"Bearer{TOKEN}"):
        assert (
            client.get("/operations/v1/catalog", headers={"Authorization": header}).status_code
            == 401
        )
    for open_path in (
        "/healthz",
        "/readyz",
        "/operations/v1/health/live",
        "/operations/v1/health/ready",
        "/operations/v1/openapi.json",
        "/swagger-ui/",
    ):
        assert client.get(open_path).status_code == 200, open_path
    with pytest.raises(ValueError, match="blank"):
        HttpSettings(token="  ")
    assert TOKEN not in repr(HttpSettings(token=TOKEN))


def test_beyond_the_concurrency_limit_is_503_with_retry_after(root: Path) -> None:
    from templiqx_mock import runtime_from_path

    runtime = runtime_from_path(SCENARIO / "manifest.json", pace_ms=100)
    service = compose(root, runtime=runtime)
    app = create_app(service, HttpSettings(max_concurrent=1))
    started = threading.Event()

    def hold(client: TestClient) -> None:
        with client.stream(
            "POST", EXECUTE, json={"render": _values()}, headers={"accept": "text/event-stream"}
        ) as response:
            for _ in response.iter_bytes():
                started.set()

    try:
        with TestClient(app) as client:
            holder = threading.Thread(target=hold, args=(client,))
            holder.start()
            assert started.wait(10)
            busy = client.get("/operations/v1/catalog")
            assert busy.status_code == 503
            assert busy.headers["retry-after"] == "1"
            assert busy.json()["diagnostics"][0]["code"] == "TQX_HTTP_BUSY"
            assert client.get("/healthz").status_code == 200  # probes are not counted
            holder.join(20)
            assert client.get("/operations/v1/catalog").status_code == 200
    finally:
        service.close()


def test_the_deadline_is_504_and_cancels_the_model_call(client_for: ClientFactory) -> None:
    stuck = _Stuck()
    client = client_for(HttpSettings(request_timeout_s=0.3), runtime=stuck)
    started = time.monotonic()
    response = client.post(EXECUTE, json={"render": _values(), "stream": True})
    assert response.status_code == 504
    (diagnostic,) = response.json()["diagnostics"]
    assert diagnostic["code"] == "TQX_HTTP_TRANSPORT"
    assert diagnostic["message"].startswith("request timed out")
    assert stuck.cancelled_at is not None, "the runtime never saw its cancel token"
    assert stuck.cancelled_at - started < 5

    sleeper = _Sleeper()
    client = client_for(HttpSettings(request_timeout_s=0.3), runtime=sleeper)
    response = client.post(EXECUTE, json={"render": _values()})
    assert response.status_code == 504
    assert sleeper.cancelled.wait(5), "the native async call was not cancelled"


LOOPS = """\
api_version: templiqx/v1alpha1
id: loops
version: 1.0.0
capabilities: [text]
inputs:
  xs: {required: true, schema: {type: array, items: {type: integer}}}
messages:
  - role: user
    content:
      - kind: for_each
        collection: {kind: ref, path: inputs.xs}
        item: a
        body:
          - kind: for_each
            collection: {kind: ref, path: inputs.xs}
            item: b
            body:
              - kind: for_each
                collection: {kind: ref, path: inputs.xs}
                item: c
                body: []
output_schema: {type: string}
"""


def test_the_deadline_cancels_work_that_is_not_a_model_call(
    client_for: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A render of 27 million loop steps (tens of seconds at the largest fuel budget) past a
    0.5 s deadline: 504, and the worker stops rendering soon after (its cancel token)."""
    monkeypatch.setenv("TEMPLIQX_RENDER_FUEL", "50000000")
    client = client_for(HttpSettings(request_timeout_s=0.5))
    service = client.app.state.templiqx.service  # type: ignore[attr-defined]
    put = client.put(
        "/operations/v1/packages/welcome/contracts/loops",
        content=LOOPS,
        headers={"content-type": "application/yaml"},
    )
    assert put.status_code == 200, put.text
    finished: list[tuple[float, Any]] = []
    original = service.invoke_bound

    def recording(name: str, bound: Any, **options: Any) -> Any:
        envelope = original(name, bound, **options)
        finished.append((time.monotonic(), envelope))
        return envelope

    monkeypatch.setattr(service, "invoke_bound", recording)
    render = "/operations/v1/packages/welcome/contracts/loops/render"
    values = {"render": {"inputs": {"xs": list(range(300))}}, "capabilities": ["text"]}
    response = client.post(render, json=values)
    answered = time.monotonic()
    assert response.status_code == 504, response.text
    assert response.json()["diagnostics"][0]["code"] == "TQX_HTTP_TRANSPORT"
    deadline = answered + 10
    while not finished and time.monotonic() < deadline:
        time.sleep(0.02)
    assert finished, "the render went on past its deadline"
    stopped, envelope = finished[0]
    assert stopped - answered < 5, "the render was not cancelled"
    assert envelope.diagnostics[0].code == "TQX_CANCELLED", envelope.diagnostics

    # streamed: the deadline passes while the call is prepared (rendered), before any event
    started = time.monotonic()
    execute = render.replace("/render", "/execute")
    events = {"accept": "text/event-stream"}
    streamed = client.post(execute, json={**values, "fixture_output": "x"}, headers=events)
    assert streamed.status_code == 504, streamed.text
    assert streamed.headers["content-type"] == "application/json"
    assert streamed.json()["diagnostics"][0]["code"] == "TQX_HTTP_TRANSPORT"
    assert time.monotonic() - started < 5, "the preparation was not cut off at the deadline"


def test_cors_is_off_unless_origins_are_configured(client_for: ClientFactory) -> None:
    origin = {"Origin": "https://app.example"}
    plain = client_for().get("/operations/v1/catalog", headers=origin)
    assert "access-control-allow-origin" not in plain.headers
    preflight = {**origin, "Access-Control-Request-Method": "POST"}
    assert client_for().options("/operations/v1/packages", headers=preflight).status_code == 405
    allowed = client_for(HttpSettings(cors_origins=("https://app.example",)))
    answer = allowed.options(
        "/operations/v1/packages",
        headers={**preflight, "Access-Control-Request-Headers": "if-match, content-type"},
    )
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == "https://app.example"
    simple = allowed.get("/operations/v1/catalog", headers=origin)
    assert simple.headers["access-control-allow-origin"] == "https://app.example"
    assert "x-request-id" in simple.headers["access-control-expose-headers"].lower()
    other = allowed.get("/operations/v1/catalog", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers


def test_one_json_access_line_per_request_without_secrets(
    client_for: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    client = client_for(HttpSettings(token=TOKEN))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with caplog.at_level(logging.INFO, logger="templiqx_http.access"):
        client.post(
            "/operations/v1/packages",
            json={"name": CANARY, "version": "0.1.0"},
            headers={**auth, "X-Request-Id": "req-1", "Cookie": f"session={CANARY}"},
        )
        client.get(f"/operations/v1/artifacts?package=welcome&prefix={CANARY}", headers=auth)
        client.patch(
            "/operations/v1/packages/welcome",
            json={"description": CANARY},
            headers={**auth, "If-Match": CANARY},
        )
        client.get("/operations/v1/catalog", headers={"Authorization": f"Bearer {CANARY}"})
        client.get("/nowhere")
    lines = [r.getMessage() for r in caplog.records if r.name == "templiqx_http.access"]
    assert len(lines) == 5
    records = [json.loads(line) for line in lines]
    assert records[0]["request_id"] == "req-1"
    assert [r["status"] for r in records] == [200, 200, 409, 401, 404]
    assert records[0]["operation"] == "create_package"
    assert records[0]["ok"] is True
    assert records[2]["path"] == "/operations/v1/packages/welcome"
    assert "operation" not in records[4]
    for line in lines:
        assert TOKEN not in line
        assert CANARY not in line
        assert set(json.loads(line)) <= {
            "event",
            "request_id",
            "method",
            "path",
            "operation",
            "status",
            "ok",
            "duration_ms",
            "client",
        }


class _Unset(RuntimeAdapter):
    """A runtime whose settings are incomplete: every call fails before reaching a model."""

    calls = 0

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="unset", version="1", capabilities=["structured_output"])

    def problems(self) -> list[str]:
        return ["runtime unset: MODEL_ID is not set"]

    def _fail(self) -> RuntimeFailureError:
        self.calls += 1
        failure = RuntimeFailure(
            code=RuntimeFailureCode.PERMANENT,
            adapter_id="unset",
            adapter_version="1",
            fingerprint="unset",
            detail="runtime settings are missing or invalid: MODEL_ID is not set",
        )
        return RuntimeFailureError(failure)

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        raise self._fail()

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        error = self._fail()
        sink(Failed(code=error.failure.code.value, message=error.failure.detail))
        raise error


def test_a_runtime_missing_its_settings_is_json_before_any_stream(
    client_for: ClientFactory,
) -> None:
    unset = _Unset()
    events = {"accept": "text/event-stream"}
    unchecked = client_for(runtime=unset).post(EXECUTE, json={"render": _values()}, headers=events)
    assert unchecked.status_code == 200  # without the check: the stream starts, then Failed
    client = client_for(runtime=unset, runtime_check=unset.problems)
    plain = client.post(EXECUTE, json={"render": _values(), "stream": True})
    streamed = client.post(EXECUTE, json={"render": _values()}, headers=events)
    assert streamed.status_code == plain.status_code == 422
    assert streamed.headers["content-type"] == "application/json"
    assert streamed.json() == plain.json()
    assert streamed.json()["diagnostics"][0]["code"] == "TQX_RUNTIME_PERMANENT"
    fine = client_for(runtime_check=list).post(EXECUTE, json={"render": _values()}, headers=events)
    assert fine.headers["content-type"].startswith("text/event-stream")
