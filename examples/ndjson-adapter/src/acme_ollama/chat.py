"""The chat wire format: the request we send, and what we make of the answer.

Request (``POST {base_url}/api/chat``):

* ``messages``: the interaction's ``system`` and ``developer`` messages joined, in order, into
  one leading ``system`` message (the API has no developer role: a contract's developer
  instructions are instructions to the model); ``user`` and ``assistant`` messages follow.
* ``stream``: always sent — the API streams unless told ``false``.
* ``format``: for a structured interaction, the output schema (the answer's ``content`` is then
  that JSON).
* ``options``: ``runtime_policy``'s ``temperature``, ``top_p``, ``seed``, ``stop`` and
  ``max_tokens`` (as ``num_predict``), type-checked first; every other key is ignored.
* ``tools``: the declared tools as functions. The API has no tool choice and no switch for
  parallel calls: with ``tool_choice: none`` no tool is sent; a forced or required choice, and
  ``parallel_tool_calls: false``, cannot be asked for — the calls are judged against them
  (``output_schema_valid``) instead.

Answer: one JSON object per line while streaming — ``message.content`` fragments, then a line
with ``"done": true`` and the ``done_reason`` — or that last object whole. Tool calls arrive
whole (``message.tool_calls: [{"function": {"name", "arguments": {...}}}]``) and without ids: the
adapter numbers them ``call_0``, ``call_1``, ... on both paths. An ``{"error": ...}`` object is a
failure. :class:`StreamReader` turns lines into deltas and, at the done line, a :class:`Reply`;
:func:`output_of` turns a reply into the receipt output, or the failure it means.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

from acme_ollama.failures import Code, failure, in_band
from templiqx_contracts import (
    CompiledInteraction,
    Delta,
    ToolCallDelta,
    declared_tools,
    tool_choice_of,
)
from templiqx_ports import RuntimeFailureError

__all__ = ["Reply", "StreamReader", "build_body", "is_structured", "output_of", "reply_of"]

STRUCTURED_OUTPUT: Final = "structured_output"
_NUMBERS: Final = ("temperature", "top_p")


def is_structured(interaction: CompiledInteraction) -> bool:
    """Whether the interaction asks for structured (JSON-schema) output."""
    return STRUCTURED_OUTPUT in interaction.required_capabilities


def _options(policy: dict[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for key in _NUMBERS:
        if key in policy:
            value = policy[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise failure(Code.PERMANENT, f"runtime_policy.{key} must be a number")
            options[key] = value
    for key, sent in (("seed", "seed"), ("max_tokens", "num_predict")):
        if key in policy:
            value = policy[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise failure(Code.PERMANENT, f"runtime_policy.{key} must be a whole number")
            options[sent] = value
    if "stop" in policy:
        stop = policy["stop"]
        stops = [stop] if isinstance(stop, str) else stop
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise failure(Code.PERMANENT, "runtime_policy.stop must be a string or strings")
        options["stop"] = stops
    return options


def build_body(interaction: CompiledInteraction, model: str) -> dict[str, Any]:
    """The request body without ``stream`` (the subject of the request fingerprint)."""
    instructions = [m.content for m in interaction.messages if m.role in ("system", "developer")]
    messages = [{"role": "system", "content": "\n\n".join(instructions)}] if instructions else []
    messages.extend(
        {"role": m.role, "content": m.content}
        for m in interaction.messages
        if m.role not in ("system", "developer")
    )
    body: dict[str, Any] = {"model": model, "messages": messages}
    if is_structured(interaction):
        body["format"] = interaction.output_schema
    options = _options(interaction.runtime_policy)
    if options:
        body["options"] = options
    tools = declared_tools(interaction)
    if tools and tool_choice_of(interaction) != "none":
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.arguments,
                },
            }
            for tool in tools
        ]
    return body


@dataclass
class Reply:
    """A whole answer: its content, its tool calls (name, arguments) and why it stopped."""

    content: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)
    done_reason: str | None = None


def _invalid(sentence: str) -> RuntimeFailureError:
    return failure(Code.INVALID_RESPONSE, sentence)


def _calls_of(message: dict[str, Any]) -> list[tuple[str, Any]]:
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise _invalid("tool_calls was not a list")
    found = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            raise _invalid("a tool call had no function name")
        arguments = function.get("arguments", {}) if isinstance(function, dict) else {}
        if isinstance(arguments, str):  # some servers send the arguments as JSON text
            try:
                arguments = json.loads(arguments)
            except ValueError:
                raise _invalid(f"the arguments of tool call {name!r} were not JSON") from None
        found.append((name, arguments))
    return found


def reply_of(body: Any, secrets: tuple[str, ...]) -> Reply:
    """The :class:`Reply` of a whole (non-streamed) response body."""
    if isinstance(body, dict) and "error" in body:
        raise in_band(body, secrets)
    message = body.get("message") if isinstance(body, dict) else None
    if not isinstance(message, dict):
        raise _invalid("the model response had no message")
    content = message.get("content") or ""
    if not isinstance(content, str):
        raise _invalid("the message content was not text")
    reason = body.get("done_reason")
    return Reply(content, _calls_of(message), reason if isinstance(reason, str) else None)


def output_of(reply: Reply, interaction: CompiledInteraction) -> Any:
    """The receipt output of a whole answer, or the failure it means (DECISIONS 7, 7b)."""
    if reply.calls:
        return {
            "tool_calls": [
                {"id": f"call_{index}", "name": name, "arguments": arguments}
                for index, (name, arguments) in enumerate(reply.calls)
            ]
        }
    if is_structured(interaction):
        if reply.done_reason == "length":
            raise _invalid("the structured output was cut off at the token limit")
        try:
            return json.loads(reply.content)
        except ValueError:
            raise _invalid("the structured output was not JSON") from None
    if not reply.content:
        raise _invalid("the model response had no text")
    return reply.content


class StreamReader:
    """Turns stream lines into delta events and, at the ``done`` line, a :class:`Reply`."""

    def __init__(self, max_output_bytes: int, secrets: tuple[str, ...]) -> None:
        self.reply = Reply()
        self.done = False
        self._size = 0
        self._max = max_output_bytes
        self._secrets = secrets

    def handle(self, line: Any) -> list[Delta | ToolCallDelta]:
        """The delta events one line yields (raises the failure it means)."""
        if not isinstance(line, dict):
            raise _invalid("a stream line was not a JSON object")
        if "error" in line:
            raise in_band(line, self._secrets)
        message = line.get("message") or {}
        if not isinstance(message, dict):
            raise _invalid("a stream line's message was not an object")
        deltas: list[Delta | ToolCallDelta] = []
        piece = message.get("content") or ""
        if not isinstance(piece, str):
            raise _invalid("a stream line's content was not text")
        if piece:
            self._grow(len(piece.encode("utf-8")))
            self.reply.content += piece
            deltas.append(Delta(text=piece))
        for name, arguments in _calls_of(message):
            text = json.dumps(arguments, ensure_ascii=False)
            self._grow(len(text.encode("utf-8")))
            self.reply.calls.append((name, arguments))
            deltas.append(ToolCallDelta(name=name, arguments_fragment=text))
        if line.get("done") is True:
            reason = line.get("done_reason")
            self.reply.done_reason = reason if isinstance(reason, str) else None
            self.done = True
        return deltas

    def _grow(self, size: int) -> None:
        self._size += size
        if self._size > self._max:
            raise _invalid(f"model response exceeded {self._max} byte limit")
