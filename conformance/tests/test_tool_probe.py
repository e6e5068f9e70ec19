"""The tool-call probe against small fixture adapters (no wire): a correct one passes, and each
way of getting declared tools wrong fails the check that owns it, with a message that says so.

The probe (``probes.TOOL_CALLS``) runs through every port check; ``tools.declared_calls`` adds
two variants of its interaction that the declarations make invalid. Over a wire the same check
also reads the requests (``test_messages_adapter.py``; the default :meth:`Wire.tool_problems`
is exercised at the end of this module).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from acme_messages import OUTPUT_TOOL, MessagesRuntime
from messages_target import make_runtime

from templiqx_conformance import AdapterTarget, CheckStatus, MessagesWire, Wire, run_check
from templiqx_conformance.probes import (
    DECLARED_TOOLS,
    ONE_TOOL_DECLARED,
    PROBES,
    TOOL_CALLS,
    TOOL_FORCED,
    applicable_probes,
    tool_interaction,
)
from templiqx_conformance.wires import declared_tool_problems
from templiqx_conformance.wires.openai import tool_fields
from templiqx_contracts import (
    AdapterDescriptor,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    ToolCallDelta,
    canonical_json,
    declared_tools,
    fingerprint,
    interaction_output_valid,
)
from templiqx_ports import CancelToken, RuntimeAdapter, StreamSink

CHECK = "tools.declared_calls"


def accepts(schema: Any, value: Any) -> bool:
    """Enough of a schema engine for the probe's schemas (string outputs, object arguments)."""
    if schema.get("type") == "string":
        return isinstance(value, str)
    return isinstance(value, dict) and set(value) == set(schema["required"])


class ToolReplay(RuntimeAdapter):
    """Replays the fixture output; streams each call's arguments in two fragments; judges the
    calls with the shared rule."""

    capabilities: tuple[str, ...] = ("tool_calling",)

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id="kit-tool-replay", version="1.0.0", capabilities=list(self.capabilities)
        )

    def valid(self, request: ExecutionRequest, output: Any, streaming: bool) -> bool:
        return interaction_output_valid(request.interaction, output, accepts)

    def receipt(self, request: ExecutionRequest, streaming: bool) -> ExecutionReceipt:
        output = request.fixture_output
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(request.interaction),
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=self.valid(request, output, streaming),
        )

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self.receipt(request, streaming=False)

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
        receipt = self.receipt(request, streaming=True)
        for event in self.fragments(receipt.output):
            sink(event)
        sink(Complete.of(receipt))
        return receipt


class AlwaysValid(ToolReplay):
    """Claims every tool-call answer valid."""

    def valid(self, request: ExecutionRequest, output: Any, streaming: bool) -> bool:
        return True


class NamesOnly(ToolReplay):
    """Checks only that every call names a declared tool (ignores tool_choice, parallel calls)."""

    def valid(self, request: ExecutionRequest, output: Any, streaming: bool) -> bool:
        names = {tool.name for tool in declared_tools(request.interaction)}
        return all(call["name"] in names for call in output["tool_calls"])


class BySchema(ToolReplay):
    """Judges tool calls by the output schema, as if no tool were declared."""

    def valid(self, request: ExecutionRequest, output: Any, streaming: bool) -> bool:
        return accepts(request.interaction.output_schema, output)


class StreamAlwaysValid(ToolReplay):
    """Judges correctly on execute, but the streamed receipt always claims validity."""

    def valid(self, request: ExecutionRequest, output: Any, streaming: bool) -> bool:
        return streaming or super().valid(request, output, streaming)


class WrongFragments(ToolReplay):
    """The last fragment of the last call is replaced by a lone closing brace."""

    def fragments(self, output: Any) -> list[ToolCallDelta]:
        events = super().fragments(output)
        return [*events[:-1], ToolCallDelta(name=events[-1].name, arguments_fragment="}")]


class NoToolCalling(ToolReplay):
    capabilities = ("structured_output",)


class DefaultStreaming(ToolReplay):
    execute_streaming = RuntimeAdapter.execute_streaming  # type: ignore[assignment]


def test_the_probe_is_valid_and_both_variants_are_not() -> None:
    assert [tool.name for tool in DECLARED_TOOLS] == ["get_weather", "get_stock_price"]
    assert [call["name"] for call in TOOL_CALLS.output["tool_calls"]] == [
        "get_weather",
        "get_stock_price",
    ]
    assert TOOL_CALLS.schema_valid
    assert not ONE_TOOL_DECLARED.schema_valid
    assert not TOOL_FORCED.schema_valid
    assert TOOL_CALLS in PROBES
    assert TOOL_CALLS not in applicable_probes(["structured_output", "text"])
    assert applicable_probes(["tool_calling"]) == [TOOL_CALLS]


@pytest.mark.parametrize(
    "check",
    [
        CHECK,
        "receipt.output_schema_valid",
        "streaming.deltas_match_output",
        "streaming.complete_matches_execute",
        "streaming.event_order",
    ],
)
def test_a_correct_tool_calling_adapter_passes(check: str) -> None:
    result = run_check(check, ToolReplay)
    assert result.status is CheckStatus.PASSED, result.message


def test_default_streaming_passes_without_fragments() -> None:
    result = run_check(CHECK, DefaultStreaming)
    assert result.status is CheckStatus.PASSED, result.message


def test_adapters_without_tool_calling_are_not_probed() -> None:
    result = run_check(CHECK, NoToolCalling)
    assert result.status is CheckStatus.NOT_APPLICABLE
    assert "does not declare 'tool_calling'" in result.message


@pytest.mark.parametrize(
    ("adapter", "check", "phrase"),
    [
        (
            AlwaysValid,
            CHECK,
            "tool-calls (only get_weather declared): the adapter claims output_schema_valid=True "
            "but the tool calls",
        ),
        (
            NamesOnly,
            CHECK,
            "tool-calls (get_weather forced, no parallel calls): the adapter claims "
            "output_schema_valid=True",
        ),
        (
            StreamAlwaysValid,
            CHECK,
            "tool-calls (only get_weather declared): the streamed receipt differs from "
            "execute's:\n    output_schema_valid: execute false != streamed true",
        ),
        (
            BySchema,
            "receipt.output_schema_valid",
            "tool-calls via execute: the adapter claims output_schema_valid=False but the tool "
            "calls",
        ),
        (
            WrongFragments,
            "streaming.deltas_match_output",
            "the fragments of tool call 'get_stock_price' join to",
        ),
    ],
    ids=["always-valid", "names-only", "stream-always-valid", "by-output-schema", "fragments"],
)
def test_each_mistake_fails_the_check_that_owns_it(
    adapter: type[ToolReplay], check: str, phrase: str
) -> None:
    result = run_check(check, adapter)
    assert result.status is CheckStatus.FAILED, result.message
    assert phrase in result.message, result.message


# --- the default Wire.tool_problems: any provider's tool list ----------------------------------


def shapes() -> dict[str, dict[str, Any]]:
    tool = DECLARED_TOOLS[0]
    return copy.deepcopy(
        {
            "messages": {
                "tools": [
                    {
                        "name": tool.name,
                        "description": tool.description,
                        "input_schema": tool.arguments,
                    }
                ]
            },
            "openai": tool_fields(tool_interaction(DECLARED_TOOLS[:1])),
            "nested schema": {
                "toolConfig": {
                    "tools": [
                        {
                            "toolSpec": {
                                "name": tool.name,
                                "description": tool.description,
                                "inputSchema": {"json": tool.arguments},
                            }
                        }
                    ]
                }
            },
        }
    )


@pytest.mark.parametrize("shape", ["messages", "openai", "nested schema"])
def test_the_default_finds_a_declared_tool_in_any_shape(shape: str) -> None:
    assert declared_tool_problems(shapes()[shape], DECLARED_TOOLS[:1]) == []


def test_the_default_names_what_is_missing() -> None:
    body = shapes()["messages"]
    assert declared_tool_problems(body, DECLARED_TOOLS) == [
        "declared tool 'get_stock_price' is not in the request: no object of the body names it "
        "(send every declared tool with its description and arguments schema)"
    ]
    del body["tools"][0]["input_schema"]["required"]
    assert declared_tool_problems(body, DECLARED_TOOLS[:1]) == [
        "the request names tool 'get_weather' but does not carry its arguments schema beside the "
        "name (send the interaction's schema verbatim)"
    ]
    assert declared_tool_problems(None, DECLARED_TOOLS) == ["the body is not a JSON object"]


class ProviderNeutralWire(MessagesWire):
    """The Messages wire without its own tool check: only the default applies."""

    tool_problems = Wire.tool_problems


class ToolsLeftOut(MessagesRuntime):
    """Sends no tools (and no tool choice) at all."""

    def _body(self, request: ExecutionRequest) -> dict[str, Any]:
        body = super()._body(request)
        return {key: value for key, value in body.items() if key not in ("tools", "tool_choice")}


def tools_left_out(base_url: str, api_key: str) -> ToolsLeftOut:
    return ToolsLeftOut(make_runtime(base_url, api_key).settings)


def test_over_a_wire_the_default_catches_tools_left_out_of_the_request() -> None:
    wire = ProviderNeutralWire(output_tool=OUTPUT_TOOL)
    clean = run_check(CHECK, AdapterTarget(factory=make_runtime, transport=wire))
    assert clean.status is CheckStatus.PASSED, clean.message
    result = run_check(CHECK, AdapterTarget(factory=tools_left_out, transport=wire))
    assert result.status is CheckStatus.FAILED
    assert (
        "tool-calls via execute: declared tool 'get_weather' is not in the request"
        in result.message
    ), result.message
