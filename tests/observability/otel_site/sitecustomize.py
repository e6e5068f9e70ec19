"""Set up the OpenTelemetry SDK in a child process under test (R6), as a host would.

Put this folder on ``PYTHONPATH`` and set ``TEMPLIQX_TEST_OTEL_OUT`` to a file: every span and,
at exit, every metric the process records are written there as JSON by the SDK's console
exporters, so the test can scan them for canary credentials. Without the variable nothing
happens.
"""

from __future__ import annotations

import os

_OUT = os.environ.get("TEMPLIQX_TEST_OTEL_OUT")

if _OUT:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        ConsoleMetricExporter,
        PeriodicExportingMetricReader,
    )
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    _stream = open(_OUT, "a", encoding="utf-8")  # noqa: SIM115 (open for the process's life)
    _tracing = TracerProvider()
    _tracing.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=_stream)))
    trace.set_tracer_provider(_tracing)
    _reader = PeriodicExportingMetricReader(
        ConsoleMetricExporter(out=_stream), export_interval_millis=3_600_000
    )
    metrics.set_meter_provider(MeterProvider(metric_readers=[_reader]))
