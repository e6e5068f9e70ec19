"""Streamed progress over the service's public async API (``templiqx_mcp.calls``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from templiqx_local import compose
from templiqx_mcp.calls import stream_with_progress
from templiqx_mock import runtime_from_path

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
