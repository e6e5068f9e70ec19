"""examples/fastapi-streaming: served by uvicorn on 127.0.0.1, streamed with an HTTP client.

The app is started on an ephemeral port in a thread and stopped at the end of each test. A
client reads the SSE events as they arrive; a client that disconnects mid-stream must make the
runtime stop (its async iterator is closed) within a second. The structured answer also
arrives as ``partial`` events, what each event changed in the answer so far, which the form
page (``GET /``) applies to fill its fields.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import html
import http.client
import importlib.util
import itertools
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from templiqx_application import TempliqxService
from templiqx_contracts import (
    MISSING,
    AdapterDescriptor,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
    apply_partial_changes,
    decode_partial_changes,
)
from templiqx_local import compose
from templiqx_mock import runtime_from_path
from templiqx_ports import AsyncRuntimeAdapter, CancelToken, RuntimeAdapter

REPO = Path(__file__).resolve().parents[2]
PACKAGES = REPO / "fixtures" / "packages"
SCENARIO = PACKAGES / "welcome" / "scenarios" / "stream-vip"
REQUEST = (SCENARIO / "request.json").read_bytes()


def _example() -> Any:
    spec = importlib.util.spec_from_file_location(
        "fastapi_streaming_example", REPO / "examples" / "fastapi-streaming" / "app.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _serving(service: TempliqxService) -> Iterator[int]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # Nagle off
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(_example().host_app(service), log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _get(port: int, path: str) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path)
    return connection.getresponse()


def _post(port: int, body: bytes) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("POST", "/summary", body, {"Content-Type": "application/json"})
    return connection.getresponse()


def _sse(response: http.client.HTTPResponse) -> Iterator[tuple[str, dict[str, Any], float]]:
    name = ""
    while True:
        line = response.readline()
        if not line:
            return
        text = line.decode("utf-8").rstrip("\n")
        if text.startswith("event: "):
            name = text[len("event: ") :]
        elif text.startswith("data: "):
            yield name, json.loads(text[len("data: ") :]), time.monotonic()


def test_the_example_streams_the_contract_as_sse_as_it_is_generated() -> None:
    pace_ms = 30
    service = compose(
        str(PACKAGES), runtime=runtime_from_path(SCENARIO / "manifest.json", pace_ms=pace_ms)
    )
    with _serving(service) as port:
        response = _post(port, REQUEST)
        assert response.status == 200
        assert response.getheader("content-type", "").startswith("text/event-stream")
        events = list(_sse(response))
    names = [name for name, _, _ in events if name != "partial"]
    assert names[-2:] == ["Complete", "envelope"]
    deltas = [(data, at) for name, data, at in events if name == "Delta"]
    assert set(names[:-2]) == {"Delta"}
    arrivals = [at for _, at in deltas]
    assert arrivals[-1] - arrivals[0] >= (len(arrivals) - 1) * pace_ms / 1000 * 0.8, "live"
    text = "".join(data["text"] for data, _ in deltas)
    complete = next(data for name, data, _ in events if name == "Complete")
    envelope = events[-1][1]
    assert json.loads(text) == complete["output"]
    assert envelope["ok"] is True
    assert "stream_events" not in envelope
    assert envelope["result"]["output"] == complete["output"]


def _grows(before: Any, after: Any) -> bool:
    """Whether ``after`` only adds to ``before``: new members and items, longer strings."""
    if isinstance(before, dict):
        return isinstance(after, dict) and all(
            key in after and _grows(value, after[key]) for key, value in before.items()
        )
    if isinstance(before, list):
        return (
            isinstance(after, list)
            and len(after) >= len(before)
            and all(itertools.starmap(_grows, zip(before, after, strict=False)))
        )
    if isinstance(before, str):
        return isinstance(after, str) and after.startswith(before)
    return bool(before == after)


def test_the_form_is_filled_from_partial_events_as_the_answer_grows() -> None:
    pace_ms = 30
    service = compose(
        str(PACKAGES), runtime=runtime_from_path(SCENARIO / "manifest.json", pace_ms=pace_ms)
    )
    with _serving(service) as port:
        events = list(_sse(_post(port, REQUEST)))
    names = [name for name, _, _ in events]
    # each partial event follows the event whose changes it carries
    for at, name in enumerate(names):
        if name == "partial":
            assert names[at - 1] in ("Delta", "Complete"), names
    value: Any = MISSING
    values = []
    arrivals = []
    for name, data, at in events:
        if name == "partial":
            value = apply_partial_changes(value, decode_partial_changes(json.dumps(data)))
            values.append(copy.deepcopy(value))
            arrivals.append(at)
    assert values[:3] == [{}, {"summary": "Anouk "}, {"summary": "Anouk de Vries "}]
    for before, after in itertools.pairwise(values):
        assert _grows(before, after), (before, after)  # the form never flickers
    complete = next(data for name, data, _ in events if name == "Complete")
    assert values[-1] == complete["output"]  # the changes add up to the receipt's output
    assert arrivals[-1] - arrivals[0] >= (len(arrivals) - 2) * pace_ms / 1000 * 0.8, "live"


def test_the_form_page_reads_the_partial_events() -> None:
    service = compose(str(PACKAGES), runtime=runtime_from_path(SCENARIO / "manifest.json"))
    with _serving(service) as port:
        response = _get(port, "/")
        page = response.read().decode()
    assert response.status == 200
    assert response.getheader("content-type", "").startswith("text/html")
    for field in ('id="summary"', 'id="tone"', 'id="next_steps"'):
        assert field in page
    assert 'if (name === "partial") { apply(data); fill(answerSoFar ?? {}); }' in page
    assert "{{REQUEST}}" not in page
    shown = page.split('<textarea id="values" rows="8">')[1].split("</textarea>")[0]
    assert json.loads(html.unescape(shown)) == json.loads(REQUEST)


def test_the_operations_api_is_mounted_beside_the_route() -> None:
    service = compose(str(PACKAGES), runtime=runtime_from_path(SCENARIO / "manifest.json"))
    with _serving(service) as port:
        catalog = _get(port, "/templiqx/operations/v1/catalog")
        names = json.loads(catalog.read())["result"]
        document = json.loads(_get(port, "/templiqx/operations/v1/openapi.json").read())
    assert catalog.status == 200
    assert "execute_contract" in names
    assert document["servers"] == [{"url": "/templiqx"}]


def test_a_refused_request_is_a_422_before_any_model_call() -> None:
    runtime = runtime_from_path(SCENARIO / "manifest.json")
    with _serving(compose(str(PACKAGES), runtime=runtime)) as port:
        response = _post(port, json.dumps({"inputs": {}}).encode())
        envelope = json.loads(response.read())
    assert response.status == 422
    assert envelope["ok"] is False
    assert runtime.stats().attempts == 0


class _Endless(RuntimeAdapter, AsyncRuntimeAdapter):
    """Streams deltas until it is closed, and records when that happened."""

    def __init__(self) -> None:
        self.closed = threading.Event()

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="endless", version="1", capabilities=["structured_output"])

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        raise AssertionError("only streamed")

    async def aexecute(self, request: ExecutionRequest) -> ExecutionReceipt:
        raise AssertionError("only streamed")

    async def aexecute_streaming(
        self, request: ExecutionRequest, *, cancel: CancelToken | None = None
    ) -> AsyncIterator[StreamEvent]:
        try:
            while True:
                yield Delta(text=".")
                await asyncio.sleep(0.01)
        finally:
            self.closed.set()


@pytest.mark.parametrize("delay", [0.0, 0.2])
def test_a_browser_that_leaves_cancels_the_runtime(delay: float) -> None:
    runtime = _Endless()
    with _serving(compose(str(PACKAGES), runtime=runtime)) as port:
        response = _post(port, REQUEST)
        assert response.status == 200
        for received, (name, _, _) in enumerate(_sse(response), 1):
            assert name == "Delta"
            if received == 5:
                break
        time.sleep(delay)
        response.close()  # the browser goes away
        assert runtime.closed.wait(1.0), "the runtime was not cancelled on disconnect"
