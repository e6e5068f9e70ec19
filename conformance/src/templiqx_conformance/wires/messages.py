"""The ``anthropic-messages`` wire: a Messages-style API whose streams are *named* SSE events.

``POST {base_url}/v1/messages``. A whole answer is one ``message`` object with ``content``
blocks (``text`` or ``tool_use``) and a ``stop_reason``; a stream is named events:
``message_start``, ``ping``, per block ``content_block_start`` / ``content_block_delta``
(``text_delta`` or ``input_json_delta``) / ``content_block_stop``, then ``message_delta``
(the ``stop_reason``) and ``message_stop``, which ends it. Errors come as ``{"type": "error",
"error": {"type", "message"}}`` with an error status, or as an ``event: error`` inside a stream.

**Structured output.** This API has no JSON-schema response format, so adapters force a tool
whose input schema is the output schema. Say which tool with ``MessagesWire(output_tool=...)``:
a structured answer then arrives as that tool's call (``input_json_delta`` fragments, which the
adapter streams as ``Delta``). Without it, a structured answer is a text block of JSON.

Requests must carry the ``x-api-key`` and ``anthropic-version`` headers, a ``max_tokens``, the
interaction's ``system`` and ``developer`` messages joined into ``system`` and its other
messages in ``messages``; declared tools as ``{name, description, input_schema}`` with the tool
choice (``auto``, ``any`` for ``required``, ``none``, ``tool``) and
``disable_parallel_tool_use`` when parallel calls are off. A refusal (``stop_reason:
"refusal"``) must fail ``TQX_RUNTIME_PERMANENT`` without repeating its text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from templiqx_conformance.loopback import RecordedRequest, SSEEvent
from templiqx_conformance.wires.answer import Answer, fragments
from templiqx_conformance.wires.framing import SSE
from templiqx_conformance.wires.wire import UnrepresentableError, Wire, WireFault
from templiqx_contracts import (
    CompiledInteraction,
    NamedToolChoice,
    declared_tools,
    parallel_tool_calls_of,
    tool_choice_of,
)
from templiqx_ports import RuntimeFailureCode

__all__ = ["MessagesWire"]

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
_OUTPUT_ID: Final = "toolu_kit_output"


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


def _block(index: int, block: dict[str, Any], deltas: list[dict[str, Any]]) -> list[SSEEvent]:
    events = [_event({"type": "content_block_start", "index": index, "content_block": block})]
    events.extend(
        _event({"type": "content_block_delta", "index": index, "delta": delta}) for delta in deltas
    )
    events.append(_event({"type": "content_block_stop", "index": index}))
    return events


def _text(pieces: Sequence[str]) -> list[dict[str, Any]]:
    return [{"type": "text_delta", "text": piece} for piece in pieces]


def _json_pieces(pieces: Sequence[str]) -> list[dict[str, Any]]:
    return [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]


class MessagesWire(Wire):
    """``POST {base_url}/v1/messages``; named-event streams ending in ``message_stop``."""

    name = "anthropic-messages"
    base_path = ""
    request_path = "/v1/messages"
    framing = SSE

    def __init__(self, output_tool: str | None = None) -> None:
        self.output_tool = output_tool

    # --- answers ----------------------------------------------------------------------------

    def encode_whole(self, answer: Answer) -> Any:
        if answer.tool_calls:
            content = [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.parsed_arguments}
                for c in answer.tool_calls
            ]
            return _message(content, "tool_use")
        if answer.structured and self.output_tool is not None:
            try:
                value = json.loads(answer.text)
            except ValueError:
                if answer.stop != "length":
                    raise UnrepresentableError(
                        "a forced tool call's input is always JSON"
                    ) from None
                value = {}  # cut off mid-answer: the API sends what it could parse
            block = {"type": "tool_use", "id": _OUTPUT_ID, "name": self.output_tool, "input": value}
            return _message([block], "max_tokens" if answer.stop == "length" else "tool_use")
        return _message([{"type": "text", "text": answer.text}], _STOP[answer.stop])

    def encode_stream(self, answer: Answer) -> Sequence[Any]:
        events = [_event({"type": "message_start", "message": _message([], None)})]
        events.append(_event({"type": "ping"}))
        if answer.tool_calls:
            pieces: dict[int, list[str]] = {}
            for index, piece in answer.tool_call_fragments():
                pieces.setdefault(index, []).append(piece)
            for index, call in enumerate(answer.tool_calls):
                block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
                events.extend(_block(index, block, _json_pieces(pieces.get(index, []))))
            stop = "tool_use"
        elif answer.structured and self.output_tool is not None:
            block = {"type": "tool_use", "id": _OUTPUT_ID, "name": self.output_tool, "input": {}}
            events.extend(_block(0, block, _json_pieces(answer.fragments)))
            stop = "max_tokens" if answer.stop == "length" else "tool_use"
        else:
            events.extend(_block(0, {"type": "text", "text": ""}, _text(answer.fragments)))
            stop = _STOP[answer.stop]
        usage = {"output_tokens": len(answer.fragments) + len(answer.tool_call_fragments())}
        delta = {"stop_reason": stop, "stop_sequence": None}
        events.append(_event({"type": "message_delta", "delta": delta, "usage": usage}))
        events.append(_event({"type": "message_stop"}))
        return events

    # --- failures ---------------------------------------------------------------------------

    def encode_error(self, status: int, message: str) -> Any:
        kind = _ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def encode_stream_error(self, message: str) -> Sequence[Any] | None:
        error = {"type": "overloaded_error", "message": message}
        return [SSEEvent({"type": "error", "error": error}, event="error")]

    def extra_faults(self, message: str) -> Sequence[WireFault]:
        stream = [
            _event({"type": "message_start", "message": _message([], None)}),
            *_block(0, {"type": "text", "text": ""}, _text(fragments(message))),
            _event({"type": "message_delta", "delta": {"stop_reason": "refusal"}, "usage": {}}),
            _event({"type": "message_stop"}),
        ]
        return [
            WireFault(
                "refusal",
                RuntimeFailureCode.PERMANENT.value,
                whole=_message([{"type": "text", "text": message}], "refusal"),
                stream=stream,
                quiet=True,
            )
        ]

    # --- requests ---------------------------------------------------------------------------

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
        if not isinstance(sent, list) or [
            m.get("content") for m in sent if isinstance(m, dict)
        ] != [m.content for m in spoken]:
            problems.append("messages must carry the interaction's user and assistant messages")
        if not isinstance(body.get("max_tokens"), int):
            problems.append("max_tokens is required by the API")
        if self.output_tool is not None:
            problems.extend(self._output_tool_problems(body, interaction))
        return problems

    def _output_tool_problems(
        self, body: dict[str, Any], interaction: CompiledInteraction
    ) -> list[str]:
        structured = "structured_output" in interaction.required_capabilities
        sent = body.get("tools")
        tools: list[Any] = sent if isinstance(sent, list) else []
        offered = [tool.get("name") for tool in tools if isinstance(tool, dict)]
        problems = []
        if structured != (self.output_tool in offered):
            problems.append(
                f"structured output, and only it, must offer the {self.output_tool} tool"
            )
        forced = body.get("tool_choice") == {"type": "tool", "name": self.output_tool}
        if structured and not declared_tools(interaction) and not forced:
            problems.append(f"structured output must force the {self.output_tool} tool")
        return problems

    def tool_problems(
        self, request: RecordedRequest, interaction: CompiledInteraction
    ) -> list[str]:
        """Declared tools as ``{name, description, input_schema}``, and the tool choice."""
        problems = super().tool_problems(request, interaction)
        body = request.json
        if not isinstance(body, dict):
            return problems
        expected = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.arguments}
            for tool in declared_tools(interaction)
        ]
        listed = body.get("tools")
        sent: list[Any] = listed if isinstance(listed, list) else []
        if [t for t in sent if not (isinstance(t, dict) and t.get("name") == self.output_tool)] != (
            expected
        ):
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
