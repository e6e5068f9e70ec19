"""Batch runs parent each row (item 4); content is opt-in, bounded and free of credentials
(item 3); without an SDK nothing is recorded and OpenTelemetry is not even imported (item 1)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from conftest import Model, Telemetry, openai_runtime
from templiqx_local import compose
from templiqx_ports import telemetry


def test_each_batch_row_is_a_child_of_the_batch_and_the_parent_of_its_call(
    otel: Telemetry, package_root: Path
) -> None:
    service = compose(package_root)
    rows = [
        {"id": "a", "inputs": {"question": "one"}, "output": {"ok": True}},
        {"id": "b", "inputs": {"question": "two"}, "output": {"ok": "not a boolean"}},
        {"id": "c", "inputs": {}, "output": {"ok": True}},
    ]
    with service.batch("obs", "answer", rows, concurrency=2) as run:
        results = list(run)
    assert len(results) == 3
    batch = otel.one("templiqx batch")
    row_spans = otel.named("templiqx batch_row")
    calls = otel.named("chat")
    assert len(row_spans) == 3
    assert len(calls) == 2  # the row without its required input never reaches the model
    assert batch.attributes is not None
    assert batch.attributes["templiqx.batch.rows"] == 3
    assert batch.attributes["templiqx.batch.failed"] == 2
    assert batch.attributes["templiqx.ok"] is False
    by_id = {}
    for span in row_spans:
        assert span.parent is not None
        assert span.parent.span_id == batch.context.span_id
        assert span.context.trace_id == batch.context.trace_id
        assert span.attributes is not None
        by_id[span.attributes["templiqx.batch.row.id"]] = span
    assert by_id["a"].attributes["templiqx.ok"] is True
    assert by_id["a"].attributes["templiqx.batch.row.source"] == "executed"
    assert by_id["b"].attributes["error.type"] == "TQX_OUTPUT_SCHEMA"
    assert by_id["b"].status.status_code is StatusCode.ERROR
    assert by_id["c"].attributes["templiqx.batch.row.source"] == "refused"
    rows_with_calls = {call.parent.span_id for call in calls if call.parent is not None}
    assert rows_with_calls == {by_id["a"].context.span_id, by_id["b"].context.span_id}


def test_a_batch_inside_a_host_span_joins_its_trace(otel: Telemetry, package_root: Path) -> None:
    service = compose(package_root)
    tracer = otel.provider.get_tracer("host")
    with (
        tracer.start_as_current_span("nightly job") as host,
        service.batch(
            "obs", "answer", [{"inputs": {"question": "q"}, "output": {"ok": True}}]
        ) as run,
    ):
        assert [r.ok for r in run] == [True]
    batch = otel.one("templiqx batch")
    assert batch.parent is not None
    assert batch.parent.span_id == host.get_span_context().span_id


def test_content_is_recorded_only_when_asked_bounded_and_without_credentials(
    otel: Telemetry, package_root: Path, model: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-obs-CANARY-0123456789"
    monkeypatch.setenv("MODEL_API_KEY", key)
    runtime = openai_runtime(model, api_key=key)
    service = compose(package_root, runtime=runtime)
    question = f"my key is {key} and " + "x" * 40_000
    assert service.execute_contract("obs", "answer", inputs={"question": question}).ok
    plain = otel.one("chat obs-model")
    assert "gen_ai.input.messages" not in (plain.attributes or {})
    otel.exporter.clear()
    monkeypatch.setenv(telemetry.CAPTURE_CONTENT_ENV, "true")
    assert service.execute_contract("obs", "answer", inputs={"question": question}).ok
    call = otel.one("chat obs-model")
    attributes: dict[str, Any] = dict(call.attributes or {})
    system = json.loads(attributes["gen_ai.system_instructions"])
    assert system == [{"type": "text", "content": "Answer in JSON."}]
    messages = json.loads(attributes["gen_ai.input.messages"])
    assert messages[0]["role"] == "user"
    content = messages[0]["parts"][0]["content"]
    assert content.startswith("my key is [REDACTED] and xxx")
    assert len(content) == telemetry.CONTENT_LIMIT
    assert content.endswith("…")
    output = json.loads(attributes["gen_ai.output.messages"])
    assert output == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": '{"ok":true}'}],
            "finish_reason": "stop",
        }
    ]
    for span in otel.spans():
        assert key not in repr(span.to_json())
    runtime.close()


def test_tool_calls_are_captured_with_their_arguments(otel: Telemetry) -> None:
    from templiqx_application.observability import _output_content

    text = _output_content(
        {"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"q": "v"}}]}, ("tool_calls",)
    )
    assert json.loads(text) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": '{"q":"v"}'}
            ],
            "finish_reason": "tool_calls",
        }
    ]


@pytest.mark.parametrize("value", ["true", "SPAN_ONLY", "span_and_event", "1"])
def test_the_standard_capture_values_turn_content_on(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(telemetry.CAPTURE_CONTENT_ENV, value)
    assert telemetry.capture_content()


@pytest.mark.parametrize("value", ["", "false", "no_content", "event_only", "0"])
def test_anything_else_keeps_content_off(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(telemetry.CAPTURE_CONTENT_ENV, value)
    assert not telemetry.capture_content()


def test_without_an_sdk_nothing_is_imported_or_recorded(package_root: Path) -> None:
    """A process that never imported OpenTelemetry runs every kind of call without importing
    it; one that imported the API but set no provider gets no tracer and no instruments."""
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from templiqx_local import compose
        from templiqx_ports import telemetry
        service = compose({str(package_root)!r})
        q = {{"question": "q"}}
        assert service.execute_contract("obs", "answer", inputs=q, fixture_output={{"ok": True}}).ok
        ok = {{"ok": True}}
        run = service.execute_contract("obs", "answer", inputs=q, stream=True, fixture_output=ok)
        assert run.ok
        with service.stream_contract("obs", "chat") as run:
            list(run)
        asyncio.run(service.aexecute_contract("obs", "chat", stream=True))
        with service.batch("obs", "answer", [{{"inputs": q, "output": {{"ok": True}}}}]) as run:
            list(run)
        service.validate_package("obs")
        loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
        assert not loaded, loaded
        import opentelemetry.trace, opentelemetry.metrics
        assert telemetry.tracer() is None and telemetry.instruments() is None
        assert telemetry.trace_headers() == {{}}
        print("clean")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "clean"
