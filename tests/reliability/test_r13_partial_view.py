"""R13: the partial view of a huge structured answer costs time linear in it (issue #29 item 5).

A runtime streams a structured answer whose one string member is 1.8 MB long, in 450,000
deltas of four characters (the issue's case), through ``stream_contract`` (iterating
``run.partials()``) and through ``execute_contract(stream=True)`` with a sink feeding a
:class:`~templiqx_application.PartialView`. Before the fix the view rebuilt the growing string
after every delta: the stream took 128 s where the same stream without a view took 5.8 s, and
did not finish within a 30 s deadline. Now each delta costs what it holds.

The measure is behaviour, with bounds the quadratic view fails by far. Each stream with a view
is compared with the same stream without one, in the same test on the same machine — the sink
without a view for the sink, the iterator over a text contract (same runtime, same deltas, no
view) for the iterator — in CPU time, because other work on a shared machine stretches wall
time unevenly. The iterator with its view may take at most 5 times the CPU time of the iterator
without (measured: 2.4; the quadratic view: 10.7), the sink with a view at most 10 times that of
a sink doing nothing (measured: 4.8; the quadratic view: 31). Each runs under a wall-clock
deadline of twenty times the stream without a view (at least 60 s) that cancels the call, so a
regression ends the test instead of hanging it.
Both streams must complete, their views and their incremental changes must rebuild exactly the
receipt's output, and the changes must stay linear in the answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import reliability_kit as kit

from templiqx_application import (
    CHANGE_BYTES_PER_ANSWER_BYTE,
    PartialView,
    TempliqxService,
)
from templiqx_contracts import (
    MISSING,
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    PartialChange,
    StreamEvent,
    apply_partial_changes,
    encode_partial_changes,
    fingerprint,
)
from templiqx_local import FilesystemArtifactWorkspace, FilesystemPackageStore
from templiqx_ports import (
    CancelToken,
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeFailureCode,
    RuntimeFailureError,
    StreamSink,
)

SUITE = "R13"
DELTAS = 450_000  # the case at every count: it is the case that broke
DELTA_CHARS = 4
# CPU time with the view / without, per way of streaming: the iterator pays a thread handoff
# per delta with or without a view, the bare sink nothing, so the view weighs more against it.
SLOWDOWN_ALLOWED = {"iterator": 5.0, "sink": 10.0}
DEADLINE_FACTOR = 20.0  # wall time: only to end a run that regressed, whatever the load
DEADLINE_FLOOR_S = 60.0
CEILING_MIB = 64.0
TEXT_CONTRACT = """\
api_version: templiqx/v1alpha1
id: prose
version: 1.0.0
capabilities: [text]
messages:
  - role: user
    content:
      - {kind: text, value: write}
output_schema: {type: object}
"""
CONTRACT = """\
api_version: templiqx/v1alpha1
id: report
version: 1.0.0
capabilities: [structured_output]
messages:
  - role: user
    content:
      - {kind: text, value: write}
output_schema:
  type: object
  required: [text]
  properties:
    text: {type: string}
"""


def _pieces() -> Iterator[str]:
    """The delta texts: a new four-character string each time, as a runtime's deltas are."""
    yield '{"text": "'
    for number in range(DELTAS):
        yield f"{number % 10_000:04}"
    yield '"}'


ANSWER_TEXT = "".join(_pieces())
OUTPUT = {"text": ANSWER_TEXT[len('{"text": "') : -len('"}')]}


class _Writer(RuntimeAdapter):
    """Streams the answer in 450,000 deltas generated as it goes; honours cancellation."""

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id="r13.writer", version="1", capabilities=["structured_output", "text"]
        )

    def _receipt(self, request: ExecutionRequest) -> ExecutionReceipt:
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(request.interaction),
            output_fingerprint=fingerprint(OUTPUT),
            output=OUTPUT,
            output_schema_valid=True,
        )

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self._receipt(request)

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        for number, piece in enumerate(_pieces()):
            if number % 1024 == 0 and cancel is not None and cancel.is_set():
                error = RuntimeFailureError(
                    RuntimeFailure(
                        code=RuntimeFailureCode.CANCELLED,
                        adapter_id="r13.writer",
                        adapter_version="1",
                        fingerprint="0",
                        detail="the deadline passed",
                    )
                )
                sink(Failed(code=error.code, message=str(error)))
                raise error
            sink(Delta(text=piece))
        receipt = self._receipt(request)
        sink(Complete.of(receipt))
        return receipt


def _service(root: Path) -> TempliqxService:
    package = root / "writer"
    (package / "contracts").mkdir(parents=True)
    (package / "contracts" / "report.yaml").write_text(CONTRACT, encoding="utf-8")
    (package / "contracts" / "prose.yaml").write_text(TEXT_CONTRACT, encoding="utf-8")
    (package / "templiqx.yaml").write_text(
        "api_version: templiqx/v1alpha1\npackage: writer\nversion: 0.1.0\n"
        "contracts: [report, prose]\n",
        encoding="utf-8",
    )
    return TempliqxService(
        FilesystemPackageStore(root),
        FilesystemArtifactWorkspace(root / ".templiqx-workspace"),
        _Writer(),
    )


class _Rebuilt:
    """Applies a stream's changes as they come, in batches (the way a client would), and
    counts their encoded size."""

    def __init__(self) -> None:
        self.value: Any = MISSING
        self.encoded = 0
        self._batch: list[PartialChange] = []

    def take(self, changes: tuple[PartialChange, ...]) -> None:
        if changes:
            self.encoded += len(encode_partial_changes(changes))
            self._batch.extend(changes)
            if len(self._batch) >= 10_000:
                self.flush()

    def flush(self) -> Any:
        self.value = apply_partial_changes(self.value, self._batch)
        self._batch = []
        return self.value

    def ratio(self) -> float:
        """Encoded bytes of changes per byte of the answer's JSON text."""
        return self.encoded / len(ANSWER_TEXT)


class _Timing(NamedTuple):
    peak: kit.Peak
    cpu_s: float
    """CPU time of the process (every thread) while the stream ran."""

    def deadline(self) -> float:
        """A wall-clock deadline for the same stream with a view."""
        return max(DEADLINE_FLOOR_S, DEADLINE_FACTOR * self.peak.seconds)


def _timed(run: Callable[[threading.Event], Any], deadline_s: float) -> tuple[Any, _Timing]:
    """Run ``run(cancel)`` with ``cancel`` set once ``deadline_s`` has passed."""
    cancel = threading.Event()
    timer = threading.Timer(deadline_s, cancel.set)
    timer.start()
    try:
        cpu = time.process_time()
        with kit.measure_peak() as peak:
            result = run(cancel)
        cpu = time.process_time() - cpu
    finally:
        timer.cancel()
    return result, _Timing(peak, cpu)


def _check(envelope: Any, deadline_s: float) -> None:
    codes = [d.code for d in envelope.diagnostics]
    assert "TQX_RUNTIME_CANCELLED" not in codes, f"missed the {deadline_s:.0f} s deadline"
    assert envelope.ok, codes
    assert envelope.result.output == OUTPUT


def test_a_huge_string_in_450k_deltas_streams_in_linear_time(tmp_path: Path, figures: Any) -> None:
    figures.expect(SUITE, "deltas per stream", ">=", DELTAS)
    figures.expect(SUITE, "streams with a view completed within the deadline", "==", 2)
    for way, allowed in SLOWDOWN_ALLOWED.items():
        figures.expect(SUITE, f"CPU time of the {way} with a view, times without", "<=", allowed)
    figures.expect(SUITE, "change bytes per answer byte", "<=", CHANGE_BYTES_PER_ANSWER_BYTE)
    figures.expect(SUITE, "largest peak-memory growth", "<=", CEILING_MIB, " MiB")
    service = _service(tmp_path)

    # The same streams without a view: the yardsticks.
    def bare_sink(cancel: threading.Event) -> Any:
        return service.execute_contract(
            "writer", "report", stream=True, sink=lambda event: None, cancel=cancel
        )

    def bare_iterator(cancel: threading.Event) -> Any:
        with service.stream_contract("writer", "prose", cancel=cancel) as run:
            assert run.partial is None  # a text contract: no view
            for _event in run:
                pass
        return run.envelope

    # stream_contract, iterating run.partials(), a client applying the changes.
    def iterated(cancel: threading.Event) -> tuple[Any, _Rebuilt, Any]:
        rebuilt = _Rebuilt()
        with service.stream_contract("writer", "report", cancel=cancel) as run:
            for update in run.partials():
                rebuilt.take(update.changes)
            assert run.partial is not None
            value = run.partial.value
        return run.envelope, rebuilt, value

    # execute_contract with a sink feeding a PartialView, a client applying the changes.
    def sunk(cancel: threading.Event) -> tuple[Any, _Rebuilt, Any]:
        rebuilt = _Rebuilt()
        view = PartialView({"type": "object"})

        def sink(event: StreamEvent) -> None:
            rebuilt.take(view.read(event).changes)

        envelope = service.execute_contract(
            "writer", "report", stream=True, sink=sink, cancel=cancel
        )
        assert view.done
        return envelope, rebuilt, view.value

    slowdowns: dict[str, float] = {}
    for way, bare, viewed in (("iterator", bare_iterator, iterated), ("sink", bare_sink, sunk)):
        envelope, without = _timed(bare, 600)
        _check(envelope, 600)
        figures.peak(SUITE, "slowest stream without a view", round(without.peak.seconds, 2), " s")
        (envelope, rebuilt, value), withview = _timed(viewed, without.deadline())
        _check(envelope, without.deadline())
        assert value == OUTPUT
        assert rebuilt.flush() == OUTPUT
        figures.add(SUITE, "streams with a view completed within the deadline")
        figures.peak(SUITE, "slowest stream with a view", round(withview.peak.seconds, 2), " s")
        slowdowns[way] = withview.cpu_s / without.cpu_s
        figures.peak(
            SUITE, f"CPU time of the {way} with a view, times without", round(slowdowns[way], 2)
        )
        figures.peak(SUITE, "change bytes per answer byte", round(rebuilt.ratio(), 2))
        if withview.peak.growth_mib is not None:
            growth = round(withview.peak.growth_mib, 1)
            figures.peak(SUITE, "largest peak-memory growth", growth, " MiB")
        assert rebuilt.ratio() <= CHANGE_BYTES_PER_ANSWER_BYTE
    service.close()
    figures.add(SUITE, "deltas per stream", DELTAS)
    for way, allowed in SLOWDOWN_ALLOWED.items():
        assert slowdowns[way] <= allowed, (way, slowdowns[way])


def test_the_deadline_detector_fires(tmp_path: Path) -> None:
    """The deadline really stops a stream that is too slow: a consumer that rebuilds the whole
    value after every delta (what the view used to do) misses a short deadline and the
    envelope says ``TQX_RUNTIME_CANCELLED``."""
    service = _service(tmp_path)

    def quadratic(cancel: threading.Event) -> Any:
        view = PartialView({"type": "object"})

        def sink(event: StreamEvent) -> None:
            view.read(event)
            _ = view.value  # joins the growing string: the old per-delta cost

        return service.execute_contract("writer", "report", stream=True, sink=sink, cancel=cancel)

    started = time.perf_counter()
    envelope, _ = _timed(quadratic, 3.0)
    service.close()
    assert not envelope.ok
    assert [d.code for d in envelope.diagnostics][:1] == ["TQX_RUNTIME_CANCELLED"]
    assert time.perf_counter() - started < 120
