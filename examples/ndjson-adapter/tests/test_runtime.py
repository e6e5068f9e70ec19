"""The Ollama runtime's own tests against its fake server, beside the conformance kit's (which
the conftest adds)."""

from __future__ import annotations

import pytest
from acme_ollama import OllamaRuntime, OllamaSettings, SettingsError, from_env
from acme_ollama.chat import build_body
from acme_ollama.failures import sanitised
from acme_ollama.ndjson import LineTooLongError, NDJSONDecoder
from fake_ollama import FakeOllama, Script

from templiqx_contracts import (
    CompiledInteraction,
    CompiledMessage,
    Complete,
    Delta,
    ExecutionRequest,
    Failed,
    ToolCallDelta,
    ToolSpec,
)
from templiqx_ports import RuntimeFailureError


def interaction(**changes: object) -> CompiledInteraction:
    fields: dict[str, object] = {
        "compiler": "test",
        "contract_id": "greeting",
        "contract_version": "1.0.0",
        "messages": [
            CompiledMessage(role="system", content="Be brief."),
            CompiledMessage(role="developer", content="Answer in English."),
            CompiledMessage(role="user", content="Hi"),
        ],
        "output_schema": {"type": "string"},
        "required_capabilities": ["text"],
        "target_capabilities": ["text"],
        "runtime_policy": {},
        "extensions": {},
    }
    fields.update(changes)
    return CompiledInteraction(**fields)  # type: ignore[arg-type]


def runtime(fake: FakeOllama, key: str = "") -> OllamaRuntime:
    return OllamaRuntime(OllamaSettings(base_url=fake.base_url, model="fake", api_key=key))


def test_a_text_answer_streams_one_delta_per_line_and_matches_execute() -> None:
    with FakeOllama() as fake:
        adapter = runtime(fake)
        request = ExecutionRequest(interaction=interaction())
        events: list[object] = []
        streamed = adapter.execute_streaming(request, events.append)
        executed = adapter.execute(request)
    assert [e.text for e in events if isinstance(e, Delta)] == ["Hello", " from", " the fake."]
    assert events[-1] == Complete.of(streamed)
    assert streamed == executed
    assert executed.output == "Hello from the fake."
    assert [body["stream"] for body in fake.requests] == [True, False]


def test_system_and_developer_messages_lead_as_one_system_message() -> None:
    body = build_body(interaction(), "m")
    assert body["messages"] == [
        {"role": "system", "content": "Be brief.\n\nAnswer in English."},
        {"role": "user", "content": "Hi"},
    ]
    assert "format" not in body


def test_a_structured_interaction_sends_its_schema_as_format() -> None:
    schema = {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}
    structured = interaction(
        output_schema=schema,
        required_capabilities=["structured_output"],
        runtime_policy={"temperature": 0, "max_tokens": 64, "seed": 7, "other": True},
    )
    with FakeOllama(Script(fragments=['{"ok"', ": true}"])) as fake:
        receipt = runtime(fake).execute(ExecutionRequest(interaction=structured))
    assert receipt.output == {"ok": True}
    assert receipt.output_schema_valid
    assert fake.requests[0]["format"] == schema
    assert fake.requests[0]["options"] == {"temperature": 0, "seed": 7, "num_predict": 64}


def test_tool_calls_arrive_whole_and_get_the_same_ids_on_both_paths() -> None:
    weather = ToolSpec(
        name="get_weather",
        description="The weather.",
        arguments={"type": "object", "required": ["city"]},
    )
    tools = interaction(tools=[weather], required_capabilities=["tool_calling"])
    script = Script(fragments=[], calls=[("get_weather", {"city": "Oslo"})])
    with FakeOllama(script) as fake:
        adapter = runtime(fake)
        request = ExecutionRequest(interaction=tools)
        events: list[object] = []
        streamed = adapter.execute_streaming(request, events.append)
        executed = adapter.execute(request)
    call = {"id": "call_0", "name": "get_weather", "arguments": {"city": "Oslo"}}
    assert executed.output == streamed.output == {"tool_calls": [call]}
    assert events[0] == ToolCallDelta(name="get_weather", arguments_fragment='{"city": "Oslo"}')
    assert fake.requests[0]["tools"][0]["function"]["parameters"] == weather.arguments


def test_an_error_line_fails_the_stream_with_the_servers_words_sanitised() -> None:
    script = Script(fragments=["Hel"], error="model crashed\x1b[2J (key sk-local-1)")
    with FakeOllama(script) as fake:
        events: list[object] = []
        with pytest.raises(RuntimeFailureError) as caught:
            runtime(fake, "sk-local-1").execute_streaming(
                ExecutionRequest(interaction=interaction()), events.append
            )
    assert caught.value.code == "TQX_RUNTIME_UNAVAILABLE"
    assert "model crashed [2J (key [redacted])" in str(caught.value)
    assert events == [Delta(text="Hel"), Failed(code=caught.value.code, message=str(caught.value))]
    assert fake.requests[0]["model"] == "fake"


def test_an_error_status_names_the_server_and_the_status() -> None:
    script = Script(status=404, error="model 'fake' not found")
    with FakeOllama(script) as fake, pytest.raises(RuntimeFailureError) as caught:
        runtime(fake).execute(ExecutionRequest(interaction=interaction()))
    assert caught.value.code == "TQX_RUNTIME_PERMANENT"
    assert "returned HTTP 404: model 'fake' not found" in str(caught.value)


def test_missing_settings_are_named_together_when_the_model_is_called(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ACME_OLLAMA_BASE_URL", raising=False)
    monkeypatch.delenv("ACME_OLLAMA_MODEL", raising=False)
    runtime = from_env()  # the entry point never fails: nothing is read yet
    with pytest.raises(SettingsError) as caught:
        runtime.execute(ExecutionRequest(interaction=interaction()))
    assert str(caught.value) == (
        "invalid data: missing environment variable(s) ACME_OLLAMA_BASE_URL, ACME_OLLAMA_MODEL"
    )


def test_the_decoder_reads_lines_split_anywhere() -> None:
    stream = b'{"a": 1}\r\n\n{"b": [2,\r\n 3]}\n'.replace(b",\r\n 3", b", 3")
    decoder = NDJSONDecoder(1024)
    values: list[object] = []
    for index in range(len(stream) - 1):
        values.extend(decoder.feed(stream[index : index + 1]))
    assert decoder.pending
    values.extend(decoder.feed(stream[-1:]))
    assert values == [{"a": 1}, {"b": [2, 3]}]
    assert not decoder.pending
    with pytest.raises(LineTooLongError):
        NDJSONDecoder(8).feed(b'{"0123456789": 1}')
    with pytest.raises(ValueError, match="Expecting"):
        NDJSONDecoder(64).feed(b'{"b": [2,\n')


def test_server_text_is_cleaned_before_it_is_shown() -> None:
    text = sanitised("bad key sk-123\x1b[0m\n" + "x" * 400, ("sk-123",))
    assert text.startswith("bad key [redacted] [0m xxx")
    assert len(text) == 300
