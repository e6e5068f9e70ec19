"""The wire rig: a loopback server that plays the model in a provider's bytes, and adapters at it.

The author's factory receives ``http://127.0.0.1:<port>`` plus the wire's ``base_path``; the
adapter is expected to POST to the wire's ``request_path``. What the model says is set with
:meth:`WireRig.serve_answer` (an :class:`~templiqx_conformance.wire.Answer`, answered whole to a
plain request and as an event stream to a streaming one) or :meth:`WireRig.respond` (any
function of the recorded request).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Final

from templiqx_conformance.context import BrokenInvariantError
from templiqx_conformance.loopback import (
    Chunk,
    Exchange,
    LoopbackServer,
    RecordedRequest,
    Reply,
    SSEEvent,
    sse_comment,
)
from templiqx_conformance.probes import STRUCTURED_OUTPUT, Probe
from templiqx_conformance.rig import DrivenFailure, Rig
from templiqx_conformance.target import AdapterTarget
from templiqx_conformance.wire import Answer, UnrepresentableError, Wire, fragments
from templiqx_contracts import CompiledInteraction, ExecutionRequest
from templiqx_ports import RuntimeFailureCode

__all__ = [
    "HOLD_S",
    "IN_BAND_DELTAS",
    "MAX_LINE_BYTES",
    "MAX_RESPONSE_BYTES",
    "MAX_STREAM_BYTES",
    "PROVIDER_CONTROL",
    "PROVIDER_HEAD",
    "PROVIDER_TAIL",
    "RUNTIME_CODES",
    "StreamShape",
    "WireRig",
    "answer_for",
    "opening",
    "per_frame",
    "render",
    "request_for",
    "with_keepalives",
]

MAX_RESPONSE_BYTES: Final = 2_097_152
"""DECISIONS 9: a non-streamed body, and a stream's assembled output, are capped at 2 MiB."""
MAX_LINE_BYTES: Final = 1_048_576
"""DECISIONS 9: one event-stream line is capped at 1 MiB."""
MAX_STREAM_BYTES: Final = 67_108_864
"""DECISIONS 9: the raw bytes of one stream are capped at 64 MiB."""
IN_BAND_DELTAS: Final = 2
"""Content fragments a mid-stream failure sends before it fails."""
HOLD_S: Final = 0.5
"""How long a held stream waits for its ``hold`` event before sending the rest anyway."""
RUNTIME_CODES: Final = frozenset(code.value for code in RuntimeFailureCode) - {
    RuntimeFailureCode.CANCELLED.value
}
"""The codes a provider-side failure may carry (cancellation comes only from the caller)."""

PROVIDER_HEAD: Final = "PROVIDER-CANARY-7f3a"
"""Starts every error text the kit's provider sends (DECISIONS 20 lets adapters show it)."""
PROVIDER_TAIL: Final = "PROVIDER-TAIL-c41d"
"""Ends every provider error text, well past any display cap: it must never be shown."""
PROVIDER_CONTROL: Final = "\x1b[2J\x07"
"""Terminal control characters inside every provider error text: they must be removed."""

StreamShape = Callable[[list[bytes]], Reply]
"""Turns the writes of an event stream into the reply that sends them."""


def per_frame(writes: list[bytes]) -> Reply:
    """One write per event, chunked transfer encoding (what most servers do)."""
    return Reply.stream(writes)


def render(events: Sequence[SSEEvent], line_end: str = "\n") -> list[bytes]:
    """The writes of an event stream, one per event."""
    return [event.encode(line_end) for event in events]


def with_keepalives(writes: list[bytes], line_end: str = "\n") -> list[bytes]:
    """``writes`` with ``: keep-alive`` comments first, after every second event and before the
    last (readers must ignore them)."""
    comment = sse_comment(line_end=line_end)
    out = [comment]
    for index, write in enumerate(writes):
        if index == len(writes) - 1 or (index > 0 and index % 2 == 0):
            out.append(comment)
        out.append(write)
    return out


def opening(wire: Wire, answer: Answer, count: int) -> list[SSEEvent]:
    """The events of ``answer``'s stream up to and including its ``count``-th fragment.

    Found as the longest common prefix of the streams of ``answer`` and of ``answer`` cut to
    ``count`` fragments (events cannot depend on later fragments, so they agree up to there).
    """
    full = list(wire.encode_stream(answer))
    short = list(wire.encode_stream(answer.truncated(count)))
    common: list[SSEEvent] = []
    for mine, theirs in zip(full, short, strict=False):
        if mine.encode() != theirs.encode():
            break
        common.append(mine)
    return common


def answer_for(probe: Probe) -> Answer:
    """What the kit's model says to ``probe``."""
    structured = STRUCTURED_OUTPUT in probe.interaction.required_capabilities
    if probe.tool_calls:
        return Answer(name=probe.name, tool_calls=probe.tool_calls, structured=structured)
    return Answer(name=probe.name, fragments=fragments(probe.content), structured=structured)


def request_for(interaction: CompiledInteraction) -> ExecutionRequest:
    """A request for ``interaction`` without fixture output."""
    return ExecutionRequest(interaction=interaction, fixture_output=None)


class WireRig(Rig):
    """Runs the loopback server for one target; adapters get its base URL."""

    with_fixture = False

    def __init__(self, target: AdapterTarget) -> None:
        super().__init__(target)
        if target.wire is None:  # pragma: no cover - the runner pairs them
            raise ValueError("a WireRig needs a target with a transport")
        self.wire: Wire = target.wire
        self._lock = threading.Lock()
        self._responder: Callable[[RecordedRequest], Reply] = lambda _request: Reply.error(500)
        self.server = LoopbackServer(routes={self.wire.request_path: self._respond}).start()
        self.base_url = self.server.base_url + self.wire.base_path

    # --- the rig interface ----------------------------------------------------------------

    def make_adapter(self) -> Any:
        return self.call_factory(self.base_url)

    def make_adapter_for(self, base_url: str) -> Any:
        """An adapter pointed somewhere else (e.g. a closed port, or a prefixed route)."""
        return self.call_factory(base_url)

    def accepts(self, probe: Probe) -> bool:
        return self.wire.tool_calls or not probe.tool_calls

    def serve(self, probe: Probe, *, hold: threading.Event | None = None) -> None:
        try:
            self.serve_answer(answer_for(probe), hold=hold)
        except UnrepresentableError as exc:
            raise BrokenInvariantError(
                f"the wire {self.wire.name!r} cannot say the answer to the kit's probe "
                f"{probe.name!r} ({exc}); a Wire must encode every probe's answer"
            ) from exc

    def failures(self) -> list[DrivenFailure]:
        return [*super().failures(), *self._kit_failures()]

    def close(self) -> None:
        self.server.stop()

    # --- routing --------------------------------------------------------------------------

    def _respond(self, request: RecordedRequest) -> Reply:
        with self._lock:
            responder = self._responder
        return responder(request)

    def respond(self, responder: Callable[[RecordedRequest], Reply]) -> None:
        """Answer every request from now on with ``responder(request)``."""
        with self._lock:
            self._responder = responder

    def reply_always(self, reply: Reply) -> None:
        """Answer every request with ``reply``."""
        self.respond(lambda _request: reply)

    def split(self, stream: Reply, whole: Reply | None) -> Callable[[RecordedRequest], Reply]:
        """A responder: ``stream`` to streaming requests, ``whole`` to plain ones."""
        plain = whole if whole is not None else Reply.error(500)
        return lambda request: stream if self.wire.is_stream_request(request) else plain

    def recorded_requests(self) -> list[RecordedRequest]:
        """Every request the server received so far, in arrival order."""
        return self.server.requests

    def exchanges(self) -> list[Exchange]:
        """Every exchange so far: its request, and how and when the connection ended."""
        return self.server.exchanges

    def at_prefix(self, prefix: str, responder: Callable[[RecordedRequest], Reply]) -> str:
        """Route ``prefix`` + request path to ``responder``; the base URL for adapters there."""
        self.server.route(prefix + self.wire.request_path, responder)
        return self.server.base_url + prefix + self.wire.base_path

    # --- answers --------------------------------------------------------------------------

    def whole_reply(self, answer: Answer) -> Reply:
        """The plain response answering ``answer`` (raises :class:`UnrepresentableError`)."""
        return Reply.json(self.wire.encode_whole(answer))

    def stream_writes(self, answer: Answer, line_end: str = "\n") -> list[bytes]:
        """The writes of ``answer``'s stream (raises :class:`UnrepresentableError`)."""
        return render(self.wire.encode_stream(answer), line_end)

    def serve_answer(
        self,
        answer: Answer,
        *,
        line_end: str = "\n",
        shape: StreamShape = per_frame,
        hold: threading.Event | None = None,
    ) -> None:
        """Answer plain requests with ``answer`` whole and streaming ones with its events.

        ``hold``: after the first fragment's event the stream waits for ``hold`` (at most
        :data:`HOLD_S`) before sending the rest.
        """
        whole = self.whole_reply(answer)
        writes = self.stream_writes(answer, line_end)
        if hold is not None and len(answer.fragments) > 1:
            first = render(opening(self.wire, answer, 1), line_end)
            rest = b"".join(writes[len(first) :])
            stream = Reply.stream([*first, Chunk(rest, HOLD_S, hold)])
        else:
            stream = shape(writes)
        self.respond(self.split(stream, whole))

    def provider_message(self) -> str:
        """The error text the kit's provider sends: a canary head, terminal control characters,
        every credential the adapter holds (providers do echo keys), and a tail far past any
        display cap."""
        echoed = "".join(f" (credential {secret})" for _label, secret in self.secrets())
        return (
            f"{PROVIDER_HEAD}: the provider's own words{PROVIDER_CONTROL}{echoed} "
            + "and more detail " * 60
            + PROVIDER_TAIL
        )

    def main_answer(self, interaction: CompiledInteraction) -> Answer:
        """A content answer fitting ``interaction`` (JSON when it is structured)."""
        structured = STRUCTURED_OUTPUT in interaction.required_capabilities
        text = '{"note": "interrupted on purpose", "ok": true}' if structured else "Hello there."
        return Answer(name="main", fragments=fragments(text), structured=structured)

    # --- the kit's own failures -------------------------------------------------------------

    def _kit_failures(self) -> list[DrivenFailure]:
        message = self.provider_message()
        cases: list[DrivenFailure] = []
        for label, status, headers, code in (
            ("HTTP 429", 429, [("Retry-After", "3")], RuntimeFailureCode.RATE_LIMITED),
            ("HTTP 503", 503, [], RuntimeFailureCode.UNAVAILABLE),
            ("HTTP 400", 400, [], RuntimeFailureCode.PERMANENT),
        ):
            body = self.wire.encode_error(status, message)
            reply = Reply.error(status, headers=headers, body=body)
            cases.append(self._driven(label, code.value, self._always(reply)))
        prose = Answer(name="prose", fragments=fragments("Sure! Here it is."), structured=True)
        cases.append(
            self._driven(
                "structured content that is not JSON",
                RuntimeFailureCode.INVALID_RESPONSE.value,
                lambda _request: self.serve_any(prose),
                modes=self.modes_for(prose),
                capability=STRUCTURED_OUTPUT,
            )
        )
        cases.append(
            self._driven(
                f"in-band error after {IN_BAND_DELTAS} deltas",
                None,
                lambda request: self.respond(self.in_band_error(message, request.interaction)),
                after_deltas=True,
            )
        )
        cases.append(
            self._driven(
                f"connection dropped after {IN_BAND_DELTAS} deltas",
                None,
                lambda request: self.respond(self.dropped(request.interaction)),
                after_deltas=True,
            )
        )
        return cases

    def _always(self, reply: Reply) -> Callable[[ExecutionRequest], None]:
        return lambda _request: self.reply_always(reply)

    def _driven(
        self,
        label: str,
        code: str | None,
        arrange: Callable[[ExecutionRequest], None],
        *,
        modes: tuple[str, ...] = ("execute", "execute_streaming"),
        after_deltas: bool = False,
        capability: str | None = None,
    ) -> DrivenFailure:
        return DrivenFailure(
            label=label,
            code=code,
            make_adapter=self.make_adapter,
            arrange=arrange,
            after_deltas=after_deltas,
            modes=modes,
            capability=capability,
        )

    def modes_for(self, answer: Answer) -> tuple[str, ...]:
        """The calls (``execute``, ``execute_streaming``) by which the wire can say ``answer``."""
        modes = []
        for mode, encode in (
            ("execute", self.wire.encode_whole),
            ("execute_streaming", self.wire.encode_stream),
        ):
            try:
                encode(answer)
            except UnrepresentableError:
                continue
            modes.append(mode)
        return tuple(modes)

    def serve_any(self, answer: Answer) -> None:
        """Serve ``answer`` on whichever paths the wire can say it."""
        try:
            whole: Reply | None = self.whole_reply(answer)
        except UnrepresentableError:
            whole = None
        try:
            stream = per_frame(self.stream_writes(answer))
        except UnrepresentableError:
            stream = Reply.error(500)
        self.respond(self.split(stream, whole))

    def in_band_error(
        self, message: str, interaction: CompiledInteraction
    ) -> Callable[[RecordedRequest], Reply]:
        """A responder: an answer's first deltas then the wire's error event; whole, a 200
        response whose body is the provider's error object."""
        answer = self.main_answer(interaction)
        events = [
            *opening(self.wire, answer, IN_BAND_DELTAS),
            *self.wire.encode_stream_error(message),
        ]
        whole = Reply.json(self.wire.encode_error(500, message))
        return self.split(per_frame(render(events)), whole)

    def dropped(self, interaction: CompiledInteraction) -> Callable[[RecordedRequest], Reply]:
        """A responder: an answer's first deltas then a dropped connection; whole, a body cut
        in half."""
        answer = self.main_answer(interaction)
        events = opening(self.wire, answer, IN_BAND_DELTAS)
        body = Reply.json(self.wire.encode_whole(answer)).body
        cut = Reply(
            status=200,
            headers=(("Content-Type", "application/json"),),
            chunks=[body[: len(body) // 2]],
            framing="close",
        )
        return self.split(Reply.stream(render(events), after="drop"), cut)
