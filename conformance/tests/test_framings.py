"""Framing is the wire's choice: every framing's writes, keep-alives and cut points, and honest
adapters for a streamed JSON array and for a provider that never streams passing the kit.

(SSE with and without named events and NDJSON are proven by the OpenAI suite, the Messages
example and the NDJSON example.)
"""

from __future__ import annotations

import json

from support.mini_array import ArrayWire, MiniArray
from support.mini_whole import MiniWhole, MiniWholeDefault, WholeWire

from templiqx_conformance import (
    JSON_ARRAY,
    NDJSON,
    SSE,
    WHOLE_BODY,
    AdapterTarget,
    CheckStatus,
    Raw,
    SSEEvent,
    run_check,
    run_conformance,
)
from templiqx_contracts import ExecutionReceipt, fingerprint
from templiqx_ports import RuntimeFailureError

FRAMES = [{"text": "a\\n\\n"}, {"text": 'b"]}'}, {"done": True}]


def test_sse_frames_are_events_with_comment_keepalives() -> None:
    writes = SSE.writes([SSEEvent({"x": 1}, event="delta"), {"y": 2}], "\r\n")
    assert writes == [b'event: delta\r\ndata: {"x":1}\r\n\r\n', b'data: {"y":2}\r\n\r\n']
    assert SSE.keepalive() == b": keep-alive\n\n"
    assert SSE.boundaries(b"".join(writes)) == [len(writes[0]), len(writes[0]) + len(writes[1])]
    assert SSE.content_type == "text/event-stream"
    assert SSE.lines


def test_ndjson_frames_are_lines_with_no_keepalive() -> None:
    writes = NDJSON.writes(FRAMES)
    assert [json.loads(w) for w in writes] == FRAMES
    assert all(w.endswith(b"\n") and w.count(b"\n") == 1 for w in writes)
    assert NDJSON.keepalive() is None
    data = b"".join(writes)
    assert NDJSON.boundaries(data) == [sum(len(w) for w in writes[: i + 1]) for i in range(3)]
    assert NDJSON.content_type == "application/x-ndjson"
    assert NDJSON.lines
    assert NDJSON.writes([NDJSON.malformed(FRAMES[0])]) == [b'{"text":"\n']


def test_json_array_frames_are_elements_ending_at_the_bracket() -> None:
    writes = JSON_ARRAY.writes(FRAMES, "\r\n")
    data = b"".join(writes)
    assert json.loads(data) == FRAMES
    assert writes[0].startswith(b"[")
    assert writes[-1] == b"\r\n]"
    # after each element (strings with brackets and escapes included), then after the ']'
    ends = JSON_ARRAY.boundaries(data)
    assert len(ends) == len(FRAMES) + 1
    assert all(json.loads(data[:end] + (b"]" if end < len(data) else b"")) for end in ends)
    assert JSON_ARRAY.keepalive() == b"\n"
    assert not JSON_ARRAY.lines


def test_a_whole_body_is_one_write_and_has_no_cut_points() -> None:
    assert WHOLE_BODY.writes([{"a": 1}]) == [b'{"a":1}']
    assert WHOLE_BODY.boundaries(b'{"a":1}') == []
    assert not WHOLE_BODY.streams
    assert WHOLE_BODY.writes([Raw("{")]) == [b"{"]


def test_an_honest_json_array_adapter_passes_every_check() -> None:
    report = run_conformance(AdapterTarget(factory=MiniArray, transport=ArrayWire()))
    assert report.ok, "\n".join(f"{c.name}: {c.message}" for c in report.failed_checks)
    assert report.transport == "acme-array"


class NaiveArray(MiniArray):
    """Bug: takes the last element for the end of the answer, never waiting for ``]``."""

    def _stream(self, interaction, sink, cancel):  # type: ignore[no-untyped-def]
        try:
            return super()._stream(interaction, sink, cancel)
        except Exception as error:
            if "closing bracket" not in str(error):
                raise
            return self._receipt(interaction, "whatever arrived")


def test_a_json_array_cut_before_its_bracket_must_fail() -> None:
    result = run_check("transport.truncation", NaiveArray, transport=ArrayWire())
    assert result.status is CheckStatus.FAILED
    assert "streams cut at a frame boundary" in result.message


def test_an_honest_adapter_of_a_provider_that_never_streams_passes() -> None:
    report = run_conformance(AdapterTarget(factory=MiniWhole, transport=WholeWire()))
    assert report.ok, "\n".join(f"{c.name}: {c.message}" for c in report.failed_checks)
    statuses = {check.name: check.status for check in report.checks}
    for name in ("transport.idle_events", "transport.crlf"):
        assert statuses[name] is CheckStatus.NOT_APPLICABLE, name
    assert statuses["transport.tool_calls"] is CheckStatus.PASSED  # whole calls, one delta each
    assert statuses["transport.in_band_error"] is CheckStatus.PASSED  # the error with a 200
    assert statuses["transport.cancellation"] is CheckStatus.PASSED  # before the first byte


def test_a_default_streaming_adapter_of_such_a_provider_passes() -> None:
    report = run_conformance(AdapterTarget(factory=MiniWholeDefault, transport=WholeWire()))
    assert report.ok, "\n".join(f"{c.name}: {c.message}" for c in report.failed_checks)
    assert report.check("streaming.default_projection").status is CheckStatus.PASSED


class IgnoresFaults(MiniWhole):
    """Bug: a 200 carrying a fault is read as an empty answer."""

    def _call(self, interaction, sink, cancel):  # type: ignore[no-untyped-def]
        try:
            return super()._call(interaction, sink, cancel)
        except RuntimeFailureError as error:
            if "fault" not in str(error):
                raise
            return ExecutionReceipt(
                adapter=self.descriptor(),
                request_fingerprint=fingerprint(self.body(interaction)),
                output_fingerprint=fingerprint(""),
                output="",
                output_schema_valid=False,
            )


def test_an_error_reported_with_a_200_must_fail_the_call() -> None:
    result = run_check("transport.in_band_error", IgnoresFaults, transport=WholeWire())
    assert result.status is CheckStatus.FAILED
    assert "an error body with HTTP 200 via execute: returned ExecutionReceipt" in result.message
