"""LangfuseRuntime against a loopback model and a loopback Langfuse (both twins: ``twin``)."""

from __future__ import annotations

import base64
import json
import logging
import socket
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from templiqx_conformance.loopback import LoopbackServer, RecordedRequest, Reply
from templiqx_contracts import Complete, Failed, canonical_json, fingerprint
from templiqx_ports import RuntimeFailureCode, RuntimeFailureError
from templiqx_runtime_langfuse import (
    LangfuseRuntime,
    PayloadPolicy,
    TraceRecord,
    build_batch,
)

from .conftest import Twin

Serve = Callable[..., LoopbackServer]
RuntimeFor = Callable[..., LangfuseRuntime]
POLICIES = [PayloadPolicy.FULL, PayloadPolicy.FINGERPRINTS_ONLY]


def ingested(server: LoopbackServer, lf: SimpleNamespace) -> list[RecordedRequest]:
    return server.requests_to(lf.INGESTION)


def assert_valid(validator: Any, body: Any) -> None:
    errors = [str(error) for error in validator.iter_errors(body)]
    assert errors == [], errors


def test_the_ingestion_schema_is_strict_enough_to_fail(ingestion_validator: Any) -> None:
    # Guard against a validator that accepts anything: broken bodies must be rejected.
    assert not ingestion_validator.is_valid({})
    assert not ingestion_validator.is_valid({"batch": [{"type": "trace-create", "body": {}}]})
    assert not ingestion_validator.is_valid(
        {"batch": [{"id": "e", "timestamp": "t", "type": "trace-create", "body": {"tags": "x"}}]}
    )
    assert not ingestion_validator.is_valid(
        {"batch": [{"id": "e", "timestamp": "t", "type": "nope", "body": {}}]}
    )
    assert not ingestion_validator.is_valid(
        {
            "batch": [
                {
                    "id": "e",
                    "timestamp": "t",
                    "type": "generation-create",
                    "body": {"level": "LOUD"},
                }
            ]
        }
    )


@pytest.mark.parametrize("policy", POLICIES)
def test_success_is_traced_and_the_body_matches_the_openapi_schema(
    twin: Twin,
    policy: PayloadPolicy,
    serve: Serve,
    runtime_for: RuntimeFor,
    lf: SimpleNamespace,
    ingestion_validator: Any,
) -> None:
    content = json.dumps({"ok": True, "note": lf.OUTPUT_MARKER})
    server = serve(Reply.json(lf.completion(content)))
    runtime = runtime_for(server, policy=policy)
    request = lf.request()
    before = time.time()
    receipt = twin.execute(runtime, request)

    assert receipt.adapter.id == "templiqx-runtime-langfuse"
    assert receipt.adapter.version == "0.2.0"
    assert receipt.adapter.capabilities == ["structured_output", "chat_completion"]
    assert receipt.request_fingerprint == fingerprint(request)  # the whole request (reference)
    assert runtime.request_fingerprint(request) == receipt.request_fingerprint  # known before
    assert receipt.output == {"ok": True, "note": lf.OUTPUT_MARKER}
    assert receipt.output_schema_valid is True

    model_call, trace_call = server.requests
    assert model_call.path == "/chat/completions"
    assert model_call.header("Authorization") == f"Bearer {lf.MODEL_KEY}"
    assert model_call.json["response_format"]["json_schema"]["strict"] is True
    assert trace_call.path == lf.INGESTION
    basic = base64.b64encode(f"{lf.PUBLIC_KEY}:{lf.SECRET_KEY}".encode()).decode()
    assert trace_call.header("Authorization") == f"Basic {basic}"
    assert trace_call.header("Content-Type") == "application/json"

    body = trace_call.json
    assert_valid(ingestion_validator, body)
    trace_event, generation_event = body["batch"]
    assert trace_event["type"] == "trace-create"
    assert generation_event["type"] == "generation-create"
    trace, generation = trace_event["body"], generation_event["body"]
    assert generation["traceId"] == trace["id"]
    assert len(trace["id"]) == 32
    assert trace["name"] == generation["name"] == "greeting"
    assert generation["model"] == "test-model"
    assert generation["level"] == "DEFAULT"
    assert "statusMessage" not in generation
    assert generation["usageDetails"] == {"input": 11, "output": 3, "total": 14}
    assert generation["startTime"] <= generation["endTime"]
    assert generation["startTime"] >= time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(before - 1))
    meta = trace["metadata"]
    assert meta["request_fingerprint"] == receipt.request_fingerprint
    assert meta["output_fingerprint"] == receipt.output_fingerprint
    assert meta["output_schema_valid"] is True
    assert meta["status"] == "success"

    text = trace_call.body.decode()
    if policy is PayloadPolicy.FULL:
        assert trace["input"] == [
            {"role": "system", "content": "Answer in JSON."},
            {"role": "user", "content": lf.PROMPT},
        ]
        assert trace["output"] == generation["output"] == receipt.output
        assert meta["model_parameters"] == {"temperature": 0}
    else:
        for event in (trace, generation):
            assert "input" not in event
            assert "output" not in event
        assert lf.PROMPT not in text
        assert lf.OUTPUT_MARKER not in text
        assert "model_parameters" not in meta
    for secret in (lf.MODEL_KEY, lf.PUBLIC_KEY, lf.SECRET_KEY):
        assert secret not in text


@pytest.mark.parametrize("policy", POLICIES)
def test_failures_are_traced_with_the_code_as_status_and_still_raised(
    twin: Twin,
    policy: PayloadPolicy,
    serve: Serve,
    runtime_for: RuntimeFor,
    lf: SimpleNamespace,
    ingestion_validator: Any,
) -> None:
    server = serve(Reply.error(429, headers=[("Retry-After", "2")]))
    runtime = runtime_for(server, policy=policy)
    with pytest.raises(RuntimeFailureError) as caught:
        twin.execute(runtime, lf.request())
    failure = caught.value.failure
    assert failure.code is RuntimeFailureCode.RATE_LIMITED
    assert failure.retry_after_ms == 2000
    assert failure.adapter_id == "templiqx-runtime-langfuse"
    assert failure.adapter_version == "0.2.0"

    (trace_call,) = ingested(server, lf)
    assert_valid(ingestion_validator, trace_call.json)
    trace, generation = (event["body"] for event in trace_call.json["batch"])
    assert generation["level"] == "ERROR"
    assert generation["statusMessage"] == "TQX_RUNTIME_RATE_LIMITED"
    assert trace["metadata"]["status"] == "TQX_RUNTIME_RATE_LIMITED"
    assert trace["metadata"]["failure_fingerprint"] == failure.fingerprint
    assert trace["metadata"]["retry_after_ms"] == 2000
    assert "usageDetails" not in generation
    assert "output" not in trace
    assert ("input" in trace) is (policy is PayloadPolicy.FULL)


def test_schema_invalid_output_is_traced_and_returned(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, lf: SimpleNamespace, ingestion_validator: Any
) -> None:
    server = serve(Reply.json(lf.completion('{"ok":"yes"}', usage=False)))
    receipt = twin.execute(runtime_for(server), lf.request())
    assert receipt.output_schema_valid is False
    (trace_call,) = ingested(server, lf)
    assert_valid(ingestion_validator, trace_call.json)
    generation = trace_call.json["batch"][1]["body"]
    assert generation["metadata"]["output_schema_valid"] is False
    assert "usageDetails" not in generation


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("http_error", "Langfuse answered HTTP 503"),
        ("unauthorized", "Langfuse answered HTTP 401"),
        ("rejected_events", "Langfuse rejected 1 of 2 events"),
        ("closed_port", "could not reach Langfuse"),
        ("silent", "no answer within 300 ms"),
        ("stalled_answer", "no answer within 300 ms"),
    ],
)
def test_trace_problems_never_fail_the_execution(
    twin: Twin,
    case: str,
    expected: str,
    serve: Serve,
    runtime_for: RuntimeFor,
    lf: SimpleNamespace,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ingestion = {
        "http_error": Reply.error(503),
        "unauthorized": Reply.error(401, body={"message": lf.SECRET_KEY}),
        "rejected_events": Reply.json(
            {"successes": [{"id": "a"}], "errors": [{"id": "b", "message": lf.PROMPT}]},
            status=207,
        ),
        "closed_port": lf.accepted(),
        "silent": Reply.silence(),
        "stalled_answer": Reply.stream([b'{"successes": ['], after="hang"),
    }[case]
    server = serve(Reply.json(lf.completion('{"ok":true}')), ingestion)
    host = _closed_port_url() if case == "closed_port" else None
    runtime = runtime_for(server, langfuse_host=host, trace_timeout_ms=300)
    caplog.set_level(logging.WARNING, logger="templiqx_runtime_langfuse")
    started = time.monotonic()
    receipt = twin.execute(runtime, lf.request())
    assert time.monotonic() - started < 1.5
    assert receipt.output == {"ok": True}
    records = [r for r in caplog.records if r.name == "templiqx_runtime_langfuse"]
    assert len(records) == 1
    message = records[0].getMessage()
    assert message == (
        f"templiqx-runtime-langfuse: trace emission failed (best effort): {expected}"
    )
    for secret in (lf.MODEL_KEY, lf.PUBLIC_KEY, lf.SECRET_KEY, lf.PROMPT):
        assert secret not in caplog.text


def test_default_streaming_projection_is_one_terminal_event(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, lf: SimpleNamespace
) -> None:
    server = serve([Reply.json(lf.completion('{"ok":true}')), Reply.error(503)])
    runtime = runtime_for(server)
    events: list[Any] = []
    receipt = twin.execute_streaming(runtime, lf.request(), events.append)
    assert events == [Complete.of(receipt)]

    events.clear()
    with pytest.raises(RuntimeFailureError) as caught:
        twin.execute_streaming(runtime, lf.request(), events.append)
    assert events == [Failed(code="TQX_RUNTIME_UNAVAILABLE", message=str(caught.value))]
    assert len(ingested(server, lf)) == 2


def test_build_batch_is_valid_for_every_outcome_shape(
    lf: SimpleNamespace, ingestion_validator: Any
) -> None:
    from templiqx_ports import RuntimeFailure
    from templiqx_runtime_openai import Usage

    base: dict[str, Any] = {
        "adapter_id": "templiqx-runtime-langfuse",
        "adapter_version": "0.2.0",
        "contract_id": "c",
        "contract_version": "1",
        "model": "m",
        "request_fingerprint": "f" * 64,
        "messages": [{"role": "user", "content": "x"}],
        "model_parameters": {"temperature": 0.5, "stop": ["a"]},
        "started": 1_700_000_000.0,
        "ended": 1_700_000_001.5,
    }
    failure = RuntimeFailure(
        code=RuntimeFailureCode.TIMEOUT,
        adapter_id="templiqx-runtime-langfuse",
        adapter_version="0.2.0",
        fingerprint="0" * 64,
        detail="model request exceeded the 10 ms deadline",
    )
    outcomes = [
        {"output": {"ok": True}, "output_fingerprint": "1" * 64, "output_schema_valid": True},
        {"output": None, "output_fingerprint": fingerprint(None), "output_schema_valid": False},
        {"output": "text", "usage": Usage(prompt_tokens=1, completion_tokens=2, total_tokens=3)},
        {"failure": failure},
    ]
    for outcome in outcomes:
        record = TraceRecord(**base, **outcome)
        for policy in POLICIES:
            body = build_batch(record, policy, 1_700_000_002.0)
            assert_valid(ingestion_validator, json.loads(canonical_json(body)))
            assert body["batch"][0]["timestamp"] == "2023-11-14T22:13:22.000000Z"
    ids = TraceRecord(**base).ids
    assert len(set(ids)) == 4
    assert TraceRecord(**base).ids != ids  # fresh per execution
