"""Streamed progress over the service's public async API (``templiqx_mcp.calls``)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

import templiqx_mcp.calls
from templiqx_contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    fingerprint,
)
from templiqx_local import compose
from templiqx_mcp.calls import stream_with_progress
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


def test_progress_is_one_notification_per_delta_and_the_envelope_keeps_every_event() -> None:
    service = compose(str(WELCOME), runtime=runtime_from_path(SCENARIO / "manifest.json"))
    sent: list[tuple[float, str | None]] = []

    async def report(progress: float, total: float | None, message: str | None) -> None:
        sent.append((progress, message))

    envelope = anyio.run(stream_with_progress, service, _bound(), report)
    assert envelope.ok
    deltas = [event for event in envelope.stream_events if type(event).__name__ == "Delta"]
    assert [progress for progress, _ in sent] == [float(i) for i in range(1, len(deltas) + 1)]
    assert [json.loads(message or "")["kind"] for _, message in sent] == ["Delta"] * len(deltas)


def test_a_client_that_cannot_be_reported_to_cancels_the_runtime() -> None:
    service = compose(
        str(WELCOME), runtime=runtime_from_path(SCENARIO / "manifest.json", pace_ms=20)
    )

    async def report(progress: float, total: float | None, message: str | None) -> None:
        raise anyio.BrokenResourceError

    envelope = anyio.run(stream_with_progress, service, _bound(), report)
    assert [d.code for d in envelope.diagnostics] == [
        "TQX_RUNTIME_CANCELLED",
        "TQX_STREAM_SINK_FAILED",
    ]
    assert envelope.stream_events[-1].code == "TQX_RUNTIME_CANCELLED"


def test_a_cancelled_call_sends_the_failed_event_last() -> None:
    service = compose(
        str(WELCOME), runtime=runtime_from_path(SCENARIO / "manifest.json", pace_ms=20)
    )
    sent: list[dict[str, Any]] = []

    async def report(progress: float, total: float | None, message: str | None) -> None:
        sent.append(json.loads(message or ""))

    async def main() -> None:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(stream_with_progress, service, _bound(), report)
                while len(sent) < 3:
                    await anyio.sleep(0.005)
                scope.cancel()

    anyio.run(main)
    assert [event["kind"] for event in sent[:-1]] == ["Delta"] * (len(sent) - 1)
    assert sent[-1]["kind"] == "Failed"
    assert sent[-1]["code"] == "TQX_RUNTIME_CANCELLED"


def _progress(service: Any, bound: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    sent: list[dict[str, Any]] = []

    async def report(progress: float, total: float | None, message: str | None) -> None:
        sent.append(json.loads(message or ""))

    envelope = anyio.run(stream_with_progress, service, bound, report)
    return envelope, sent


def test_a_structured_answer_rides_along_as_partial_whenever_it_changed() -> None:
    service = compose(str(WELCOME), runtime=runtime_from_path(SCENARIO / "manifest.json"))
    envelope, sent = _progress(service, _bound())
    deltas = [event for event in envelope.stream_events if type(event).__name__ == "Delta"]
    assert [{k: m[k] for k in ("kind", "text")} for m in sent] == [
        {"kind": "Delta", "text": delta.text} for delta in deltas
    ]
    partials = [m["partial"] for m in sent if "partial" in m]
    assert partials[:2] == [{}, {"summary": "Anouk "}]
    assert partials[-1] == envelope.result.output
    assert all(b != a for a, b in itertools.pairwise(partials)), "sent only when it changed"
    assert len(partials) < len(sent)  # some deltas (a member name, a comma) changed nothing
    assert not any("partial_omitted" in m for m in sent)


def test_a_partial_over_the_limit_is_omitted_once_then_never_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(templiqx_mcp.calls, "PARTIAL_LIMIT", 40)
    service = compose(str(WELCOME), runtime=runtime_from_path(SCENARIO / "manifest.json"))
    _, sent = _progress(service, _bound())
    partials = [m for m in sent if "partial" in m]
    assert all(len(json.dumps(m["partial"], separators=(",", ":"))) <= 40 for m in partials)
    omitted = [i for i, m in enumerate(sent) if "partial_omitted" in m]
    assert len(omitted) == 1
    assert sent[omitted[0]]["partial_omitted"] is True
    assert all("partial" not in m for m in sent[omitted[0] :])


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
    values = {"inputs": {"account": "acme", "open_tickets": 2}, "context": {}}
    bound = {**_bound(), "contract": "account-digest", **values}
    envelope, sent = _progress(service, bound)
    assert envelope.ok, envelope.diagnostics
    assert sent == [{"kind": "Delta", "text": word} for word in _Words.words]


def test_the_official_client_sees_the_form_fill_in(open_session: Any, packages_root: Path) -> None:
    scenario = packages_root / "welcome" / "scenarios" / "stream-vip"
    env = {"TEMPLIQX_RUNTIME": "mock", "TEMPLIQX_MOCK_SCENARIO": str(scenario / "manifest.json")}
    values = json.loads((scenario / "request.json").read_text(encoding="utf-8"))
    messages: list[dict[str, Any]] = []
    found: dict[str, Any] = {}

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        messages.append(json.loads(message or ""))

    async def drive() -> None:
        async with open_session("--root", str(packages_root), env=env) as session:
            result = await session.call_tool(
                "execute_contract",
                {"package": "welcome", "contract": "onboarding-summary", "stream": True, **values},
                progress_callback=on_progress,
            )
            found["envelope"] = result.structured_content

    anyio.run(drive)
    envelope = found["envelope"]
    assert envelope["ok"] is True
    partials = [m["partial"] for m in messages if "partial" in m]
    assert partials[0] == {}
    assert partials[-1] == envelope["result"]["output"]
    assert [m["kind"] for m in messages] == ["Delta"] * len(messages)
    events = [e for e in envelope["stream_events"] if e["kind"] == "Delta"]
    assert [m["text"] for m in messages] == [e["text"] for e in events]
    assert all("partial" not in e for e in envelope["stream_events"])  # the events are unchanged
