"""Scripted tool calls: the ``tool_call`` stream event of a scenario manifest.

A scenario scripts a model that answers with tool calls as ``tool_call`` events between
``start`` and ``end``, one per arguments fragment::

    {"kind": "tool_call", "id": "t1", "call_id": "call_1", "name": "lookup_account",
     "arguments": "{\\"email\\": "}

Streamed, each non-empty fragment is a ``ToolCallDelta`` (DECISIONS 7); aggregated, the calls
become the output ``{"tool_calls": [{"id": call_id, "name": …, "arguments": <parsed JSON>}]}``
in the order they start — exactly the receipt the non-streamed execution returns. A call's
fragments come together (another call may not start in between) and always carry the call's
name, and the joined fragments must be JSON, so the events read back unambiguously.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from templiqx_contracts import TOOL_CALLS_KEY, JSONDecodeError, decode_json
from templiqx_mock.errors import ScenarioError

__all__ = ["StreamToolCall", "check_tool_calls", "scripted_tool_answer"]


class StreamToolCall(
    msgspec.Struct, kw_only=True, forbid_unknown_fields=True, tag_field="kind", tag="tool_call"
):
    """One fragment of a tool call's JSON arguments; streamed as a ``ToolCallDelta``.

    ``id`` is the event's id, ``call_id`` the tool call's (shared by its fragments), ``name``
    the tool called; ``arguments`` may be empty (a call's header).
    """

    id: str
    call_id: str
    name: str
    arguments: str = ""

    @property
    def kind(self) -> str:
        """The tag, ``tool_call``."""
        return "tool_call"


def _joined(events: Iterable[object]) -> list[tuple[str, str, str]]:
    """``(call_id, name, joined arguments)`` per call, in the order the calls start."""
    calls: dict[str, tuple[str, list[str]]] = {}
    for event in events:
        if isinstance(event, StreamToolCall):
            calls.setdefault(event.call_id, (event.name, []))[1].append(event.arguments)
    return [(call_id, name, "".join(parts)) for call_id, (name, parts) in calls.items()]


def check_tool_calls(events: Iterable[object]) -> None:
    """Raise :class:`ScenarioError` for the first tool-call rule a stream breaks."""
    names: dict[str, str] = {}
    current: str | None = None
    for event in events:
        if not isinstance(event, StreamToolCall):
            continue
        if not event.call_id.strip() or not event.name.strip():
            raise ScenarioError(f"tool_call '{event.id}' must set a non-empty call_id and name")
        known = names.get(event.call_id)
        if known is None:
            names[event.call_id] = event.name
        elif event.call_id != current:
            raise ScenarioError(
                f"tool call '{event.call_id}' resumes after another call started; script each "
                "call's fragments together"
            )
        elif known != event.name:
            raise ScenarioError(
                f"tool call '{event.call_id}' changes its name from '{known}' to '{event.name}'"
            )
        current = event.call_id
    for call_id, _name, text in _joined(events):
        try:
            decode_json(text)
        except JSONDecodeError as exc:
            raise ScenarioError(f"tool call '{call_id}' arguments are not JSON: {exc}") from None


def scripted_tool_answer(events: Iterable[object]) -> dict[str, Any] | None:
    """The tool-call answer the events script, or ``None`` when they script no tool call.

    The events must have passed :func:`check_tool_calls`.
    """
    calls = _joined(events)
    if not calls:
        return None
    return {
        TOOL_CALLS_KEY: [
            {"id": call_id, "name": name, "arguments": decode_json(text)}
            for call_id, name, text in calls
        ]
    }
