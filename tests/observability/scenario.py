"""One observability scenario through the command line and the HTTP server, and what its spans
must show.

:func:`run_cli_scenario` drives ``templiqx`` as a user would, against a loopback model: a
streamed execution, a failed call (the model answers 500) and a three-row batch.
:func:`run_http_scenario` does the same through a real ``templiqx-http-server`` process, as a
traced client calls it — every request carries the client's ``traceparent``: a streamed (SSE)
execution, a failed call, and a batch the client fans out (three rows sent at once under one
client span; the HTTP surface has no batch route of its own). How the child processes export
their spans is the caller's choice (``env``): to a file through the SDK's console exporter in
CI (``test_cli_scenario.py``), or over OTLP to a real Arize Phoenix through
``opentelemetry-instrument`` (``phoenix_suite.py``, ``nox -s phoenix``). Both read the spans
back into :class:`Span` values and call :func:`check_cli_scenario` / :func:`check_http_scenario`,
so the same assertions hold against the in-memory path and the real backend.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import Model, write_package
from templiqx_http.sse import SseDecoder


@dataclass(frozen=True)
class Span:
    """A span as read back from an exporter or a backend (ids in lowercase hex)."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    kind: str
    """``INTERNAL``, ``CLIENT``...; ``""`` when the backend does not say (Phoenix keeps its own
    span kinds instead)."""
    status: str
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Outcome:
    """What the scenario's commands answered, and what the model server received."""

    streamed: dict[str, Any]
    failed: dict[str, Any]
    batch_lines: list[dict[str, Any]]
    traceparents: list[str]


def _templiqx(argv: list[str], env: Mapping[str, str], *, launcher: list[str]) -> Any:
    return subprocess.run(
        [*launcher, *argv], capture_output=True, text=True, env=dict(env), timeout=180, check=False
    )


def run_cli_scenario(
    work: Path,
    model: Model,
    env: Mapping[str, str],
    *,
    launcher: list[str] | None = None,
) -> Outcome:
    """Run the three commands; ``launcher`` is the command before ``templiqx``'s arguments
    (default ``python -m templiqx_cli``; e.g. ``opentelemetry-instrument templiqx``)."""
    root = write_package(work / "root")
    values = work / "values.json"
    values.write_text(json.dumps({"inputs": {"question": "Is tracing on?"}}))
    rows = work / "rows.jsonl"
    rows.write_text(
        "\n".join(json.dumps({"id": f"r{i}", "inputs": {"question": f"q{i}"}}) for i in range(3))
        + "\n"
    )
    start = launcher if launcher is not None else [sys.executable, "-m", "templiqx_cli"]
    child = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPLIQX_", "MODEL_"))}
    child.update(
        {
            "MODEL_BASE_URL": model.server.base_url,
            "MODEL_API_KEY": "sk-scenario-key",
            "MODEL_ID": "obs-model",
            **env,
        }
    )
    base = ["--root", str(root), "--json", "--runtime", "openai"]
    model.mode = "ok"
    done = _templiqx(
        [*base, "execute", "obs", "answer", "--values", str(values), "--stream"],
        child,
        launcher=start,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    streamed = json.loads(done.stdout)
    model.mode = "500"
    done = _templiqx(
        [*base, "execute", "obs", "answer", "--values", str(values)], child, launcher=start
    )
    assert done.returncode == 2, done.stderr[-3000:]
    failed = json.loads(done.stdout)
    model.mode = "ok"
    output = work / "out.jsonl"
    done = _templiqx(
        [
            *base,
            "batch",
            "obs",
            "answer",
            "--input",
            str(rows),
            "--output",
            str(output),
            "--concurrency",
            "2",
        ],
        child,
        launcher=start,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in output.read_text().splitlines() if line.strip()]
    traceparents = [r.header("traceparent") or "" for r in model.requests]
    return Outcome(streamed, failed, lines, traceparents)


def _one(spans: list[Span], name: str, **attributes: Any) -> Span:
    found = [
        s
        for s in spans
        if s.name == name and all(s.attributes.get(k) == v for k, v in attributes.items())
    ]
    assert len(found) == 1, (name, attributes, sorted(s.name for s in spans))
    return found[0]


def _children(spans: list[Span], parent: Span, name: str) -> list[Span]:
    return [s for s in spans if s.parent_id == parent.span_id and s.name == name]


def check_cli_scenario(spans: list[Span], outcome: Outcome) -> None:
    """The spans of :func:`run_cli_scenario`: names, parenting and attributes."""
    assert outcome.streamed["ok"] is True
    assert outcome.failed["diagnostics"][0]["code"] == "TQX_RUNTIME_UNAVAILABLE"
    assert [line["ok"] for line in outcome.batch_lines] == [True, True, True]
    operations = [s for s in spans if s.name == "templiqx execute_contract"]
    assert len(operations) == 2, sorted(s.name for s in spans)
    streamed = next(s for s in operations if s.attributes.get("templiqx.ok") is True)
    failed = next(s for s in operations if s.attributes.get("templiqx.ok") is False)
    for operation in operations:
        assert operation.parent_id is None
        assert operation.kind in ("INTERNAL", "")
        assert operation.attributes["templiqx.package"] == "obs"
        assert operation.attributes["templiqx.package.version"] == "2.1.0"
        assert operation.attributes["templiqx.contract"] == "answer"
        assert operation.attributes["templiqx.contract.version"] == "1.4.0"
    # The streamed execution: its fingerprints and one CLIENT child with the GenAI attributes.
    assert (
        streamed.attributes["templiqx.fingerprint.request"]
        == (outcome.streamed["fingerprints"]["request"])
    )
    (call,) = _children(spans, streamed, "chat obs-model")
    assert call.trace_id == streamed.trace_id
    assert call.kind in ("CLIENT", "")
    assert call.status != "ERROR"
    attributes = call.attributes
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "obs-model"
    assert attributes["gen_ai.response.model"] == "obs-model-2026"
    assert attributes["gen_ai.response.id"] == "chatcmpl-obs-2"
    assert list(attributes["gen_ai.response.finish_reasons"]) == ["stop"]
    assert int(attributes["gen_ai.usage.input_tokens"]) == 11
    assert int(attributes["gen_ai.usage.output_tokens"]) == 7
    assert attributes["gen_ai.request.stream"] is True
    assert float(attributes["gen_ai.response.time_to_first_chunk"]) >= 0
    assert attributes["server.address"] == "127.0.0.1"
    # The failed call: the TQX code on both spans, which end in error.
    assert failed.status == "ERROR"
    assert failed.attributes["error.type"] == "TQX_RUNTIME_UNAVAILABLE"
    (failed_call,) = _children(spans, failed, "chat obs-model")
    assert failed_call.status == "ERROR"
    assert failed_call.attributes["error.type"] == "TQX_RUNTIME_UNAVAILABLE"
    # The batch: one span, three row children, each the parent of one model call.
    batch = _one(spans, "templiqx batch")
    assert batch.attributes["templiqx.batch.rows"] == 3
    assert batch.attributes["templiqx.batch.succeeded"] == 3
    rows = _children(spans, batch, "templiqx batch_row")
    assert sorted(r.attributes["templiqx.batch.row.id"] for r in rows) == ["r0", "r1", "r2"]
    for row in rows:
        assert row.trace_id == batch.trace_id
        assert row.attributes["templiqx.ok"] is True
        (row_call,) = _children(spans, row, "chat obs-model")
        assert row_call.attributes["gen_ai.request.stream"] is False
    # Every request the model server got carried the trace context of its model-call span.
    calls = [s for s in spans if s.name == "chat obs-model"]
    assert len(calls) == 5
    sent = sorted(tp.split("-")[1:3] for tp in outcome.traceparents)
    assert sent == sorted([c.trace_id, c.span_id] for c in calls)


@dataclass
class HttpOutcome:
    """What the HTTP scenario's calls answered, and the client's trace they were sent in."""

    trace_id: str
    streamed_parent: str
    failed_parent: str
    batch_parent: str
    streamed: dict[str, Any]
    events: list[str]
    failed_status: int
    failed: dict[str, Any]
    rows: list[dict[str, Any]]
    traceparents: list[str]
    exit_code: int
    log: list[str]


class _Server:
    """A ``templiqx-http-server`` child on 127.0.0.1 (ephemeral port), its output kept."""

    def __init__(self, command: list[str], env: Mapping[str, str]) -> None:
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env),
        )
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in iter(self.process.stdout.readline, b""):
            self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def port(self, timeout: float = 120.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if line.startswith("{") and '"listening"' in line:
                    port: int = json.loads(line)["port"]
                    return port
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise AssertionError("the HTTP server did not start: " + "\n".join(self.lines[-40:]))

    def stop(self) -> int:
        """SIGTERM (the server drains, its exporter flushes at exit), then the exit status."""
        if self.process.poll() is None:
            self.process.terminate()
        try:
            code = self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(10)
        self._pump.join(10)
        return code


def _post(port: int, path: str, body: Any, headers: Mapping[str, str]) -> tuple[int, str, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request(
            "POST",
            path,
            body=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", **headers},
        )
        answer = connection.getresponse()
        return answer.status, answer.getheader("content-type") or "", answer.read()
    finally:
        connection.close()


def run_http_scenario(
    work: Path,
    model: Model,
    env: Mapping[str, str],
    *,
    launcher: list[str] | None = None,
) -> HttpOutcome:
    """Serve the ``obs`` package with the OpenAI runtime and call it as a traced client;
    ``launcher`` is the command before the server's flags (default
    ``python -m templiqx_http_server``; e.g. ``opentelemetry-instrument templiqx-http-server``)."""
    root = write_package(work / "http-root")
    start = launcher if launcher is not None else [sys.executable, "-m", "templiqx_http_server"]
    child = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPLIQX_", "MODEL_"))}
    child.update(
        {
            "MODEL_BASE_URL": model.server.base_url,
            "MODEL_API_KEY": "sk-scenario-key",
            "MODEL_ID": "obs-model",
            **env,
        }
    )
    flags = ["--addr", "127.0.0.1:0", "--root", str(root), "--runtime-mode", "openai"]
    trace_id = secrets.token_hex(16)
    parents = [secrets.token_hex(8) for _ in range(3)]

    def traced(parent: str) -> dict[str, str]:
        return {"traceparent": f"00-{trace_id}-{parent}-01"}

    path = "/operations/v1/packages/obs/contracts/answer/execute"
    first = len(model.requests)
    server = _Server([*start, *flags], child)
    try:
        port = server.port()
        model.mode = "ok"
        body = {"render": {"inputs": {"question": "Is tracing on?"}}}
        events = {"Accept": "text/event-stream", **traced(parents[0])}
        status, media, raw = _post(port, path, body, events)
        assert status == 200, raw[-2000:]
        assert media.startswith("text/event-stream"), media
        messages = SseDecoder().feed(raw)
        streamed = messages[-1].json()
        model.mode = "500"
        failed_status, _, raw = _post(port, path, body, traced(parents[1]))
        failed = json.loads(raw)
        model.mode = "ok"

        def row(index: int) -> dict[str, Any]:
            values = {"render": {"inputs": {"question": f"q{index}"}}}
            status, _, answer = _post(port, path, values, traced(parents[2]))
            assert status == 200, answer[-2000:]
            result: dict[str, Any] = json.loads(answer)
            return result

        with ThreadPoolExecutor(3) as pool:
            rows = list(pool.map(row, range(3)))
    finally:
        code = server.stop()
    traceparents = [r.header("traceparent") or "" for r in model.requests[first:]]
    return HttpOutcome(
        trace_id,
        *parents,
        streamed=streamed,
        events=[m.event for m in messages],
        failed_status=failed_status,
        failed=failed,
        rows=rows,
        traceparents=traceparents,
        exit_code=code,
        log=server.lines,
    )


def check_http_scenario(spans: list[Span], outcome: HttpOutcome) -> None:
    """The spans of :func:`run_http_scenario`: every operation continues the client's trace."""
    assert outcome.exit_code == 0, outcome.log[-40:]
    assert outcome.events[-2:] == ["Complete", "envelope"], outcome.events
    assert outcome.streamed["ok"] is True
    assert outcome.failed_status == 422  # the reference: a runtime failure is unprocessable
    assert outcome.failed["diagnostics"][0]["code"] == "TQX_RUNTIME_UNAVAILABLE"
    assert [row["ok"] for row in outcome.rows] == [True, True, True]
    operations = [s for s in spans if s.name == "templiqx execute_contract"]
    assert len(operations) == 5, sorted(s.name for s in spans)
    for operation in operations:
        # The client's trace, continued: same trace id, the client's span as the parent.
        assert operation.trace_id == outcome.trace_id
        assert operation.kind in ("INTERNAL", "")
        assert operation.attributes["templiqx.package"] == "obs"
        assert operation.attributes["templiqx.contract"] == "answer"
        assert operation.attributes["templiqx.contract.version"] == "1.4.0"
    (streamed,) = [s for s in operations if s.parent_id == outcome.streamed_parent]
    (failed,) = [s for s in operations if s.parent_id == outcome.failed_parent]
    rows = [s for s in operations if s.parent_id == outcome.batch_parent]
    assert len(rows) == 3
    # The streamed execution: its envelope's fingerprints, one streamed CLIENT child.
    assert streamed.attributes["templiqx.ok"] is True
    assert streamed.attributes["templiqx.stream"] is True
    assert (
        streamed.attributes["templiqx.fingerprint.request"]
        == outcome.streamed["fingerprints"]["request"]
    )
    (call,) = _children(spans, streamed, "chat obs-model")
    assert call.trace_id == outcome.trace_id
    assert call.kind in ("CLIENT", "")
    assert call.attributes["gen_ai.operation.name"] == "chat"
    assert call.attributes["gen_ai.provider.name"] == "openai"
    assert call.attributes["gen_ai.request.model"] == "obs-model"
    assert call.attributes["gen_ai.response.model"] == "obs-model-2026"
    assert call.attributes["gen_ai.request.stream"] is True
    assert float(call.attributes["gen_ai.response.time_to_first_chunk"]) >= 0
    assert int(call.attributes["gen_ai.usage.output_tokens"]) == 7
    # The failed call: an error with its TQX code on both spans.
    assert failed.status == "ERROR"
    assert failed.attributes["error.type"] == "TQX_RUNTIME_UNAVAILABLE"
    (failed_call,) = _children(spans, failed, "chat obs-model")
    assert failed_call.status == "ERROR"
    assert failed_call.attributes["error.type"] == "TQX_RUNTIME_UNAVAILABLE"
    # The client's batch: three sibling operations, each the parent of one model call.
    fingerprints = sorted(r.attributes["templiqx.fingerprint.request"] for r in rows)
    assert fingerprints == sorted(row["fingerprints"]["request"] for row in outcome.rows)
    for row in rows:
        assert row.attributes["templiqx.ok"] is True
        (row_call,) = _children(spans, row, "chat obs-model")
        assert row_call.attributes["gen_ai.request.stream"] is False
    # The model server got each call's trace context: the client's trace, end to end.
    calls = [s for s in spans if s.name == "chat obs-model"]
    assert len(calls) == 5
    sent = sorted(tp.split("-")[1:3] for tp in outcome.traceparents)
    assert sent == sorted([c.trace_id, c.span_id] for c in calls)
