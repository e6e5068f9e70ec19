"""The Messages runtime's own tests, beside the conformance kit's (which the conftest adds)."""

from __future__ import annotations

import pytest
from acme_messages import OUTPUT_TOOL, MessagesRuntime, SettingsError, from_env
from acme_messages.failures import sanitised
from acme_messages.messages import build_body
from acme_messages.sse import LineTooLongError, ServerEvent, SSEDecoder

from templiqx_contracts import (
    CompiledInteraction,
    CompiledMessage,
    ExecutionRequest,
    NamedToolChoice,
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
        "output_schema": {"type": "object", "required": ["greeting"]},
        "required_capabilities": ["structured_output"],
        "target_capabilities": ["structured_output"],
        "runtime_policy": {},
        "extensions": {},
    }
    fields.update(changes)
    return CompiledInteraction(**fields)  # type: ignore[arg-type]


def test_system_and_developer_messages_become_the_system_prompt() -> None:
    body = build_body(interaction(), "m", 4096)
    assert body["system"] == "Be brief.\n\nAnswer in English."
    assert body["messages"] == [{"role": "user", "content": "Hi"}]
    assert body["tool_choice"] == {"type": "tool", "name": OUTPUT_TOOL}
    assert body["tools"][0]["input_schema"] == {"type": "object", "required": ["greeting"]}


WEATHER = ToolSpec(
    name="get_weather",
    description="The weather in a city.",
    arguments={"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}},
)
SENT_WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": WEATHER.arguments,
}


def with_tools(choice: object = "auto", parallel: bool = True, **changes: object) -> dict:
    tools = {"tools": [WEATHER], "tool_choice": choice, "parallel_tool_calls": parallel}
    return build_body(interaction(**tools, **changes), "m", 4096)


TEXT = {"required_capabilities": [], "output_schema": {"type": "string"}}


@pytest.mark.parametrize(
    ("choice", "parallel", "sent"),
    [
        ("auto", True, {"type": "auto"}),
        ("required", True, {"type": "any"}),
        ("none", False, {"type": "none"}),
        (
            NamedToolChoice(tool="get_weather"),
            False,
            {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
        ),
    ],
)
def test_declared_tools_and_the_tool_choice_are_sent_as_the_api_takes_them(
    choice: object, parallel: bool, sent: dict
) -> None:
    body = with_tools(choice, parallel, **TEXT)
    assert body["tools"] == [SENT_WEATHER]
    assert body["tool_choice"] == sent


def test_a_structured_contract_with_tools_offers_the_output_tool_beside_them() -> None:
    body = with_tools()
    assert [tool["name"] for tool in body["tools"]] == ["get_weather", OUTPUT_TOOL]
    assert body["tool_choice"] == {"type": "any"}
    body = with_tools("none")
    assert [tool["name"] for tool in body["tools"]] == [OUTPUT_TOOL]
    assert body["tool_choice"] == {"type": "tool", "name": OUTPUT_TOOL}


def test_runtime_policy_keys_are_mapped_checked_or_ignored() -> None:
    policy = {"temperature": 0, "max_tokens": 64, "stop": "END", "seed": 7, "other": True}
    body = build_body(interaction(runtime_policy=policy), "m", 4096)
    assert body["temperature"] == 0
    assert body["max_tokens"] == 64
    assert body["stop_sequences"] == ["END"]
    assert "seed" not in body
    assert "other" not in body
    with pytest.raises(RuntimeFailureError, match=r"runtime_policy\.max_tokens must be"):
        build_body(interaction(runtime_policy={"max_tokens": "many"}), "m", 4096)


def test_missing_settings_are_named_together_when_the_model_is_called(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ACME_MESSAGES_API_KEY", raising=False)
    monkeypatch.delenv("ACME_MESSAGES_MODEL", raising=False)
    monkeypatch.setenv("ACME_MESSAGES_BASE_URL", "http://127.0.0.1:9")
    runtime = from_env()  # the entry point never fails: nothing is read yet
    assert isinstance(runtime, MessagesRuntime)
    with pytest.raises(SettingsError) as caught:
        runtime.execute(ExecutionRequest(interaction=interaction()))
    assert str(caught.value) == (
        "invalid data: missing environment variable(s) ACME_MESSAGES_API_KEY, ACME_MESSAGES_MODEL"
    )


def test_the_decoder_reads_named_events_split_anywhere() -> None:
    stream = b"event: ping\r\ndata: {}\r\n\r\n: comment\n\nevent: a\ndata: 1\ndata: 2\n\n"
    decoder = SSEDecoder(1024)
    events: list[ServerEvent] = []
    for index in range(len(stream)):
        events.extend(decoder.feed(stream[index : index + 1]))
    assert events == [ServerEvent("ping", "{}"), ServerEvent("a", "1\n2")]
    with pytest.raises(LineTooLongError):
        SSEDecoder(8).feed(b"data: 0123456789")


def test_provider_text_is_cleaned_before_it_is_shown() -> None:
    text = sanitised("bad key sk-123\x1b[0m\n" + "x" * 400, ("sk-123",))
    assert text.startswith("bad key [redacted] [0m xxx")
    assert len(text) == 300
    assert sanitised({"not": "text"}, ()) == ""
