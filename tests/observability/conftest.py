"""The harness of the observability tests: the OpenTelemetry SDK's in-memory exporters.

:func:`otel` installs a fresh SDK tracer provider (a simple processor into an
:class:`InMemorySpanExporter`) and meter provider (an :class:`InMemoryMetricReader`) as the
*global* providers for one test and restores the previous globals after it, so the rest of the
suite keeps running with no SDK. (The API lets a process set its providers once; the tests swap
the module globals the same way OpenTelemetry's own test utilities do.)

:func:`package_root` lays out a small package, ``obs``, with a structured contract (``answer``)
and a text one (``chat``); :func:`model` is a loopback OpenAI-compatible model server.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.metrics import _internal as metrics_internal
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from templiqx_conformance.loopback import LoopbackServer, RecordedRequest, Reply

sys.path.insert(0, str(Path(__file__).parent))

MANIFEST = """\
api_version: templiqx/v1alpha1
package: obs
version: 2.1.0
description: observability test package
contracts:
  - answer
  - chat
components: []
evals: []
migrations: []
templates: []
translations: []
"""

ANSWER = """\
api_version: templiqx/v1alpha1
id: answer
version: 1.4.0
inputs:
  question:
    required: true
    schema: {type: string}
messages:
  - role: system
    content:
      - {kind: text, value: "Answer in JSON."}
  - role: user
    content:
      - {kind: interpolate, expression: {kind: ref, path: inputs.question}}
capabilities: [structured_output]
runtime_policy: {temperature: 0.2, max_tokens: 50}
output_schema:
  type: object
  properties: {ok: {type: boolean}}
  required: [ok]
"""

CHAT = """\
api_version: templiqx/v1alpha1
id: chat
version: 0.3.0
messages:
  - role: user
    content:
      - {kind: text, value: "Say hello."}
capabilities: [text]
output_schema: {type: string}
"""


@dataclass
class Telemetry:
    """What the SDK collected during one test."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    provider: TracerProvider

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, (name, [s.name for s in self.spans()])
        return found[0]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        assert parent.context is not None
        return [
            s
            for s in self.spans()
            if s.parent is not None and s.parent.span_id == parent.context.span_id
        ]

    def metrics(self) -> dict[str, list[Any]]:
        """Every data point by metric name."""
        data = self.reader.get_metrics_data()
        found: dict[str, list[Any]] = {}
        if data is None:
            return found
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    found.setdefault(metric.name, []).extend(metric.data.data_points)
        return found


@pytest.fixture
def otel(monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    monkeypatch.setattr(metrics_internal, "_METER_PROVIDER", meters)
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    yield Telemetry(exporter, reader, provider)
    provider.shutdown()
    meters.shutdown()


def write_package(root: Path) -> Path:
    """The ``obs`` package under ``root``."""
    package = root / "obs"
    (package / "contracts").mkdir(parents=True)
    (package / "templiqx.yaml").write_text(MANIFEST, encoding="utf-8")
    (package / "contracts" / "answer.yaml").write_text(ANSWER, encoding="utf-8")
    (package / "contracts" / "chat.yaml").write_text(CHAT, encoding="utf-8")
    return root


@pytest.fixture
def package_root(tmp_path: Path) -> Path:
    return write_package(tmp_path / "root")


def completion(content: str, *, finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-obs-1",
        "object": "chat.completion",
        "created": 1,
        "model": "obs-model-2026",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def chunks(*pieces: str, finish: str = "stop") -> list[dict[str, Any]]:
    """A streamed completion of ``pieces``, with usage in the last chunk."""

    def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-obs-2",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "obs-model-2026",
            "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
        }

    out = [chunk({"content": piece}) for piece in pieces]
    out.append(chunk({}, finish))
    out.append(
        {
            "id": "chatcmpl-obs-2",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "obs-model-2026",
            "choices": [],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }
    )
    return out


class Model:
    """A scripted loopback model: :attr:`mode` picks the answer (``ok``, ``500``, ``hang``)."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.server = LoopbackServer(self.respond)

    @property
    def requests(self) -> list[RecordedRequest]:
        return list(self.server.requests)

    def respond(self, request: RecordedRequest) -> Reply:
        body = json.loads(request.body or b"{}")
        if self.mode == "500":
            return Reply.error(500, body={"error": {"message": "the model is down"}})
        if self.mode == "hang":
            return Reply.silence()
        content = '{"ok": true}' if "response_format" in body else "hello there"
        if body.get("stream") is True:
            half = len(content) // 2
            return Reply.sse(chunks(content[:half], content[half:]))
        return Reply.json(completion(content))


@pytest.fixture
def model() -> Iterator[Model]:
    served = Model()
    with served.server:
        yield served


def openai_runtime(model: Model, **overrides: Any) -> Any:
    from templiqx_runtime_openai import OpenAIRuntime, OpenAISettings

    settings = OpenAISettings(
        base_url=model.server.base_url,
        api_key=overrides.pop("api_key", "sk-obs-test-key"),
        model="obs-model",
        timeout_ms=overrides.pop("timeout_ms", 5000),
    )
    return OpenAIRuntime(settings)
