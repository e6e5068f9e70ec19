"""The ``openai`` wire: OpenAI-compatible chat completions, the kit's built-in :class:`Wire`.

Nothing here is a recording: the kit writes every completion and event stream itself, modelled
on what OpenAI-compatible servers send — an envelope with ``id``/``object``/``created``/``model``/
``system_fingerprint``, a role-only first chunk, content in token-sized fragments, a finish
chunk, a usage chunk with an empty ``choices`` list (``stream_options.include_usage``), and
``data: [DONE]``. Parallel tool calls follow the shape OpenAI streams: each call's first fragment
carries ``id``, ``type`` and the function ``name`` with empty ``arguments``; later fragments
carry only ``index`` and an ``arguments`` piece (sequential, or interleaved when asked).

Requests must carry the interaction's messages in order and, when it declares tools, the
members :func:`tool_fields` gives: ``tools`` (each a function whose ``parameters`` are its
arguments schema), ``tool_choice`` and ``parallel_tool_calls``, exactly as the interaction says.

Besides the kit's generic fault matrix, the wire adds OpenAI's own failures: a completion with no
choices (``INVALID_RESPONSE``), a refusal and a ``content_filter`` finish (``PERMANENT``,
DECISIONS 7b).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from templiqx_conformance.loopback import RecordedRequest, SSEEvent
from templiqx_conformance.wires.answer import Answer, fragments
from templiqx_conformance.wires.framing import SSE
from templiqx_conformance.wires.wire import Wire, WireFault
from templiqx_contracts import (
    CompiledInteraction,
    NamedToolChoice,
    canonical_json,
    declared_tools,
    parallel_tool_calls_of,
    tool_choice_of,
)
from templiqx_ports import RuntimeFailureCode

__all__ = ["MODEL", "USAGE", "OpenAIWire", "completion", "stream_chunk", "tool_fields"]

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
_DONE = SSEEvent("[DONE]")
_FINISH = {"end": "stop", "length": "length"}


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


def _events(chunks: list[dict[str, Any]]) -> list[SSEEvent]:
    return [SSEEvent(chunk) for chunk in chunks]


def _ending(finish_reason: str) -> list[SSEEvent]:
    return [
        SSEEvent(stream_chunk({}, finish_reason=finish_reason)),
        SSEEvent(stream_chunk(None, usage=USAGE, empty_choices=True)),
        _DONE,
    ]


class OpenAIWire(Wire):
    """``POST {base_url}/chat/completions``; the factory receives ``http://127.0.0.1:<port>/v1``."""

    name = "openai"
    base_path = "/v1"
    request_path = "/v1/chat/completions"
    framing = SSE
    interleaves_tool_calls = True

    # --- answers ----------------------------------------------------------------------------

    def encode_whole(self, answer: Answer) -> Any:
        if answer.tool_calls:
            calls = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in answer.tool_calls
            ]
            return completion({"content": None, "tool_calls": calls}, "tool_calls")
        return completion({"content": answer.text}, _FINISH[answer.stop])

    def encode_stream(self, answer: Answer) -> Sequence[SSEEvent]:
        if answer.tool_calls:
            return self._tool_call_stream(answer)
        chunks = [stream_chunk({"role": "assistant", "content": "", "refusal": None})]
        chunks.extend(stream_chunk({"content": piece}) for piece in answer.fragments)
        return [*_events(chunks), *_ending(_FINISH[answer.stop])]

    def _tool_call_stream(self, answer: Answer) -> list[SSEEvent]:
        chunks = [stream_chunk({"role": "assistant", "content": None, "refusal": None})]
        opened: set[int] = set()
        for index, piece in answer.tool_call_fragments():
            if index not in opened:
                call = answer.tool_calls[index]
                header = {
                    "index": index,
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }
                chunks.append(stream_chunk({"tool_calls": [header]}))
                opened.add(index)
            part = {"index": index, "function": {"arguments": piece}}
            chunks.append(stream_chunk({"tool_calls": [part]}))
        return [*_events(chunks), *_ending("tool_calls")]

    # --- failures ---------------------------------------------------------------------------

    def encode_error(self, status: int, message: str) -> Any:
        return {"error": {"message": message, "type": "server_error", "code": None}}

    def encode_stream_error(self, message: str) -> Sequence[Any] | None:
        error = {"message": message, "type": "server_error", "param": None, "code": None}
        return [SSEEvent({"error": error})]

    def extra_faults(self, message: str) -> Sequence[WireFault]:
        invalid = RuntimeFailureCode.INVALID_RESPONSE.value
        permanent = RuntimeFailureCode.PERMANENT.value
        refusal_stream = [
            stream_chunk({"role": "assistant", "content": None, "refusal": ""}),
            *(stream_chunk({"refusal": piece}) for piece in fragments(message)),
        ]
        filtered = Answer(name="filtered", fragments=fragments('{"ok":'), structured=True)
        filtered_stream = [
            *_events([stream_chunk({"role": "assistant", "content": "", "refusal": None})]),
            *_events([stream_chunk({"content": piece}) for piece in filtered.fragments]),
            *_ending("content_filter"),
        ]
        return [
            WireFault(
                "no choices",
                invalid,
                whole={**completion({"content": "x"}, "stop"), "choices": []},
                stream=[SSEEvent(stream_chunk(None, usage=None, empty_choices=True)), _DONE],
            ),
            WireFault(
                "refusal",
                permanent,
                quiet=True,
                whole=completion({"content": None, "refusal": message}, "stop"),
                stream=[
                    *_events(refusal_stream),
                    SSEEvent(stream_chunk({}, finish_reason="stop")),
                    _DONE,
                ],
            ),
            WireFault(
                "finish_reason content_filter",
                permanent,
                whole=completion({"content": filtered.text}, "content_filter"),
                stream=filtered_stream,
            ),
        ]

    # --- requests ---------------------------------------------------------------------------

    def request_problems(
        self, request: RecordedRequest, interaction: CompiledInteraction
    ) -> list[str]:
        body = request.json
        if not isinstance(body, dict):
            return ["the body is not a JSON object"]
        expected = [
            {"role": message.role, "content": message.content} for message in interaction.messages
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
        if trimmed != expected:
            return [
                f"messages {_compact(sent)} must be the interaction's messages "
                f"{_compact(expected)}, in order"
            ]
        return []

    def tool_problems(
        self, request: RecordedRequest, interaction: CompiledInteraction
    ) -> list[str]:
        body = request.json
        if not isinstance(body, dict):
            return ["the body is not a JSON object"]
        tools = declared_tools(interaction)
        expected = tool_fields(interaction)
        problems = []
        if not _same(body.get("tools"), expected["tools"]):
            names = ", ".join(tool.name for tool in tools)
            problems.append(
                f"tools is {_compact(body.get('tools'))}; expected the declared tools ({names}) "
                'in order, each {"type": "function", "function": {"name", "description", '
                '"parameters": <its arguments schema>}}'
            )
        for member in ("tool_choice", "parallel_tool_calls"):
            if not _same(body.get(member), expected[member]):
                problems.append(
                    f"{member} is {_compact(body.get(member))}, expected "
                    f"{_compact(expected[member])} (the interaction's {member})"
                )
        return problems


def tool_fields(interaction: CompiledInteraction) -> dict[str, Any]:
    """The request members that declare ``interaction``'s tools on the OpenAI wire.

    ``tools`` lists each tool as a function whose ``parameters`` are its arguments schema;
    ``tool_choice`` is the word, or the forced function; ``parallel_tool_calls`` the boolean.
    """
    choice = tool_choice_of(interaction)
    return {
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.arguments,
                },
            }
            for tool in declared_tools(interaction)
        ],
        "tool_choice": (
            {"type": "function", "function": {"name": choice.tool}}
            if isinstance(choice, NamedToolChoice)
            else choice
        ),
        "parallel_tool_calls": parallel_tool_calls_of(interaction),
    }


def _same(a: Any, b: Any) -> bool:
    try:
        return canonical_json(a) == canonical_json(b)
    except (TypeError, ValueError):
        return False


def _compact(value: Any) -> str:
    try:
        text = canonical_json(value).decode("utf-8")
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 160 else text[:159] + "…"
