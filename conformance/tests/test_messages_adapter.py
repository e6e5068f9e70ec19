"""A non-OpenAI adapter through the wire hook, and every bug issue #17 planted in one, caught.

The subject is the worked example ``examples/anthropic-style-adapter`` (``acme_messages``): a
Messages-style HTTP adapter on ``http.client`` whose streams are named events (``event:
message_start`` / ``content_block_delta`` with ``text_delta`` or ``input_json_delta`` /
``message_stop``, ``event: error``), through the kit's own
:class:`~templiqx_conformance.MessagesWire` (``messages_target.WIRE``). The clean adapter
passes every check; each variant below
plants one bug from the issue's table, and the check named beside it must fail with a message
that says what is wrong. Each variant runs only its own check, to keep the run short.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import msgspec
import pytest
from acme_messages import MessagesRuntime, MessagesSettings
from acme_messages.exchange import Exchange
from acme_messages.failures import Code, failure
from acme_messages.messages import StreamReader
from acme_messages.runtime import schema_accepts
from messages_target import MODEL, WIRE, make_runtime, target
from support.acceptance import assert_caught_alone

from templiqx_conformance import (
    SSE,
    AdapterTarget,
    Answer,
    CheckStatus,
    FailureCase,
    TargetError,
    check_names,
    fragments,
    run_check,
    run_conformance,
)
from templiqx_conformance.loopback import LoopbackServer, RecordedRequest, Reply
from templiqx_contracts import (
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
    ToolCallDelta,
    declared_tools,
    fingerprint,
    is_tool_answer,
)
from templiqx_ports import CancelToken, PortError, RuntimeFailureError, StreamSink, failed_event


def test_the_clean_adapter_passes_every_check() -> None:
    report = run_conformance(target)
    assert report.ok, "\n".join(check.message for check in report.failed_checks)
    assert [check.name for check in report.checks] == check_names(WIRE)
    assert report.transport == "anthropic-messages"
    not_applicable = [c.name for c in report.checks if c.status is CheckStatus.NOT_APPLICABLE]
    assert not_applicable == ["streaming.default_projection"]


# --- the author's own server, for author-supplied failure cases ---------------------------------


@pytest.fixture(scope="module")
def author_server() -> Iterator[LoopbackServer]:
    """What an author might point failure cases at: a 503, and an error after two deltas."""
    answer = Answer("author", fragments('{"ok": true, "note": "cut"}'), structured=True)
    opening = list(WIRE.encode_stream(answer))[:5]  # start, ping, block start, two deltas
    overloaded = [*opening, *(WIRE.encode_stream_error("overloaded") or [])]
    whole = Reply.json({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})

    def mid_stream(request: RecordedRequest) -> Reply:
        return Reply.stream(SSE.writes(overloaded)) if WIRE.is_stream_request(request) else whole

    routes = {
        "/mid-stream/v1/messages": mid_stream,
        "/status/v1/messages": Reply.error(503, body=WIRE.encode_error(503, "busy")),
    }
    with LoopbackServer(routes=routes) as server:
        yield server


def mid_stream_cases(runtime: type[MessagesRuntime], server: LoopbackServer) -> list[FailureCase]:
    url = server.base_url + "/mid-stream"
    return [
        FailureCase(
            code=Code.UNAVAILABLE.value,
            factory=lambda: runtime(
                MessagesSettings(base_url=url, api_key="sk-author-1", model=MODEL)
            ),
            name="overloaded after two deltas",
        )
    ]


def status_cases(runtime: type[MessagesRuntime], server: LoopbackServer) -> list[FailureCase]:
    url = server.base_url + "/status"
    return [
        FailureCase(
            code=Code.UNAVAILABLE.value,
            factory=lambda: runtime(
                MessagesSettings(base_url=url, api_key="sk-author-1", model=MODEL)
            ),
            name="HTTP 503",
        )
    ]


def test_author_failure_cases_pass_against_the_clean_adapter(author_server: LoopbackServer) -> None:
    cases = mid_stream_cases(MessagesRuntime, author_server) + status_cases(
        MessagesRuntime, author_server
    )
    result = run_check("failure.projection", replace(target, failures=cases))
    assert result.status is CheckStatus.PASSED, result.message


# --- failure cases against the kit's own server (one fake server suffices) ----------------------


def overloaded_after_two_deltas(request: RecordedRequest) -> Reply:
    """The kit's server answers a streaming request with two deltas, then an error event."""
    answer = Answer("author", fragments('{"ok": true, "note": "cut"}'), structured=True)
    opening = list(WIRE.encode_stream(answer))[:5]  # start, ping, block start, two deltas
    frames = [*opening, *(WIRE.encode_stream_error("overloaded") or [])]
    if WIRE.is_stream_request(request):
        return Reply.stream(SSE.writes(frames))
    return Reply.error(529, body=WIRE.encode_error(529, "overloaded"))


def kit_server_cases(runtime: type[MessagesRuntime]) -> list[FailureCase]:
    def make(base_url: str, api_key: str) -> MessagesRuntime:
        return runtime(make_runtime(base_url, api_key).settings)

    def tiny(base_url: str, api_key: str) -> MessagesRuntime:
        settings = make_runtime(base_url, api_key).settings
        return runtime(replace(settings, max_response_bytes=8))

    return [
        FailureCase(
            code=Code.UNAVAILABLE.value,
            factory=make,
            name="overloaded after two deltas, on the kit's server",
            respond=overloaded_after_two_deltas,
        ),
        FailureCase(
            code=Code.INVALID_RESPONSE.value,
            factory=tiny,
            name="an 8-byte response limit, the kit's usual answer",
        ),
    ]


def test_failure_cases_can_use_the_kits_server_instead_of_their_own() -> None:
    clean = run_check(
        "failure.projection", replace(target, failures=kit_server_cases(MessagesRuntime))
    )
    assert clean.status is CheckStatus.PASSED, clean.message
    broken = replace(
        target, factory=made(NoFailedAfterDeltas), failures=kit_server_cases(NoFailedAfterDeltas)
    )
    result = run_check("failure.projection", broken)
    assert result.status is CheckStatus.FAILED
    assert (
        "overloaded after two deltas, on the kit's server via execute_streaming: exactly one "
        "Failed must be emitted, got 0 in [Delta, Delta]" in result.message
    )


def test_a_failure_case_that_scripts_the_kits_server_needs_a_transport() -> None:
    case = kit_server_cases(MessagesRuntime)[0]
    with pytest.raises(TargetError, match="which needs a transport"):
        AdapterTarget(factory=make_runtime, failures=[case])


# --- the planted bugs ---------------------------------------------------------------------------


class BentSink(MessagesRuntime):
    """A variant that bends what the clean stream emits (see :meth:`bend`)."""

    def bend(self, sink: StreamSink) -> StreamSink:
        return sink

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        return super().execute_streaming(request, self.bend(sink), cancel=cancel)


class StreamedFingerprintDiffers(BentSink):
    """The streamed receipt fingerprints the streamed text, not the output."""

    def bend(self, sink: StreamSink) -> StreamSink:
        texts: list[str] = []

        def bent(event: StreamEvent) -> None:
            if isinstance(event, Delta):
                texts.append(event.text)
            if isinstance(event, Complete):
                receipt = event.receipt
                event = Complete.of(
                    ExecutionReceipt(
                        adapter=receipt.adapter,
                        request_fingerprint=receipt.request_fingerprint,
                        output_fingerprint=fingerprint("".join(texts)),
                        output=receipt.output,
                        output_schema_valid=receipt.output_schema_valid,
                    )
                )
            sink(event)

        return bent


class RawArgumentsReader(StreamReader):
    def handle(self, event: Any) -> list[Delta | ToolCallDelta]:
        deltas = super().handle(event)
        if self.done:
            for block in self.reply.blocks:
                if block.kind == "tool_use":
                    block.input = block.text  # the arguments' JSON text, never parsed
        return deltas


class UnparsedStreamedArguments(MessagesRuntime):
    """Tool-call arguments stay a string on the streaming path only."""

    reader_class = RawArgumentsReader


class TwoTerminals(BentSink):
    """A successful stream ends with Complete twice."""

    def bend(self, sink: StreamSink) -> StreamSink:
        def bent(event: StreamEvent) -> None:
            sink(event)
            if isinstance(event, Complete):
                sink(event)

        return bent


class NoFailedAfterDeltas(MessagesRuntime):
    """Once deltas went out, a failure is raised without its Failed event."""

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        sent = [0]

        def counting(event: StreamEvent) -> None:
            sent[0] += isinstance(event, (Delta, ToolCallDelta))
            sink(event)

        try:
            receipt = self._stream(request, counting, cancel)
        except PortError as error:
            if not sent[0]:
                sink(failed_event(error))
            raise
        sink(Complete.of(receipt))
        return receipt


class Reversed(BentSink):
    """Deltas are held back and emitted in reverse order before the terminal event."""

    def bend(self, sink: StreamSink) -> StreamSink:
        held: list[StreamEvent] = []

        def bent(event: StreamEvent) -> None:
            if isinstance(event, (Delta, ToolCallDelta)):
                held.append(event)
                return
            for delta in reversed(held):
                sink(delta)
            sink(event)

        return bent


class FirstDeltaDropped(BentSink):
    """The first delta never reaches the sink."""

    def bend(self, sink: StreamSink) -> StreamSink:
        seen = [0]

        def bent(event: StreamEvent) -> None:
            if isinstance(event, (Delta, ToolCallDelta)):
                seen[0] += 1
                if seen[0] == 1:
                    return
            sink(event)

        return bent


class NeverConsulted(MessagesRuntime):
    """The cancel token is never looked at."""

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        return super().execute_streaming(request, sink, cancel=None)


class CheckedBeforeSending(MessagesRuntime):
    """The token is looked at once, before the request is sent."""

    def _exchange(
        self, body: dict[str, Any], *, stream: bool, cancel: CancelToken | None
    ) -> Exchange:
        if cancel is not None and cancel.is_set():
            raise failure(Code.CANCELLED, "the call was cancelled by the caller")
        return super()._exchange(body, stream=stream, cancel=None)


class BetweenReadsExchange(Exchange):
    watches_blocked_reads = False


class CheckedBetweenReads(MessagesRuntime):
    """The token is looked at when a read returns, never while one is blocked."""

    exchange_class = BetweenReadsExchange


class KeyInErrors(MessagesRuntime):
    """HTTP errors name the API key 'to help debugging'."""

    def _status_failure(self, exchange: Exchange, status: int, head: dict[str, str]) -> PortError:
        error = super()._status_failure(exchange, status, head)
        return failure(Code(error.code), f"HTTP {status} for key {self.settings.api_key}")


# --- planted tool-calling bugs (the adapter declares tool_calling) ------------------------------


class DropsDeclaredTools(MessagesRuntime):
    """The declared tools (and the tool choice) never reach the provider."""

    def _body(self, request: ExecutionRequest) -> dict[str, Any]:
        body = super()._body(request)
        if declared_tools(request.interaction):
            del body["tools"], body["tool_choice"]
        return body


class ChoiceAlwaysAuto(MessagesRuntime):
    """The declared tools are sent, but the tool choice is always auto."""

    def _body(self, request: ExecutionRequest) -> dict[str, Any]:
        body = super()._body(request)
        if declared_tools(request.interaction):
            body["tool_choice"] = {"type": "auto"}
        return body


class FirstToolNameReader(StreamReader):
    """Every ToolCallDelta carries the first call's name (the name is never updated)."""

    first: str | None = None

    def handle(self, event: Any) -> list[Delta | ToolCallDelta]:
        deltas = super().handle(event)
        for index, delta in enumerate(deltas):
            if isinstance(delta, ToolCallDelta):
                self.first = self.first or delta.name
                deltas[index] = ToolCallDelta(
                    name=self.first, arguments_fragment=delta.arguments_fragment
                )
        return deltas


class WrongFragmentNames(MessagesRuntime):
    """Tool-call fragments that do not assemble per call: all are named after the first call."""

    reader_class = FirstToolNameReader


class CallIdsLostReader(StreamReader):
    def handle(self, event: Any) -> list[Delta | ToolCallDelta]:
        deltas = super().handle(event)
        if self.done:
            for block in self.reply.blocks:
                block.id = ""  # the id of content_block_start never kept
        return deltas


class StreamedCallsDiffer(MessagesRuntime):
    """The streamed receipt's tool calls lose their ids; execute's keep them."""

    reader_class = CallIdsLostReader


class Judged(MessagesRuntime):
    """A variant that computes output_schema_valid its own way (see :meth:`judge`)."""

    def judge(self, request: ExecutionRequest, output: Any) -> bool:
        return schema_accepts(request.interaction.output_schema, output)

    def _receipt(
        self, request: ExecutionRequest, body: dict[str, Any], output: Any
    ) -> ExecutionReceipt:
        receipt = super()._receipt(request, body, output)
        return ExecutionReceipt(
            adapter=receipt.adapter,
            request_fingerprint=receipt.request_fingerprint,
            output_fingerprint=receipt.output_fingerprint,
            output=receipt.output,
            output_schema_valid=self.judge(request, output),
        )


class SchemaAlwaysValid(Judged):
    """output_schema_valid is always true."""

    def judge(self, request: ExecutionRequest, output: Any) -> bool:
        return True


class CallsJudgedByOutputSchema(Judged):
    """Tool calls are judged by the output schema, as if no tool were declared."""


class CallsJudgedByNamesOnly(Judged):
    """Tool calls are valid when they name declared tools (tool choice, parallel ignored)."""

    def judge(self, request: ExecutionRequest, output: Any) -> bool:
        if not is_tool_answer(output):
            return super().judge(request, output)
        names = {tool.name for tool in declared_tools(request.interaction)}
        return all(call["name"] in names for call in output["tool_calls"])


def made(runtime: type[MessagesRuntime], **limits: int) -> Callable[[str, str], MessagesRuntime]:
    def make(base_url: str, api_key: str) -> MessagesRuntime:
        settings = make_runtime(base_url, api_key).settings
        return runtime(replace(settings, **limits))

    return make


@dataclass(frozen=True)
class Planted:
    """One row of the issue's table: the bug, its adapter, the check and what it must say."""

    bug: str
    factory: Callable[[str, str], MessagesRuntime]
    check: str
    phrase: str
    failures: Callable[[LoopbackServer], list[FailureCase]] | None = None


UNBOUNDED = {"max_response_bytes": 1 << 40, "max_line_bytes": 1 << 40, "max_stream_bytes": 1 << 40}

PLANTED = [
    Planted(
        "streamed receipt's output fingerprint does not match its output",
        made(StreamedFingerprintDiffers),
        "receipt.output_fingerprint",
        "structured-valid via execute_streaming, Complete event 0: output_fingerprint is",
    ),
    Planted(
        "tool-call arguments left unparsed on the streaming path only",
        made(UnparsedStreamedArguments),
        "streaming.deltas_match_output",
        "a receipt's arguments must be the parsed JSON of the joined fragments",
    ),
    Planted(
        "two terminal events",
        made(TwoTerminals),
        "streaming.event_order",
        "stream has 2 terminal events (Complete at",
    ),
    Planted(
        "no Failed once deltas went out (author supplied mid-stream failure cases)",
        made(NoFailedAfterDeltas),
        "failure.projection",
        "overloaded after two deltas via execute_streaming: exactly one Failed must be emitted, "
        "got 0 in [Delta, Delta]",
        lambda server: mid_stream_cases(NoFailedAfterDeltas, server),
    ),
    Planted(
        "the same, author supplied only HTTP-status failure cases",
        made(NoFailedAfterDeltas),
        "failure.projection",
        "connection dropped after 2 deltas via execute_streaming: exactly one Failed must be "
        "emitted, got 0 in [Delta, Delta]",
        lambda server: status_cases(NoFailedAfterDeltas, server),
    ),
    Planted(
        "the same, author supplied no failure cases",
        made(NoFailedAfterDeltas),
        "failure.projection",
        "connection dropped after 2 deltas via execute_streaming: exactly one Failed must be "
        "emitted, got 0",
    ),
    Planted(
        "deltas emitted in reverse order",
        made(Reversed),
        "streaming.deltas_match_output",
        "which does not parse to the output",
    ),
    Planted(
        "first delta dropped",
        made(FirstDeltaDropped),
        "streaming.deltas_match_output",
        "none dropped, reordered or repeated",
    ),
    Planted(
        "cancel token never consulted",
        made(NeverConsulted),
        "cancellation.token",
        "token set before the call: the stream ended in [Complete] although the token was set",
    ),
    Planted(
        "token checked only before sending",
        made(CheckedBeforeSending),
        "cancellation.token",
        "token set by the sink at the first delta (structured-valid): the stream ended in "
        "[Complete] although the token was set",
    ),
    Planted(
        "token checked only between blocking reads",
        made(CheckedBetweenReads),
        "transport.cancellation",
        "cancelled after 2 deltas while the server is silent: still running",
    ),
    Planted(
        "API key in the error message",
        made(KeyInErrors),
        "secrets.not_exposed",
        "HTTP 429 via execute: the kit's marker credential (passed as api_key) (31 characters) "
        "appears in the raised error",
    ),
    Planted(
        "no response size bounds",
        made(MessagesRuntime, **UNBOUNDED),
        "transport.size_bounds",
        f"must name the {1_048_576} byte limit",
    ),
    Planted(
        "output_schema_valid always true",
        made(SchemaAlwaysValid),
        "receipt.output_schema_valid",
        "structured-invalid via execute: the adapter claims output_schema_valid=True but output "
        '{"note":"ok has the wrong type","ok":"yes"} violates schema',
    ),
    Planted(
        "declared tools left out of the request",
        made(DropsDeclaredTools),
        "tools.declared_calls",
        "tool-calls via execute: declared tool 'get_weather' is not in the request",
    ),
    Planted(
        "tool choice not sent (always auto)",
        made(ChoiceAlwaysAuto),
        "tools.declared_calls",
        "tool-calls (get_weather forced, no parallel calls) via execute: tool_choice is "
        '{"type": "auto"}, expected {"type": "tool", "name": "get_weather", '
        '"disable_parallel_tool_use": true}',
    ),
    Planted(
        "tool-call fragments that do not assemble per call",
        made(WrongFragmentNames),
        "streaming.deltas_match_output",
        "tool-calls: the fragments of tool call 'get_weather' assemble to",
    ),
    Planted(
        "streamed tool-call receipt differs from execute's",
        made(StreamedCallsDiffer),
        "streaming.complete_matches_execute",
        "tool-calls: the Complete receipt differs:\n    output_fingerprint: execute",
    ),
    Planted(
        "tool calls judged by the output schema",
        made(CallsJudgedByOutputSchema),
        "receipt.output_schema_valid",
        "tool-calls via execute: the adapter claims output_schema_valid=False but the tool calls",
    ),
    Planted(
        "tool calls judged by their names only",
        made(CallsJudgedByNamesOnly),
        "tools.declared_calls",
        "tool-calls (get_weather forced, no parallel calls): the adapter claims "
        "output_schema_valid=True",
    ),
]


@pytest.mark.parametrize("planted", PLANTED, ids=[p.bug for p in PLANTED])
def test_every_planted_bug_is_caught_with_a_message_saying_what_is_wrong(
    planted: Planted, author_server: LoopbackServer
) -> None:
    failures = planted.failures(author_server) if planted.failures is not None else []
    broken = AdapterTarget(factory=planted.factory, transport=WIRE, failures=failures)
    result = run_check(planted.check, broken)
    assert result.status is CheckStatus.FAILED, result.message
    assert planted.phrase in result.message, result.message


def test_the_wire_answers_in_named_events() -> None:
    answer = Answer("a", fragments("Hi there"))
    stream = SSE.writes(WIRE.encode_stream(answer))
    assert stream[0].startswith(b"event: message_start\ndata: {")
    assert stream[-1] == b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    deltas = [json.loads(w.split(b"data: ", 1)[1]) for w in stream if b"content_block_delta" in w]
    assert [d["delta"]["text"] for d in deltas] == list(answer.fragments)


# --- issue #27's acceptance: the same planted bugs, each alone in the full suite ----------------


class LaggingReader(StreamReader):
    """Emits each content piece one event late, and forgets the last one of a block (its delta
    and its text)."""

    held: list[Delta | ToolCallDelta] | None = None

    def handle(self, event: Any) -> list[Delta | ToolCallDelta]:
        deltas = super().handle(event)
        if event.name == "content_block_delta":
            out, self.held = self.held or [], deltas
            return out
        if event.name == "content_block_stop" and self.held:
            index = json.loads(event.data)["index"]
            dropped = "".join(
                d.text if isinstance(d, Delta) else d.arguments_fragment for d in self.held
            )
            block = self._blocks[index]
            block.text = block.text[: len(block.text) - len(dropped)]
            self.held = None
        return deltas


class DroppedLastChunk(MessagesRuntime):
    reader_class = LaggingReader


class SwallowingReader(StreamReader):
    def handle(self, event: Any) -> list[Delta | ToolCallDelta]:
        if event.name == "error":
            return []  # "a transient error, the stream goes on"
        return super().handle(event)


class SwallowsErrorEvents(MessagesRuntime):
    reader_class = SwallowingReader


class KeyInFailed(MessagesRuntime):
    """Streamed failures say which key was used, 'to help debugging'."""

    def _stream(self, request: Any, sink: StreamSink, cancel: CancelToken | None) -> Any:
        try:
            return super()._stream(request, sink, cancel)
        except RuntimeFailureError as error:
            said = f"{error.failure.detail} (key {self.settings.api_key})"
            raise RuntimeFailureError(msgspec.structs.replace(error.failure, detail=said)) from None


class StreamedFingerprintOfText(MessagesRuntime):
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


ACCEPTANCE = [
    (
        "dropped last chunk",
        DroppedLastChunk,
        "streaming.complete_matches_execute",
        "the deltas stop short of the answer",
    ),
    (
        "two terminal events",
        TwoTerminals,
        "streaming.event_order",
        "emit deltas, then exactly one Complete (success) or one Failed (failure) as the last",
    ),
    (
        "a swallowed mid-stream error event",
        SwallowsErrorEvents,
        "transport.in_band_error",
        "an in-band error must fail the call",
    ),
    (
        "a credential in a Failed message",
        KeyInFailed,
        "secrets.not_exposed",
        "no credential may leave the adapter (DECISIONS 10): redact it",
    ),
    (
        "cancellation ignored between reads",
        CheckedBeforeSending,
        "cancellation.token",
        "look at the token between reads",
    ),
    (
        "output_schema_valid always true",
        SchemaAlwaysValid,
        "receipt.output_schema_valid",
        "compute the flag by validating the output against interaction.output_schema",
    ),
    (
        "a streamed receipt whose fingerprint does not match its output",
        StreamedFingerprintOfText,
        "receipt.output_fingerprint",
        "set it to templiqx_contracts.fingerprint(output)",
    ),
]


@pytest.mark.parametrize(
    ("bug", "runtime", "check", "fix"), ACCEPTANCE, ids=[a[0] for a in ACCEPTANCE]
)
def test_each_planted_bug_is_caught_alone_with_a_leading_message_naming_the_fix(
    bug: str, runtime: type[MessagesRuntime], check: str, fix: str
) -> None:
    report = run_conformance(replace(target, factory=made(runtime)))
    assert_caught_alone(report, check, fix)
