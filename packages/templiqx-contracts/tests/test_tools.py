"""The tool declarations' model, and the helpers adapters share: the answer rule and the
splitter that tells streamed tool calls apart."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from templiqx_contracts import (
    CompiledInteraction,
    CompiledMessage,
    NamedToolChoice,
    ToolCallSplitter,
    ToolSpec,
    canonical_json,
    declared_tools,
    interaction_output_valid,
    is_tool_answer,
    parallel_tool_calls_of,
    tool_choice_of,
)

SEARCH = ToolSpec(
    name="search",
    description="Search the catalogue.",
    arguments={"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}},
)


def interaction(**tools: Any) -> CompiledInteraction:
    return CompiledInteraction(
        compiler="test",
        contract_id="c",
        contract_version="1.0.0",
        messages=[CompiledMessage(role="user", content="hi")],
        output_schema={"type": "string"},
        required_capabilities=[],
        target_capabilities=[],
        runtime_policy={},
        extensions={},
        **tools,
    )


def accepts(schema: Any, value: Any) -> bool:
    """A stand-in for the bounded schema check: required keys and the top-level type."""
    if schema.get("type") == "string":
        return isinstance(value, str)
    return isinstance(value, dict) and all(key in value for key in schema.get("required", []))


def test_unset_tool_fields_are_never_written_and_read_back_unset() -> None:
    plain = interaction()
    data = msgspec.json.encode(plain)
    assert b"tool" not in data
    assert b"tool" not in canonical_json(plain)
    again = msgspec.json.decode(data, type=CompiledInteraction)
    assert again.tools is msgspec.UNSET
    assert (declared_tools(again), tool_choice_of(again), parallel_tool_calls_of(again)) == (
        [],
        "auto",
        True,
    )


def test_set_tool_fields_round_trip() -> None:
    tooled = interaction(
        tools=[SEARCH], tool_choice=NamedToolChoice(tool="search"), parallel_tool_calls=False
    )
    again = msgspec.json.decode(msgspec.json.encode(tooled), type=CompiledInteraction)
    assert again == tooled
    assert msgspec.to_builtins(again)["tool_choice"] == {"tool": "search"}
    word = msgspec.json.decode(
        msgspec.json.encode(interaction(tools=[SEARCH], tool_choice="required")),
        type=CompiledInteraction,
    )
    assert word.tool_choice == "required"


@pytest.mark.parametrize(
    ("output", "answer"),
    [
        ({"tool_calls": []}, True),
        ({"tool_calls": "x"}, True),
        ({"tool_calls": [], "reply": "x"}, False),
        ({"reply": "x"}, False),
        ("tool_calls", False),
        ([{"tool_calls": []}], False),
    ],
)
def test_what_counts_as_a_tool_call_answer(output: Any, answer: bool) -> None:
    assert is_tool_answer(output) is answer


def test_the_shared_validity_rule() -> None:
    tooled = interaction(tools=[SEARCH])
    good = {"tool_calls": [{"id": "1", "name": "search", "arguments": {"q": "x"}}]}
    assert interaction_output_valid(tooled, good, accepts) is True
    bad_arguments = {"tool_calls": [{"id": "1", "name": "search", "arguments": {}}]}
    assert interaction_output_valid(tooled, bad_arguments, accepts) is False
    undeclared = {"tool_calls": [{"id": "1", "name": "drop", "arguments": {"q": "x"}}]}
    assert interaction_output_valid(tooled, undeclared, accepts) is False
    assert interaction_output_valid(tooled, "plain text", accepts) is True
    assert interaction_output_valid(tooled, {"reply": 1}, accepts) is False
    # without declared tools, a tool-call answer is just output the schema must accept
    assert interaction_output_valid(interaction(), good, accepts) is False


@pytest.mark.parametrize(
    ("fragments", "calls"),
    [
        ([("a", '{"x"'), ("a", ": 1}")], [("a", '{"x": 1}')]),
        ([("a", '{"x": 1}'), ("a", '{"x": 2}')], [("a", '{"x": 1}'), ("a", '{"x": 2}')]),
        ([("a", '{"x": "}"'), ("a", "}"), ("b", "{}")], [("a", '{"x": "}"}'), ("b", "{}")]),
        ([("a", '{"x": "\\"}'), ("a", '"}'), ("a", "{}")], [("a", '{"x": "\\"}"}'), ("a", "{}")]),
        ([("a", '{"x": [1, {"y": 2}'), ("a", "]}")], [("a", '{"x": [1, {"y": 2}]}')]),
        ([("a", "  "), ("a", "{}"), ("a", " {}")], [("a", "  {}"), ("a", " {}")]),
        ([("a", "{"), ("b", "}")], [("a", "{"), ("b", "}")]),
    ],
)
def test_splitter_separates_consecutive_calls(
    fragments: list[tuple[str, str]], calls: list[tuple[str, str]]
) -> None:
    assert ToolCallSplitter.split(fragments) == calls


def test_splitter_says_when_a_call_starts() -> None:
    splitter = ToolCallSplitter()
    assert splitter.feed("a", '{"q": ') is True
    assert splitter.feed("a", '"x"}') is False
    assert splitter.feed("a", "{}") is True
    assert splitter.feed("b", "{") is True
    assert splitter.calls == [("a", '{"q": "x"}'), ("a", "{}"), ("b", "{")]
