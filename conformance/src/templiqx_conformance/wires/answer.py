"""What the kit's model says: an :class:`Answer`, and the deltas an adapter must make of it.

The kit decides the answer (content in token-sized fragments, or tool calls; where the model
stopped); a :class:`~templiqx_conformance.wires.Wire` only writes it down in its provider's
bytes. Every expectation the checks hold an adapter to is computed from the answer, never from
those bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any, Literal

from templiqx_contracts import Delta, ToolCallDelta, canonical_json

__all__ = ["Answer", "ExpectedDelta", "ToolCall", "WholeCall", "fragments"]

_TOKEN = re.compile(r"\s*[^\s]{1,4}|\s+", re.DOTALL)


def fragments(text: str) -> tuple[str, ...]:
    """``text`` cut into token-sized pieces (at most four visible characters each)."""
    return tuple(_TOKEN.findall(text))


@dataclass(frozen=True)
class ToolCall:
    """One tool call the kit's model makes: its id, function name and argument fragments."""

    id: str
    name: str
    argument_fragments: tuple[str, ...]

    @property
    def arguments(self) -> str:
        """The whole arguments text (JSON)."""
        return "".join(self.argument_fragments)

    @property
    def parsed_arguments(self) -> Any:
        """The arguments as a JSON value (what a provider sending them whole puts on the wire)."""
        return json.loads(self.arguments)


@dataclass(frozen=True)
class WholeCall:
    """The delta expected for a tool call whose arguments the provider sends whole.

    The adapter emits one ``ToolCallDelta`` carrying the call's name and *some* JSON text of the
    arguments (the kit cannot know its spacing), so the text is compared by its parsed value.
    """

    name: str
    arguments: Any

    def matches(self, event: Any) -> bool:
        """Whether ``event`` is that ``ToolCallDelta``."""
        if not isinstance(event, ToolCallDelta) or event.name != self.name:
            return False
        try:
            return canonical_json(json.loads(event.arguments_fragment)) == canonical_json(
                self.arguments
            )
        except (TypeError, ValueError):
            return False


ExpectedDelta = Delta | ToolCallDelta | WholeCall
"""One expected delta: an exact event, or a :class:`WholeCall` compared by value."""


@dataclass(frozen=True)
class Answer:
    """What the kit's model says, for a :class:`~templiqx_conformance.wires.Wire` to write down.

    ``fragments`` is the content in token-sized pieces: JSON text when ``structured`` (the
    request asked for structured output), plain text otherwise. An empty fragment is an event
    that says nothing (an adapter emits no delta for it). ``tool_calls`` replaces the content
    when the model answers with tool calls. ``stop`` is why the model stopped: ``"end"`` (it
    finished; tool calls imply their own reason) or ``"length"`` (cut at the token limit).
    ``interleaved`` asks for parallel tool calls whose fragments alternate (only wires that say
    :attr:`~templiqx_conformance.wires.Wire.interleaves_tool_calls` are asked).
    """

    name: str
    fragments: tuple[str, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    structured: bool = False
    stop: Literal["end", "length"] = "end"
    interleaved: bool = False

    @property
    def text(self) -> str:
        """The whole content."""
        return "".join(self.fragments)

    def tool_call_fragments(self) -> list[tuple[int, str]]:
        """``(call index, fragment)`` in the order a fragmenting stream sends them."""
        order: list[tuple[int, str]] = []
        if self.interleaved:
            longest = max((len(call.argument_fragments) for call in self.tool_calls), default=0)
            for step in range(longest):
                for index, call in enumerate(self.tool_calls):
                    if step < len(call.argument_fragments):
                        order.append((index, call.argument_fragments[step]))
        else:
            for index, call in enumerate(self.tool_calls):
                order.extend((index, piece) for piece in call.argument_fragments)
        return order

    def expected_deltas(self, *, whole_arguments: bool = False) -> list[ExpectedDelta]:
        """The deltas a conforming streaming adapter emits for this answer, in order.

        One ``Delta`` per non-empty content fragment; for tool calls one ``ToolCallDelta`` per
        non-empty argument fragment, or — ``whole_arguments``, for providers that send each
        call's arguments in one piece — one per call, compared by value.
        """
        if self.tool_calls and whole_arguments:
            return [WholeCall(call.name, call.parsed_arguments) for call in self.tool_calls]
        if self.tool_calls:
            return [
                ToolCallDelta(name=self.tool_calls[index].name, arguments_fragment=piece)
                for index, piece in self.tool_call_fragments()
                if piece
            ]
        return [Delta(text=piece) for piece in self.fragments if piece]

    def truncated(self, count: int) -> Answer:
        """The same answer with only its first ``count`` fragments (of content, or of the
        tool calls' arguments in stream order)."""
        if not self.tool_calls:
            return replace(self, fragments=self.fragments[:count])
        kept: dict[int, list[str]] = {}
        for index, piece in self.tool_call_fragments()[:count]:
            kept.setdefault(index, []).append(piece)
        calls = tuple(
            replace(call, argument_fragments=tuple(kept.get(index, ())))
            for index, call in enumerate(self.tool_calls)
            if index in kept
        )
        return replace(self, tool_calls=calls)

    def with_idle_fragments(self) -> Answer:
        """The same answer with an empty fragment after every second one (events saying
        nothing, which must produce no delta)."""
        pieces: list[str] = []
        for index, piece in enumerate(self.fragments):
            pieces.append(piece)
            if index % 2 == 1:
                pieces.append("")
        return replace(self, name=f"{self.name} with empty events", fragments=tuple(pieces))
