"""A templiqx-ray run joins its caller's trace (issue #32 item 4, batch runs on Ray).

The driver hands each actor the W3C trace context of the span current when the run starts
(``run_ray_batch`` passes ``trace_headers()`` to the actors); an actor runs every block inside it,
so its ``templiqx batch`` spans, their rows and the model calls are children of the caller's
span, in the caller's trace, whichever worker process they ran in. The actor is exercised here
as Ray calls it (constructed with its keyword arguments, called with a pyarrow block) in this
process, where the SDK's in-memory exporter can see its spans; no cluster is started.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from conftest import Telemetry
from templiqx_application.batch import BatchOptions
from templiqx_local import compose
from templiqx_ports import telemetry
from templiqx_ray.actor import INDEX_COLUMN, TEXT_COLUMN, BatchActor
from templiqx_ray.pipeline import _options_dict


def _actor(root: Path, trace: dict[str, str] | None) -> BatchActor:
    identity = compose(root).export_package_identity("obs").fingerprints["package_identity"]
    return BatchActor(
        root=str(root),
        package="obs",
        contract="answer",
        identity=identity,
        runtime="fake",
        source_format="jsonl",
        mapping=[],
        options=_options_dict(BatchOptions(concurrency=2, package_identity=identity)),
        trace=trace,
    )


def _block(*questions: str) -> pa.Table:
    lines = [json.dumps({"inputs": {"question": q}, "output": {"ok": True}}) for q in questions]
    return pa.table({INDEX_COLUMN: list(range(len(lines))), TEXT_COLUMN: lines})


def test_an_actor_given_the_drivers_trace_context_records_its_batch_inside_it(
    otel: Telemetry, package_root: Path
) -> None:
    tracer = otel.provider.get_tracer("host")
    with tracer.start_as_current_span("nightly job") as host:
        carrier = telemetry.trace_headers()
    assert "traceparent" in carrier
    actor = _actor(package_root, carrier)  # built and called outside the host span, as on Ray
    answered = actor(_block("one", "two"))
    assert len(answered[INDEX_COLUMN]) == 2
    batch = otel.one("templiqx batch")
    assert batch.parent is not None
    assert batch.parent.span_id == host.get_span_context().span_id
    assert batch.context.trace_id == host.get_span_context().trace_id
    rows = otel.named("templiqx batch_row")
    assert len(rows) == 2
    assert all(row.context.trace_id == batch.context.trace_id for row in rows)
    assert {row.parent.span_id for row in rows if row.parent is not None} == {batch.context.span_id}


def test_an_actor_without_a_trace_context_starts_its_own_trace(
    otel: Telemetry, package_root: Path
) -> None:
    actor = _actor(package_root, None)
    actor(_block("three"))
    batch = otel.one("templiqx batch")
    assert batch.parent is None
