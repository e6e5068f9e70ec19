"""The iterator and async stream APIs, failures that keep their events, and the stream bound.

Issue #14: ``stream_contract`` / ``astream_contract`` yield events live, answer a refused call
before any model call, cancel the runtime on early exit, task cancellation or a raising
consumer, and end with the envelope ``execute_contract(stream=True)`` returns. Issue #18 item
4: the envelope keeps a bounded prefix of a huge stream.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from templiqx_application import StreamLimits, TempliqxService
from templiqx_contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
    fingerprint,
)
from templiqx_local import FilesystemArtifactWorkspace, FilesystemPackageStore, compose
from templiqx_mock import ScriptedRuntime, runtime_from_path
from templiqx_ports import (
    AsyncRuntimeAdapter,
    CancelToken,
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeFailureCode,
    RuntimeFailureError,
    StreamSink,
    validate_event_order,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "packages"
SCENARIO = FIXTURES / "welcome" / "scenarios" / "stream-vip"
VALUES = json.loads((SCENARIO / "request.json").read_text(encoding="utf-8"))
CALL: dict[str, Any] = {
    "package": "welcome",
    "contract": "onboarding-summary",
    "capabilities": ["structured_output"],
    **VALUES,
}
PACE_MS = 40


def _service(pace_ms: int = 0) -> TempliqxService:
    runtime = runtime_from_path(SCENARIO / "manifest.json", pace_ms=pace_ms)
    return compose(str(FIXTURES), runtime=runtime)


def _deltas(events: list[StreamEvent]) -> list[Delta]:
    return [event for event in events if isinstance(event, Delta)]


# --- adapters of the tests' own ---------------------------------------------------------------


class _Scripted(RuntimeAdapter):
    """A synchronous runtime: ``deltas`` deltas, then a receipt, a failure or a bug."""

    def __init__(
        self, deltas: int = 2, *, then: str = "complete", pause_s: float = 0.0, text: str = "x"
    ) -> None:
        self.deltas = deltas
        self.then = then
        self.pause_s = pause_s
        self.text = text
        self.stopped_at: float | None = None

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="test.scripted", version="1", capabilities=["text"])

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return _receipt(self.descriptor(), request)

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        try:
            for _ in range(self.deltas):
                if cancel is not None and cancel.is_set():
                    error = _failure(RuntimeFailureCode.CANCELLED, "cancelled")
                    sink(Failed(code=error.code, message=str(error)))
                    raise error
                sink(Delta(text=self.text))
                if self.pause_s:
                    time.sleep(self.pause_s)  # blocking on purpose: it must not reach the loop
            if self.then == "timeout":
                error = _failure(RuntimeFailureCode.TIMEOUT, "model timed out after two deltas")
                sink(Failed(code=error.code, message=str(error)))
                raise error
            if self.then == "bug":
                raise KeyError("adapter bug")
            receipt = self.execute(request)
            sink(Complete.of(receipt))
            return receipt
        finally:
            self.stopped_at = time.monotonic()


class _Native(RuntimeAdapter, AsyncRuntimeAdapter):
    """A natively async runtime that streams forever until closed; records when it stopped."""

    def __init__(self, every_s: float = 0.01) -> None:
        self.every_s = every_s
        self.closed_at: float | None = None
        self.loop_thread: int | None = None

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="test.native", version="1", capabilities=["text"])

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return _receipt(self.descriptor(), request)

    async def aexecute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self.execute(request)

    async def aexecute_streaming(
        self, request: ExecutionRequest, *, cancel: CancelToken | None = None
    ) -> AsyncIterator[StreamEvent]:
        self.loop_thread = threading.get_ident()
        try:
            while True:
                yield Delta(text="tick ")
                await asyncio.sleep(self.every_s)
        finally:
            self.closed_at = time.monotonic()


def _receipt(descriptor: AdapterDescriptor, request: ExecutionRequest) -> ExecutionReceipt:
    output = "done"
    return ExecutionReceipt(
        adapter=descriptor,
        request_fingerprint=fingerprint(request.interaction),
        output_fingerprint=fingerprint(output),
        output=output,
        output_schema_valid=True,
    )


def _failure(code: RuntimeFailureCode, detail: str) -> RuntimeFailureError:
    return RuntimeFailureError(
        RuntimeFailure(
            code=code,
            adapter_id="test.scripted",
            adapter_version="1",
            fingerprint="0",
            detail=detail,
        )
    )


TEXT_CONTRACT = """\
api_version: templiqx/v1alpha1
id: chat
version: 1.0.0
capabilities: [text]
messages:
  - role: user
    content:
      - {kind: text, value: hello}
output_schema: {type: string}
"""


@pytest.fixture
def text_root(tmp_path: Path, write_pkg: Callable[..., Path]) -> Path:
    root = tmp_path / "root"
    write_pkg(root, "streams", contracts={"chat": TEXT_CONTRACT})
    return root


def _text_service(root: Path, runtime: RuntimeAdapter, **options: Any) -> TempliqxService:
    return TempliqxService(
        FilesystemPackageStore(root),
        FilesystemArtifactWorkspace(root / ".templiqx-workspace"),
        runtime,
        **options,
    )


# --- the sync iterator ------------------------------------------------------------------------


def test_the_iterator_yields_events_live_and_ends_with_the_execute_envelope() -> None:
    service = _service(PACE_MS)
    arrivals: list[float] = []
    with service.stream_contract(**CALL) as run:
        assert run.ok
        events = []
        for event in run:
            arrivals.append(time.monotonic())
            events.append(event)
    assert isinstance(events[-1], Complete)
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals[:-1])]
    assert min(gaps) >= PACE_MS / 1000 * 0.8, "deltas arrive one pace apart, not all at once"
    expected = _service().execute_contract(**CALL, stream=True)
    assert run.envelope == expected
    assert run.envelope.stream_events == events


def test_a_refused_call_answers_before_any_model_call() -> None:
    runtime = ScriptedRuntime.success()
    service = compose(str(FIXTURES), runtime=runtime)
    with service.stream_contract("welcome", "onboarding-summary", inputs={}) as run:
        assert not run.ok
        assert run.envelope.diagnostics[0].code.startswith("TQX_")
        assert list(run) == []
    assert runtime.stats().attempts == 0
    with service.stream_contract("welcome", "onboarding-summary", inputs=[]) as bad:  # type: ignore[arg-type]
        assert [d.code for d in bad.envelope.diagnostics] == ["TQX_ARGUMENT_INVALID"]


def test_breaking_out_cancels_the_runtime_within_100_ms(text_root: Path) -> None:
    runtime = _Scripted(deltas=1000, pause_s=0.01)
    service = _text_service(text_root, runtime)
    with service.stream_contract("streams", "chat") as run:
        for count, _ in enumerate(run, 1):
            if count == 3:
                break
        left_at = time.monotonic()
    assert runtime.stopped_at is not None
    assert runtime.stopped_at - left_at < 0.1
    envelope = run.envelope
    assert [d.code for d in envelope.diagnostics] == ["TQX_RUNTIME_CANCELLED"]
    validate_event_order(envelope.stream_events)
    terminal = envelope.stream_events[-1]
    assert isinstance(terminal, Failed)
    assert terminal.code == "TQX_RUNTIME_CANCELLED"


def test_a_raising_loop_body_cancels_the_call_and_the_envelope_says_why(text_root: Path) -> None:
    runtime = _Scripted(deltas=1000, pause_s=0.005)
    service = _text_service(text_root, runtime)
    run = service.stream_contract("streams", "chat")

    def consume() -> None:
        with run:
            for _ in run:
                raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        consume()
    cancelled, warning = run.envelope.diagnostics
    assert cancelled.code == "TQX_RUNTIME_CANCELLED"
    assert warning.code == "TQX_STREAM_SINK_FAILED"
    assert "ZeroDivisionError" in warning.message
    assert runtime.stopped_at is not None


def test_leaving_before_iterating_never_calls_the_runtime() -> None:
    runtime = ScriptedRuntime.success()
    service = compose(str(FIXTURES), runtime=runtime)
    with service.stream_contract(**CALL) as run:
        assert run.ok
    assert runtime.stats().attempts == 0
    assert [d.code for d in run.envelope.diagnostics] == ["TQX_RUNTIME_CANCELLED"]


def test_the_envelope_is_not_there_while_the_stream_runs() -> None:
    service = _service()
    with service.stream_contract(**CALL) as run:
        next(iter(run))
        with pytest.raises(RuntimeError, match="has not ended"):
            _ = run.envelope


# --- failures keep their events (every streamed path) ----------------------------------------


@pytest.mark.parametrize(
    ("then", "code"), [("timeout", "TQX_RUNTIME_TIMEOUT"), ("bug", "TQX_INTERNAL")]
)
def test_a_failed_stream_keeps_its_deltas_and_one_failed(
    text_root: Path, then: str, code: str
) -> None:
    service = _text_service(text_root, _Scripted(deltas=2, then=then))
    blocking = service.execute_contract("streams", "chat", stream=True)
    with service.stream_contract("streams", "chat") as run:
        iterated = list(run)

    async def main() -> Any:
        return await service.aexecute_contract("streams", "chat", stream=True)

    awaited = asyncio.run(main())
    for envelope in (blocking, run.envelope, awaited):
        assert not envelope.ok
        (diagnostic,) = envelope.diagnostics
        assert diagnostic.code == code
        kinds = [type(event).__name__ for event in envelope.stream_events]
        assert kinds == ["Delta", "Delta", "Failed"]
        terminal = envelope.stream_events[-1]
        assert isinstance(terminal, Failed)
        assert terminal.code == code
    assert blocking == run.envelope == awaited
    assert iterated == blocking.stream_events


def test_a_token_set_before_the_call_gives_one_failed_event(text_root: Path) -> None:
    runtime = _Scripted()
    service = _text_service(text_root, runtime)
    token = threading.Event()
    token.set()
    envelope = service.execute_contract("streams", "chat", stream=True, cancel=token)
    assert [d.code for d in envelope.diagnostics] == ["TQX_RUNTIME_CANCELLED"]
    assert envelope.stream_events == [
        Failed(code="TQX_RUNTIME_CANCELLED", message=envelope.diagnostics[0].message)
    ]
    assert runtime.stopped_at is None, "the runtime is never called"


# --- the async twin ---------------------------------------------------------------------------


def test_the_async_iterator_yields_paced_events_on_the_loop_without_a_thread() -> None:
    service = _service(PACE_MS)

    async def main() -> tuple[list[float], list[StreamEvent], Any, set[threading.Thread]]:
        arrivals: list[float] = []
        events: list[StreamEvent] = []
        threads: set[threading.Thread] = set()
        async with service.astream_contract(**CALL) as run:
            async for event in run:
                arrivals.append(time.monotonic())
                events.append(event)
                threads.update(threading.enumerate())
        return arrivals, events, run.envelope, threads

    before = set(threading.enumerate())
    arrivals, events, envelope, threads = asyncio.run(main())
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals[:-1])]
    assert min(gaps) >= PACE_MS / 1000 * 0.8
    assert envelope == _service().execute_contract(**CALL, stream=True)
    assert envelope.stream_events == events
    # The mock is natively async: the stream spends at most the worker that compiled it.
    assert len(threads - before) <= 1


def test_task_cancellation_closes_a_native_runtime_at_once(text_root: Path) -> None:
    runtime = _Native()
    service = _text_service(text_root, runtime)
    seen: list[StreamEvent] = []

    async def consume() -> None:
        async with service.astream_contract("streams", "chat") as run:
            async for event in run:
                seen.append(event)

    async def main() -> float:
        task = asyncio.create_task(consume())
        while len(seen) < 3:
            await asyncio.sleep(0.005)
        assert runtime.loop_thread == threading.get_ident(), "it runs on the loop's thread"
        task.cancel()
        cancelled_at = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        return cancelled_at

    cancelled_at = asyncio.run(main())
    assert runtime.closed_at is not None
    assert runtime.closed_at - cancelled_at < 0.1


def test_task_cancellation_stops_a_sync_runtime_on_the_pool(text_root: Path) -> None:
    runtime = _Scripted(deltas=10_000, pause_s=0.01)
    service = _text_service(text_root, runtime)
    seen: list[StreamEvent] = []
    box: dict[str, Any] = {}

    async def consume() -> None:
        run = service.astream_contract("streams", "chat")
        box["run"] = run
        async with run:
            async for event in run:
                seen.append(event)

    async def main() -> float:
        task = asyncio.create_task(consume())
        while len(seen) < 3:
            await asyncio.sleep(0.005)
        task.cancel()
        cancelled_at = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        return cancelled_at

    cancelled_at = asyncio.run(main())
    assert runtime.stopped_at is not None
    assert runtime.stopped_at - cancelled_at < 0.1
    terminal = box["run"].envelope.stream_events[-1]
    assert isinstance(terminal, Failed)
    assert terminal.code == "TQX_RUNTIME_CANCELLED"


def test_aexecute_contract_equals_execute_contract_and_a_raising_sink_cancels(
    text_root: Path,
) -> None:
    service = _service(5)

    async def main() -> tuple[Any, Any, Any]:
        streamed = await service.aexecute_contract(**CALL, stream=True)
        plain = await service.aexecute_contract(**CALL)

        def sink(event: StreamEvent) -> None:
            raise BrokenPipeError

        broken = await service.aexecute_contract(**CALL, stream=True, sink=sink)
        return streamed, plain, broken

    streamed, plain, broken = asyncio.run(main())
    assert streamed == _service().execute_contract(**CALL, stream=True)
    assert plain == _service().execute_contract(**CALL)
    assert [d.code for d in broken.diagnostics] == [
        "TQX_RUNTIME_CANCELLED",
        "TQX_STREAM_SINK_FAILED",
    ]
    assert broken.stream_events[-1].code == "TQX_RUNTIME_CANCELLED"


def test_a_cancel_token_stops_a_native_runtime_that_never_checks_it(text_root: Path) -> None:
    runtime = _Native()
    service = _text_service(text_root, runtime)
    token = threading.Event()

    def sink(event: StreamEvent) -> None:
        if isinstance(event, Delta):
            token.set()

    envelope = asyncio.run(
        service.aexecute_contract("streams", "chat", stream=True, sink=sink, cancel=token)
    )
    assert [d.code for d in envelope.diagnostics] == ["TQX_RUNTIME_CANCELLED"]
    assert runtime.closed_at is not None


def test_ainvoke_runs_every_operation_off_the_loop() -> None:
    service = _service()

    async def main() -> tuple[Any, Any, Any]:
        return (
            await service.ainvoke("validate_contract", {"package": "welcome", "contract": "x"}),
            await service.acompile_contract(**CALL),
            await service.ainvoke("nope"),
        )

    validated, compiled, unknown = asyncio.run(main())
    assert validated == service.validate_contract("welcome", "x")
    assert compiled == service.compile_contract(**CALL)
    assert unknown.diagnostics[0].code == "TQX_UNKNOWN_OPERATION"


def test_twenty_streams_on_blocking_runtimes_leave_the_loop_responsive(text_root: Path) -> None:
    runtime = _Scripted(deltas=10, pause_s=0.05)
    service = _text_service(text_root, runtime)

    async def stream_one() -> Any:
        return await service.aexecute_contract("streams", "chat", stream=True)

    async def main() -> tuple[float, list[Any]]:
        lag = 0.0
        runs = asyncio.gather(*(stream_one() for _ in range(20)))
        while not runs.done():
            before = time.monotonic()
            await asyncio.sleep(0.01)
            lag = max(lag, time.monotonic() - before - 0.01)
        return lag, await runs

    lag, envelopes = asyncio.run(main())
    assert all(envelope.ok for envelope in envelopes)
    # Twenty blocking runtimes on the loop would stall it for 20 x 50 ms per delta.
    assert lag < 0.5
    workers = [t for t in threading.enumerate() if t.name.startswith("templiqx-worker")]
    assert len(workers) <= 64


# --- the bound on what the envelope keeps ------------------------------------------------------


def test_the_envelope_keeps_a_bounded_prefix_and_says_how_much_was_dropped(
    text_root: Path,
) -> None:
    runtime = _Scripted(deltas=50, text="ab")
    bounded = _text_service(text_root, runtime, stream_limits=StreamLimits(events=11))
    full = _text_service(text_root, runtime)
    envelope = bounded.execute_contract("streams", "chat", stream=True)
    complete = full.execute_contract("streams", "chat", stream=True)
    assert envelope.ok
    assert envelope.result == complete.result, "the receipt is unaffected"
    assert len(envelope.stream_events) == 11
    assert envelope.stream_events == [*complete.stream_events[:10], complete.stream_events[-1]]
    (warning,) = envelope.diagnostics
    assert (warning.code, warning.severity) == ("TQX_STREAM_EVENTS_TRUNCATED", "warning")
    assert "40 later events (80 bytes of text)" in warning.message
    by_bytes = _text_service(text_root, runtime, stream_limits=StreamLimits(text_bytes=7))
    kept = by_bytes.execute_contract("streams", "chat", stream=True).stream_events
    assert len(_deltas(kept)) == 3


def test_a_stream_closed_before_it_was_prepared_records_a_cancellation() -> None:
    runtime = ScriptedRuntime.success()
    service = compose(str(FIXTURES), runtime=runtime)

    async def main() -> Any:
        run = service.astream_contract(**CALL)
        await run.aclose()  # e.g. the task was cancelled while compiling
        return run.envelope

    envelope = asyncio.run(main())
    assert [d.code for d in envelope.diagnostics] == ["TQX_RUNTIME_CANCELLED"]
    assert [type(event) for event in envelope.stream_events] == [Failed]
    assert runtime.stats().attempts == 0
    sync = service.stream_contract(**CALL)
    sync.close()
    assert sync.envelope == envelope
