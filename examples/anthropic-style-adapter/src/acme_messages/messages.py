"""The Messages wire format: the request we send, and what we make of the answer.

Request (``POST {base_url}/v1/messages``):

* ``system`` joins the interaction's ``system`` and ``developer`` messages in order (the API has
  no developer role: a contract's developer instructions are instructions to the model, so they
  go where instructions go); ``user``/``assistant`` messages follow, consecutive ones of the same
  role merged.
* ``runtime_policy``: ``temperature``, ``top_p``, ``max_tokens`` and ``stop`` (sent as
  ``stop_sequences``) are honoured, type-checked first; ``seed`` has no equivalent here and is
  ignored, as is every other key.
* **Declared tools** (a contract's ``tools``) go in ``tools`` as ``{name, description,
  input_schema}``; ``tool_choice`` is ``{"type": "auto"}``, ``{"type": "any"}`` (``required``),
  ``{"type": "none"}`` or ``{"type": "tool", "name": …}`` (a forced tool), with
  ``disable_parallel_tool_use: true`` when the contract turns parallel calls off. The model's
  calls come back as ``tool_use`` blocks: ``{"tool_calls": [...]}``, streamed as
  ``ToolCallDelta`` events.
* **Structured output is a forced tool call**: a tool named :data:`OUTPUT_TOOL` whose input
  schema is the contract's output schema, with ``tool_choice`` forcing it. Its input *is* the
  output, so its ``input_json_delta`` fragments stream as ``Delta`` events (they are the answer's
  JSON text); ``ToolCallDelta`` is kept for the model's calls to other tools. A structured
  contract that also declares tools offers both, and the model must use one (``any``): the
  output tool to answer, or the declared tools (a forced tool stays forced; ``none`` offers only
  the output tool).

Answer: a whole message (``content`` blocks) or the named events of a stream
(``message_start``, ``content_block_start``/``_delta``/``_stop``, ``message_delta`` with the
``stop_reason``, ``message_stop``; ``ping``; ``error``). Both become one :class:`Reply`, and
:func:`output_of` turns it into the receipt output or the failure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

from acme_messages.failures import Code, failure, in_band
from acme_messages.sse import ServerEvent
from templiqx_contracts import (
    CompiledInteraction,
    Delta,
    NamedToolChoice,
    ToolCallDelta,
    declared_tools,
    parallel_tool_calls_of,
    tool_choice_of,
)
from templiqx_ports import RuntimeFailureError

__all__ = [
    "OUTPUT_TOOL",
    "Block",
    "Reply",
    "StreamReader",
    "build_body",
    "is_structured",
    "output_of",
    "reply_of",
    "tool_fields",
]

OUTPUT_TOOL: Final = "templiqx_output"
STRUCTURED_OUTPUT: Final = "structured_output"


def is_structured(interaction: CompiledInteraction) -> bool:
    """Whether the interaction asks for structured (JSON-schema) output."""
    return STRUCTURED_OUTPUT in interaction.required_capabilities


def _policy(policy: dict[str, Any], default_max_tokens: int) -> dict[str, Any]:
    out: dict[str, Any] = {"max_tokens": default_max_tokens}
    for key in ("temperature", "top_p"):
        if key in policy:
            value = policy[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise failure(Code.PERMANENT, f"runtime_policy.{key} must be a number")
            out[key] = value
    if "max_tokens" in policy:
        value = policy["max_tokens"]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise failure(Code.PERMANENT, "runtime_policy.max_tokens must be a positive integer")
        out["max_tokens"] = value
    if "stop" in policy:
        stop = policy["stop"]
        stops = [stop] if isinstance(stop, str) else stop
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise failure(Code.PERMANENT, "runtime_policy.stop must be a string or strings")
        out["stop_sequences"] = stops
    return out


def build_body(interaction: CompiledInteraction, model: str, max_tokens: int) -> dict[str, Any]:
    """The request body, without ``stream`` (the subject of the request fingerprint)."""
    system: list[str] = []
    messages: list[dict[str, str]] = []
    for message in interaction.messages:
        if message.role in ("system", "developer"):
            system.append(message.content)
        elif messages and messages[-1]["role"] == message.role:
            messages[-1]["content"] += "\n\n" + message.content
        else:
            messages.append({"role": message.role, "content": message.content})
    body: dict[str, Any] = {"model": model, "messages": messages}
    if system:
        body["system"] = "\n\n".join(system)
    body.update(_policy(interaction.runtime_policy, max_tokens))
    body.update(tool_fields(interaction))
    return body


def tool_fields(interaction: CompiledInteraction) -> dict[str, Any]:
    """``tools`` and ``tool_choice``: the declared tools, and the output tool when structured."""
    choice = tool_choice_of(interaction)
    offered = [] if choice == "none" and is_structured(interaction) else declared_tools(interaction)
    tools: list[dict[str, Any]] = [
        {"name": tool.name, "description": tool.description, "input_schema": tool.arguments}
        for tool in offered
    ]
    if is_structured(interaction):
        tools.append(
            {
                "name": OUTPUT_TOOL,
                "description": "Give your answer as this tool's input.",
                "input_schema": interaction.output_schema,
            }
        )
    if not tools:
        return {}
    picked: dict[str, Any]
    if isinstance(choice, NamedToolChoice):
        picked = {"type": "tool", "name": choice.tool}
    elif not offered:  # structured output alone: force the output tool
        picked = {"type": "tool", "name": OUTPUT_TOOL}
    elif is_structured(interaction) or choice == "required":
        picked = {"type": "any"}
    else:
        picked = {"type": choice}  # "auto" or "none"
    if offered and picked["type"] != "none" and not parallel_tool_calls_of(interaction):
        picked["disable_parallel_tool_use"] = True
    return {"tools": tools, "tool_choice": picked}


@dataclass
class Block:
    """One content block: text, or a tool call (its input as JSON text while streaming)."""

    kind: str
    id: str = ""
    name: str = ""
    text: str = ""
    input: Any = None


@dataclass
class Reply:
    """A whole answer: its blocks in index order and why the model stopped."""

    blocks: list[Block] = field(default_factory=list)
    stop_reason: str | None = None


def _invalid(sentence: str) -> RuntimeFailureError:
    return failure(Code.INVALID_RESPONSE, sentence)


def reply_of(body: Any, secrets: tuple[str, ...]) -> Reply:
    """The :class:`Reply` of a whole (non-streamed) response body."""
    if isinstance(body, dict) and body.get("type") == "error":
        raise in_band(body, secrets)
    content = body.get("content") if isinstance(body, dict) else None
    if not isinstance(content, list):
        raise _invalid("the model response had no content list")
    reply = Reply(stop_reason=body.get("stop_reason"))
    for item in content:
        if not isinstance(item, dict):
            raise _invalid("a content block was not an object")
        if item.get("type") == "text":
            reply.blocks.append(Block("text", text=str(item.get("text", ""))))
        elif item.get("type") == "tool_use":
            block = Block("tool_use", id=str(item.get("id", "")), name=str(item.get("name", "")))
            block.input = item.get("input")
            reply.blocks.append(block)
    return reply


def _arguments(block: Block) -> Any:
    if block.input is not None:
        return block.input
    try:
        return json.loads(block.text) if block.text.strip() else {}
    except ValueError:
        raise _invalid(f"the arguments of tool call {block.name!r} were not JSON") from None


def output_of(reply: Reply, interaction: CompiledInteraction) -> Any:
    """The receipt output of a whole answer, or the failure it means (DECISIONS 7, 7b)."""
    if reply.stop_reason == "refusal":
        raise failure(Code.PERMANENT, "the model refused the request")
    structured = is_structured(interaction)
    calls = [
        block
        for block in reply.blocks
        if block.kind == "tool_use" and not (structured and block.name == OUTPUT_TOOL)
    ]
    if calls:
        return {
            "tool_calls": [
                {"id": call.id, "name": call.name, "arguments": _arguments(call)} for call in calls
            ]
        }
    if structured:
        if reply.stop_reason == "max_tokens":
            raise _invalid("the structured output was cut off at the token limit")
        forced = [b for b in reply.blocks if b.kind == "tool_use" and b.name == OUTPUT_TOOL]
        if not forced:
            raise _invalid(f"the model did not answer through {OUTPUT_TOOL}")
        return _arguments(forced[0])
    texts = [block.text for block in reply.blocks if block.kind == "text"]
    if not texts:
        raise _invalid("the model response had no text")
    return "".join(texts)


class StreamReader:
    """Turns named stream events into delta events and, at ``message_stop``, a :class:`Reply`."""

    def __init__(
        self, interaction: CompiledInteraction, max_output_bytes: int, secrets: tuple[str, ...]
    ) -> None:
        self.structured = is_structured(interaction)
        self.reply = Reply()
        self.done = False
        self._blocks: dict[int, Block] = {}
        self._size = 0
        self._max = max_output_bytes
        self._secrets = secrets

    def handle(self, event: ServerEvent) -> list[Delta | ToolCallDelta]:
        """The delta events one stream event yields (raises the failure it means)."""
        try:
            data = json.loads(event.data)
        except ValueError:
            raise _invalid("a stream event was not JSON") from None
        if not isinstance(data, dict):
            raise _invalid("a stream event was not an object")
        if event.name == "error":
            raise in_band(data, self._secrets)
        if event.name == "content_block_start":
            self._start(data)
        elif event.name == "content_block_delta":
            return self._delta(data)
        elif event.name == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, dict) and delta.get("stop_reason") is not None:
                self.reply.stop_reason = delta["stop_reason"]
        elif event.name == "message_stop":
            self.reply.blocks = [self._blocks[index] for index in sorted(self._blocks)]
            self.done = True
        return []

    def _start(self, data: dict[str, Any]) -> None:
        block = data.get("content_block")
        index = data.get("index")
        if not isinstance(block, dict) or not isinstance(index, int):
            raise _invalid("a content_block_start event was malformed")
        kind = "tool_use" if block.get("type") == "tool_use" else "text"
        self._blocks[index] = Block(
            kind, id=str(block.get("id", "")), name=str(block.get("name", ""))
        )

    def _delta(self, data: dict[str, Any]) -> list[Delta | ToolCallDelta]:
        index = data.get("index")
        block = self._blocks.get(index) if isinstance(index, int) else None
        delta = data.get("delta")
        if block is None or not isinstance(delta, dict):
            raise _invalid("a content_block_delta event was malformed")
        piece = (
            delta.get("text") if delta.get("type") == "text_delta" else delta.get("partial_json")
        )
        if not isinstance(piece, str) or not piece:
            return []
        block.text += piece
        self._size += len(piece.encode("utf-8"))
        if self._size > self._max:
            raise _invalid(f"model response exceeded {self._max} byte limit")
        if block.kind == "text":
            return [] if self.structured else [Delta(text=piece)]
        if self.structured and block.name == OUTPUT_TOOL:
            return [Delta(text=piece)]  # the structured output itself: a Delta, not a tool call
        return [ToolCallDelta(name=block.name, arguments_fragment=piece)]
