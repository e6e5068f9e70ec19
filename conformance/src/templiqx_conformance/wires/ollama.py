"""The ``ollama`` wire: Ollama's ``/api/chat``, which streams newline-delimited JSON.

``POST {base_url}/api/chat``. The API streams unless the body says ``"stream": false``. A stream
is one JSON object per line — ``{"model", "created_at", "message": {"role": "assistant",
"content": "<fragment>"}, "done": false}`` — ending with a ``"done": true`` line that carries
``done_reason`` (``"stop"`` or ``"length"``) and timing counters; a whole answer is that final
object with the whole ``message``. There are no keep-alives and no event names.

Tool calls arrive **whole**: one line per call, ``message.tool_calls: [{"function": {"name",
"arguments": {...}}}]``, the arguments already a JSON object and the call without an id (the
adapter makes one). Structured output is asked for with ``"format": <the output schema>``; the
answer is JSON text in ``content``. Errors are ``{"error": "<message>"}``: the body of an error
status, or a line inside a stream the server has begun.

Requests must carry the interaction's messages in order (Ollama has the ``system``, ``user``
and ``assistant`` roles; a ``developer`` message goes with the system instructions), the
output schema as ``format`` for a structured interaction, and declared tools as functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from templiqx_conformance.loopback import RecordedRequest
from templiqx_conformance.wires.answer import Answer
from templiqx_conformance.wires.framing import NDJSON
from templiqx_conformance.wires.wire import Wire
from templiqx_contracts import CompiledInteraction, canonical_json, declared_tools

__all__ = ["OllamaWire"]

MODEL: Final = "kit-llama:8b"
_CREATED: Final = "2026-01-15T09:30:00.000000Z"
_REASON: Final = {"end": "stop", "length": "length"}


def _line(message: dict[str, Any], *, done: bool) -> dict[str, Any]:
    return {
        "model": MODEL,
        "created_at": _CREATED,
        "message": {"role": "assistant", **message},
        "done": done,
    }


def _final(answer: Answer, content: str) -> dict[str, Any]:
    line = _line({"content": content}, done=True)
    line["done_reason"] = _REASON[answer.stop]
    line.update(
        total_duration=48_211_000,
        load_duration=1_020_000,
        prompt_eval_count=31,
        prompt_eval_duration=9_300_000,
        eval_count=len(answer.fragments) + len(answer.tool_calls),
        eval_duration=37_500_000,
    )
    return line


def _calls(answer: Answer) -> list[dict[str, Any]]:
    return [
        {"function": {"name": call.name, "arguments": call.parsed_arguments}}
        for call in answer.tool_calls
    ]


def _same(a: Any, b: Any) -> bool:
    try:
        return canonical_json(a) == canonical_json(b)
    except (TypeError, ValueError):
        return False


class OllamaWire(Wire):
    """``POST {base_url}/api/chat``; NDJSON streams ending in a ``"done": true`` line."""

    name = "ollama"
    base_path = ""
    request_path = "/api/chat"
    framing = NDJSON
    whole_tool_arguments = True
    tool_call_ids = False

    def is_stream_request(self, request: RecordedRequest) -> bool:
        """Ollama streams unless the body says ``"stream": false``."""
        body = request.json
        return isinstance(body, dict) and body.get("stream", True) is not False

    # --- answers ----------------------------------------------------------------------------

    def encode_whole(self, answer: Answer) -> Any:
        if answer.tool_calls:
            final = _final(answer, "")
            final["message"]["tool_calls"] = _calls(answer)
            return final
        return _final(answer, answer.text)

    def encode_stream(self, answer: Answer) -> Sequence[Any]:
        if answer.tool_calls:
            lines = [
                _line({"content": "", "tool_calls": [call]}, done=False) for call in _calls(answer)
            ]
        else:
            lines = [_line({"content": piece}, done=False) for piece in answer.fragments]
        return [*lines, _final(answer, "")]

    # --- failures ---------------------------------------------------------------------------

    def encode_error(self, status: int, message: str) -> Any:
        return {"error": message}

    def encode_stream_error(self, message: str) -> Sequence[Any] | None:
        return [{"error": message}]

    # --- requests ---------------------------------------------------------------------------

    def request_problems(
        self, request: RecordedRequest, interaction: CompiledInteraction
    ) -> list[str]:
        body = request.json
        if not isinstance(body, dict):
            return ["the body is not a JSON object"]
        problems = []
        if not isinstance(body.get("model"), str) or not body["model"]:
            problems.append("model is required by the API")
        instructions = [
            m.content for m in interaction.messages if m.role in ("system", "developer")
        ]
        spoken = [
            {"role": m.role, "content": m.content}
            for m in interaction.messages
            if m.role not in ("system", "developer")
        ]
        sent = body.get("messages")
        trimmed = (
            [
                {"role": m.get("role"), "content": m.get("content")}
                for m in sent
                if isinstance(m, dict)
            ]
            if isinstance(sent, list)
            else None
        )
        joined = [{"role": "system", "content": "\n\n".join(instructions)}] if instructions else []
        one_each = [
            {"role": "system" if m.role == "developer" else m.role, "content": m.content}
            for m in interaction.messages
        ]
        if trimmed not in ([*joined, *spoken], one_each):
            problems.append(
                "messages must be the interaction's messages in order (Ollama has no developer "
                "role: send developer messages as system messages, or join them with the "
                "system instructions)"
            )
        structured = "structured_output" in interaction.required_capabilities
        if structured and not _same(body.get("format"), interaction.output_schema):
            problems.append("a structured interaction must send its output schema as format")
        if not structured and "format" in body:
            problems.append("format is for structured interactions only")
        return problems

    def tool_problems(
        self, request: RecordedRequest, interaction: CompiledInteraction
    ) -> list[str]:
        """Declared tools as ``{"type": "function", "function": {name, description,
        parameters}}``, in order (Ollama has no tool choice to send)."""
        body = request.json
        if not isinstance(body, dict):
            return ["the body is not a JSON object"]
        expected = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.arguments,
                },
            }
            for tool in declared_tools(interaction)
        ]
        if not _same(body.get("tools"), expected):
            names = ", ".join(tool.name for tool in declared_tools(interaction))
            return [
                f"tools must list the declared tools ({names}) in order, each "
                '{"type": "function", "function": {"name", "description", "parameters"}}'
            ]
        return []
