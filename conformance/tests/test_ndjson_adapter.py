"""An NDJSON adapter through the kit's ``ollama`` wire, and the bugs issue #27 plants in it.

The subject is the worked example ``examples/ndjson-adapter`` (``acme_ollama``): an Ollama-style
adapter on ``http.client`` whose streams are newline-delimited JSON, run against the kit's
own :class:`~templiqx_conformance.OllamaWire`. The clean adapter passes every check with no
kit-specific code — and no SSE artefact (comment line, blank-line framing, ``data:`` field,
``text/event-stream``) ever reaches it. Each planted bug is caught by exactly one check of the
full suite, whose leading line names the fix.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import msgspec
import pytest
from acme_ollama import OllamaRuntime, OllamaSettings
from acme_ollama.chat import StreamReader
from acme_ollama.exchange import Exchange
from acme_ollama.failures import Code, failure
from ollama_target import WIRE, make_runtime, target
from support.acceptance import assert_caught_alone

from templiqx_conformance import CheckStatus, check_names, run_conformance
from templiqx_contracts import (
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
    ToolCallDelta,
    fingerprint,
)
from templiqx_ports import CancelToken, RuntimeFailureError, StreamSink


def test_the_clean_adapter_passes_every_check() -> None:
    report = run_conformance(target)
    assert report.ok, "\n".join(check.message for check in report.failed_checks)
    assert [check.name for check in report.checks] == check_names(WIRE)
    assert report.transport == "ollama"
    not_applicable = [c.name for c in report.checks if c.status is CheckStatus.NOT_APPLICABLE]
    assert not_applicable == ["streaming.default_projection"]


class Spy(Exchange):
    """Keeps the Content-Type and the body of every reply the kit's server sent."""

    seen: ClassVar[list[tuple[str, list[bytes]]]] = []
    lock: ClassVar[threading.Lock] = threading.Lock()

    def send(self, body: bytes) -> tuple[int, dict[str, str]]:
        status, head = super().send(body)
        self._body: list[bytes] = []
        with Spy.lock:
            Spy.seen.append((head.get("content-type", ""), self._body))
        return status, head

    def chunks(self) -> Iterator[bytes]:
        for chunk in super().chunks():
            self._body.append(chunk)
            yield chunk


class Spied(OllamaRuntime):
    exchange_class = Spy


def test_no_sse_artefact_reaches_an_ndjson_adapter() -> None:
    def make(base_url: str, api_key: str) -> OllamaRuntime:
        return Spied(make_runtime(base_url, api_key).settings)

    Spy.seen.clear()
    report = run_conformance(replace(target, factory=make, recordings=()))
    assert report.ok, "\n".join(check.message for check in report.failed_checks)
    types = {content_type for content_type, _ in Spy.seen}
    assert types <= {"application/x-ndjson", "application/json"}, types
    bodies = [b"".join(chunks) for _, chunks in Spy.seen]
    assert max(len(body) for body in bodies) > 64 * 1024 * 1024  # the flood went through too
    for body in bodies:
        for artefact in (b"\n\n", b"\n: ", b"data: ", b"event: ", b"[DONE]"):
            assert artefact not in body, (artefact, body[:200])
        assert not body.startswith(b":")


# --- the planted bugs --------------------------------------------------------------------------


class LaggingReader(StreamReader):
    """Holds each piece back until the next line, and forgets the last one at ``done``."""

    held: str | None = None

    def handle(self, line: Any) -> list[Delta | ToolCallDelta]:
        piece = line.get("message", {}).get("content") if isinstance(line, dict) else None
        if piece and not line.get("done"):
            out = []
            if self.held is not None:
                out = super().handle({"message": {"content": self.held}})
            self.held = piece
            return out
        return super().handle(line)  # the done line: the held piece is dropped


class DroppedLastChunk(OllamaRuntime):
    reader_class = LaggingReader


class Bent(OllamaRuntime):
    def bend(self, sink: StreamSink) -> StreamSink:
        return sink

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        return super().execute_streaming(request, self.bend(sink), cancel=cancel)


class TwoTerminals(Bent):
    def bend(self, sink: StreamSink) -> StreamSink:
        def bent(event: StreamEvent) -> None:
            sink(event)
            if isinstance(event, Complete):
                sink(event)

        return bent


class SwallowingReader(StreamReader):
    def handle(self, line: Any) -> list[Delta | ToolCallDelta]:
        if isinstance(line, dict) and "error" in line:
            return []  # "a transient error, the stream goes on"
        return super().handle(line)


class SwallowsErrorLines(OllamaRuntime):
    reader_class = SwallowingReader


class KeyInFailed(OllamaRuntime):
    """Streamed failures say which key was used, 'to help debugging'."""

    def _stream(self, request: Any, sink: StreamSink, cancel: CancelToken | None) -> Any:
        try:
            return super()._stream(request, sink, cancel)
        except RuntimeFailureError as error:
            said = f"{error.failure.detail} (key {self.settings.api_key})"
            raise RuntimeFailureError(msgspec.structs.replace(error.failure, detail=said)) from None


class CheckedBeforeSending(OllamaRuntime):
    """The token is looked at once, before the request; never between reads."""

    def _exchange(self, body: dict[str, Any], *, stream: bool, cancel: CancelToken | None) -> Any:
        if cancel is not None and cancel.is_set():
            raise failure(Code.CANCELLED, "the call was cancelled by the caller")
        return super()._exchange(body, stream=stream, cancel=None)


class AlwaysValid(OllamaRuntime):
    def _receipt(self, request: ExecutionRequest, body: dict[str, Any], output: Any) -> Any:
        receipt = super()._receipt(request, body, output)
        return ExecutionReceipt(
            adapter=receipt.adapter,
            request_fingerprint=receipt.request_fingerprint,
            output_fingerprint=receipt.output_fingerprint,
            output=receipt.output,
            output_schema_valid=True,
        )


class StreamedFingerprintOfText(OllamaRuntime):
    """The streamed receipt fingerprints the JSON text it read, not the output it carries."""

    def _stream(self, request: Any, sink: StreamSink, cancel: CancelToken | None) -> Any:
        texts: list[str] = []

        def keep(event: StreamEvent) -> None:
            if isinstance(event, Delta):
                texts.append(event.text)
            sink(event)

        receipt = super()._stream(request, keep, cancel)
        return ExecutionReceipt(
            adapter=receipt.adapter,
            request_fingerprint=receipt.request_fingerprint,
            output_fingerprint=fingerprint("".join(texts)),
            output=receipt.output,
            output_schema_valid=receipt.output_schema_valid,
        )


@dataclass(frozen=True)
class Planted:
    bug: str
    runtime: type[OllamaRuntime]
    check: str
    fix: str


PLANTED = [
    Planted(
        "dropped last chunk",
        DroppedLastChunk,
        "streaming.complete_matches_execute",
        "the deltas stop short of the answer",
    ),
    Planted(
        "two terminal events",
        TwoTerminals,
        "streaming.event_order",
        "emit deltas, then exactly one Complete (success) or one Failed (failure) as the last",
    ),
    Planted(
        "a swallowed mid-stream error line",
        SwallowsErrorLines,
        "transport.in_band_error",
        "an in-band error must fail the call",
    ),
    Planted(
        "a credential in a Failed message",
        KeyInFailed,
        "secrets.not_exposed",
        "no credential may leave the adapter (DECISIONS 10): redact it",
    ),
    Planted(
        "cancellation ignored between reads",
        CheckedBeforeSending,
        "cancellation.token",
        "look at the token between reads",
    ),
    Planted(
        "output_schema_valid always true",
        AlwaysValid,
        "receipt.output_schema_valid",
        "compute the flag by validating the output against interaction.output_schema",
    ),
    Planted(
        "a streamed receipt whose fingerprint does not match its output",
        StreamedFingerprintOfText,
        "receipt.output_fingerprint",
        "set it to templiqx_contracts.fingerprint(output)",
    ),
]


def planted_factory(runtime: type[OllamaRuntime]) -> Callable[[str, str], OllamaRuntime]:
    def make(base_url: str, api_key: str) -> OllamaRuntime:
        settings: OllamaSettings = make_runtime(base_url, api_key).settings
        return runtime(settings)

    return make


@pytest.mark.parametrize("planted", PLANTED, ids=[p.bug for p in PLANTED])
def test_each_planted_bug_is_caught_alone_with_a_leading_message_naming_the_fix(
    planted: Planted,
) -> None:
    report = run_conformance(replace(target, factory=planted_factory(planted.runtime)))
    assert_caught_alone(report, planted.check, planted.fix)


class CallsAsPythonReader(StreamReader):
    """Bug: a whole tool call is streamed with its arguments as Python's repr, not JSON."""

    def handle(self, line: Any) -> list[Delta | ToolCallDelta]:
        return [
            ToolCallDelta(name=d.name, arguments_fragment=repr(json.loads(d.arguments_fragment)))
            if isinstance(d, ToolCallDelta)
            else d
            for d in super().handle(line)
        ]


class CallsAsPython(OllamaRuntime):
    reader_class = CallsAsPythonReader


def test_whole_tool_call_arguments_must_stream_as_their_json() -> None:
    report = run_conformance(replace(target, factory=planted_factory(CallsAsPython)))
    assert_caught_alone(
        report, "streaming.deltas_match_output", "each call's fragments must assemble to its"
    )
