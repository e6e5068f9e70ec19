"""The wire hook: tell the kit how your provider's HTTP API says things, and it plays the model.

An adapter that talks HTTP is proven against the kit's loopback server. The kit decides *what*
the model answers (an :class:`~templiqx_conformance.wires.answer.Answer`); a :class:`Wire` —
a few dozen lines, written once per provider — says *how* the provider writes it: the JSON body
of a plain response, the frames of a stream in the provider's :class:`~templiqx_conformance.
wires.framing.Framing` (SSE with or without named events, NDJSON, a JSON array, or no stream at
all), the body of an HTTP error, and — only if the provider does that — an error reported
inside a stream or with a 200 status. The kit then serves every case in that framing.

Rules a wire keeps (the kit's expectations are computed from the answer, not from your bytes):

* **One frame per fragment.** Each fragment of ``answer.fragments`` (and, unless
  :attr:`Wire.whole_tool_arguments`, each tool call's argument fragment) travels in its own
  frame, in the order :meth:`~templiqx_conformance.wires.answer.Answer.tool_call_fragments`
  gives; a conforming adapter emits one ``Delta`` (or ``ToolCallDelta``) per non-empty one.
* **No frame depends on later ones.** A real provider cannot know what it will say next (the kit
  finds "the stream up to fragment *n*" by comparing the encodings of shorter answers).
* **The last frame ends the stream** (``data: [DONE]``, ``message_stop``, ``"done": true``):
  every proper prefix is a truncated stream that the adapter must refuse.
* When the provider cannot say an answer on one path (a forced tool call's whole ``input``
  cannot be non-JSON text), raise :class:`UnrepresentableError`; the kit skips that case.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from templiqx_conformance.loopback import RecordedRequest
from templiqx_conformance.wires.answer import Answer
from templiqx_conformance.wires.framing import SSE, Framing
from templiqx_contracts import (
    CompiledInteraction,
    Delta,
    ToolCallDelta,
    ToolSpec,
    canonical_json,
    declared_tools,
)

__all__ = [
    "Recording",
    "UnrepresentableError",
    "Wire",
    "WireFault",
    "declared_tool_problems",
]


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
class WireFault:
    """A provider-specific way to fail, served by the kit beside its own fault matrix.

    ``whole`` is the JSON body of a 200 reply to a plain request, ``stream`` the frames answered
    to a streaming request (``None``: that path is skipped); ``code`` is the runtime failure code
    the adapter must raise for it. ``quiet`` says the failure must not repeat the provider's
    text at all (a refusal: DECISIONS 7b), where other failures may show it sanitised
    (DECISIONS 20).
    """

    label: str
    code: str
    whole: Any = None
    stream: Sequence[Any] | None = None
    quiet: bool = False


@dataclass(frozen=True)
class Recording:
    """A provider response recorded (or written by hand in its exact shape) with what it means.

    ``stream`` is the raw body of a streamed response (in the wire's framing), ``whole`` the raw
    body of a plain one (either may be ``None``). ``output`` is the receipt output the adapter
    must produce from it, ``deltas`` the delta events it must emit while streaming (``None``:
    not compared) — or, with ``failure`` set, the runtime failure code it must raise instead
    (a refusal, a cut-off structured answer, an error event). ``capability`` picks the kit's
    request: ``"structured_output"``, ``"text"`` or ``"tool_calling"`` (the tool-call probe's,
    which declares ``get_weather`` and ``get_stock_price``); a tool-use recording is replayed
    to every adapter, whether or not it declares ``tool_calling``. ``content_type`` defaults to
    the wire framing's.

    The kit replays ``stream`` whole, one byte per write, and cut at every frame boundary (each
    cut must fail); ``whole`` through ``execute`` (its receipt must equal the streamed one).
    """

    name: str
    output: Any = None
    stream: bytes | None = None
    whole: bytes | None = None
    deltas: Sequence[Delta | ToolCallDelta] | None = None
    capability: str = "structured_output"
    failure: str | None = None
    content_type: str | None = None


class Wire(abc.ABC):
    """How one provider's HTTP API says what the model answers (see the module docstring).

    Class attributes:

    * ``name`` — the transport name shown in reports.
    * ``base_path`` — appended to the loopback server's root to make the base URL your factory
      receives (``"/v1"`` gives ``http://127.0.0.1:<port>/v1``).
    * ``request_path`` — where the adapter must POST (``"/v1/messages"``).
    * ``framing`` — how streams are framed (:data:`~templiqx_conformance.wires.framing.SSE`,
      ``NDJSON``, ``JSON_ARRAY`` or ``WHOLE_BODY``).
    * ``tool_calls`` — the provider can answer with tool calls.
    * ``interleaves_tool_calls`` — it streams parallel calls' fragments interleaved.
    * ``whole_tool_arguments`` — it sends each call's arguments whole, in one frame (Ollama),
      instead of in fragments; the adapter then emits one ``ToolCallDelta`` per call.
    * ``tool_call_ids`` — it gives each call an id; when ``False`` the adapter makes its own, and
      the kit asks only that they be distinct non-empty strings, the same on both paths.
    * ``in_band_error_code`` — the runtime code the provider's in-band error means (``None``:
      any runtime failure code will do).
    """

    name: str = "custom"
    base_path: str = ""
    request_path: str = "/"
    framing: Framing = SSE
    tool_calls: bool = True
    interleaves_tool_calls: bool = False
    whole_tool_arguments: bool = False
    tool_call_ids: bool = True
    in_band_error_code: str | None = None

    def is_stream_request(self, request: RecordedRequest) -> bool:
        """Whether the adapter asked for a stream (default: ``"stream": true`` in a JSON body)."""
        body = request.json
        return isinstance(body, dict) and body.get("stream") is True

    # --- answers --------------------------------------------------------------------------

    @abc.abstractmethod
    def encode_whole(self, answer: Answer) -> Any:
        """The JSON body of a 200 response to a plain request answering ``answer``."""

    def encode_stream(self, answer: Answer) -> Sequence[Any]:
        """The frames of a streamed response answering ``answer``, the ending one last.

        Required unless the framing is ``WHOLE_BODY`` (then :meth:`encode_whole` answers
        streaming requests too).
        """
        raise NotImplementedError(
            f"the {self.name} wire streams in {self.framing.name} but does not implement "
            "encode_stream(answer)"
        )

    # --- failures -------------------------------------------------------------------------

    @abc.abstractmethod
    def encode_error(self, status: int, message: str) -> Any:
        """The JSON body the provider sends with HTTP ``status``, carrying ``message``."""

    def encode_stream_error(self, message: str) -> Sequence[Any] | None:
        """The frame(s) by which the provider reports an error inside a stream it has begun
        (an ``error`` event, an ``{"error": ...}`` line), or ``None`` if it never does."""
        return None

    def encode_whole_error(self, message: str) -> Any | None:
        """The body of a *200* reply by which the provider reports an error to a plain request,
        or ``None`` (the default) if it reports errors only with an error status."""
        return None

    def extra_faults(self, message: str) -> Sequence[WireFault]:
        """Provider-specific failures to add to the fault matrix (none by default)."""
        return ()

    # --- requests -------------------------------------------------------------------------

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

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, framing={self.framing.name})"
