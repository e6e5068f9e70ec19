"""The kit's own OpenAI-compatible responses, written to look like real provider traffic.

Nothing here is a recording: the kit writes every completion and event stream itself, modelled
on what OpenAI-compatible servers send — an envelope with ``id``/``object``/``created``/``model``/
``system_fingerprint``, a role-only first chunk, content in token-sized fragments, a finish
chunk, a usage chunk with an empty ``choices`` list (``stream_options.include_usage``),
``: keep-alive`` comments, and ``data: [DONE]``. Parallel tool calls follow the shape OpenAI
streams: each call's first fragment carries ``id``, ``type`` and the function ``name`` with empty
``arguments``; later fragments carry only ``index`` and an ``arguments`` piece.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from templiqx_contracts import Delta, ToolCallDelta

__all__ = [
    "MODEL",
    "ServedCompletion",
    "ToolCallSpec",
    "completion",
    "content_completion",
    "fragments",
    "frame",
    "stream_bytes",
    "stream_chunk",
    "tool_call_completion",
]

MODEL = "kit-model-2026-01-15"
_ID = "chatcmpl-templiqxkit0001"
_CREATED = 1767225600
_FINGERPRINT = "fp_templiqx_kit"
USAGE = {
    "prompt_tokens": 31,
    "completion_tokens": 12,
    "total_tokens": 43,
    "prompt_tokens_details": {"cached_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0},
}

_TOKEN = re.compile(r"\s*[^\s]{1,4}|\s+", re.DOTALL)


def fragments(text: str) -> list[str]:
    """``text`` cut into token-sized pieces (at most four visible characters each)."""
    return _TOKEN.findall(text)


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def frame(payload: Any, *, line_end: str = "\n") -> bytes:
    """One ``data:`` event (compact JSON for objects, verbatim for strings), blank line after."""
    text = payload if isinstance(payload, str) else _json(payload)
    return f"data: {text}{line_end}{line_end}".encode()


def stream_chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    empty_choices: bool = False,
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with a single choice (or none, for the usage chunk)."""
    choices: list[dict[str, Any]] = (
        []
        if empty_choices
        else [
            {
                "index": 0,
                "delta": delta if delta is not None else {},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ]
    )
    return {
        "id": _ID,
        "object": "chat.completion.chunk",
        "created": _CREATED,
        "model": MODEL,
        "system_fingerprint": _FINGERPRINT,
        "choices": choices,
        "usage": usage,
    }


def completion(message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
    """A whole ``chat.completion`` with one choice."""
    return {
        "id": _ID,
        "object": "chat.completion",
        "created": _CREATED,
        "model": MODEL,
        "system_fingerprint": _FINGERPRINT,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "refusal": None, **message},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": USAGE,
    }


@dataclass(frozen=True)
class ToolCallSpec:
    """One tool call the kit's model makes: its id, function name and argument fragments."""

    id: str
    name: str
    argument_fragments: tuple[str, ...]

    @property
    def arguments(self) -> str:
        """The whole arguments string."""
        return "".join(self.argument_fragments)


@dataclass(frozen=True)
class ServedCompletion:
    """One logical completion, served whole (to ``execute``) or as an event stream.

    ``frames`` are the stream's events in order: JSON objects become ``data:`` events, the string
    ``"[DONE]"`` the sentinel, and strings starting with ``:`` are written as comment lines.
    ``deltas`` are the stream events a conforming adapter emits for it, ``output`` the receipt
    output it produces.
    """

    name: str
    whole: dict[str, Any]
    frames: tuple[Any, ...]
    deltas: tuple[Delta | ToolCallDelta, ...]
    output: Any
    extra: dict[str, Any] = field(default_factory=dict)


def stream_bytes(frames: tuple[Any, ...] | list[Any], *, line_end: str = "\n") -> list[bytes]:
    """The writes of an event stream, one per frame (comments become ``:`` lines)."""
    writes = []
    for item in frames:
        if isinstance(item, str) and item.startswith(":"):
            writes.append(f"{item}{line_end}{line_end}".encode())
        else:
            writes.append(frame(item, line_end=line_end))
    return writes


def content_completion(
    name: str,
    content: str,
    output: Any,
    *,
    keepalive: bool = False,
    finish_reason: str = "stop",
) -> ServedCompletion:
    """A completion whose answer is ``content`` (JSON text or plain text)."""
    pieces = fragments(content)
    frames: list[Any] = []
    if keepalive:
        frames.append(": keep-alive")
    frames.append(stream_chunk({"role": "assistant", "content": "", "refusal": None}))
    for index, piece in enumerate(pieces):
        frames.append(stream_chunk({"content": piece}))
        if keepalive and index % 3 == 1:
            frames.append(": keep-alive")
    frames.append(stream_chunk({}, finish_reason=finish_reason))
    if keepalive:
        frames.append(": keep-alive")
    frames.append(stream_chunk(None, usage=USAGE, empty_choices=True))
    frames.append("[DONE]")
    return ServedCompletion(
        name=name,
        whole=completion({"content": content}, finish_reason),
        frames=tuple(frames),
        deltas=tuple(Delta(text=piece) for piece in pieces),
        output=output,
    )


def tool_call_completion(
    name: str, calls: tuple[ToolCallSpec, ...], *, interleaved: bool = False
) -> ServedCompletion:
    """A completion that ends in parallel tool calls instead of content.

    Without ``interleaved`` each call streams all its fragments before the next opens (what
    OpenAI sends); with it, the calls' fragments alternate.
    """
    frames: list[Any] = [stream_chunk({"role": "assistant", "content": None, "refusal": None})]
    headers = {
        index: stream_chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for index, call in enumerate(calls)
    }
    order: list[tuple[int, str]] = []
    if interleaved:
        longest = max(len(call.argument_fragments) for call in calls)
        for step in range(longest):
            for index, call in enumerate(calls):
                if step < len(call.argument_fragments):
                    order.append((index, call.argument_fragments[step]))
    else:
        for index, call in enumerate(calls):
            order.extend((index, piece) for piece in call.argument_fragments)
    opened: set[int] = set()
    deltas: list[Delta | ToolCallDelta] = []
    for index, piece in order:
        if index not in opened:
            frames.append(headers[index])
            opened.add(index)
        frames.append(
            stream_chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        )
        deltas.append(ToolCallDelta(name=calls[index].name, arguments_fragment=piece))
    frames.append(stream_chunk({}, finish_reason="tool_calls"))
    frames.append(stream_chunk(None, usage=USAGE, empty_choices=True))
    frames.append("[DONE]")
    whole = completion(
        {
            "content": None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in calls
            ],
        },
        "tool_calls",
    )
    output = {
        "tool_calls": [
            {"id": call.id, "name": call.name, "arguments": json.loads(call.arguments)}
            for call in calls
        ]
    }
    return ServedCompletion(
        name=name, whole=whole, frames=tuple(frames), deltas=tuple(deltas), output=output
    )
