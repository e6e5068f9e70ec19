"""From an assembled completion to the receipt's ``output`` — one rule for both paths.

The streamed and the non-streamed path each assemble the same :class:`Assembled` value (content,
refusal, tool calls, finish reason, usage); :func:`final_output` turns it into the output or a
failure, so the two paths cannot disagree (DECISIONS 7, 7b):

1. ``finish_reason == "content_filter"`` → ``TQX_RUNTIME_PERMANENT`` (the model refused).
2. Tool calls present → ``{"tool_calls": [{"id", "name", "arguments": <parsed JSON>}, ...]}``
   in index order; arguments that are not JSON → ``TQX_RUNTIME_INVALID_RESPONSE``, as is a
   name or id over :data:`MAX_TOOL_NAME_BYTES` / :data:`MAX_TOOL_ID_BYTES`.
3. Only a refusal (no content) → ``TQX_RUNTIME_PERMANENT``; the refusal text is never kept.
4. Text output: the content string, whatever the finish reason — and ``""`` when the model
   said nothing (no content, no tool call, no refusal), as the official SDK returns: an empty
   answer is a legitimate text answer, and the contract's schema decides whether it is valid.
5. Structured output: no content or ``""`` → ``TQX_RUNTIME_INVALID_RESPONSE`` (no content);
   ``finish_reason == "length"`` → ``TQX_RUNTIME_INVALID_RESPONSE``; content parsed as JSON
   with the reference number rules, failure → ``TQX_RUNTIME_INVALID_RESPONSE``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from templiqx_contracts import JSONDecodeError, decode_json
from templiqx_ports import RuntimeFailureCode
from templiqx_runtime_openai.details import Detail
from templiqx_runtime_openai.failures import FailureSource
from templiqx_runtime_openai.wire import Usage

__all__ = [
    "MAX_TOOL_ID_BYTES",
    "MAX_TOOL_NAME_BYTES",
    "Assembled",
    "AssembledToolCall",
    "final_output",
    "utf8_size",
]

MAX_TOOL_NAME_BYTES: Final = 256
"""The longest tool-call name accepted (UTF-8 bytes); OpenAI's own rule is 64 characters."""
MAX_TOOL_ID_BYTES: Final = 256
"""The longest tool-call id accepted (UTF-8 bytes); real ids are a few dozen characters."""


def utf8_size(text: str) -> int:
    """The UTF-8 length of ``text`` (without encoding it when it is ASCII)."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


@dataclass(slots=True)
class AssembledToolCall:
    """One tool call: id, name and the concatenated JSON arguments text."""

    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    @property
    def arguments_text(self) -> str:
        """The arguments as one string."""
        return "".join(self.arguments)


@dataclass(slots=True)
class Assembled:
    """A whole completion, however it arrived."""

    content: str | None
    refusal: str | None
    tool_calls: list[AssembledToolCall]
    finish_reason: str | None
    usage: Usage | None
    response_id: str | None = None
    """The completion's ``id``, when the server sent a string (telemetry only)."""
    response_model: str | None = None
    """The ``model`` that answered, when the server said (telemetry only)."""


def final_output(assembled: Assembled, *, structured: bool, source: FailureSource) -> Any:
    """The receipt output of a completion, or raise its failure (see the module docstring)."""
    if assembled.finish_reason == "content_filter":
        raise source.error(RuntimeFailureCode.PERMANENT, Detail.REFUSED)
    if assembled.tool_calls:
        calls: list[dict[str, Any]] = []
        for call in assembled.tool_calls:
            for name, value, limit in (
                ("name", call.name, MAX_TOOL_NAME_BYTES),
                ("id", call.id or "", MAX_TOOL_ID_BYTES),
            ):
                if utf8_size(value) > limit:
                    raise source.error(
                        RuntimeFailureCode.INVALID_RESPONSE, Detail.tool_field_limit(name, limit)
                    )
            try:
                arguments = decode_json(call.arguments_text)
            except JSONDecodeError:
                raise source.error(
                    RuntimeFailureCode.INVALID_RESPONSE, Detail.TOOL_ARGUMENTS
                ) from None
            calls.append({"id": call.id, "name": call.name, "arguments": arguments})
        return {"tool_calls": calls}
    content = assembled.content
    if not content and assembled.refusal:
        raise source.error(RuntimeFailureCode.PERMANENT, Detail.REFUSED)
    if not structured:
        return content or ""
    if not content:
        raise source.error(RuntimeFailureCode.INVALID_RESPONSE, Detail.NO_CONTENT)
    if assembled.finish_reason == "length":
        raise source.error(RuntimeFailureCode.INVALID_RESPONSE, Detail.TRUNCATED)
    try:
        return decode_json(content)
    except JSONDecodeError:
        raise source.error(RuntimeFailureCode.INVALID_RESPONSE, Detail.NOT_JSON) from None
