"""Scripted tool calls: ``tool_call`` stream events, their rules, their ``ToolCallDelta``s and the
receipt they aggregate into (the same streamed or not)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from templiqx_contracts import Complete, ExecutionRequest, ToolCallDelta, ToolSpec
from templiqx_mock import (
    ScenarioError,
    ScenarioManifest,
    ScriptedRuntime,
    StreamToolCall,
    scenario_fingerprint,
)
from templiqx_ports import validate_event_order

Data = dict[str, Any]
MakeRequest = Callable[..., ExecutionRequest]

START = {"kind": "start", "id": "s"}
END = {"kind": "end", "id": "e"}
FINISH = {"kind": "finish", "id": "f"}


def fragment(event_id: str, call_id: str, name: str, arguments: str = "") -> Data:
    return {
        "kind": "tool_call",
        "id": event_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


CALLS = [
    fragment("t1", "call_a", "lookup", ""),
    fragment("t2", "call_a", "lookup", '{"email": '),
    fragment("t3", "call_a", "lookup", '"ada@example.com"}'),
    fragment("t4", "call_b", "lookup", '{"email": "bob@example.com"}'),
    fragment("t5", "call_c", "open_ticket", '{"subject": "x"}'),
]
ANSWER = {
    "tool_calls": [
        {"id": "call_a", "name": "lookup", "arguments": {"email": "ada@example.com"}},
        {"id": "call_b", "name": "lookup", "arguments": {"email": "bob@example.com"}},
        {"id": "call_c", "name": "open_ticket", "arguments": {"subject": "x"}},
    ]
}
TOOLS = [
    ToolSpec(
        name="lookup",
        description="Find an account.",
        arguments={
            "type": "object",
            "required": ["email"],
            "properties": {"email": {"type": "string"}},
        },
    ),
    ToolSpec(
        name="open_ticket",
        description="Open a ticket.",
        arguments={
            "type": "object",
            "required": ["subject"],
            "properties": {"subject": {"type": "string"}},
        },
    ),
]


def runtime(stream_manifest: Callable[..., Data], parse: Any, events: list[Data]) -> Any:
    return ScriptedRuntime.from_manifest(parse(stream_manifest([START, *events, END, FINISH])))


def tooled(make_request: MakeRequest, tools: list[ToolSpec] = TOOLS) -> ExecutionRequest:
    request = make_request()
    interaction = msgspec.structs.replace(
        request.interaction, tools=tools, tool_choice="auto", parallel_tool_calls=True
    )
    return msgspec.structs.replace(request, interaction=interaction)


def test_scripted_calls_stream_fragments_and_aggregate_into_the_same_receipt(
    stream_manifest: Callable[..., Data], parse: Any, make_request: MakeRequest
) -> None:
    scripted = runtime(stream_manifest, parse, [{"kind": "delta", "id": "d", "text": "Hm"}, *CALLS])
    assert scripted.descriptor().capabilities == ["structured_output", "tool_calling"]
    request = tooled(make_request)
    events: list[Any] = []
    streamed = scripted.execute_streaming(request, events.append)
    plain = scripted.execute(request)
    validate_event_order(events)
    assert streamed == plain
    assert plain.output == ANSWER
    assert plain.output_schema_valid is True
    assert events[-1] == Complete.of(plain)
    fragments = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [(e.name, e.arguments_fragment) for e in fragments] == [
        (event["name"], event["arguments"]) for event in CALLS if event["arguments"]
    ]


def test_validity_is_judged_by_the_declared_tools(
    stream_manifest: Callable[..., Data], parse: Any, make_request: MakeRequest
) -> None:
    scripted = runtime(stream_manifest, parse, CALLS)
    assert scripted.execute(tooled(make_request, TOOLS[:1])).output_schema_valid is False
    # without declared tools the answer is just output the schema ({"type": "object"}) accepts
    assert scripted.execute(make_request()).output_schema_valid is True


def test_a_finish_output_overrides_the_scripted_calls(
    stream_manifest: Callable[..., Data], parse: Any, make_request: MakeRequest
) -> None:
    finish = {"kind": "finish", "id": "f", "output": {"reply": "done"}}
    scripted = ScriptedRuntime.from_manifest(parse(stream_manifest([START, *CALLS, END, finish])))
    assert scripted.execute(tooled(make_request)).output == {"reply": "done"}


def test_runtimes_without_scripted_calls_keep_the_reference_descriptor(
    stream_manifest: Callable[..., Data], parse: Any
) -> None:
    delta = {"kind": "delta", "id": "d", "text": "x"}
    assert runtime(stream_manifest, parse, [delta]).descriptor().capabilities == [
        "structured_output"
    ]
    assert ScriptedRuntime.success().descriptor().capabilities == ["structured_output"]
    assert ScriptedRuntime([], tool_calling=True).descriptor().capabilities == [
        "structured_output",
        "tool_calling",
    ]


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([START, CALLS[0], END, FINISH][1:], "tool_call requires a started stream before end"),
        ([START, END, CALLS[1], FINISH], "tool_call requires a started stream before end"),
        (
            [START, fragment("t", "", "lookup", "{}"), END, FINISH],
            "tool_call 't' must set a non-empty call_id and name",
        ),
        (
            [START, fragment("t", "c", " ", "{}"), END, FINISH],
            "tool_call 't' must set a non-empty call_id and name",
        ),
        (
            [START, fragment("t1", "c", "a", "{"), fragment("t2", "c", "b", "}"), END, FINISH],
            "tool call 'c' changes its name from 'a' to 'b'",
        ),
        (
            [
                START,
                fragment("t1", "c1", "a", "{"),
                fragment("t2", "c2", "a", "{}"),
                fragment("t3", "c1", "a", "}"),
                END,
                FINISH,
            ],
            "tool call 'c1' resumes after another call started; script each call's fragments "
            "together",
        ),
        (
            [START, fragment("t1", "c", "a", '{"x": '), END, FINISH],
            "tool call 'c' arguments are not JSON",
        ),
        (
            [START, fragment("t1", "c", "a", "{}"), fragment("t1", "d", "a", "{}"), END, FINISH],
            "duplicate event id 't1'",
        ),
    ],
)
def test_tool_call_rules(
    stream_manifest: Callable[..., Data], parse: Any, events: list[Data], message: str
) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse(stream_manifest(events))
    assert message in caught.value.message


def test_unknown_fields_of_a_tool_call_are_rejected(
    stream_manifest: Callable[..., Data], parse: Any
) -> None:
    bad = {**fragment("t", "c", "a", "{}"), "index": 0}
    with pytest.raises(Exception, match="index"):
        parse(stream_manifest([START, bad, END, FINISH]))


def test_yaml_manifests_script_tool_calls_and_fingerprint_them() -> None:
    source = """\
api_version: templiqx.mock/v1alpha1
id: tools
contract: greeting
kind: happy_path
receipt_payload_policy: fingerprints_only
events:
  - {kind: start, id: s}
  - {kind: tool_call, id: t1, call_id: c1, name: lookup, arguments: '{"email": "a@b.c"}'}
  - {kind: end, id: e}
  - {kind: finish, id: f}
"""
    manifest = ScenarioManifest.from_yaml(source)
    assert manifest.events is not None
    assert manifest.events[1] == StreamToolCall(
        id="t1", call_id="c1", name="lookup", arguments='{"email": "a@b.c"}'
    )
    changed = ScenarioManifest.from_yaml(source.replace("a@b.c", "a@b.d"))
    assert scenario_fingerprint(manifest) != scenario_fingerprint(changed)
