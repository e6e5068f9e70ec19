"""The wire rig: a loopback server that plays the model in a provider's bytes, and adapters at it.

The author's factory receives ``http://127.0.0.1:<port>`` plus the wire's ``base_path``; the
adapter is expected to POST to the wire's ``request_path``. What the model says is set with
:meth:`WireRig.serve_answer` (an :class:`~templiqx_conformance.wires.Answer`, answered whole to a
plain request and in the wire's framing to a streaming one) or :meth:`WireRig.respond` (any
function of the recorded request). Everything is written in the wire's framing: its frames, its
keep-alives (if it has any), its ``Content-Type``.

The provider's error text (:meth:`WireRig.provider_message`) starts with a canary, carries
terminal control characters and runs on far past any display cap; like a real provider it
echoes the credentials *the request carried* (and no other).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from templiqx_conformance.errors import BrokenInvariantError
from templiqx_conformance.loopback import Chunk, Exchange, LoopbackServer, RecordedRequest, Reply
from templiqx_conformance.probes import PROBES, STRUCTURED_OUTPUT, Probe
from templiqx_conformance.rig.rig import DrivenFailure, Rig, takes_base_url
from templiqx_conformance.target import AdapterTarget, FailureCase
from templiqx_conformance.wires.answer import Answer, fragments
from templiqx_conformance.wires.wire import UnrepresentableError, Wire
from templiqx_contracts import CompiledInteraction, ExecutionRequest, canonical_json
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
    "request_for",
    "with_keepalives",
]

MAX_RESPONSE_BYTES: Final = 2_097_152
"""DECISIONS 9: a non-streamed body, and a stream's assembled output, are capped at 2 MiB."""
MAX_LINE_BYTES: Final = 1_048_576
"""DECISIONS 9: one line of a line-framed stream (SSE, NDJSON) is capped at 1 MiB."""
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
"""Turns the writes of a stream into the reply that sends them."""


def with_keepalives(writes: list[bytes], keepalive: bytes) -> list[bytes]:
    """``writes`` with ``keepalive`` first, after every second write and before the last."""
    out = [keepalive]
    for index, write in enumerate(writes):
        if index == len(writes) - 1 or (index > 0 and index % 2 == 0):
            out.append(keepalive)
        out.append(write)
    return out


def answer_for(probe: Probe) -> Answer:
    """What the kit's model says to ``probe``."""
    structured = STRUCTURED_OUTPUT in probe.interaction.required_capabilities
    if probe.tool_calls:
        return Answer(name=probe.name, tool_calls=probe.tool_calls, structured=structured)
    return Answer(name=probe.name, fragments=fragments(probe.content), structured=structured)


def request_for(interaction: CompiledInteraction) -> ExecutionRequest:
    """A request for ``interaction`` without fixture output."""
    return ExecutionRequest(interaction=interaction, fixture_output=None)


def _probe_of(interaction: CompiledInteraction) -> Probe | None:
    wanted = canonical_json(interaction)
    return next((p for p in PROBES if canonical_json(p.interaction) == wanted), None)


class WireRig(Rig):
    """Runs the loopback server for one target; adapters get its base URL."""

    with_fixture = False

    def __init__(self, target: AdapterTarget) -> None:
        super().__init__(target)
        if target.wire is None:  # pragma: no cover - the runner pairs them
            raise ValueError("a WireRig needs a target with a transport")
        self.wire: Wire = target.wire
        self.framing = self.wire.framing
        self.holds_streams = self.framing.streams
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

    def driven(self, case: FailureCase) -> DrivenFailure:
        """An author's case: its factory may take the server's base URL, and ``respond`` says
        what the server answers (without it: the model's usual answer)."""
        factory = case.factory
        if takes_base_url(factory):

            def make() -> Any:
                return self.call_factory(self.base_url, factory=factory)

            arrange: Callable[[ExecutionRequest], None] | None = self._arrange_for(case)
        else:  # the author's own server, or no server at all: called as it is

            def make() -> Any:
                return factory()

            arrange = self._arrange_for(case) if case.respond is not None else None
        return DrivenFailure(
            label=case.label,
            code=case.code,
            make_adapter=make,
            prepare=case.prepare,
            arrange=arrange,
        )

    def _arrange_for(self, case: FailureCase) -> Callable[[ExecutionRequest], None]:
        respond = case.respond
        if respond is None:

            def usual(request: ExecutionRequest) -> None:
                probe = _probe_of(request.interaction)
                answer = answer_for(probe) if probe else self.main_answer(request.interaction)
                self.serve_any(answer)

            return usual
        responder = respond if not isinstance(respond, Reply) else (lambda _r: respond)
        return lambda _request: self.respond(responder)

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

    # --- frames and writes ----------------------------------------------------------------

    def frames(self, answer: Answer) -> list[Any]:
        """The frames answering a streaming request (raises :class:`UnrepresentableError`)."""
        if not self.framing.streams:
            return [self.wire.encode_whole(answer)]
        return list(self.wire.encode_stream(answer))

    def render(self, frames: Sequence[Any], line_end: str = "\n") -> list[bytes]:
        """The writes of ``frames`` in the wire's framing."""
        return self.framing.writes(frames, line_end)

    def writes(self, answer: Answer, line_end: str = "\n") -> list[bytes]:
        """The writes answering a streaming request with ``answer``."""
        return self.render(self.frames(answer), line_end)

    def opening(self, answer: Answer, count: int) -> list[Any]:
        """The frames of ``answer``'s stream up to and including its ``count``-th fragment.

        Found as the longest common prefix of the frames of ``answer`` and of ``answer`` cut to
        ``count`` fragments (frames cannot depend on later fragments, so they agree up to there).
        """
        full = self.frames(answer)
        short = self.frames(answer.truncated(count))
        common: list[Any] = []
        for mine, theirs in zip(full, short, strict=False):
            if self.framing.writes([mine]) != self.framing.writes([theirs]):
                break
            common.append(mine)
        return common

    def prefix_writes(self, answer: Answer, count: int, line_end: str = "\n") -> list[bytes]:
        """The writes of ``answer``'s stream up to and including its ``count``-th fragment
        (without anything that would close the stream, such as a JSON array's ``]``)."""
        return self.writes(answer, line_end)[: len(self.opening(answer, count))]

    def idle_write(self, line_end: str = "\n", pad: int = 0) -> bytes:
        """A write that says nothing: the framing's keep-alive, or else the frame of an empty
        fragment (an event with no content). ``pad`` adds about that many bytes: keep-alive
        text, or insignificant whitespace inside the empty frame's JSON object."""
        keepalive = self.framing.keepalive(line_end, pad)
        if keepalive is not None:
            return keepalive
        one = self.frames(Answer("idle", fragments=("",)))
        two = self.frames(Answer("idle", fragments=("", "")))
        index = 0
        while index < len(one) and self.render([one[index]]) == self.render([two[index]]):
            index += 1
        write = self.render(two, line_end)[index]
        brace = write.find(b"{")
        if pad and brace >= 0:
            write = write[: brace + 1] + b" " * pad + write[brace + 1 :]
        return write

    def stream_reply(self, writes: Iterable[bytes | Chunk], **options: Any) -> Reply:
        """A streamed reply of ``writes`` with the framing's ``Content-Type``."""
        return Reply.stream(writes, content_type=self.framing.content_type, **options)

    def whole_reply(self, answer: Answer) -> Reply:
        """The plain response answering ``answer`` (raises :class:`UnrepresentableError`)."""
        return Reply.json(self.wire.encode_whole(answer))

    def cut_body(self, answer: Answer) -> Reply:
        """A plain response carrying the first half of ``answer``'s body, then closing."""
        body = self.whole_reply(answer).body
        return Reply(
            status=200,
            headers=(("Content-Type", "application/json"),),
            chunks=[body[: len(body) // 2]],
            framing="close",
        )

    # --- answers --------------------------------------------------------------------------

    def serve_answer(
        self,
        answer: Answer,
        *,
        line_end: str = "\n",
        shape: StreamShape | None = None,
        hold: threading.Event | None = None,
    ) -> None:
        """Answer plain requests with ``answer`` whole and streaming ones with its frames.

        ``hold``: after the first fragment's frames the stream waits for ``hold`` (at most
        :data:`HOLD_S`) before sending the rest.
        """
        whole = self.whole_reply(answer)
        writes = self.writes(answer, line_end)
        if hold is not None and self.framing.streams and len(answer.fragments) > 1:
            first = self.prefix_writes(answer, 1, line_end)
            rest = b"".join(writes[len(first) :])
            stream = self.stream_reply([*first, Chunk(rest, HOLD_S, hold)])
        else:
            stream = (shape or self.stream_reply)(writes)
        self.respond(self.split(stream, whole))

    def serve_any(self, answer: Answer) -> None:
        """Serve ``answer`` on whichever paths the wire can say it."""
        try:
            whole: Reply | None = self.whole_reply(answer)
        except UnrepresentableError:
            whole = None
        try:
            stream = self.stream_reply(self.writes(answer))
        except UnrepresentableError:
            stream = Reply.error(500)
        self.respond(self.split(stream, whole))

    def modes_for(self, answer: Answer) -> tuple[str, ...]:
        """The calls (``execute``, ``execute_streaming``) by which the wire can say ``answer``."""
        modes = []
        for mode, encode in (
            ("execute", self.wire.encode_whole),
            ("execute_streaming", self.frames),
        ):
            try:
                encode(answer)
            except UnrepresentableError:
                continue
            modes.append(mode)
        return tuple(modes)

    def main_answer(self, interaction: CompiledInteraction) -> Answer:
        """A content answer fitting ``interaction`` (JSON when it is structured)."""
        structured = STRUCTURED_OUTPUT in interaction.required_capabilities
        text = '{"note": "interrupted on purpose", "ok": true}' if structured else "Hello there."
        return Answer(name="main", fragments=fragments(text), structured=structured)

    # --- the provider's words -------------------------------------------------------------

    def secrets_in(self, request: RecordedRequest | None) -> list[str]:
        """The credentials (declared or the kit's marker) that ``request`` carried."""
        if request is None:
            return []
        seen = [request.body.decode("utf-8", errors="replace")]
        seen.extend(value for _name, value in request.headers)
        return [secret for _label, secret in self.secrets() if any(secret in t for t in seen)]

    def provider_message(self, request: RecordedRequest | None = None) -> str:
        """The error text the kit's provider sends: a canary head, terminal control characters,
        the credentials ``request`` carried (providers do echo keys), and a tail far past any
        display cap."""
        echoed = "".join(f" (credential {secret})" for secret in self.secrets_in(request))
        return (
            f"{PROVIDER_HEAD}: the provider's own words{PROVIDER_CONTROL}{echoed} "
            + "and more detail " * 60
            + PROVIDER_TAIL
        )

    def error_responder(
        self, status: int, headers: Sequence[tuple[str, str]] = ()
    ) -> Callable[[RecordedRequest], Reply]:
        """Answer with HTTP ``status`` and the wire's error body (echoing the request's keys)."""

        def respond(request: RecordedRequest) -> Reply:
            body = self.wire.encode_error(status, self.provider_message(request))
            return Reply.error(status, headers=headers, body=body)

        return respond

    # --- the kit's own failures -------------------------------------------------------------

    def _kit_failures(self) -> list[DrivenFailure]:
        cases: list[DrivenFailure] = []
        for label, status, headers, code in (
            ("HTTP 429", 429, [("Retry-After", "3")], RuntimeFailureCode.RATE_LIMITED),
            ("HTTP 503", 503, [], RuntimeFailureCode.UNAVAILABLE),
            ("HTTP 400", 400, [], RuntimeFailureCode.PERMANENT),
        ):
            cases.append(self._driven(label, code.value, self._answering(status, headers)))
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
        if self.framing.streams:
            cases.append(
                self._driven(
                    f"connection dropped after {IN_BAND_DELTAS} deltas",
                    None,
                    lambda request: self.respond(self.dropped(request.interaction)),
                    after_deltas=True,
                )
            )
        return cases

    def _answering(
        self, status: int, headers: Sequence[tuple[str, str]]
    ) -> Callable[[ExecutionRequest], None]:
        responder = self.error_responder(status, headers)
        return lambda _request: self.respond(responder)

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

    def dropped(self, interaction: CompiledInteraction) -> Callable[[RecordedRequest], Reply]:
        """A responder: an answer's first deltas then a dropped connection; whole, a body cut
        in half."""
        answer = self.main_answer(interaction)
        writes = self.prefix_writes(answer, IN_BAND_DELTAS)
        return self.split(self.stream_reply(writes, after="drop"), self.cut_body(answer))
