"""§2.10 and the cancellation / pacing extensions: the streamed events of ScriptedRuntime."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from templiqx_contracts import Complete, Delta, ExecutionRequest, Failed, StreamEvent
from templiqx_mock import (
    CANCELLED_DETAIL,
    ScenarioManifest,
    ScriptedRuntime,
    StreamDelta,
    runtime_failure_fingerprint,
)
from templiqx_ports import (
    InvalidDataError,
    RuntimeFailureCode,
    RuntimeFailureError,
    validate_event_order,
)

Data = dict[str, Any]
MakeRequest = Callable[..., ExecutionRequest]

STREAM = [
    {"kind": "start", "id": "s1"},
    {"kind": "delta", "id": "d1", "text": "Extracted "},
    {"kind": "delta", "id": "d2", "text": "onboarding facts"},
    {"kind": "end", "id": "e1"},
    {"kind": "finish", "id": "f1", "output": {"ok": True}, "output_schema_valid": True},
]


class Recorder:
    """A sink that records events (and, optionally, reacts to them)."""

    def __init__(self, on_event: Callable[[list[StreamEvent]], None] | None = None) -> None:
        self.events: list[StreamEvent] = []
        self.times: list[float] = []
        self._on_event = on_event

    def __call__(self, event: StreamEvent) -> None:
        self.events.append(event)
        self.times.append(time.monotonic())
        if self._on_event is not None:
            self._on_event(self.events)


def _stream_runtime(stream_manifest: Callable[..., Data], parse: Any, **kwargs: Any) -> Any:
    return ScriptedRuntime.from_manifest(parse(stream_manifest(STREAM)), **kwargs)


def test_streaming_receipt_matches_non_streaming(
    stream_manifest: Callable[..., Data], parse: Any, make_request: MakeRequest
) -> None:
    request = make_request({"ok": True})
    expected = _stream_runtime(stream_manifest, parse).execute(request)
    runtime = _stream_runtime(stream_manifest, parse)
    sink = Recorder()
    receipt = runtime.execute_streaming(request, sink)
    assert receipt == expected
    validate_event_order(sink.events)
    assert sink.events == [
        Delta(text="Extracted "),
        Delta(text="onboarding facts"),
        Complete.of(expected),
    ]
    last = sink.events[-1]
    assert isinstance(last, Complete)
    assert last.receipt == receipt
    assert runtime.stats().attempts == 1


def test_project_stream_fixture_streams_every_delta(
    welcome_stream: Path, make_request: MakeRequest
) -> None:
    manifest = ScenarioManifest.load(welcome_stream)
    assert manifest.events is not None
    assert {e.kind for e in manifest.events} == {"start", "delta", "usage", "end", "finish"}
    texts = [e.text for e in manifest.events if isinstance(e, StreamDelta)]
    sink = Recorder()
    receipt = ScriptedRuntime.from_manifest(manifest).execute_streaming(make_request(), sink)
    validate_event_order(sink.events)
    assert sink.events[:-1] == [Delta(text=text) for text in texts]
    assert len(texts) == 18
    assert sink.events[-1] == Complete.of(receipt)
    assert receipt == ScriptedRuntime.from_manifest(manifest).execute(make_request())
    assert receipt.output_schema_valid is True


def test_step_manifest_streams_one_terminal(crm3: Path, make_request: MakeRequest) -> None:
    manifest = ScenarioManifest.load(crm3 / "scenarios" / "intake-document-01" / "manifest.json")
    runtime = ScriptedRuntime.from_manifest(manifest)
    sink = Recorder()
    receipt = runtime.execute_streaming(make_request({"ok": 1}), sink)
    assert sink.events == [Complete.of(receipt)]
    assert runtime.stats().elapsed_ms == 25
    fresh = ScriptedRuntime.from_manifest(manifest).execute(make_request({"ok": 1}))
    assert fresh == receipt


@pytest.mark.parametrize(
    "scenario_id",
    ["ambiguous-date", "contradictory-evidence", "missing-notice-date", "missing-required-field"],
)
def test_failure_manifest_streams_exactly_one_failed(
    crm3: Path, scenario_id: str, make_request: MakeRequest
) -> None:
    manifest = ScenarioManifest.load(crm3 / "scenarios" / scenario_id / "manifest.json")
    sink = Recorder()
    with pytest.raises(RuntimeFailureError) as caught:
        ScriptedRuntime.from_manifest(manifest).execute_streaming(make_request(), sink)
    validate_event_order(sink.events)
    assert sink.events == [Failed(code=manifest.expected_failure or "", message=str(caught.value))]


def test_mid_stream_failure_emits_stable_failed_code(make_request: MakeRequest) -> None:
    runtime = ScriptedRuntime.failure("mid-stream", RuntimeFailureCode.INVALID_RESPONSE)
    sink = Recorder()
    with pytest.raises(RuntimeFailureError) as caught:
        runtime.execute_streaming(make_request(), sink)
    assert sink.events == [
        Failed(
            code="TQX_RUNTIME_INVALID_RESPONSE",
            message="runtime failure TQX_RUNTIME_INVALID_RESPONSE: "
            "scripted runtime failure: mid-stream",
        )
    ]
    failed = sink.events[0]
    assert isinstance(failed, Failed)
    assert failed.code == caught.value.failure.code.value
    assert failed.message == str(caught.value)
    # Single shot: the next stream succeeds with one Complete.
    again = Recorder()
    receipt = runtime.execute_streaming(make_request({"x": 1}), again)
    assert again.events == [Complete.of(receipt)]
    assert runtime.stats().attempts == 2


def test_script_queue_stream_parity(make_request: MakeRequest) -> None:
    request = make_request({"ok": True})
    sink = Recorder()
    receipt = ScriptedRuntime.success().execute_streaming(request, sink)
    assert receipt == ScriptedRuntime.success().execute(request)
    assert sink.events == [Complete.of(receipt)]


def test_events_failing_at_execution_emit_deltas_then_failed(
    stream_manifest: Callable[..., Data], parse: Any, make_request: MakeRequest
) -> None:
    """Deltas go out before execution; an execution error still ends in exactly one Failed."""
    events = [*STREAM[:-1], {"kind": "finish", "id": "f1"}]
    runtime = ScriptedRuntime.from_manifest(parse(stream_manifest(events)))
    sink = Recorder()
    with pytest.raises(InvalidDataError) as caught:
        runtime.execute_streaming(make_request({"x": float("inf")}), sink)
    validate_event_order(sink.events)
    assert [type(e) for e in sink.events] == [Delta, Delta, Failed]
    assert sink.events[-1] == Failed(code="TQX_DATA_INVALID", message=str(caught.value))


# --- cancellation and pacing ------------------------------------------------------------------


def _cancelled_failure(events: list[StreamEvent], error: RuntimeFailureError) -> None:
    failed = events[-1]
    assert isinstance(failed, Failed)
    assert failed.code == "TQX_RUNTIME_CANCELLED"
    assert failed.message == str(error)
    assert error.failure.code is RuntimeFailureCode.CANCELLED
    assert error.failure.detail == CANCELLED_DETAIL
    assert not error.failure.retryable
    assert error.failure.fingerprint == runtime_failure_fingerprint(
        "cancelled", "TQX_RUNTIME_CANCELLED", None
    )


def test_cancel_before_streaming(
    stream_manifest: Callable[..., Data], parse: Any, make_request: MakeRequest
) -> None:
    runtime = _stream_runtime(stream_manifest, parse, pace_ms=200)
    cancel = threading.Event()
    cancel.set()
    sink = Recorder()
    started = time.monotonic()
    with pytest.raises(RuntimeFailureError) as caught:
        runtime.execute_streaming(make_request(), sink, cancel=cancel)
    assert time.monotonic() - started < 1.0
    assert len(sink.events) == 1
    _cancelled_failure(sink.events, caught.value)
    assert caught.value.failure.scenario_id == "minimal"
    assert runtime.stats().attempts == 0


def test_cancel_before_executing_a_step_manifest(crm3: Path, make_request: MakeRequest) -> None:
    manifest = ScenarioManifest.load(crm3 / "scenarios" / "intake-document-01" / "manifest.json")
    runtime = ScriptedRuntime.from_manifest(manifest)
    cancel = threading.Event()
    cancel.set()
    sink = Recorder()
    with pytest.raises(RuntimeFailureError) as caught:
        runtime.execute_streaming(make_request(), sink, cancel=cancel)
    _cancelled_failure(sink.events, caught.value)
    assert len(sink.events) == 1
    assert runtime.stats().attempts == 0
    # An unset token changes nothing.
    ok = Recorder()
    runtime.execute_streaming(make_request(), ok, cancel=threading.Event())
    assert [type(e) for e in ok.events] == [Complete]


def test_cancel_from_the_sink_during_a_paced_stream(
    welcome_stream: Path, make_request: MakeRequest
) -> None:
    cancel = threading.Event()

    def after_two_deltas(events: list[StreamEvent]) -> None:
        if len(events) == 2:
            cancel.set()

    runtime = ScriptedRuntime.from_manifest(ScenarioManifest.load(welcome_stream), pace_ms=300)
    sink = Recorder(after_two_deltas)
    started = time.monotonic()
    with pytest.raises(RuntimeFailureError) as caught:
        runtime.execute_streaming(make_request(), sink, cancel=cancel)
    returned = time.monotonic()
    # Cancelled right after the second delta: the pause is cut short (well under 1 s).
    assert returned - started < 1.0
    assert sink.times[2] - sink.times[1] < 0.1
    assert [type(e) for e in sink.events] == [Delta, Delta, Failed]
    validate_event_order(sink.events)
    _cancelled_failure(sink.events, caught.value)
    assert caught.value.failure.scenario_id == "stream-vip"
    assert runtime.stats().attempts == 0
    count = len(sink.events)
    time.sleep(0.4)
    assert len(sink.events) == count


def test_cancel_from_another_thread_is_noticed_quickly(
    welcome_stream: Path, make_request: MakeRequest
) -> None:
    runtime = ScriptedRuntime.from_manifest(ScenarioManifest.load(welcome_stream), pace_ms=1000)
    cancel = threading.Event()
    sink = Recorder()
    timer = threading.Timer(0.15, cancel.set)
    timer.start()
    try:
        with pytest.raises(RuntimeFailureError) as caught:
            runtime.execute_streaming(make_request(), sink, cancel=cancel)
    finally:
        timer.cancel()
    finished = time.monotonic()
    # The first delta went out at once; the 1 s pause after it was cut short by the cancel.
    assert [type(e) for e in sink.events] == [Delta, Failed]
    assert sink.times[-1] - sink.times[0] < 1.0
    assert finished - sink.times[-1] < 0.1
    _cancelled_failure(sink.events, caught.value)


def test_pacing_waits_between_deltas(
    stream_manifest: Callable[..., Data], parse: Any, make_request: MakeRequest
) -> None:
    runtime = _stream_runtime(stream_manifest, parse, pace_ms=60)
    sink = Recorder()
    receipt = runtime.execute_streaming(make_request(), sink)
    assert [type(e) for e in sink.events] == [Delta, Delta, Complete]
    assert sink.times[1] - sink.times[0] >= 0.055
    assert sink.times[2] - sink.times[1] >= 0.055
    # Pacing is real time only: the receipt and the virtual clock are unchanged.
    assert receipt == _stream_runtime(stream_manifest, parse).execute(make_request())
    assert runtime.stats().elapsed_ms == 0


def test_the_mock_never_sleeps_by_default(
    welcome_stream: Path, crm3: Path, make_request: MakeRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    def forbidden(_seconds: float) -> None:
        raise AssertionError("the mock slept")

    monkeypatch.setattr(time, "sleep", forbidden)
    stream = ScriptedRuntime.from_manifest(ScenarioManifest.load(welcome_stream))
    stream.execute_streaming(make_request(), Recorder(), cancel=threading.Event())
    intake = ScenarioManifest.load(crm3 / "scenarios" / "intake-document-01" / "manifest.json")
    delayed = ScriptedRuntime.from_manifest(intake)
    delayed.execute(make_request())
    assert delayed.stats().elapsed_ms == 25
