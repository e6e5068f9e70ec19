"""The wire hook: tell the kit how your provider's HTTP API says things, and it plays the model.

An adapter that talks HTTP to a provider is proven against the kit's loopback server. The kit
decides *what* the model answers (an :class:`Answer`: text or JSON in token-sized fragments,
tool calls, a cut at the token limit); a :class:`Wire` — written by the adapter's author, a
few dozen lines — says *how* the provider puts that into bytes: the whole JSON body of a plain
response, the server-sent events of a stream, the body of an HTTP error, an in-band error event.
The kit then serves it with all of its machinery: every byte split, CRLF line endings,
keep-alive comments, cuts at every event boundary, silence, oversized fillers, faults.

The kit ships one wire, ``openai`` (:class:`~templiqx_conformance.openai_wire.OpenAIWire`);
others are passed as ``AdapterTarget(transport=MyWire())`` or registered by name under the
entry-point group :data:`WIRE_ENTRY_POINTS`.

Rules a wire keeps (the kit's expectations are computed from the answer, not from your bytes):

* **One event per fragment.** Each non-empty fragment of ``answer.fragments`` (and of each tool
  call's ``argument_fragments``) travels in its own event, in the order
  :meth:`Answer.tool_call_fragments` gives; a conforming adapter emits one ``Delta`` (or
  ``ToolCallDelta``) per such event.
* **No event depends on later ones.** A real provider cannot know what it will say next, so
  an event must not change when later fragments change (the kit cuts streams after a given
  fragment by comparing the encodings of shorter answers).
* **The last event ends the stream** (``message_stop``, ``data: [DONE]``): every proper
  prefix of the events is a truncated stream that the adapter must refuse.
* A wire may also say what a request must carry (:meth:`Wire.request_problems`) and how it
  declares the interaction's tools (:meth:`Wire.tool_problems`, which has a provider-neutral
  default).
* When the provider cannot say an answer at all on one path (a forced tool call's whole
  ``input`` cannot be non-JSON text), raise :class:`UnrepresentableError`; the kit skips that case.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from templiqx_conformance.loopback import RecordedRequest, SSEEvent
from templiqx_contracts import (
    CompiledInteraction,
    Delta,
    ToolCallDelta,
    ToolSpec,
    canonical_json,
    declared_tools,
)

__all__ = [
    "WIRE_ENTRY_POINTS",
    "Answer",
    "Recording",
    "SSEEvent",
    "ToolCall",
    "UnrepresentableError",
    "Wire",
    "WireFault",
    "declared_tool_problems",
    "fragments",
]

WIRE_ENTRY_POINTS: Final = "templiqx.conformance.wires"
"""Entry-point group naming wires: ``name = "package.module:MyWire"`` (a class, an instance or
a zero-argument factory). ``templiqx-conformance run ... --transport name`` then finds it."""

_TOKEN = re.compile(r"\s*[^\s]{1,4}|\s+", re.DOTALL)


def fragments(text: str) -> tuple[str, ...]:
    """``text`` cut into token-sized pieces (at most four visible characters each)."""
    return tuple(_TOKEN.findall(text))


def _objects(value: Any) -> list[dict[str, Any]]:
    """Every JSON object in ``value``, itself included, outermost first."""
    found: list[dict[str, Any]] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return found


def _canonical(value: Any) -> bytes | None:
    try:
        return canonical_json(value)
    except (TypeError, ValueError):
        return None


def _holds(value: Any, wanted: bytes) -> bool:
    """Whether some value inside ``value`` (itself included) has the canonical JSON ``wanted``."""
    stack = [value]
    while stack:
        item = stack.pop()
        if _canonical(item) == wanted:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def declared_tool_problems(body: Any, tools: Sequence[ToolSpec]) -> list[str]:
    """Problems with a request body that must declare ``tools`` (see :meth:`Wire.tool_problems`).

    A tool counts as declared when one object of ``body`` has a member whose value is the
    tool's name and holds, at any depth, its description and its arguments schema.
    """
    if not isinstance(body, dict):
        return ["the body is not a JSON object"]
    problems = []
    objects = _objects(body)
    for tool in tools:
        named = [item for item in objects if any(v == tool.name for v in item.values())]
        if not named:
            problems.append(
                f"declared tool {tool.name!r} is not in the request: no object of the body names "
                "it (send every declared tool with its description and arguments schema)"
            )
            continue
        schema = _canonical(tool.arguments)
        description = _canonical(tool.description)
        if not any(schema is not None and _holds(item, schema) for item in named):
            problems.append(
                f"the request names tool {tool.name!r} but does not carry its arguments schema "
                "beside the name (send the interaction's schema verbatim)"
            )
        elif not any(description is not None and _holds(item, description) for item in named):
            problems.append(
                f"the request names tool {tool.name!r} but does not carry its description "
                f"{tool.description!r} beside the name"
            )
    return problems


class UnrepresentableError(Exception):
    """Raised by a :class:`Wire` for an answer its provider cannot express on that path."""


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


@dataclass(frozen=True)
class Answer:
    """What the kit's model says, for a :class:`Wire` to put into its provider's bytes.

    ``fragments`` is the content in token-sized pieces: JSON text when ``structured`` (the
    request asked for structured output), plain text otherwise. ``tool_calls`` replaces the
    content when the model answers with tool calls. ``stop`` is why the model stopped:
    ``"end"`` (it finished; ``"tool_calls"`` is implied by tool calls) or ``"length"`` (cut
    at the token limit). ``interleaved`` asks for parallel tool calls whose fragments alternate
    (only wires with :attr:`Wire.interleaves_tool_calls` are asked).
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
        """``(call index, fragment)`` in the order the stream sends them."""
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

    def expected_deltas(self) -> list[Delta | ToolCallDelta]:
        """The delta events a conforming streaming adapter emits for this answer."""
        if self.tool_calls:
            return [
                ToolCallDelta(name=self.tool_calls[index].name, arguments_fragment=piece)
                for index, piece in self.tool_call_fragments()
                if piece
            ]
        return [Delta(text=piece) for piece in self.fragments if piece]

    def truncated(self, count: int) -> Answer:
        """The same answer with only its first ``count`` fragments."""
        return replace(self, fragments=self.fragments[:count])


@dataclass(frozen=True)
class WireFault:
    """A provider-specific way to fail, served by the kit beside its own fault matrix.

    ``whole`` is the JSON body of a 200 reply to a plain request, ``events`` the stream
    answered to a streaming request (``None``: that path is skipped); ``code`` is the runtime
    failure code the adapter must raise for it. ``quiet`` says the failure must not repeat the
    provider's text at all (a refusal: DECISIONS 7b), where other failures may show it
    sanitised (DECISIONS 20).
    """

    label: str
    code: str
    whole: Any = None
    events: Sequence[SSEEvent] | None = None
    quiet: bool = False


@dataclass(frozen=True)
class Recording:
    """A provider response recorded (or written by hand in its exact shape) with what it means.

    ``stream`` is the raw body of a streamed response (server-sent events), ``whole`` the raw
    body of a plain one (either may be ``None``). ``output`` is the receipt output the adapter
    must produce from it, ``deltas`` the delta events it must emit while streaming (``None``:
    not compared). ``capability`` picks the kit's request: ``"structured_output"``, ``"text"`` or
    ``"tool_calling"`` (the tool-call probe's, which declares ``get_weather`` and
    ``get_stock_price``).
    The kit replays ``stream`` whole, one byte per write, and cut at every event boundary (each
    cut must fail); ``whole`` through ``execute``.
    """

    name: str
    output: Any
    stream: bytes | None = None
    whole: bytes | None = None
    deltas: Sequence[Delta | ToolCallDelta] | None = None
    capability: str = "structured_output"
    content_type: str = "text/event-stream"


class Wire(abc.ABC):
    """How one provider's HTTP API says what the model answers (see the module docstring).

    Class attributes:

    * ``name`` — the transport name shown in reports.
    * ``base_path`` — appended to the loopback server's root to make the base URL your factory
      receives (``"/v1"`` gives ``http://127.0.0.1:<port>/v1``).
    * ``request_path`` — where the adapter must POST (``"/v1/messages"``).
    * ``interleaves_tool_calls`` — the provider streams parallel tool calls interleaved.
    * ``tool_calls`` — the provider can answer with tool calls (the kit sends its tool-call probe
      to adapters declaring ``tool_calling``; :meth:`tool_problems` says how requests declare
      the tools).
    """

    name: str = "custom"
    base_path: str = ""
    request_path: str = "/"
    interleaves_tool_calls: bool = False
    tool_calls: bool = True

    def is_stream_request(self, request: RecordedRequest) -> bool:
        """Whether the adapter asked for a stream (default: ``"stream": true`` in a JSON body)."""
        body = request.json
        return isinstance(body, dict) and body.get("stream") is True

    @abc.abstractmethod
    def encode_whole(self, answer: Answer) -> Any:
        """The JSON body of a 200 response to a plain request answering ``answer``."""

    @abc.abstractmethod
    def encode_stream(self, answer: Answer) -> Sequence[SSEEvent]:
        """The events of a streamed response answering ``answer``, the ending one last."""

    @abc.abstractmethod
    def encode_error(self, status: int, message: str) -> Any:
        """The JSON body the provider sends with HTTP ``status``, carrying ``message``."""

    @abc.abstractmethod
    def encode_stream_error(self, message: str) -> Sequence[SSEEvent]:
        """The event(s) by which the provider reports an error in the middle of a stream."""

    def request_problems(
        self, request: RecordedRequest, interaction: CompiledInteraction
    ) -> list[str]:
        """Wire-specific problems with a request the adapter sent (none by default).

        E.g. the messages do not carry the interaction's messages. One line per problem.
        """
        return []

    def tool_problems(
        self, request: RecordedRequest, interaction: CompiledInteraction
    ) -> list[str]:
        """Problems with how a request declares ``interaction``'s tools to the provider.

        Called (by ``tools.declared_calls``) only for interactions that declare tools. The
        default knows no provider: it asks that each declared tool's name, description and
        arguments schema (verbatim) appear together in one object of the JSON body, which any
        provider's tool list does (``{"name", "description", "input_schema"}``, OpenAI's
        ``function``, ...). Override it to check your provider's exact shape, the tool choice
        and parallel calls included (``super().tool_problems(...)`` keeps the default).
        """
        return declared_tool_problems(request.json, declared_tools(interaction))

    def extra_faults(self, message: str) -> Sequence[WireFault]:
        """Provider-specific failures to add to the fault matrix (none by default)."""
        return ()
