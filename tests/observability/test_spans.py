"""Spans and metrics of catalog operations and model calls, read back from the SDK's in-memory
exporters: names, parenting, the GenAI attributes and templiqx's own (issue #32 items 1-2)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from opentelemetry.trace import SpanKind, StatusCode

from conftest import Model, Telemetry, openai_runtime
from templiqx_contracts import StreamEvent
from templiqx_local import compose

QUESTION = {"question": "Is it on?"}


def _attrs(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


def _ids(traceparent: str) -> tuple[str, str]:
    """The trace and parent ids of a W3C ``traceparent`` (version 00; flags not compared)."""
    version, trace_id, parent_id, _flags = traceparent.split("-")
    assert version == "00"
    return trace_id, parent_id


def _ids_of(span: Any) -> tuple[str, str]:
    return f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"


def _points(telemetry: Telemetry, name: str) -> list[Any]:
    return telemetry.metrics().get(name, [])


def test_an_execution_is_an_operation_span_with_a_client_span_child(
    otel: Telemetry, package_root: Path
) -> None:
    service = compose(package_root)
    envelope = service.execute_contract(
        "obs", "answer", inputs=QUESTION, fixture_output={"ok": True}
    )
    assert envelope.ok
    operation = otel.one("templiqx execute_contract")
    call = otel.one("chat")
    assert operation.kind is SpanKind.INTERNAL
    assert call.kind is SpanKind.CLIENT
    assert operation.parent is None
    assert call.parent is not None
    assert operation.context is not None
    assert call.parent.span_id == operation.context.span_id
    assert call.context is not None
    assert call.context.trace_id == operation.context.trace_id
    op = _attrs(operation)
    assert op["templiqx.operation"] == "execute_contract"
    assert op["templiqx.package"] == "obs"
    assert op["templiqx.package.version"] == "2.1.0"
    assert op["templiqx.contract"] == "answer"
    assert op["templiqx.contract.version"] == "1.4.0"
    assert op["templiqx.ok"] is True
    assert op["templiqx.fingerprint.request"] == envelope.fingerprints["request"]
    assert op["templiqx.fingerprint.output"] == envelope.fingerprints["output"]
    assert "templiqx.diagnostic.codes" not in op
    assert operation.status.status_code is StatusCode.UNSET
    model = _attrs(call)
    assert model["gen_ai.operation.name"] == "chat"
    assert model["gen_ai.provider.name"] == "templiqx.fake"
    assert model["gen_ai.output.type"] == "json"
    assert model["gen_ai.request.stream"] is False
    assert model["gen_ai.request.temperature"] == 0.2
    assert model["gen_ai.request.max_tokens"] == 50
    assert model["templiqx.runtime.id"] == "templiqx.fake"
    assert "templiqx.contract.version" not in model  # on the parent operation span
    assert "gen_ai.input.messages" not in model  # content capture is opt-in
    assert "gen_ai.output.messages" not in model


def test_a_failed_validation_records_its_codes_and_counts(
    otel: Telemetry, package_root: Path
) -> None:
    service = compose(package_root)
    contract = package_root / "obs" / "contracts" / "answer.yaml"
    contract.write_text(contract.read_text().replace("version: 1.4.0", "version: [1]"))
    envelope = service.validate_contract("obs", "answer")
    assert not envelope.ok
    span = otel.one("templiqx validate_contract")
    attributes = _attrs(span)
    codes = sorted({d.code for d in envelope.diagnostics})
    assert attributes["templiqx.ok"] is False
    assert list(attributes["templiqx.diagnostic.codes"]) == codes
    first = next(d for d in envelope.diagnostics if d.severity == "error")
    assert attributes["error.type"] == first.code
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description is not None
    assert first.code in span.status.description
    validations = _points(otel, "templiqx.validations")
    assert [p.value for p in validations] == [1]
    assert dict(validations[0].attributes) == {
        "templiqx.outcome": "error",
        "error.type": first.code,
    }
    by_code = {
        p.attributes["templiqx.diagnostic.code"] for p in _points(otel, "templiqx.diagnostics")
    }
    assert by_code == set(codes)
    durations = _points(otel, "templiqx.operation.duration")
    assert durations[0].attributes["templiqx.operation"] == "validate_contract"
    assert durations[0].count == 1


def test_compilations_are_counted_by_outcome(otel: Telemetry, package_root: Path) -> None:
    service = compose(package_root)
    offered = ["structured_output"]
    assert service.compile_contract("obs", "answer", inputs=QUESTION, capabilities=offered).ok
    assert not service.compile_contract("obs", "answer", inputs={}, capabilities=offered).ok
    points = {
        (p.attributes["templiqx.outcome"], p.attributes.get("error.type")): p.value
        for p in _points(otel, "templiqx.compilations")
    }
    assert points[("ok", None)] == 1
    assert sum(v for (outcome, _), v in points.items() if outcome == "error") == 1


def test_a_streamed_openai_call_carries_the_genai_attributes(
    otel: Telemetry, package_root: Path, model: Model
) -> None:
    runtime = openai_runtime(model)
    service = compose(package_root, runtime=runtime)
    events: list[StreamEvent] = []
    envelope = service.execute_contract(
        "obs", "answer", inputs=QUESTION, stream=True, sink=events.append
    )
    assert envelope.ok, envelope.diagnostics
    call = otel.one("chat obs-model")
    attributes = _attrs(call)
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "obs-model"
    assert attributes["gen_ai.response.model"] == "obs-model-2026"
    assert attributes["gen_ai.response.id"] == "chatcmpl-obs-2"
    assert list(attributes["gen_ai.response.finish_reasons"]) == ["stop"]
    assert attributes["gen_ai.usage.input_tokens"] == 11
    assert attributes["gen_ai.usage.output_tokens"] == 7
    assert attributes["gen_ai.request.stream"] is True
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["server.port"] == int(model.server.base_url.rsplit(":", 1)[1])
    assert 0 <= attributes["gen_ai.response.time_to_first_chunk"] <= call.end_time - call.start_time
    assert attributes["templiqx.runtime.id"] == "templiqx-runtime-openai"
    # The model server received our trace context: the client span is its parent.
    assert call.context is not None
    sent = model.requests[-1].header("traceparent")
    assert sent is not None
    assert _ids(sent) == _ids_of(call)
    metrics = otel.metrics()
    duration = metrics["gen_ai.client.operation.duration"][0]
    assert duration.count == 1
    assert dict(duration.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "obs-model",
        "gen_ai.response.model": "obs-model-2026",
        "server.address": "127.0.0.1",
        "server.port": attributes["server.port"],
    }
    tokens = {
        p.attributes["gen_ai.token.type"]: p.sum for p in metrics["gen_ai.client.token.usage"]
    }
    assert tokens == {"input": 11, "output": 7}
    assert metrics["gen_ai.client.operation.time_to_first_chunk"][0].count == 1
    runtime.close()


def test_a_failed_call_records_the_code_on_both_spans(
    otel: Telemetry, package_root: Path, model: Model
) -> None:
    model.mode = "500"
    runtime = openai_runtime(model)
    envelope = compose(package_root, runtime=runtime).execute_contract(
        "obs", "answer", inputs=QUESTION
    )
    assert not envelope.ok
    assert envelope.diagnostics[0].code == "TQX_RUNTIME_UNAVAILABLE"
    call = otel.one("chat obs-model")
    operation = otel.one("templiqx execute_contract")
    for span in (call, operation):
        assert _attrs(span)["error.type"] == "TQX_RUNTIME_UNAVAILABLE"
        assert span.status.status_code is StatusCode.ERROR
        assert not span.events  # no exception text is ever recorded
    assert "gen_ai.response.id" not in _attrs(call)
    duration = otel.metrics()["gen_ai.client.operation.duration"][0]
    assert duration.attributes["error.type"] == "TQX_RUNTIME_UNAVAILABLE"
    runtime.close()


def test_a_cancelled_stream_is_recorded_as_cancelled(
    otel: Telemetry, package_root: Path, model: Model
) -> None:
    model.mode = "hang"
    runtime = openai_runtime(model, timeout_ms=30_000)
    cancel = threading.Event()
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    envelope = compose(package_root, runtime=runtime).execute_contract(
        "obs", "answer", inputs=QUESTION, stream=True, cancel=cancel
    )
    timer.cancel()
    assert envelope.diagnostics[0].code == "TQX_RUNTIME_CANCELLED"
    call = otel.one("chat obs-model")
    attributes = _attrs(call)
    assert attributes["templiqx.cancelled"] is True
    assert attributes["error.type"] == "TQX_RUNTIME_CANCELLED"
    assert call.status.status_code is StatusCode.ERROR
    runtime.close()


def test_the_stream_object_traces_one_operation(otel: Telemetry, package_root: Path) -> None:
    service = compose(package_root)
    with service.stream_contract(
        "obs", "answer", inputs=QUESTION, fixture_output={"ok": True}
    ) as run:
        events = list(run)
    assert run.envelope.ok
    assert events
    operation = otel.one("templiqx execute_contract")
    call = otel.one("chat")
    assert operation.context is not None
    assert call.parent is not None
    assert call.parent.span_id == operation.context.span_id
    assert _attrs(operation)["templiqx.stream"] is True
    assert _attrs(operation)["templiqx.contract.version"] == "1.4.0"
    assert _attrs(call)["gen_ai.request.stream"] is True


def test_the_async_api_traces_like_the_blocking_one(
    otel: Telemetry, package_root: Path, model: Model
) -> None:
    runtime = openai_runtime(model)
    service = compose(package_root, runtime=runtime)

    async def main() -> None:
        plain = await service.aexecute_contract("obs", "answer", inputs=QUESTION)
        streamed = await service.aexecute_contract("obs", "answer", inputs=QUESTION, stream=True)
        async with service.astream_contract("obs", "chat") as run:
            async for _ in run:
                pass
        assert plain.ok
        assert streamed.ok
        assert run.envelope.ok
        await runtime.aclose()

    asyncio.run(main())
    operations = otel.named("templiqx execute_contract")
    calls = otel.named("chat obs-model")
    assert len(operations) == 3
    assert len(calls) == 3
    for call in calls:
        assert call.parent is not None
        parent = next(o for o in operations if o.context.span_id == call.parent.span_id)
        assert parent.context.trace_id == call.context.trace_id
    # Each request carried its own call's trace context.
    sent = sorted(_ids(r.header("traceparent") or "") for r in model.requests)
    assert sent == sorted(_ids_of(c) for c in calls)


def test_an_operation_continues_the_callers_span(otel: Telemetry, package_root: Path) -> None:
    service = compose(package_root)
    tracer = otel.provider.get_tracer("host")
    with tracer.start_as_current_span("host request") as host:
        service.compile_contract(
            "obs", "answer", inputs=QUESTION, capabilities=["structured_output"]
        )
    operation = otel.one("templiqx compile_contract")
    assert operation.parent is not None
    assert operation.parent.span_id == host.get_span_context().span_id


def test_evals_trace_their_calls_on_the_fake(otel: Telemetry, package_root: Path) -> None:
    envelope = compose(package_root).list_evals("obs")
    assert envelope.ok
    assert otel.one("templiqx list_evals").attributes["templiqx.package"] == "obs"
