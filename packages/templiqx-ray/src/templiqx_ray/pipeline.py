"""A batch run as a Ray Data pipeline: the documented entry point of templiqx-ray.

::

    import ray
    from templiqx_ray import RayBatch, run_ray_batch

    ray.init(address="ray://head-node:10001")          # or ray.init() for a local cluster
    outcome = run_ray_batch(RayBatch(
        root="/shared/packages", package="support", contract="classify",
        input="tickets.parquet", output="labels.jsonl",
        runtime="openai", actors=8, concurrency=32, requests_per_minute=3000,
    ))

The pipeline: ``read_text`` (JSONL, one line per record, decoded by the actors exactly as the
local batch decodes it), ``read_csv`` or ``read_parquet`` → each record numbered by its position (a
``range`` zipped with the dataset, order preserved) → ``map_batches`` over an
:class:`~ray.data.ActorPoolStrategy` of :class:`~templiqx_ray.actor.BatchActor` (each composes
the service once and verifies the package identity before its first call) → the driver writes
every result line to the output with the local batch's durable journal, so the output is the
same file the local ``templiqx batch`` writes for the same rows, and the summary is the same
:class:`~templiqx_application.batch.BatchSummary`.

Packages reach the workers by path: ``root`` must name the same package folder on every node (a
shared filesystem), or ``upload_packages=True`` ships the folder with Ray's ``working_dir``
runtime environment. Either way every actor checks the package identity fingerprint the driver
computed (or ``package_identity``, when given) and refuses to run another.

Rate budgets (``requests_per_minute``, ``tokens_per_minute``) hold across actors: one
:class:`~templiqx_ray.budget.BudgetKeeper` actor makes every reservation. ``concurrency`` is
per actor. Duplicate requests are executed once per run, across actors: one
:class:`~templiqx_ray.claims.ClaimKeeper` actor keeps the run's claims. The opt-in result cache
and ``--resume`` are the local batch's.

CSV is read with ``read_csv``, every column as text (the driver reads the header), so the
actors convert cells exactly as the local batch does; a record whose cells do not match the
header is refused by the driver before any work.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import ray
import ray.data

from templiqx_application.batch import BatchOptions, BatchResult, BatchSummary, RetryPolicy
from templiqx_application.batch.results import SummaryBuilder
from templiqx_local import compose
from templiqx_local.batch import (
    BatchFileError,
    ResultJournal,
    RunState,
    detect_format,
    open_dataset,
    output_paths,
    write_parquet,
)
from templiqx_local.batch import BatchFiles as _LocalFiles
from templiqx_local.batch.datasets import MAX_LINE_BYTES
from templiqx_ports.telemetry import trace_headers
from templiqx_ray.actor import INDEX_COLUMN, LINE_COLUMN, STATS_COLUMN, TEXT_COLUMN, BatchActor
from templiqx_ray.budget import start_budget
from templiqx_ray.claims import start_claims

__all__ = ["RayBatch", "RayOutcome", "run_ray_batch"]

_RESULT = msgspec.json.Decoder(BatchResult)
_READ_CPUS = 0.25


@dataclass(frozen=True)
class RayBatch:
    """A batch for Ray: what the local :class:`~templiqx_local.batch.BatchFiles` says, plus the
    pool (``actors``, ``actor_cpus``, ``batch_size``, ``read_tasks``: read tasks at once, one
    per actor unless given) and how packages reach the workers:
    ``root`` on the driver, ``worker_root`` on the workers when the shared folder is mounted
    elsewhere there, or ``upload_packages`` to ship ``root`` with the job. ``env`` is set in
    every actor's environment (the runtime's settings: ``MODEL_BASE_URL``, ...)."""

    root: str
    package: str
    contract: str | None
    input: str
    output: str
    runtime: str = "fake"
    actors: int = 2
    concurrency: int = 16
    batch_size: int = 256
    actor_cpus: float = 0.25
    read_tasks: int | None = None
    input_format: str | None = None
    output_format: str | None = None
    mapping: list[str] = field(default_factory=list)
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    max_attempts: int = 4
    capabilities: list[str] | None = None
    evaluate: bool = False
    package_identity: str | None = None
    upload_packages: bool = False
    worker_root: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    overwrite: bool = False


@dataclass
class RayOutcome:
    """The summary and the files, as :class:`~templiqx_local.batch.BatchOutcome` has them."""

    summary: BatchSummary
    output: Path
    summary_path: Path
    rows: int


def _identity(spec: RayBatch) -> str:
    service = compose(spec.root)
    try:
        exported = service.export_package_identity(spec.package)
    finally:
        service.close()
    found = exported.fingerprints.get("package_identity")
    if not exported.ok or found is None:
        problems = "; ".join(f"{d.code}: {d.message}" for d in exported.diagnostics)
        raise BatchFileError(exported.diagnostics[0].code, f"cannot run the batch: {problems}")
    if spec.package_identity is not None and spec.package_identity != found:
        raise BatchFileError(
            "TQX_BATCH_IDENTITY_MISMATCH",
            f"package '{spec.package}' under {spec.root!r} has identity {found}, not "
            f"{spec.package_identity}",
        )
    return spec.package_identity or found


def _source(spec: RayBatch, kind: str, blocks: int | None, header: list[str] | None) -> Any:
    """The dataset's records: a few blocks of it (Ray Data's default of 200 one-row blocks
    costs a task each), read by tasks that reserve a quarter of a CPU (reading is light), at
    most :func:`_read_tasks` at once (each task running at once needs a worker process, and
    starting one costs more than reading a block)."""
    path = os.path.abspath(spec.input)
    sizing: dict[str, Any] = {"num_cpus": _READ_CPUS, "concurrency": _read_tasks(spec)}
    if blocks is not None:
        sizing["override_num_blocks"] = blocks
    if kind == "jsonl":
        lines = ray.data.read_text(path, **sizing)
        return lines.filter(
            lambda row: bool(str(row[TEXT_COLUMN]).strip()),
            num_cpus=_READ_CPUS,
            concurrency=_read_tasks(spec),
        )
    if kind == "parquet":
        return _read_parquet(path, sizing)
    import pyarrow
    import pyarrow.csv

    # every cell as text, as the local batch reads CSV (the mapping's column types convert
    # them): no type inference, an empty cell stays "", quoted line breaks stay in their cell
    return ray.data.read_csv(
        path,
        parse_options=pyarrow.csv.ParseOptions(newlines_in_values=True),
        convert_options=pyarrow.csv.ConvertOptions(
            column_types={name: pyarrow.string() for name in header or []},
            strings_can_be_null=False,
        ),
        **sizing,
    )


def _read_parquet(path: str, sizing: dict[str, Any]) -> Any:
    """``read_parquet`` through Ray Data's first reader: a read task per block. Its second
    (``use_datasource_v2``, the default from Ray 2.5x) puts a file-listing stage before the
    reads, another pool of tasks and worker processes — 20-40 s more for a 24-row file on the
    two-core test cluster, against 0.2 s. The flag is set for this call only."""
    context = ray.data.DataContext.get_current()
    if not hasattr(context, "use_datasource_v2"):
        return ray.data.read_parquet(path, **sizing)
    was = context.use_datasource_v2
    context.use_datasource_v2 = False
    try:
        return ray.data.read_parquet(path, **sizing)
    finally:
        context.use_datasource_v2 = was


def _csv_shape(path: str) -> tuple[list[str], int]:
    """The CSV file's header and record count (one pass on the driver, read as the local batch
    reads it). Ray reads a CSV file as a table, so a record whose cells do not match the header
    — which the local batch runs as a problem row, or without its missing cells — is refused
    here, before any work, naming the record."""
    csv.field_size_limit(MAX_LINE_BYTES)
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if not header:
                raise BatchFileError(
                    "TQX_BATCH_INPUT_INVALID",
                    f"CSV file {path!r} has no header row",
                    help="put the column names on the first line",
                )
            if len(set(header)) != len(header):
                raise BatchFileError(
                    "TQX_BATCH_INPUT_INVALID",
                    f"CSV file {path!r} names a column twice in its header: a Ray batch needs "
                    "distinct column names",
                )
            count = 0
            for record in reader:
                if not record:
                    continue  # a blank line is not a record, locally or on Ray
                if len(record) != len(header):
                    raise BatchFileError(
                        "TQX_BATCH_INPUT_INVALID",
                        f"CSV record {count} (line {reader.line_num}) of {path!r} has "
                        f"{len(record)} cells where the header has {len(header)} columns",
                        help="give every record one cell per column (empty cells are fine), "
                        "or run the file with the local `templiqx batch`, which runs such a "
                        "record as a failed row",
                    )
                count += 1
    except csv.Error as exc:
        raise BatchFileError(
            "TQX_BATCH_INPUT_INVALID", f"CSV file {path!r} cannot be read: {exc}"
        ) from None
    except UnicodeDecodeError as exc:
        raise BatchFileError(
            "TQX_BATCH_INPUT_INVALID", f"CSV file {path!r} is not UTF-8 ({exc.reason})"
        ) from None
    return header, count


def run_ray_batch(
    spec: RayBatch, *, on_result: Callable[[BatchResult], None] | None = None
) -> RayOutcome:
    """Run ``spec`` on the Ray cluster this process is connected to (see the module doc)."""
    kind = detect_format(spec.input, spec.input_format)
    files = _LocalFiles(
        package=spec.package,
        contract=spec.contract,
        input=spec.input,
        output=spec.output,
        output_format=spec.output_format,
        overwrite=spec.overwrite,
    )
    paths = output_paths(files)
    exists = (paths.journal.exists() and paths.journal.stat().st_size > 0) or paths.state.exists()
    if exists and not spec.overwrite:
        raise BatchFileError(
            "TQX_BATCH_OUTPUT_EXISTS", f"{spec.output!r} already holds a batch run's results"
        )
    identity = _identity(spec)
    options = BatchOptions(
        concurrency=spec.concurrency,
        retry=RetryPolicy(max_attempts=spec.max_attempts),
        requests_per_minute=None,
        tokens_per_minute=None,
        capabilities=tuple(spec.capabilities) if spec.capabilities else None,
        evaluate=spec.evaluate,
        package_identity=identity,
    )
    header: list[str] | None = None
    local: int | None
    if kind == "csv":  # the driver reads the header: the file must be one it sees
        header, local = _csv_shape(os.path.abspath(spec.input))
    else:
        local = _local_count(spec, kind)
    budget = None
    if spec.requests_per_minute or spec.tokens_per_minute:
        budget = start_budget(spec.requests_per_minute, spec.tokens_per_minute)
    claims = start_claims()
    try:
        return _run(
            spec, kind, (header, local), paths, identity, options, budget, claims, on_result
        )
    finally:
        _stop(claims, budget)


def _stop(claims: Any, budget: Any) -> None:
    """End the run's keeper actors (the claims' scratch file with them)."""
    with contextlib.suppress(Exception):
        ray.get(claims.close.remote(), timeout=30)
    for keeper in (claims, budget):
        if keeper is not None:
            with contextlib.suppress(Exception):
                ray.kill(keeper)


def _run(
    spec: RayBatch,
    kind: str,
    shape: tuple[list[str] | None, int | None],
    paths: Any,
    identity: str,
    options: BatchOptions,
    budget: Any,
    claims: Any,
    on_result: Callable[[BatchResult], None] | None,
) -> RayOutcome:
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    header, local = shape
    blocks = None if local is None else max(1, min(64, -(-local // spec.batch_size)))
    source = _source(spec, kind, blocks, header)
    count = local if local is not None else int(source.count())
    index = ray.data.range(count, override_num_blocks=blocks or 1, concurrency=_read_tasks(spec))
    numbered = index.rename_columns({"id": INDEX_COLUMN}).zip(source)
    runtime_env: dict[str, Any] = {}
    if spec.env:
        runtime_env["env_vars"] = dict(spec.env)
    root = spec.worker_root or spec.root
    if spec.upload_packages:
        runtime_env["working_dir"] = os.path.abspath(spec.root)
        root = "."
    results = numbered.map_batches(
        BatchActor,
        fn_constructor_kwargs={
            "root": root,
            "package": spec.package,
            "contract": spec.contract,
            "identity": identity,
            "runtime": spec.runtime,
            "source_format": kind,
            "mapping": list(spec.mapping),
            "options": _options_dict(options),
            "budget": budget,
            "claims": claims,
            "trace": trace_headers(),  # the caller's span: every actor's batch spans join it
        },
        compute=ray.data.ActorPoolStrategy(size=spec.actors),
        batch_size=spec.batch_size,
        batch_format="pyarrow",
        num_cpus=spec.actor_cpus,
        runtime_env=runtime_env or None,
    )
    journal = ResultJournal(paths.journal, truncate=True)
    RunState.remove(paths.state)
    builder = SummaryBuilder()
    calls = retries = rate_limited = 0
    lowest: float | None = None
    began = time.monotonic()
    try:
        for batch in results.iter_batches(batch_format="pyarrow", batch_size=None):
            for record in batch.to_pylist():
                result = _RESULT.decode(record[LINE_COLUMN])
                journal.append(result)
                builder.add(result)
                if record[STATS_COLUMN]:
                    stats = msgspec.json.decode(record[STATS_COLUMN])
                    calls += stats["calls"]
                    retries += stats["retries"]
                    rate_limited += stats["rate_limited"]
                    if stats.get("lowest") is not None:
                        low = float(stats["lowest"])
                        lowest = low if lowest is None else min(lowest, low)
                if on_result is not None:
                    on_result(result)
    finally:
        journal.close()
    elapsed = time.monotonic() - began
    concurrency: dict[str, float] = {"ceiling": float(spec.concurrency), "actors": spec.actors}
    if lowest is not None:
        concurrency["lowest"] = lowest
    score = builder.score()
    summary = BatchSummary(
        ok=builder.failed == 0 and (score is None or score.failed == 0),
        package=spec.package,
        contract=spec.contract,
        runtime="templiqx.fake/0.2.0" if spec.evaluate else _runtime_label(spec),
        package_identity=identity,
        rows=builder.rows,
        succeeded=builder.succeeded,
        failed=builder.failed,
        by_source=dict(sorted(builder.by_source.items())),
        by_code=dict(sorted(builder.by_code.items(), key=lambda item: (-item[1], item[0]))),
        calls=calls,
        retries=retries,
        rate_limited=rate_limited,
        latency_ms=builder.latency_summary(),
        tokens=builder.token_totals(),
        elapsed_s=round(elapsed, 3),
        rows_per_s=round(builder.rows / elapsed, 3) if elapsed > 0 and builder.rows else None,
        concurrency=concurrency,
        score=score,
    )
    if paths.parquet:
        write_parquet(paths.journal, paths.output)
    report = msgspec.to_builtins(summary)
    report["output"] = str(paths.output)
    report["total_rows"] = count
    paths.summary.write_bytes(msgspec.json.encode(report) + b"\n")
    return RayOutcome(summary=summary, output=paths.output, summary_path=paths.summary, rows=count)


def _read_tasks(spec: RayBatch) -> int:
    """Read tasks running at once: ``read_tasks``, or one per actor (the actors, calling the
    model, are the pipeline's pace; the readers only need to keep them fed)."""
    return spec.read_tasks if spec.read_tasks is not None else max(1, spec.actors)


def _local_count(spec: RayBatch, kind: str) -> int | None:
    """The rows, counted by the driver when it sees the file (a quick local pass, or Parquet's
    footer); ``None`` otherwise (Ray counts them: one more pass over the data)."""
    if os.path.isfile(spec.input):
        return open_dataset(spec.input, format=kind).count()
    return None


def _runtime_label(spec: RayBatch) -> str:
    if spec.runtime == "fake":
        return "templiqx.fake/0.2.0"
    return spec.runtime


def _options_dict(options: BatchOptions) -> dict[str, Any]:
    """The options as keyword arguments, for the actors to build them again."""
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
