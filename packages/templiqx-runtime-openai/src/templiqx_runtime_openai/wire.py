"""The chat-completions wire format: the request body we send and the minimal shapes we read.

Responses and stream chunks are decoded with msgspec into Structs that declare only the fields
the adapter uses; every other field is skipped by the decoder without being materialized
(``logprobs``, ``system_fingerprint``, ...). A stream's ``id`` and ``model`` (the same in every
chunk) are read from its first chunk only (:data:`head_decoder`), for telemetry. Unknown fields
never fail a decode; a known field of the wrong type does (→ ``TQX_RUNTIME_INVALID_RESPONSE``).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from templiqx_contracts import CompiledInteraction
from templiqx_contracts import Usage as EnvelopeUsage
from templiqx_runtime_openai.tools import tool_fields

__all__ = [
    "OUTPUT_SCHEMA_NAME",
    "SAMPLING_KEYS",
    "STRUCTURED_OUTPUT",
    "ChatResponse",
    "StreamChunk",
    "StreamHead",
    "Usage",
    "build_body",
    "chunk_decoder",
    "head_decoder",
    "encode_body",
    "is_structured",
    "response_decoder",
    "sampling_problem",
    "streaming_body",
    "usage_of",
]

OUTPUT_SCHEMA_NAME: Final = "templiqx_output"
STRUCTURED_OUTPUT: Final = "structured_output"
SAMPLING_KEYS: Final = ("temperature", "top_p", "max_tokens", "seed", "stop")
"""The ``runtime_policy`` keys forwarded to the model; all others are ignored."""


# --- shared -----------------------------------------------------------------------------------


class Usage(msgspec.Struct, gc=False):
    """Token usage as the server reports it (missing counts are 0)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


def usage_of(usage: Usage) -> EnvelopeUsage:
    """The envelope's :class:`templiqx_contracts.Usage` for a server's usage report."""
    return EnvelopeUsage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        total_tokens=usage.total_tokens,
    )


class FunctionPart(msgspec.Struct, gc=False):
    """``function`` of a tool call (whole, or one fragment of it in a stream)."""

    name: str | None = None
    arguments: str | None = None


# --- stream chunks ----------------------------------------------------------------------------


class ToolCallPart(msgspec.Struct, gc=False):
    """One fragment of a tool call inside a stream delta."""

    index: int | None = None
    id: str | None = None
    function: FunctionPart | None = None


class DeltaPart(msgspec.Struct, gc=False):
    """``choices[i].delta`` of a stream chunk."""

    content: str | None = None
    refusal: str | None = None
    tool_calls: list[ToolCallPart] | None = None


class ChunkChoice(msgspec.Struct, gc=False):
    """One choice of a stream chunk."""

    index: int = 0
    delta: DeltaPart | None = None
    finish_reason: str | None = None


class StreamChunk(msgspec.Struct, gc=False):
    """One ``data:`` payload of a chat-completions stream."""

    choices: list[ChunkChoice] | None = None
    usage: Usage | None = None
    error: Any = None


class StreamHead(msgspec.Struct, gc=False):
    """The identity of a streamed completion, read from its first chunk."""

    id: Any = None
    model: Any = None


# --- whole responses --------------------------------------------------------------------------


class ToolCall(msgspec.Struct, gc=False):
    """A complete tool call of a non-streamed message."""

    id: str | None = None
    function: FunctionPart | None = None


class Message(msgspec.Struct, gc=False):
    """``choices[i].message`` of a non-streamed completion."""

    content: str | None = None
    refusal: str | None = None
    tool_calls: list[ToolCall] | None = None


class ResponseChoice(msgspec.Struct, gc=False):
    """One choice of a non-streamed completion."""

    index: int = 0
    message: Message | None = None
    finish_reason: str | None = None


class ChatResponse(msgspec.Struct, gc=False):
    """A non-streamed chat completion (or an error object answered with a 2xx status)."""

    choices: list[ResponseChoice] | None = None
    usage: Usage | None = None
    error: Any = None
    id: Any = None
    model: Any = None


chunk_decoder: Final = msgspec.json.Decoder(StreamChunk)
head_decoder: Final = msgspec.json.Decoder(StreamHead)
response_decoder: Final = msgspec.json.Decoder(ChatResponse)
_encoder: Final = msgspec.json.Encoder()


# --- the request ------------------------------------------------------------------------------


def is_structured(interaction: CompiledInteraction) -> bool:
    """Whether the interaction asks for structured (JSON-schema) output."""
    return STRUCTURED_OUTPUT in interaction.required_capabilities


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def sampling_problem(policy: dict[str, Any]) -> tuple[str, str] | None:
    """``(key, expectation)`` for the first sampling setting of the wrong type, else ``None``."""
    for key in SAMPLING_KEYS:
        if key not in policy:
            continue
        value = policy[key]
        if key in ("temperature", "top_p"):
            if not _is_number(value):
                return key, "a number"
        elif key == "max_tokens":
            if not _is_int(value) or value <= 0:
                return key, "a positive integer"
        elif key == "seed":
            if not _is_int(value):
                return key, "an integer"
        elif not (
            isinstance(value, str)
            or (isinstance(value, list) and all(isinstance(item, str) for item in value))
        ):
            return key, "a string or a list of strings"
    return None


def build_body(interaction: CompiledInteraction, model: str) -> dict[str, Any]:
    """The non-streamed request body (the subject of the request fingerprint).

    ``model``; ``messages`` (role and content of every compiled message); for structured-output
    interactions ``response_format`` = ``json_schema`` named ``templiqx_output``, strict, with
    the contract's output schema verbatim; the declared tools, if any (see
    :mod:`templiqx_runtime_openai.tools`); then each sampling key present in ``runtime_policy``.
    Call :func:`sampling_problem` first: values are forwarded as they are.
    """
    body: dict[str, Any] = {
        "model": model,
        "messages": [
            {"role": message.role, "content": message.content} for message in interaction.messages
        ],
    }
    if is_structured(interaction):
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": OUTPUT_SCHEMA_NAME,
                "strict": True,
                "schema": interaction.output_schema,
            },
        }
    body.update(tool_fields(interaction))
    policy = interaction.runtime_policy
    for key in SAMPLING_KEYS:
        if key in policy:
            body[key] = policy[key]
    return body


def streaming_body(body: dict[str, Any]) -> dict[str, Any]:
    """The same body with ``stream: true`` and ``stream_options.include_usage``."""
    return {**body, "stream": True, "stream_options": {"include_usage": True}}


def encode_body(body: dict[str, Any]) -> bytes:
    """Compact JSON bytes of a request body."""
    return _encoder.encode(body)
