"""Streamed progress over the service's public async API (``templiqx_mcp.calls``).

Coalesced notifications (issue #28, #29 item 5): at most one per interval plus the final one,
each carrying every event since the last in ``_meta``, a message for people, ``progress``
counting events and ``total`` on the final one.
"""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import msgspec
import pytest

import templiqx_mcp.calls
from templiqx_contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    ToolCallDelta,
    fingerprint,
)
from templiqx_local import compose
from templiqx_mcp.calls import (
    EVENTS_KEY,
    PARTIAL_KEY,
    PARTIAL_OMITTED_KEY,
    ProgressNote,
    stream_with_progress,
)
from templiqx_mock import runtime_from_path
from templiqx_ports import CancelToken, RuntimeAdapter, StreamSink

WELCOME = Path(__file__).resolve().parents[3] / "fixtures" / "packages"
SCENARIO = WELCOME / "welcome" / "scenarios" / "stream-vip"


def _bound() -> dict[str, Any]:
    values = json.loads((SCENARIO / "request.json").read_text(encoding="utf-8"))
    return {
        "package": "welcome",
        "contract": "onboarding-summary",
        "capabilities": None,
        "fixture_output": None,
        "stream": True,
        **values,
    }


def _run(service: Any, bound: dict[str, Any], interval: float = 0.05) -> tuple[Any, list[Any]]:
    """The envelope and the notes (with the time each was sent) of a streamed call."""
    notes: list[tuple[float, ProgressNote]] = []

    async def send(note: ProgressNote) -> None:
        notes.append((anyio.current_time(), note))

    async def main() -> Any:
        return await stream_with_progress(service, bound, send, interval=interval)

    envelope = anyio.run(main)
    return envelope, notes


def _events(notes: list[tuple[float, ProgressNote]]) -> list[dict[str, Any]]:
    return [event for _, note in notes for event in note.meta[EVENTS_KEY]]


def _deltas(envelope: Any) -> list[dict[str, Any]]:
    return [msgspec.to_builtins(e) for e in envelope.stream_events if type(e).__name__ == "Delta"]


def test_notifications_carry_every_event_once_with_a_message_for_people() -> None:
    service = compose(
        str(WELCOME), runtime=runtime_from_path(SCENARIO / "manifest.json", pace_ms=5)
    )
    envelope, notes = _run(service, _bound())
    assert envelope.ok
    assert _events(notes) == _deltas(envelope), "every delta, in order, exactly once"
    progress = [note.progress for _, note in notes]
    assert progress == sorted(set(progress)), "progress grows with every notification"
    *live, (_, final) = notes
    assert all(note.total is None for _, note in live)
    assert final.total == final.progress == len(_deltas(envelope)) + 1
    for _, note in live:
        assert note.message.startswith("Receiving the answer: ")
        assert note.message.endswith(" characters so far")
    text = "".join(delta["text"] for delta in _deltas(envelope))
    assert final.message == (
        f"Answer complete: {len(text):,} characters in {len(_deltas(envelope))} events"
    )
    assert not any(message.startswith("{") for message in (n.message for _, n in notes))


def test_at_most_one_notification_per_interval_plus_the_final_one() -> None:
    service = compose(
        str(WELCOME), runtime=runtime_from_path(SCENARIO / "manifest.json", pace_ms=15)
    )
    interval = 0.05
    envelope, notes = _run(service, _bound(), interval)
    sent = [at for at, _ in notes[:-1]]
    assert all(b - a >= interval - 0.002 for a, b in itertools.pairwise(sent)), sent
    assert len(notes) < len(_deltas(envelope)), "several deltas share a notification"
    assert len(notes) >= 3, "a paced stream is still seen live"


class _Firehose(RuntimeAdapter):
    """A text runtime that streams ``count`` one-character deltas as fast as it can."""

    def __init__(self, count: int) -> None:
        self.count = count

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="test.firehose", version="1", capabilities=["text"])

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        output = "a" * self.count
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(request.interaction),
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=True,
        )

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        for _ in range(self.count):
            sink(Delta(text="a"))
        receipt = self.execute(request)
        sink(Complete.of(receipt))
        return receipt


def _text_bound() -> dict[str, Any]:
    values = {"inputs": {"account": "acme", "open_tickets": 2}, "context": {}}
    return {**_bound(), "contract": "account-digest", **values}


def test_a_fast_stream_is_not_held_back_by_notifications() -> None:
    """100,000 deltas as fast as the runtime makes them: notifications do not pace the stream
    (one per delta capped a stream at ~6k deltas/s); each carries what arrived meanwhile."""
    count = 100_000
    service = compose(str(WELCOME), runtime=_Firehose(count))
    started = time.monotonic()
    envelope, notes = _run(service, _text_bound())
    elapsed = time.monotonic() - started
    assert envelope.ok, envelope.diagnostics
    carried = _events(notes)
    assert len(carried) == count
    assert all(event == {"kind": "Delta", "text": "a"} for event in carried)
    assert len(notes) <= elapsed / 0.05 + 2, (len(notes), elapsed)
    assert notes[-1][1].message == f"Answer complete: {count:,} characters in {count:,} events"


def test_a_client_that_cannot_be_reported_to_cancels_the_runtime() -> None:
    service = compose(
        str(WELCOME), runtime=runtime_from_path(SCENARIO / "manifest.json", pace_ms=20)
    )

    async def send(note: ProgressNote) -> None:
        raise anyio.BrokenResourceError

    envelope = anyio.run(stream_with_progress, service, _bound(), send)
    assert [d.code for d in envelope.diagnostics] == [
        "TQX_RUNTIME_CANCELLED",
        "TQX_STREAM_SINK_FAILED",
    ]
    assert envelope.stream_events[-1].code == "TQX_RUNTIME_CANCELLED"


def test_a_cancelled_call_sends_the_failed_event_last() -> None:
    service = compose(
        str(WELCOME), runtime=runtime_from_path(SCENARIO / "manifest.json", pace_ms=20)
    )
    notes: list[ProgressNote] = []

    async def send(note: ProgressNote) -> None:
        notes.append(note)

    async def main() -> None:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(stream_with_progress, service, _bound(), send)
                while len(notes) < 2:
                    await anyio.sleep(0.005)
                scope.cancel()

    anyio.run(main)
    events = [event for note in notes for event in note.meta[EVENTS_KEY]]
    assert [event["kind"] for event in events[:-1]] == ["Delta"] * (len(events) - 1)
    assert events[-1]["kind"] == "Failed"
    assert events[-1]["code"] == "TQX_RUNTIME_CANCELLED"
    final = notes[-1]
    assert final.total == final.progress
    assert final.message.startswith("Cancelled (TQX_RUNTIME_CANCELLED) after ")


def test_a_refused_call_sends_nothing() -> None:
    service = compose(str(WELCOME), runtime=runtime_from_path(SCENARIO / "manifest.json"))
    envelope, notes = _run(service, {**_bound(), "inputs": {}})
    assert not envelope.ok
    assert notes == []


def test_a_structured_answer_rides_along_as_partial_whenever_it_changed() -> None:
    service = compose(
        str(WELCOME), runtime=runtime_from_path(SCENARIO / "manifest.json", pace_ms=5)
    )
    envelope, notes = _run(service, _bound(), interval=0.0)
    partials = [note.meta[PARTIAL_KEY] for _, note in notes if PARTIAL_KEY in note.meta]
    assert partials[0] == {}
    assert partials[-1] == envelope.result.output
    assert all(b != a for a, b in itertools.pairwise(partials)), "sent only when it changed"
    assert not any(PARTIAL_OMITTED_KEY in note.meta for _, note in notes)


def test_a_partial_over_the_limit_is_omitted_once_then_never_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(templiqx_mcp.calls, "PARTIAL_LIMIT", 40)
    service = compose(
        str(WELCOME), runtime=runtime_from_path(SCENARIO / "manifest.json", pace_ms=5)
    )
    _, notes = _run(service, _bound(), interval=0.0)
    metas = [note.meta for _, note in notes]
    partials = [meta[PARTIAL_KEY] for meta in metas if PARTIAL_KEY in meta]
    assert all(len(json.dumps(p, separators=(",", ":"))) <= 40 for p in partials)
    omitted = [i for i, meta in enumerate(metas) if PARTIAL_OMITTED_KEY in meta]
    assert len(omitted) == 1
    assert metas[omitted[0]][PARTIAL_OMITTED_KEY] is True
    assert all(PARTIAL_KEY not in meta for meta in metas[omitted[0] :])


class _Words(RuntimeAdapter):
    """A text runtime: streams two deltas, then completes with their text."""

    words = ("Acme had ", "a quiet week.")

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="test.words", version="1", capabilities=["text"])

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        output = "".join(self.words)
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(request.interaction),
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=True,
        )

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        for word in self.words:
            sink(Delta(text=word))
        receipt = self.execute(request)
        sink(Complete.of(receipt))
        return receipt


def test_a_text_contract_sends_events_only() -> None:
    service = compose(str(WELCOME), runtime=_Words())
    envelope, notes = _run(service, _text_bound())
    assert envelope.ok, envelope.diagnostics
    assert _events(notes) == [{"kind": "Delta", "text": word} for word in _Words.words]
    assert all(set(note.meta) == {EVENTS_KEY} for _, note in notes)


def test_the_official_client_sees_messages_progress_and_the_data_beside(
    open_session: Any, packages_root: Path
) -> None:
    scenario = packages_root / "welcome" / "scenarios" / "stream-vip"
    env = {
        "TEMPLIQX_RUNTIME": "mock",
        "TEMPLIQX_MOCK_SCENARIO": str(scenario / "manifest.json"),
        "TEMPLIQX_MOCK_PACE_MS": "10",
    }
    values = json.loads((scenario / "request.json").read_text(encoding="utf-8"))
    shown: list[tuple[float, float | None, str | None]] = []
    metas: list[dict[str, Any]] = []
    found: dict[str, Any] = {}

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        shown.append((value, total, message))

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ProgressNotification):
            metas.append(message.params.meta or {})

    async def drive() -> None:
        async with open_session(
            "--root", str(packages_root), env=env, message_handler=on_message
        ) as session:
            result = await session.call_tool(
                "execute_contract",
                {"package": "welcome", "contract": "onboarding-summary", "stream": True, **values},
                progress_callback=on_progress,
            )
            found["envelope"] = result.structured_content

    anyio.run(drive)
    envelope = found["envelope"]
    assert envelope["ok"] is True
    shown.sort()
    assert shown[-1][1] == shown[-1][0], "the final notification has its total"
    assert shown[-1][2].startswith("Answer complete: ")
    assert all(message.startswith("Receiving the answer: ") for _, _, message in shown[:-1])
    assert len(metas) == len(shown)
    carried = [event for meta in metas for event in meta[EVENTS_KEY]]
    deltas = [e for e in envelope["stream_events"] if e["kind"] == "Delta"]
    assert sorted(e["text"] for e in carried) == sorted(e["text"] for e in deltas)
    partials = [meta[PARTIAL_KEY] for meta in metas if PARTIAL_KEY in meta]
    assert envelope["result"]["output"] in partials
    assert all("partial" not in e for e in envelope["stream_events"])  # the events are unchanged


def test_tool_call_messages_name_each_tool_once() -> None:
    tally = templiqx_mcp.calls._Tally()
    for _ in range(1000):  # parallel calls whose fragments alternate
        tally.count(ToolCallDelta(name="lookup_account", arguments_fragment="{}"))
        tally.count(ToolCallDelta(name="open_ticket", arguments_fragment="{}"))
    assert len(tally.tools) == 2
    assert tally.so_far() == (
        "Receiving tool calls ('lookup_account', 'open_ticket'): 4,000 characters of "
        "arguments so far"
    )
    assert tally.done(None) == (
        "Tool calls complete ('lookup_account', 'open_ticket') in 2,000 events"
    )
