"""How the Messages API says things, for the conformance kit's loopback server to play the model.

This :class:`~templiqx_conformance.Wire` is all the kit needs to know about the provider: the
kit decides *what* the model answers and this file says *how* the provider writes it — a
whole ``message`` object, a stream of named events, an error body, an in-band ``error`` event —
and what a request must carry (the messages; declared tools as ``{name, description,
input_schema}`` with the tool choice).
The kit then serves it split at every byte, with CRLF line endings, keep-alive comments, cuts at
every event boundary, silence and oversized fillers, and checks what the adapter makes of it.

``target`` is the same setup for the command::

    templiqx-conformance run messages_wire:target      (from this folder)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from acme_messages import OUTPUT_TOOL, MessagesRuntime, MessagesSettings
from messages_recordings import RECORDINGS

from templiqx_conformance import (
    AdapterTarget,
    Answer,
    SSEEvent,
    UnrepresentableError,
    Wire,
    WireFault,
    fragments,
)
from templiqx_conformance.loopback import RecordedRequest
from templiqx_contracts import (
    CompiledInteraction,
    NamedToolChoice,
    declared_tools,
    parallel_tool_calls_of,
    tool_choice_of,
)
from templiqx_ports import RuntimeFailureCode

__all__ = ["MessagesWire", "make_runtime", "target"]

MODEL: Final = "kit-messages-model"
_USAGE: Final = {"input_tokens": 31, "output_tokens": 1}
_ERROR_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_STOP: Final = {"end": "end_turn", "length": "max_tokens"}
_CHOICE: Final = {"auto": "auto", "required": "any", "none": "none"}


def _event(data: dict[str, Any]) -> SSEEvent:
    return SSEEvent(data, event=data["type"])


def _message(content: list[dict[str, Any]], stop_reason: str | None) -> dict[str, Any]:
    return {
        "id": "msg_kit_0001",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": _USAGE,
    }


def _block_events(
    index: int, block: dict[str, Any], deltas: list[dict[str, Any]]
) -> list[SSEEvent]:
    events = [_event({"type": "content_block_start", "index": index, "content_block": block})]
    events.extend(
        _event({"type": "content_block_delta", "index": index, "delta": delta}) for delta in deltas
    )
    events.append(_event({"type": "content_block_stop", "index": index}))
    return events


class MessagesWire(Wire):
    """``POST {base_url}/v1/messages``; named-event streams ending in ``message_stop``."""

    name = "acme-messages"
    base_path = ""
    request_path = "/v1/messages"

    # --- answers ------------------------------------------------------------------------------

    def encode_whole(self, answer: Answer) -> Any:
        if answer.tool_calls:
            content = [
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": json.loads(call.arguments),
                }
                for call in answer.tool_calls
            ]
            return _message(content, "tool_use")
        if answer.structured:
            try:
                value = json.loads(answer.text)
            except ValueError:
                if answer.stop != "length":
                    raise UnrepresentableError(
                        "a forced tool call's input is always JSON"
                    ) from None
                value = {}  # cut off mid-answer: the API sends what it could parse
            block = {"type": "tool_use", "id": "toolu_kit_out", "name": OUTPUT_TOOL, "input": value}
            stop = "max_tokens" if answer.stop == "length" else "tool_use"
            return _message([block], stop)
        return _message([{"type": "text", "text": answer.text}], _STOP[answer.stop])

    def encode_stream(self, answer: Answer) -> Sequence[SSEEvent]:
        start = {"type": "message_start", "message": _message([], None)}
        events = [_event(start), _event({"type": "ping"})]
        if answer.tool_calls:
            for index, call in enumerate(answer.tool_calls):
                block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
                deltas = [
                    {"type": "input_json_delta", "partial_json": piece}
                    for piece in call.argument_fragments
                ]
                events.extend(_block_events(index, block, deltas))
            stop = "tool_use"
        elif answer.structured:
            block = {"type": "tool_use", "id": "toolu_kit_out", "name": OUTPUT_TOOL, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in answer.fragments]
            events.extend(_block_events(0, block, deltas))
            stop = "max_tokens" if answer.stop == "length" else "tool_use"
        else:
            deltas = [{"type": "text_delta", "text": piece} for piece in answer.fragments]
            events.extend(_block_events(0, {"type": "text", "text": ""}, deltas))
            stop = _STOP[answer.stop]
        usage = {"output_tokens": len(answer.fragments) + len(answer.tool_call_fragments())}
        events.append(
            _event(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": usage,
                }
            )
        )
        events.append(_event({"type": "message_stop"}))
        return events

    # --- failures -----------------------------------------------------------------------------

    def encode_error(self, status: int, message: str) -> Any:
        kind = _ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def encode_stream_error(self, message: str) -> Sequence[SSEEvent]:
        error = {"type": "overloaded_error", "message": message}
        return [SSEEvent({"type": "error", "error": error}, event="error")]

    def extra_faults(self, message: str) -> Sequence[WireFault]:
        refusal = fragments(message)
        stream = [
            _event({"type": "message_start", "message": _message([], None)}),
            *_block_events(
                0,
                {"type": "text", "text": ""},
                [{"type": "text_delta", "text": piece} for piece in refusal],
            ),
            _event({"type": "message_delta", "delta": {"stop_reason": "refusal"}, "usage": {}}),
            _event({"type": "message_stop"}),
        ]
        return [
            WireFault(
                "refusal",
                RuntimeFailureCode.PERMANENT.value,
                whole=_message([{"type": "text", "text": message}], "refusal"),
                events=stream,
                quiet=True,
            )
        ]

    # --- requests -----------------------------------------------------------------------------

    def request_problems(
        self, request: RecordedRequest, interaction: CompiledInteraction
    ) -> list[str]:
        problems = []
        if not request.header("x-api-key"):
            problems.append("the x-api-key header is missing")
        if request.header("anthropic-version") is None:
            problems.append("the anthropic-version header is missing")
        body = request.json
        if not isinstance(body, dict):
            return [*problems, "the body is not a JSON object"]
        instructions = [
            m.content for m in interaction.messages if m.role in ("system", "developer")
        ]
        if body.get("system", "") != "\n\n".join(instructions):
            problems.append("system must join the interaction's system and developer messages")
        spoken = [m for m in interaction.messages if m.role not in ("system", "developer")]
        sent = body.get("messages")
        if not isinstance(sent, list) or [m.get("content") for m in sent] != [
            m.content for m in spoken
        ]:
            problems.append("messages must carry the interaction's user and assistant messages")
        if not isinstance(body.get("max_tokens"), int):
            problems.append("max_tokens is required by the API")
        structured = "structured_output" in interaction.required_capabilities
        tools = body.get("tools") if isinstance(body.get("tools"), list) else []
        offered = [tool.get("name") for tool in tools if isinstance(tool, dict)]
        if structured != (OUTPUT_TOOL in offered):
            problems.append(f"structured output, and only it, must offer the {OUTPUT_TOOL} tool")
        forced = body.get("tool_choice") == {"type": "tool", "name": OUTPUT_TOOL}
        if structured and not declared_tools(interaction) and not forced:
            problems.append(f"structured output must force the {OUTPUT_TOOL} tool")
        return problems

    def tool_problems(
        self, request: RecordedRequest, interaction: CompiledInteraction
    ) -> list[str]:
        """Declared tools as ``{name, description, input_schema}``, and the tool choice (the
        kit's interactions with tools ask for text, so no output tool beside them)."""
        problems = super().tool_problems(request, interaction)
        body = request.json
        if not isinstance(body, dict):
            return problems
        expected = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.arguments}
            for tool in declared_tools(interaction)
        ]
        if body.get("tools") != expected:
            problems.append(
                "tools must list every declared tool as {name, description, input_schema}, in "
                f"order; sent {json.dumps(body.get('tools'))[:160]}"
            )
        choice = tool_choice_of(interaction)
        wanted: dict[str, Any] = (
            {"type": "tool", "name": choice.tool}
            if isinstance(choice, NamedToolChoice)
            else {"type": _CHOICE[choice]}
        )
        if wanted["type"] != "none" and not parallel_tool_calls_of(interaction):
            wanted["disable_parallel_tool_use"] = True
        if body.get("tool_choice") != wanted:
            problems.append(
                f"tool_choice is {json.dumps(body.get('tool_choice'))}, expected "
                f"{json.dumps(wanted)} (the interaction's tool_choice and parallel_tool_calls)"
            )
        return problems


def make_runtime(base_url: str, api_key: str) -> MessagesRuntime:
    """The kit's factory: a runtime at the kit's server; ``api_key`` is the kit's marker."""
    return MessagesRuntime(
        MessagesSettings(base_url=base_url, api_key=api_key, model=MODEL, timeout_ms=10_000)
    )


target = AdapterTarget(factory=make_runtime, transport=MessagesWire(), recordings=RECORDINGS)
