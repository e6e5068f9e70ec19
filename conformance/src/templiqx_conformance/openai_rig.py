"""The OpenAI transport rig: a loopback server that plays the model, and adapters pointed at it.

The author's factory receives ``http://127.0.0.1:<port>/v1``; the adapter is expected to POST
``{base_url}/chat/completions``. Whatever the kit wants the model to say is set with
:meth:`OpenAIRig.respond` (a function of the recorded request) or :meth:`OpenAIRig.serve_completion`
(a :class:`~templiqx_conformance.openai_streams.ServedCompletion`, answered whole to a plain
request and as an event stream to a request with ``"stream": true``).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from templiqx_conformance.context import (
    CheckContext,
    NotApplicableError,
    fail_if,
)
from templiqx_conformance.loopback import Chunk, LoopbackServer, RecordedRequest, Reply
from templiqx_conformance.openai_streams import (
    ServedCompletion,
    content_completion,
    fragments,
    stream_bytes,
    stream_chunk,
)
from templiqx_conformance.probes import STRUCTURED_OUTPUT, Probe
from templiqx_conformance.rig import DrivenFailure, Rig
from templiqx_conformance.target import AdapterTarget
from templiqx_contracts import CompiledInteraction, ExecutionRequest
from templiqx_ports import RuntimeFailureCode

__all__ = [
    "CANARY",
    "COMPLETIONS_PATH",
    "IN_BAND_DELTAS",
    "MAX_LINE_BYTES",
    "MAX_RESPONSE_BYTES",
    "MAX_STREAM_BYTES",
    "RUNTIME_CODES",
    "OpenAIRig",
    "StreamShape",
    "declares",
    "fail_if",
    "hanging_after",
    "in_band_error",
    "is_stream_request",
    "main_probe",
    "per_frame",
    "request_for",
    "rig_of",
    "served_for",
    "ticking",
]

COMPLETIONS_PATH = "/v1/chat/completions"
CANARY = "PROVIDER-CANARY-7f3a: the provider's own words, never to be echoed"
"""Text the kit puts in provider payloads (error bodies, refusals); no failure may repeat it."""

MAX_RESPONSE_BYTES = 2_097_152
"""DECISIONS 9: a non-streamed body, and a stream's assembled output, are capped at 2 MiB."""
MAX_LINE_BYTES = 1_048_576
"""DECISIONS 9: one event-stream line is capped at 1 MiB."""
MAX_STREAM_BYTES = 67_108_864
"""DECISIONS 9: the raw bytes of one stream are capped at 64 MiB."""
IN_BAND_DELTAS = 2
"""Content fragments the in-band-error stream sends before its error event."""
RUNTIME_CODES = frozenset(code.value for code in RuntimeFailureCode) - {
    RuntimeFailureCode.CANCELLED.value
}
"""The codes a provider-side failure may carry (cancellation comes only from the caller)."""

StreamShape = Callable[[list[bytes]], Reply]
"""Turns the writes of an event stream into the reply that sends them."""


def is_stream_request(request: RecordedRequest) -> bool:
    """Whether the adapter asked for an event stream (``"stream": true`` in the JSON body)."""
    body = request.json
    return isinstance(body, dict) and body.get("stream") is True


def per_frame(writes: list[bytes]) -> Reply:
    """One write per event, chunked transfer encoding (what most servers do)."""
    return Reply.stream(writes)


def served_for(probe: Probe) -> ServedCompletion:
    """The completion that makes an OpenAI-compatible adapter produce ``probe.output``."""
    return content_completion(probe.name, probe.content, probe.output)


class OpenAIRig(Rig):
    """Runs the loopback server for one target; adapters get its base URL."""

    transport = "openai"
    with_fixture = False

    def __init__(self, target: AdapterTarget) -> None:
        super().__init__(target)
        self._lock = threading.Lock()
        self._responder: Callable[[RecordedRequest], Reply] = lambda _request: Reply.error(500)
        self.server = LoopbackServer(routes={COMPLETIONS_PATH: self._respond}).start()
        self.base_url = self.server.base_url + "/v1"

    # --- the rig interface ----------------------------------------------------------------

    def make_adapter(self) -> Any:
        return self.target.factory(self.base_url)

    def make_adapter_for(self, base_url: str) -> Any:
        """An adapter pointed somewhere else (e.g. a closed port)."""
        return self.target.factory(base_url)

    def serve(self, probe: Probe) -> None:
        self.serve_completion(served_for(probe))

    def failures(self) -> list[DrivenFailure]:
        return [*super().failures(), *self._kit_failures()]

    def close(self) -> None:
        self.server.stop()

    # --- scripting ------------------------------------------------------------------------

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

    def serve_completion(
        self,
        served: ServedCompletion,
        *,
        line_end: str = "\n",
        shape: StreamShape = per_frame,
    ) -> None:
        """Answer plain requests with ``served.whole`` and stream requests with its events."""
        writes = stream_bytes(served.frames, line_end=line_end)

        def responder(request: RecordedRequest) -> Reply:
            if is_stream_request(request):
                return shape(writes)
            return Reply.json(served.whole)

        self.respond(responder)

    def _driven(self, label: str, code: RuntimeFailureCode, reply: Reply) -> DrivenFailure:
        return DrivenFailure(
            label=label,
            code=code.value,
            make_adapter=self.make_adapter,
            arrange=lambda: self.reply_always(reply),
        )

    def _kit_failures(self) -> list[DrivenFailure]:
        body = {"error": {"message": CANARY, "type": "server_error", "code": None}}
        not_json = content_completion("not-json", "Sure! Here is the answer.", None)
        return [
            self._driven(
                "HTTP 429",
                RuntimeFailureCode.RATE_LIMITED,
                Reply.error(429, headers=[("Retry-After", "3")], body=body),
            ),
            self._driven("HTTP 503", RuntimeFailureCode.UNAVAILABLE, Reply.error(503, body=body)),
            self._driven("HTTP 400", RuntimeFailureCode.PERMANENT, Reply.error(400, body=body)),
            DrivenFailure(
                label="structured content that is not JSON",
                code=RuntimeFailureCode.INVALID_RESPONSE.value,
                make_adapter=self.make_adapter,
                arrange=lambda: self.serve_completion(not_json),
            ),
            DrivenFailure(
                label="in-band error mid-stream",
                code=None,
                make_adapter=self.make_adapter,
                arrange=lambda: self.serve_completion(in_band_error()),
            ),
        ]


def in_band_error() -> ServedCompletion:
    """A stream that sends two content fragments, then an ``{"error": ...}`` event and ends.

    Served whole (to ``execute``) it is a 200 response whose body is the error object.
    """
    error = {"error": {"message": CANARY, "type": "server_error", "param": None, "code": None}}
    pieces = fragments('{"ok": true, "note": "interrupted"}')[:IN_BAND_DELTAS]
    frames = (
        stream_chunk({"role": "assistant", "content": "", "refusal": None}),
        *(stream_chunk({"content": piece}) for piece in pieces),
        error,
    )
    return ServedCompletion(
        name="in-band-error", whole=error, frames=frames, deltas=(), output=None
    )


def request_for(interaction: CompiledInteraction) -> ExecutionRequest:
    """A request for ``interaction`` without fixture output."""
    return ExecutionRequest(interaction=interaction, fixture_output=None)


def ticking(frame_bytes: bytes, every_s: float) -> Reply:
    """The same bytes every ``every_s`` seconds, forever."""
    return Reply.stream(itertools.repeat(Chunk(frame_bytes, every_s)))


def hanging_after(writes: list[bytes]) -> Reply:
    """Send ``writes`` then keep the connection open, sending nothing."""
    return Reply.stream(writes, after="hang")


def rig_of(ctx: CheckContext) -> OpenAIRig:
    """The OpenAI rig of a transport check."""
    rig = ctx.rig
    if not isinstance(rig, OpenAIRig):  # pragma: no cover - the runner pairs them
        raise NotApplicableError("the transport checks run only with transport='openai'")
    return rig


def main_probe(ctx: CheckContext) -> Probe:
    """The structured probe when the adapter declares structured output, else the first."""
    probes = ctx.probes()
    return next((p for p in probes if p.capability == STRUCTURED_OUTPUT), probes[0])


def declares(ctx: CheckContext, capability: str) -> bool:
    """Whether the adapter declares ``capability``."""
    return capability in ctx.descriptor().capabilities
