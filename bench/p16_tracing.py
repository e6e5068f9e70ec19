"""P16: what tracing costs ``execute_contract`` (issue #32 item 7).

Tracing on means what a host runs in production: the OpenTelemetry SDK's tracer provider with a
``BatchSpanProcessor`` (its exporter a no-op, so export I/O is not what is measured) set as the
global provider — templiqx then writes one operation span and one GenAI client span per call.
Tracing off is the same process with the global reset: no provider, so templiqx writes nothing.
The two sides run interleaved in one process (the global is swapped around each side's timed
loop, never per call), on three shapes of call:

* the deterministic fake runtime, structured output (no network: the overhead stands alone);
* the OpenAI runtime against ``sse_server.py`` on loopback, non-streamed (traceparent sent, call
  facts reported);
* the same, streamed (time to first chunk recorded, ten deltas).

Overhead = median(on) - median(off) per call; the target is at most 50 us. Beside it: the SDK's
own floor, two bare spans started and ended through the same processor (what any
instrumentation making the two spans pays), measured in the same rounds, so what templiqx adds
beyond the SDK is visible on a machine whose load inflates every figure. P16e adds metrics (a
meter provider with a reader: the GenAI histograms and templiqx's counters) to tracing.

No SDK at all is measured in a child process that never imports OpenTelemetry: ``execute_contract``
on the fake runtime as shipped against the same call with templiqx's telemetry entry points
replaced by functions that return nothing (the path as if the tracing code were not there),
interleaved. The ratio should be 1 within noise; the child also times the guard calls one
execution makes, directly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness import BenchmarkError, Comparison, Settings, Side, check, interleave
from host_package import CONTRACT, PACKAGE, service_for
from p1_stream import _Server

__all__ = ["run"]

TARGET_OVERHEAD_S = 50e-6
INPUTS = {"topic": "the contract"}
BENCH = Path(__file__).resolve().parent


class _NoopExporter:
    """A span exporter that drops everything (the SDK's batch processor still does its work)."""

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


class _Providers:
    """The SDK providers, and switching templiqx's view of them on and off."""

    def __init__(self) -> None:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.tracing = TracerProvider()
        self.processor = BatchSpanProcessor(_NoopExporter())  # type: ignore[arg-type]
        self.tracing.add_span_processor(self.processor)
        self.reader = InMemoryMetricReader()
        self.metering = MeterProvider(metric_readers=[self.reader])

    @contextmanager
    def on(self, *, metrics: bool = False) -> Iterator[None]:
        from opentelemetry import trace
        from opentelemetry.metrics import _internal as metrics_internal

        trace._TRACER_PROVIDER = self.tracing  # type: ignore[attr-defined]
        if metrics:
            metrics_internal._METER_PROVIDER = self.metering  # type: ignore[attr-defined]
        try:
            yield
        finally:
            trace._TRACER_PROVIDER = None  # type: ignore[attr-defined]
            metrics_internal._METER_PROVIDER = None  # type: ignore[attr-defined]

    def close(self) -> None:
        self.tracing.shutdown()
        self.metering.shutdown()


def _loop(call: Callable[[], object], count: int) -> Callable[[], object]:
    def run() -> object:
        for _ in range(count):
            call()
        return None

    return run


def _traced(
    providers: _Providers, call: Callable[[], object], count: int, *, metrics: bool = False
) -> Callable[[], object]:
    """``count`` calls with the SDK providers set (set once around them, as in a process that
    configured its SDK at start-up: swapping per call would time the swap)."""

    def run() -> object:
        with providers.on(metrics=metrics):
            for _ in range(count):
                call()
        return None

    return run


def _sdk_floor(providers: _Providers, count: int) -> Callable[[], object]:
    """Two bare spans per call through the same processor: the SDK's own cost."""
    tracer = providers.tracing.get_tracer("p16-floor")

    def run() -> object:
        for _ in range(count):
            with tracer.start_as_current_span("operation"):
                tracer.start_span("chat").end()
        return None

    return run


_NO_SDK = textwrap.dedent(
    """
    import json, sys, time, statistics
    sys.path.insert(0, {bench!r})
    from harness import Side, interleave
    from templiqx_local import compose
    from templiqx_application import observability
    from templiqx_ports import telemetry
    from host_package import PACKAGE, CONTRACT
    root = {root!r}
    fake = compose(root)
    call = dict(package=PACKAGE, contract=CONTRACT, inputs={{"topic": "t"}},
                fixture_output={{"summary": "s"}}, capabilities=["structured_output"])
    assert fake.execute_contract(**call).ok
    names = ("operation", "model_call", "compiled")
    shipped = {{name: getattr(observability, name) for name in names}}
    none = lambda *a, **k: None
    def without():
        for name in shipped: setattr(observability, name, none)
        try: return fake.execute_contract(**call)
        finally:
            for name, fn in shipped.items(): setattr(observability, name, fn)
    def with_guards():
        return fake.execute_contract(**call)
    a, b, ratios = interleave(Side("as shipped", with_guards), Side("no telemetry code", without),
                              rounds={rounds}, subject_repeat={repeat}, baseline_repeat={repeat})
    n = 200_000
    start = time.perf_counter()
    for _ in range(n):
        telemetry.tracer(); telemetry.instruments(); telemetry.trace_headers()
        observability.operation("execute_contract", call)
        observability.model_call(None, stream=False)
        observability.compiled(None, [], None)
    guards = (time.perf_counter() - start) / n
    loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
    print(json.dumps({{"shipped": a.samples, "bare": b.samples, "ratios": ratios,
                      "guards_s": guards, "loaded": loaded}}))
    """
)


def _no_sdk(settings: Settings, root: Path) -> dict[str, Any]:
    rounds = settings.rounds(15)
    repeat = 200 if not settings.quick else 50
    script = _NO_SDK.format(bench=str(BENCH), root=str(root), rounds=rounds, repeat=repeat)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=1200, check=False
    )
    if done.returncode != 0:
        raise BenchmarkError(f"the no-SDK child failed: {done.stderr[-2000:]}")
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    check(not data["loaded"], f"the no-SDK child imported OpenTelemetry: {data['loaded']}")
    return data


def run(settings: Settings) -> list[Comparison]:
    from harness import Timing, quartiles

    providers = _Providers()
    rows: list[Comparison] = []
    rounds = settings.rounds(15)
    root = settings.scratch / "p16"
    with _Server(10) as server:
        service = service_for(root, server.base_url)
        from templiqx_local import compose

        fake = compose(str(root))
        base = {"package": PACKAGE, "contract": CONTRACT, "inputs": INPUTS}
        shapes: list[tuple[str, str, Callable[[], Any], int]] = [
            (
                "P16a",
                "fake runtime, structured output",
                lambda: fake.execute_contract(
                    **base, fixture_output={"summary": "s"}, capabilities=["structured_output"]
                ),
                200,
            ),
            (
                "P16b",
                "OpenAI runtime, loopback, non-streamed",
                lambda: service.execute_contract(**base),
                20,
            ),
            (
                "P16c",
                "OpenAI runtime, loopback, streamed (10 deltas)",
                lambda: service.execute_contract(**base, stream=True),
                20,
            ),
        ]
        shapes.append(("P16e", "fake runtime, with metrics too", shapes[0][2], 200))
        for bench_id, what, call, repeat in shapes:
            metrics = bench_id == "P16e"
            check(call().ok, f"{bench_id}: the call failed with tracing off")
            with providers.on(metrics=metrics):
                check(call().ok, f"{bench_id}: the call failed with tracing on")
            providers.processor.force_flush()
            row = Comparison(
                id=bench_id,
                what=f"execute_contract with tracing on vs off: {what}",
                baseline="the same call, no tracer or meter provider",
                target=None,
                goal=f"overhead <= {TARGET_OVERHEAD_S * 1e6:g} us per call",
            )
            count = repeat if not settings.quick else max(5, repeat // 4)
            on, off, ratios = interleave(
                Side(
                    "tracing on (SDK, batch processor, no-op exporter)",
                    _traced(providers, call, count, metrics=metrics),
                    ops=count,
                ),
                Side("tracing off", _loop(call, count), ops=count),
                rounds=rounds,
            )
            floor, _, _ = interleave(
                Side("two bare SDK spans", _sdk_floor(providers, count), ops=count),
                Side("tracing off", _loop(call, count), ops=count),
                rounds=max(3, rounds // 3),
            )
            row.record(on, off, ratios)
            overhead = on.median - off.median
            row.metrics = {
                "overhead_us": round(overhead * 1e6, 2),
                "sdk_two_spans_us": round(floor.median * 1e6, 2),
                "templiqx_beyond_sdk_us": round((overhead - floor.median) * 1e6, 2),
                "target_overhead_us": TARGET_OVERHEAD_S * 1e6,
                "target_met": overhead <= TARGET_OVERHEAD_S,
                "load_average_1m": round(os.getloadavg()[0], 2),
            }
            row.goal_met = overhead <= TARGET_OVERHEAD_S
            rows.append(row)
        service.close()
    providers.close()
    data = _no_sdk(settings, root)
    shipped, bare = Timing(data["shipped"]), Timing(data["bare"])
    row = Comparison(
        id="P16d",
        what="execute_contract without OpenTelemetry installed or imported (fake runtime)",
        baseline="the same call with templiqx's telemetry entry points stubbed out",
        target=None,
        goal="no measurable cost: the ratio's IQR holds 1; the guard calls < 1% of a call",
    )
    row.record(shipped, bare, data["ratios"])
    q1, q3 = quartiles(data["ratios"])
    row.metrics = {
        "difference_us": round((shipped.median - bare.median) * 1e6, 2),
        "guard_calls_us_per_execution": round(data["guards_s"] * 1e6, 3),
        "ratio_iqr": [round(q1, 4), round(q3, 4)],
        "opentelemetry_imported": False,
    }
    row.metrics["guard_share_of_call"] = round(data["guards_s"] / bare.median, 5)
    row.goal_met = q1 <= 1.0 <= q3 and data["guards_s"] < 0.01 * bare.median
    rows.append(row)
    return rows
