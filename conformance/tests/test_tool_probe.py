"""The tool-call probe (``tools.declared_calls``) against small fixture adapters: a correct one
passes, and each way of getting declared tools wrong fails it with a message that says so."""

from __future__ import annotations

from typing import Any

import pytest

from templiqx_conformance import CheckStatus, run_check
from templiqx_conformance.tool_probe import DECLARED_TOOLS, TOOL_ANSWER
from templiqx_contracts import (
    AdapterDescriptor,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    ToolCallDelta,
    canonical_json,
    fingerprint,
)
from templiqx_ports import CancelToken, RuntimeAdapter, StreamSink

CHECK = "tools.declared_calls"


class ToolReplay(RuntimeAdapter):
    """Replays the fixture output; streams each call's arguments in two fragments."""

    capabilities: tuple[str, ...] = ("tool_calling",)

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id="kit-tool-replay", version="1.0.0", capabilities=self.capabilities
        )

    def valid(self, request: ExecutionRequest, output: Any) -> bool:
        declared = {tool.name for tool in request.interaction.tools or []}  # type: ignore[union-attr]
        return all(call["name"] in declared for call in output["tool_calls"])

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        output = request.fixture_output
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(request.interaction),
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=self.valid(request, output),
        )

    def fragments(self, output: Any) -> list[ToolCallDelta]:
        events = []
        for call in output["tool_calls"]:
            text = canonical_json(call["arguments"]).decode("utf-8")
            for piece in (text[:5], text[5:]):
                events.append(ToolCallDelta(name=call["name"], arguments_fragment=piece))
        return events

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        receipt = self.execute(request)
        for event in self.fragments(receipt.output):
            sink(event)
        sink(Complete.of(receipt))
        return receipt


class AlwaysValid(ToolReplay):
    def valid(self, request: ExecutionRequest, output: Any) -> bool:
        return True


class WrongFragments(ToolReplay):
    def fragments(self, output: Any) -> list[ToolCallDelta]:
        events = super().fragments(output)
        return [*events[:-1], ToolCallDelta(name=events[-1].name, arguments_fragment="}")]


class NoToolCalling(ToolReplay):
    capabilities = ("structured_output",)


class DefaultStreaming(ToolReplay):
    execute_streaming = RuntimeAdapter.execute_streaming  # type: ignore[assignment]


def test_a_correct_tool_calling_adapter_passes() -> None:
    result = run_check(CHECK, ToolReplay)
    assert result.status is CheckStatus.PASSED, result.message


def test_default_streaming_passes_without_fragments() -> None:
    result = run_check(CHECK, DefaultStreaming)
    assert result.status is CheckStatus.PASSED, result.message


def test_adapters_without_tool_calling_are_not_probed() -> None:
    result = run_check(CHECK, NoToolCalling)
    assert result.status is CheckStatus.NOT_APPLICABLE
    assert "does not declare 'tool_calling'" in result.message


@pytest.mark.parametrize(
    ("adapter", "phrase"),
    [
        (AlwaysValid, "one tool declared: output_schema_valid=True, but the calls do not satisfy"),
        (WrongFragments, "the ToolCallDelta fragments assemble to"),
    ],
)
def test_each_mistake_fails_the_probe(adapter: type[ToolReplay], phrase: str) -> None:
    result = run_check(CHECK, adapter)
    assert result.status is CheckStatus.FAILED
    assert phrase in result.message
    assert "must answer declared tools' calls" in result.message


def test_the_probe_declares_two_tools_and_answers_with_both() -> None:
    assert [tool.name for tool in DECLARED_TOOLS] == ["get_weather", "get_stock_price"]
    assert [call["name"] for call in TOOL_ANSWER["tool_calls"]] == [
        "get_weather",
        "get_stock_price",
    ]
