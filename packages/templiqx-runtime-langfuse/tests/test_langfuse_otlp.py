"""Langfuse over OTLP (issue #32 item 5): the runtime sends its traces to Langfuse's
OpenTelemetry endpoint instead of, or beside, the ingestion API (both twins: ``twin``)."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from templiqx_conformance.loopback import LoopbackServer, RecordedRequest, Reply
from templiqx_contracts import fingerprint
from templiqx_ports import RuntimeFailureError
from templiqx_runtime_langfuse import (
    ExportMode,
    LangfuseRuntime,
    LangfuseSettings,
    PayloadPolicy,
    TraceRecord,
    build_otlp,
)
from templiqx_runtime_openai import SettingsError

from .conftest import Twin

Serve = Callable[..., LoopbackServer]
RuntimeFor = Callable[..., LangfuseRuntime]


def _spans(request: RecordedRequest) -> list[dict[str, Any]]:
    body = json.loads(request.body)
    (resource,) = body["resourceSpans"]
    (scope,) = resource["scopeSpans"]
    assert scope["scope"] == {"name": "templiqx-runtime-langfuse", "version": "0.2.0"}
    spans: list[dict[str, Any]] = scope["spans"]
    return spans


def _attributes(span: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in span["attributes"]:
        value = item["value"]
        (kind,) = value
        if kind == "arrayValue":
            found[item["key"]] = [next(iter(v.values())) for v in value[kind]["values"]]
        else:
            found[item["key"]] = value[kind]
    return found


def test_the_otlp_schema_is_strict_enough_to_fail(otlp_validator: Any) -> None:
    assert not otlp_validator.is_valid({})
    assert not otlp_validator.is_valid(
        {"resourceSpans": [{"scopeSpans": [{"spans": [{"kind": "x"}]}]}]}
    )
    assert not otlp_validator.is_valid(
        {"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"key": 1}]}]}]}]}
    )


@pytest.mark.parametrize("policy", [PayloadPolicy.FULL, PayloadPolicy.FINGERPRINTS_ONLY])
def test_otlp_export_sends_a_trace_and_a_generation(
    twin: Twin,
    serve: Serve,
    runtime_for: RuntimeFor,
    lf: SimpleNamespace,
    otlp_validator: Any,
    policy: PayloadPolicy,
) -> None:
    server = serve(Reply.json(lf.completion('{"ok": true, "note": "OUTPUT-TEXT-marker"}')))
    runtime = runtime_for(server, policy=policy, export=ExportMode.OTLP)
    request = lf.request()
    receipt = twin.execute(runtime, request)
    assert receipt.output_schema_valid
    assert server.requests_to(lf.INGESTION) == []
    (sent,) = server.requests_to(lf.OTLP)
    assert sent.header("Content-Type") == "application/json"
    basic = base64.b64encode(f"{lf.PUBLIC_KEY}:{lf.SECRET_KEY}".encode()).decode()
    assert sent.header("Authorization") == f"Basic {basic}"
    errors = [str(e) for e in otlp_validator.iter_errors(json.loads(sent.body))]
    assert errors == []
    trace, generation = _spans(sent)
    assert trace["name"] == "templiqx greeting"
    assert generation["name"] == "chat test-model"
    assert trace["kind"] == 1
    assert generation["kind"] == 3
    assert generation["traceId"] == trace["traceId"]
    assert generation["parentSpanId"] == trace["spanId"]
    assert "parentSpanId" not in trace
    assert len(trace["traceId"]) == 32
    assert len(trace["spanId"]) == 16
    assert int(generation["endTimeUnixNano"]) >= int(generation["startTimeUnixNano"]) > 0
    root = _attributes(trace)
    gen = _attributes(generation)
    assert root["langfuse.trace.name"] == "greeting"
    assert root["langfuse.version"] == "1.2.0"
    assert root["langfuse.trace.metadata.request_fingerprint"] == fingerprint(request)
    assert root["langfuse.trace.metadata.status"] == "success"
    assert gen["langfuse.observation.type"] == "generation"
    assert gen["gen_ai.operation.name"] == "chat"
    assert gen["gen_ai.provider.name"] == "openai"
    assert gen["gen_ai.request.model"] == "test-model"
    assert gen["gen_ai.response.model"] == "test-model"
    assert gen["gen_ai.response.id"] == "chatcmpl-x"
    assert gen["gen_ai.response.finish_reasons"] == ["stop"]
    assert gen["gen_ai.usage.input_tokens"] == 11
    assert gen["gen_ai.usage.output_tokens"] == 3
    assert json.loads(gen["langfuse.observation.model.parameters"]) == {"temperature": 0}
    text = sent.body.decode()
    if policy is PayloadPolicy.FULL:
        assert json.loads(gen["langfuse.observation.input"])[1]["content"] == lf.PROMPT
        assert json.loads(gen["langfuse.observation.output"])["note"] == lf.OUTPUT_MARKER
        assert json.loads(root["langfuse.trace.output"])["ok"] is True
    else:
        assert lf.PROMPT not in text
        assert lf.OUTPUT_MARKER not in text
    for secret in (lf.MODEL_KEY, lf.PUBLIC_KEY, lf.SECRET_KEY):
        assert secret not in text


def test_both_sends_to_each_endpoint(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, lf: SimpleNamespace
) -> None:
    server = serve(Reply.json(lf.completion('{"ok": true}')))
    runtime = runtime_for(server, export=ExportMode.BOTH)
    twin.execute(runtime, lf.request())
    assert len(server.requests_to(lf.INGESTION)) == 1
    assert len(server.requests_to(lf.OTLP)) == 1


def test_a_failure_is_a_generation_at_error_level(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, lf: SimpleNamespace, otlp_validator: Any
) -> None:
    server = serve(Reply.error(503, body={"error": {"message": "down"}}))
    runtime = runtime_for(server, export=ExportMode.OTLP, policy=PayloadPolicy.FULL)
    with pytest.raises(RuntimeFailureError):
        twin.execute(runtime, lf.request())
    (sent,) = server.requests_to(lf.OTLP)
    assert otlp_validator.is_valid(json.loads(sent.body))
    trace, generation = _spans(sent)
    gen = _attributes(generation)
    assert gen["langfuse.observation.level"] == "ERROR"
    assert gen["langfuse.observation.status_message"] == "TQX_RUNTIME_UNAVAILABLE"
    assert gen["error.type"] == "TQX_RUNTIME_UNAVAILABLE"
    assert generation["status"] == {"code": 2, "message": "TQX_RUNTIME_UNAVAILABLE"}
    assert "langfuse.observation.output" not in gen
    assert _attributes(trace)["langfuse.trace.metadata.status"] == "TQX_RUNTIME_UNAVAILABLE"


@pytest.mark.parametrize(
    "answer",
    [
        Reply.error(500, body={"error": "no"}),
        Reply.json({"partialSuccess": {"rejectedSpans": 2, "errorMessage": "bad"}}),
        Reply.silence(),
    ],
)
def test_otlp_problems_never_fail_the_execution(
    twin: Twin,
    serve: Serve,
    runtime_for: RuntimeFor,
    lf: SimpleNamespace,
    answer: Reply,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="templiqx_runtime_langfuse")
    server = serve(Reply.json(lf.completion('{"ok": true}')), otlp=answer)
    runtime = runtime_for(server, export=ExportMode.OTLP, trace_timeout_ms=300)
    assert twin.execute(runtime, lf.request()).output_schema_valid
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert "trace emission failed (best effort)" in warnings[0]
    assert "bad" not in warnings[0]


def test_build_otlp_joins_a_given_trace() -> None:
    record = TraceRecord(
        adapter_id="templiqx-runtime-langfuse",
        adapter_version="0.2.0",
        contract_id="c",
        contract_version="1.0.0",
        model="m",
        request_fingerprint="f" * 64,
        messages=[],
        model_parameters={},
        started=1.0,
        ended=2.5,
    )
    parent = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
    body = build_otlp(record, PayloadPolicy.FINGERPRINTS_ONLY, parent=parent)
    spans = body["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert {span["traceId"] for span in spans} == {parent[0]}
    assert spans[0]["startTimeUnixNano"] == "1000000000"
    assert spans[1]["endTimeUnixNano"] == "2500000000"
    assert (
        build_otlp(record, PayloadPolicy.FULL)["resourceSpans"][0]["scopeSpans"][0]["spans"][0][
            "traceId"
        ]
        == record.ids[0]
    )


def test_the_export_setting_is_read_and_checked() -> None:
    base = {
        "LANGFUSE_HOST": "http://127.0.0.1:9",
        "LANGFUSE_PUBLIC_KEY": "pk",
        "LANGFUSE_SECRET_KEY": "sk",
    }
    assert LangfuseSettings.from_env(base).export is ExportMode.INGESTION
    for value in ("ingestion", "otlp", "both"):
        settings = LangfuseSettings.from_env({**base, "TEMPLIQX_LANGFUSE_EXPORT": value})
        assert settings.export.value == value
    with pytest.raises(SettingsError) as raised:
        LangfuseSettings.from_env({**base, "TEMPLIQX_LANGFUSE_EXPORT": "grpc"})
    assert "TEMPLIQX_LANGFUSE_EXPORT must be 'ingestion', 'otlp' or 'both'" in str(raised.value)
    with pytest.raises(SettingsError):
        LangfuseSettings(host="http://x", public_key="p", secret_key="s", export="nope")  # type: ignore[arg-type]
    assert LangfuseSettings(host="http://x", public_key="p", secret_key="s").otlp_url == (
        "http://x/api/public/otel/v1/traces"
    )
