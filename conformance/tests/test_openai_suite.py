"""The OpenAI transport suite against the mini adapter, and against one broken variant per check."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from support.mini_openai import Code, MiniOpenAI, failure

from templiqx_conformance import (
    SSE,
    AdapterTarget,
    Answer,
    CheckStatus,
    OpenAIWire,
    check_names,
    fragments,
    run_check,
    run_conformance,
)
from templiqx_conformance.checks.transport.common import boundary_replies
from templiqx_conformance.loopback import Reply
from templiqx_conformance.probes import STOCK, STRUCTURED_VALID, TEXT, TOOL_CALLS, WEATHER
from templiqx_conformance.rig.wire_rig import WireRig, answer_for, with_keepalives
from templiqx_contracts import CompiledInteraction, ExecutionReceipt, ToolCallDelta
from templiqx_ports import RuntimeAdapter, RuntimeFailureError

WIRE = OpenAIWire()


def test_the_mini_adapter_passes_the_whole_transport_suite() -> None:
    report = run_conformance(MiniOpenAI, transport="openai")
    assert report.ok, "\n".join(check.message for check in report.failed_checks)
    assert [check.name for check in report.checks] == check_names("openai")
    assert report.transport == "openai"
    assert all(
        check.status is CheckStatus.PASSED
        for check in report.checks
        if check.name.startswith("transport.") and check.name != "transport.recordings"
    )


# --- the served traffic ------------------------------------------------------------------------


def test_content_streams_cut_answers_into_token_sized_fragments() -> None:
    answer = answer_for(STRUCTURED_VALID)
    assert "".join(fragments(STRUCTURED_VALID.content)) == STRUCTURED_VALID.content
    assert [delta.text for delta in answer.expected_deltas()] == list(answer.fragments)  # type: ignore[union-attr]
    whole = WIRE.encode_whole(answer)
    assert whole["choices"][0]["message"]["content"] == STRUCTURED_VALID.content
    writes = SSE.writes(WIRE.encode_stream(answer))
    assert writes[-1] == b"data: [DONE]\n\n"
    usage = json.loads(writes[-2][len(b"data: ") :])
    assert usage["choices"] == []
    assert usage["usage"]["total_tokens"] == 43


def test_keepalive_streams_carry_comment_lines() -> None:
    keepalive = SSE.keepalive("\r\n")
    assert keepalive == b": keep-alive\r\n\r\n"
    writes = with_keepalives(SSE.writes(WIRE.encode_stream(answer_for(TEXT)), "\r\n"), keepalive)
    assert keepalive in writes
    assert writes[0] == writes[-2] == b": keep-alive\r\n\r\n"


def test_tool_call_streams_open_each_call_with_its_name_then_send_fragments() -> None:
    answer = Answer(name="t", tool_calls=(WEATHER, STOCK), structured=True, interleaved=True)
    names = [delta.name for delta in answer.expected_deltas() if isinstance(delta, ToolCallDelta)]
    assert names[:4] == ["get_weather", "get_stock_price", "get_weather", "get_stock_price"]
    assert TOOL_CALLS.output["tool_calls"][0]["arguments"] == {"city": "Edinburgh", "units": "c"}
    call = WIRE.encode_whole(answer)["choices"][0]["message"]["tool_calls"][1]
    assert call["function"] == {"name": "get_stock_price", "arguments": STOCK.arguments}
    parts = [
        part
        for event in WIRE.encode_stream(answer)
        if isinstance(event.data, dict)
        for choice in event.data["choices"]
        for part in choice["delta"].get("tool_calls") or []
    ]
    opened = [(part["index"], part["function"]["name"]) for part in parts if "id" in part]
    assert opened == [(0, "get_weather"), (1, "get_stock_price")]
    assert all(set(part) == {"index", "function"} for part in parts if "id" not in part)


def test_boundary_replies_put_a_write_boundary_at_every_offset() -> None:
    data = bytes(range(200))
    offsets: set[int] = set()
    rig = WireRig(AdapterTarget(factory=MiniOpenAI, transport="openai"))
    try:
        replies = boundary_replies(rig, data, window=16)
    finally:
        rig.close()
    for _label, reply in replies:
        position = 0
        for chunk in reply.chunks or []:
            piece = chunk if isinstance(chunk, bytes) else chunk.data
            position += len(piece)
            offsets.add(position)
        assert position == len(data)
    assert offsets >= set(range(1, len(data)))


def test_the_rig_answers_plain_and_streaming_requests_differently() -> None:
    rig = WireRig(AdapterTarget(factory=MiniOpenAI, transport="openai"))
    try:
        assert rig.base_url.endswith("/v1")
        adapter = rig.make_adapter()
        rig.serve(STRUCTURED_VALID)
        receipt = adapter.execute(STRUCTURED_VALID.request(with_fixture=False))
        events: list[Any] = []
        adapter.execute_streaming(STRUCTURED_VALID.request(with_fixture=False), events.append)
        assert receipt.output == STRUCTURED_VALID.output
        plain, streamed = rig.server.requests
        assert not WIRE.is_stream_request(plain)
        assert WIRE.is_stream_request(streamed)
    finally:
        rig.close()


# --- broken variants ---------------------------------------------------------------------------


class NaiveLines(MiniOpenAI):
    """Treats every read as ending on a line boundary."""

    def split_lines(self, pending: bytes) -> tuple[list[bytes], bytes]:
        return pending.replace(b"\r\n", b"\n").split(b"\n"), b""


class LfOnly(MiniOpenAI):
    """Splits lines on LF only, leaving CR in place."""

    def split_lines(self, pending: bytes) -> tuple[list[bytes], bytes]:
        *lines, rest = pending.split(b"\n")
        return lines, rest


class KeepaliveDelta(MiniOpenAI):
    """Turns comment lines into text."""

    def split_lines(self, pending: bytes) -> tuple[list[bytes], bytes]:
        lines, rest = super().split_lines(pending)
        out = []
        for line in lines:
            if line.startswith(b":"):
                chunk = {"choices": [{"index": 0, "delta": {"content": " "}}]}
                out.extend([b"data: " + json.dumps(chunk).encode(), b""])
            else:
                out.append(line)
        return out, rest


class EndIsDone(MiniOpenAI):
    """Treats the end of the body as the end of the stream."""

    def split_lines(self, pending: bytes) -> tuple[list[bytes], bytes]:
        lines, rest = super().split_lines(pending)
        return lines, rest

    def stream(self, interaction: CompiledInteraction, sink: Any, cancel: Any) -> ExecutionReceipt:
        try:
            return super().stream(interaction, sink, cancel)
        except RuntimeFailureError as error:
            if "before [DONE]" not in error.failure.detail:
                raise
            return self.receipt(interaction, {"ok": True, "note": "whatever arrived"})


class LeaksProviderText(MiniOpenAI):
    """Repeats whatever the provider said, control characters and all, uncapped."""

    def in_band_error(self) -> RuntimeFailureError:
        from templiqx_conformance.rig.wire_rig import PROVIDER_CONTROL, PROVIDER_HEAD, PROVIDER_TAIL

        return failure(
            Code.UNAVAILABLE, f"{PROVIDER_HEAD} said{PROVIDER_CONTROL} ... {PROVIDER_TAIL}"
        )


class WrongStatusCode(MiniOpenAI):
    def status_failure(self, status: int, headers: dict[str, str]) -> RuntimeFailureError:
        if status == 503:
            return failure(Code.PERMANENT, "model server returned HTTP 503")
        return super().status_failure(status, headers)


class Retries(MiniOpenAI):
    def execute(self, request: Any) -> ExecutionReceipt:
        try:
            return super().execute(request)
        except RuntimeFailureError as error:
            if not error.failure.retryable:
                raise
            return super().execute(request)


class Unbounded(MiniOpenAI):
    max_response = 1 << 40
    max_line = 1 << 40
    max_stream = 1 << 40


class ForgetsToolNames(MiniOpenAI):
    def split_lines(self, pending: bytes) -> tuple[list[bytes], bytes]:
        lines, rest = super().split_lines(pending)
        return [line.replace(b'"name":"get_stock_price"', b'"name":""') for line in lines], rest


class DeafToCancel(MiniOpenAI):
    def stream(self, interaction: CompiledInteraction, sink: Any, cancel: Any) -> ExecutionReceipt:
        return super().stream(interaction, sink, None)


class WrongPath(MiniOpenAI):
    def __init__(self, base_url: str) -> None:
        super().__init__(base_url.removesuffix("/v1"))


BROKEN: list[tuple[Callable[[str], MiniOpenAI], str, str]] = [
    (NaiveLines, "transport.content_stream", "byte-boundary split patterns"),
    (LfOnly, "transport.crlf", "CRLF"),
    (KeepaliveDelta, "transport.idle_events", 'expected {"kind":"Delta"'),
    (ForgetsToolNames, "transport.tool_calls", "get_stock_price"),
    (LeaksProviderText, "transport.in_band_error", "uncapped; cut it to about 300 characters"),
    (EndIsDone, "transport.truncation", "execute_streaming must raise the failure"),
    (WrongStatusCode, "transport.fault_matrix", "HTTP 503 via execute: raised"),
    (Retries, "transport.fault_matrix", "2 HTTP requests for one call"),
    (Unbounded, "transport.size_bounds", "TQX_RUNTIME_INVALID_RESPONSE"),
    (
        lambda url: DeafToCancel(url, timeout_s=0.7),
        "transport.cancellation",
        "expected 'TQX_RUNTIME_CANCELLED'",
    ),
    (WrongPath, "transport.request_shape", "expected POST /v1/chat/completions"),
]


@pytest.mark.parametrize(
    ("adapter", "check", "phrase"),
    BROKEN,
    ids=[f"{getattr(b[0], '__name__', 'DeafToCancel')}-{b[1]}" for b in BROKEN],
)
def test_a_broken_http_adapter_fails_the_matching_transport_check(
    adapter: Callable[[str], MiniOpenAI], check: str, phrase: str
) -> None:
    result = run_check(check, adapter, transport="openai")
    assert result.status is CheckStatus.FAILED, result.message
    assert phrase in result.message


def test_a_default_streaming_http_adapter_is_held_to_one_complete() -> None:
    class NoStreaming(MiniOpenAI):
        execute_streaming = RuntimeAdapter.execute_streaming  # the port's default

    report = run_conformance(NoStreaming, transport="openai")
    statuses = {check.name: check.status for check in report.checks}
    assert report.ok, "\n".join(check.message for check in report.failed_checks)
    assert statuses["transport.cancellation"] is CheckStatus.NOT_APPLICABLE
    assert statuses["streaming.default_projection"] is CheckStatus.PASSED


def test_served_streams_parse_back_to_their_answer() -> None:
    writes = SSE.writes(WIRE.encode_stream(answer_for(TEXT)))
    text = ""
    for write in writes:
        payload = write.decode().removeprefix("data: ").strip()
        if payload.startswith("{"):
            for choice in json.loads(payload)["choices"]:
                text += choice["delta"].get("content") or ""
    assert text == TEXT.content
    assert isinstance(Reply.stream(writes), Reply)
