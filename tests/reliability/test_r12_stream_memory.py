"""R12: what the service keeps of a huge stream stays bounded (issue #18 item 4).

A runtime streams 1,000,000 one-byte deltas (CI-sized: 200,000) through
``TempliqxService.execute_contract(stream=True)`` with a live sink, and through the iterator
API. Before the bound the service kept every event (426 MiB and a 34 MB envelope for a million
deltas). Now the envelope keeps a prefix of at most ``StreamLimits.events`` events, ends in the
terminal event, says with ``TQX_STREAM_EVENTS_TRUNCATED`` how many were dropped, and the
receipt is the runtime's whole output. The live consumer still sees every event.

The runtime generates its deltas as it goes, so the figure is the service's own memory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import reliability_kit as kit

from templiqx_application import DEFAULT_STREAM_LIMITS, TempliqxService
from templiqx_contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
    fingerprint,
)
from templiqx_local import FilesystemArtifactWorkspace, FilesystemPackageStore
from templiqx_ports import CancelToken, RuntimeAdapter, StreamSink

SUITE = "R12"
DELTAS = kit.scaled(200_000, 1_000_000)
CEILING_MIB = 64.0
CONTRACT = """\
api_version: templiqx/v1alpha1
id: chat
version: 1.0.0
capabilities: [text]
messages:
  - role: user
    content:
      - {kind: text, value: talk}
output_schema: {type: string}
"""


class _Firehose(RuntimeAdapter):
    """Streams ``count`` one-byte deltas generated on the fly, then the assembled text."""

    def __init__(self, count: int) -> None:
        self.count = count

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="r12.firehose", version="1", capabilities=["text"])

    def _receipt(self, request: ExecutionRequest) -> ExecutionReceipt:
        output = "a" * self.count
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(request.interaction),
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=True,
        )

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self._receipt(request)

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        for _ in range(self.count):
            sink(Delta(text="a"))
        receipt = self._receipt(request)
        sink(Complete.of(receipt))
        return receipt


def _service(root: Path) -> TempliqxService:
    package = root / "firehose"
    (package / "contracts").mkdir(parents=True)
    (package / "contracts" / "chat.yaml").write_text(CONTRACT, encoding="utf-8")
    (package / "templiqx.yaml").write_text(
        "api_version: templiqx/v1alpha1\npackage: firehose\nversion: 0.1.0\ncontracts: [chat]\n",
        encoding="utf-8",
    )
    return TempliqxService(
        FilesystemPackageStore(root),
        FilesystemArtifactWorkspace(root / ".templiqx-workspace"),
        _Firehose(DELTAS),
    )


def _check(envelope: Any, seen: int) -> None:
    assert envelope.ok, envelope.diagnostics
    assert seen == DELTAS + 1, "the live consumer sees every event"
    assert len(envelope.stream_events) == DEFAULT_STREAM_LIMITS.events
    assert isinstance(envelope.stream_events[-1], Complete)
    assert envelope.result.output == "a" * DELTAS, "the receipt is unaffected"
    (warning,) = envelope.diagnostics
    assert warning.code == "TQX_STREAM_EVENTS_TRUNCATED"
    dropped = DELTAS + 1 - DEFAULT_STREAM_LIMITS.events
    assert f"{dropped} later events ({dropped} bytes of text)" in warning.message


def test_a_million_delta_stream_keeps_a_bounded_prefix(tmp_path: Path, figures: Any) -> None:
    figures.expect(SUITE, "deltas streamed through the service", ">=", DELTAS)
    figures.expect(SUITE, "largest peak-memory growth", "<=", CEILING_MIB, " MiB")
    service = _service(tmp_path)
    seen = 0

    def sink(event: StreamEvent) -> None:
        nonlocal seen
        seen += 1

    with kit.measure_peak() as peak:
        envelope = service.execute_contract("firehose", "chat", stream=True, sink=sink)
        encoded = len(envelope.to_builtins()["stream_events"])
    _check(envelope, seen)
    assert encoded == DEFAULT_STREAM_LIMITS.events
    figures.add(SUITE, "deltas streamed through the service", DELTAS)
    figures.peak(SUITE, "slowest stream", round(peak.seconds, 2), " s")
    if peak.growth_mib is not None:
        figures.peak(SUITE, "largest peak-memory growth", round(peak.growth_mib, 1))

    with kit.measure_peak() as peak, service.stream_contract("firehose", "chat") as run:
        iterated = sum(1 for _ in run)
    _check(run.envelope, iterated)
    service.close()
    if peak.growth_mib is not None:
        figures.peak(SUITE, "largest peak-memory growth", round(peak.growth_mib, 1))
