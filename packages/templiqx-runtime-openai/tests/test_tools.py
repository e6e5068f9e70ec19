"""Declared tools on the wire: the request body the OpenAI API expects, and tool-call answers
(recorded gpt-4o streams included) judged by the declared tools."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from templiqx_conformance.loopback import LoopbackServer, Reply
from templiqx_contracts import (
    NamedToolChoice,
    ToolCallDelta,
    ToolCallSplitter,
    ToolSpec,
    fingerprint,
)
from templiqx_ports import validate_event_order
from templiqx_runtime_openai import CAPABILITIES, OpenAIRuntime

Serve = Callable[..., LoopbackServer]
RuntimeFor = Callable[..., OpenAIRuntime]

WEATHER = ToolSpec(
    name="GetWeatherArgs",
    description="The weather in a city.",
    arguments={
        "type": "object",
        "additionalProperties": False,
        "required": ["city", "country", "units"],
        "properties": {
            "city": {"type": "string"},
            "country": {"type": "string"},
            "units": {"type": "string", "enum": ["c", "f"]},
        },
    },
)
STOCK = ToolSpec(
    name="get_stock_price",
    description="The latest price of a stock.",
    arguments={
        "type": "object",
        "additionalProperties": False,
        "required": ["ticker", "exchange"],
        "properties": {"ticker": {"type": "string"}, "exchange": {"type": "string"}},
    },
)


def tooled(wire: SimpleNamespace, *tools: ToolSpec, **settings: Any) -> Any:
    """A structured request whose interaction declares ``tools``."""
    request = wire.request()
    interaction = msgspec.structs.replace(
        request.interaction,
        tools=list(tools),
        tool_choice=settings.get("tool_choice", "auto"),
        parallel_tool_calls=settings.get("parallel_tool_calls", True),
    )
    return msgspec.structs.replace(request, interaction=interaction)


def test_the_runtime_declares_tool_calling() -> None:
    assert "tool_calling" in CAPABILITIES


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        (
            NamedToolChoice(tool="get_stock_price"),
            {"type": "function", "function": {"name": "get_stock_price"}},
        ),
    ],
)
@pytest.mark.parametrize("parallel", [True, False])
def test_request_body_declares_the_tools_as_the_api_expects(
    choice: Any,
    sent: Any,
    parallel: bool,
    serve: Serve,
    runtime_for: RuntimeFor,
    wire: SimpleNamespace,
) -> None:
    answer = wire.completion('{"ok":true}')
    stream = wire.content_stream('{"ok":', "true}")
    server = serve([Reply.json(answer), Reply.sse(stream)])
    runtime = runtime_for(server)
    request = tooled(wire, WEATHER, STOCK, tool_choice=choice, parallel_tool_calls=parallel)
    plain = runtime.execute(request)
    streamed = runtime.execute_streaming(request, wire.Collector())

    whole, live = (recorded.json for recorded in server.requests)
    assert whole["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "GetWeatherArgs",
                "description": "The weather in a city.",
                "parameters": WEATHER.arguments,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "get_stock_price",
                "description": "The latest price of a stock.",
                "parameters": STOCK.arguments,
            },
        },
    ]
    assert whole["tool_choice"] == sent
    assert whole["parallel_tool_calls"] is parallel
    assert whole["response_format"]["json_schema"]["schema"] == wire.OK_SCHEMA
    assert {key: live[key] for key in ("tools", "tool_choice", "parallel_tool_calls")} == {
        key: whole[key] for key in ("tools", "tool_choice", "parallel_tool_calls")
    }
    # the request fingerprint names the tools, and streaming does not change it
    assert plain.request_fingerprint == fingerprint(whole)
    assert streamed.request_fingerprint == plain.request_fingerprint


def test_an_interaction_without_tools_sends_none_of_the_tool_members(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(Reply.json(wire.completion('{"ok":true}')))
    receipt = runtime_for(server).execute(wire.request())
    (recorded,) = server.requests
    assert set(recorded.json) == {"model", "messages", "response_format"}
    assert receipt.request_fingerprint == fingerprint(recorded.json)


# --- recorded tool-call streams -------------------------------------------------------------


def recordings(reference: Path) -> list[tuple[dict[str, Any], bytes]]:
    folder = reference / "streams"
    entries = json.loads((folder / "streams.json").read_text(encoding="utf-8"))
    found = [
        (entry, (folder / entry["file"]).read_bytes())
        for entry in entries
        if entry["expected"]["tool_calls"]
    ]
    assert found, "the reference corpus holds no tool-call recording"
    return found


def whole_answer(expected: dict[str, Any], wire: SimpleNamespace) -> dict[str, Any]:
    """The non-streamed completion carrying the same calls as a recording."""
    calls = sorted(expected["tool_calls"], key=lambda call: call["index"])
    return wire.completion(
        None,
        tool_calls=[wire.whole_tool_call(c["id"], c["name"], c["arguments"]) for c in calls],
        finish="tool_calls",
    )


@pytest.mark.parametrize("declared", ["both", "weather-only", "strict-units"])
def test_recorded_tool_call_streams_are_judged_by_the_declared_tools(
    declared: str,
    reference: Path,
    serve: Serve,
    runtime_for: RuntimeFor,
    wire: SimpleNamespace,
) -> None:
    strict_weather = msgspec.structs.replace(
        WEATHER,
        arguments={
            **WEATHER.arguments,
            "properties": {
                **WEATHER.arguments["properties"],
                "units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
        },
    )
    tools = {
        "both": [WEATHER, STOCK],
        "weather-only": [WEATHER],
        "strict-units": [strict_weather, STOCK],
    }[declared]
    for entry, data in recordings(reference):
        expected = entry["expected"]
        calls = sorted(expected["tool_calls"], key=lambda call: call["index"])
        server = serve(
            [Reply.stream([data], split_bytes=True), Reply.json(whole_answer(expected, wire))]
        )
        runtime = runtime_for(server)
        request = tooled(wire, *tools)
        events = wire.Collector()
        streamed = runtime.execute_streaming(request, events)
        plain = runtime.execute(request)

        validate_event_order(events.events)
        fragments = [
            (event.name, event.arguments_fragment)
            for event in events.events
            if isinstance(event, ToolCallDelta)
        ]
        assert ToolCallSplitter.split(fragments) == [(c["name"], c["arguments"]) for c in calls]
        assert streamed == plain, entry["file"]
        assert streamed.output == {
            "tool_calls": [
                {"id": c["id"], "name": c["name"], "arguments": json.loads(c["arguments"])}
                for c in calls
            ]
        }
        names = {call["name"] for call in calls}
        valid = declared == "both" or (declared == "weather-only" and names == {"GetWeatherArgs"})
        assert streamed.output_schema_valid is valid, (declared, entry["file"])
