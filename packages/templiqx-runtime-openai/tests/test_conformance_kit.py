"""The conformance kit's OpenAI transport suite (and every port check) against this runtime.

Defining ``templiqx_openai_adapter_factory`` is all the kit's pytest plugin needs: it adds one
test per check beside this module (``test_conformance_kit.py::templiqx-conformance-openai::…``).
The factory receives the base URL of the kit's loopback server, which plays the model. The
optional fixtures are given too, as a third-party author would: ``templiqx_secrets`` (the key
the factory hands the runtime, which must show up nowhere) and ``templiqx_recordings`` (provider
bodies in the exact chat-completions shape, with the output and deltas each must give).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from templiqx_conformance import CheckStatus, Recording, run_check, run_conformance
from templiqx_contracts import Delta, ToolCallDelta
from templiqx_runtime_openai import OpenAIRuntime, OpenAISettings, wire

KIT_KEY = "sk-kit-canary-2f9c81d0"


def make_runtime(base_url: str) -> OpenAIRuntime:
    return OpenAIRuntime(
        OpenAISettings(base_url=base_url, api_key=KIT_KEY, model="kit-model", timeout_ms=10_000)
    )


@pytest.fixture
def templiqx_openai_adapter_factory() -> Callable[[str], OpenAIRuntime]:
    return make_runtime


@pytest.fixture
def templiqx_secrets() -> list[str]:
    return [KIT_KEY]


def sse(*chunks: dict[str, Any]) -> bytes:
    """A chat-completions event stream as providers send it, ``[DONE]`` last."""
    frames = [b"data: " + json.dumps(c, ensure_ascii=False).encode() + b"\n\n" for c in chunks]
    return b"".join(frames) + b"data: [DONE]\n\n"


@pytest.fixture
def templiqx_recordings(wire: SimpleNamespace) -> list[Recording]:
    """Two bodies the kit replays whole, one byte per write and cut at every event boundary.

    A structured answer in three content fragments (non-ASCII inside a string), sent as a
    stream and as a plain completion; and two parallel tool calls whose argument fragments
    interleave by index, as gpt-4o streams them.
    """
    answer = ['{"note": "recorded ', "✓ — café", '", "ok": true}']
    weather = ['{"city": "Edin', 'burgh", "units": "c"}']
    stock = ['{"ticker": ', '"AAPL"}']
    tool = wire.tool
    calls = sse(
        wire.chunk(
            role="assistant", tool_calls=[tool(0, id="call_w", name="get_weather", args="")]
        ),
        wire.chunk(tool_calls=[tool(0, args=weather[0])]),
        wire.chunk(tool_calls=[tool(1, id="call_s", name="get_stock_price", args=stock[0])]),
        wire.chunk(tool_calls=[tool(0, args=weather[1])]),
        wire.chunk(tool_calls=[tool(1, args=stock[1])]),
        wire.chunk(finish="tool_calls"),
        wire.usage_chunk(),
    )
    return [
        Recording(
            name="structured answer",
            output={"note": "recorded ✓ — café", "ok": True},
            stream=sse(*wire.content_stream(*answer)),
            whole=json.dumps(wire.completion("".join(answer))).encode(),
            deltas=[Delta(text=fragment) for fragment in answer],
        ),
        Recording(
            name="parallel tool calls",
            output={
                "tool_calls": [
                    {
                        "id": "call_w",
                        "name": "get_weather",
                        "arguments": {"city": "Edinburgh", "units": "c"},
                    },
                    {"id": "call_s", "name": "get_stock_price", "arguments": {"ticker": "AAPL"}},
                ]
            },
            stream=calls,
            deltas=[
                ToolCallDelta(name="get_weather", arguments_fragment=weather[0]),
                ToolCallDelta(name="get_stock_price", arguments_fragment=stock[0]),
                ToolCallDelta(name="get_weather", arguments_fragment=weather[1]),
                ToolCallDelta(name="get_stock_price", arguments_fragment=stock[1]),
            ],
            capability="tool_calling",
        ),
    ]


def test_no_kit_report_repeats_the_api_key() -> None:
    report = run_conformance(
        make_runtime,
        transport="openai",
        checks=["failure.projection", "transport.fault_matrix", "transport.in_band_error"],
    )
    assert report.ok, [check.message for check in report.failed_checks]
    assert KIT_KEY.encode() not in report.to_json()


def test_the_tool_call_probe_runs_and_passes() -> None:
    result = run_check("tools.declared_calls", make_runtime, transport="openai")
    assert result.status is CheckStatus.PASSED, result.message


def test_the_tool_call_probe_catches_tools_that_are_not_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wire, "tool_fields", lambda interaction: {})
    result = run_check("tools.declared_calls", make_runtime, transport="openai")
    assert result.status is CheckStatus.FAILED
    assert "tool-calls via execute: tools is null; expected the declared tools" in result.message
