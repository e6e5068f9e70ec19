"""A batch run between files: a dataset in, a durable JSONL (or Parquet) output, resumable.

:func:`run_batch_files` is what ``templiqx batch`` (and ``templiqx test --dataset``) run, and
what a Python caller uses for the same job::

    from templiqx_local import compose
    from templiqx_local.batch import BatchFiles, run_batch_files

    outcome = run_batch_files(
        compose("packages"),
        BatchFiles(package="support", contract="classify",
                   input="tickets.csv", output="labels.jsonl", resume=True),
    )
    print(outcome.summary.by_code)

Files written beside ``OUTPUT``:

* ``OUTPUT`` — one result per line, appended as rows finish (:mod:`.journal`); for a Parquet
  output, the lines go to ``OUTPUT.jsonl`` and ``OUTPUT`` is written from them at the end;
* ``OUTPUT.tqx-batch`` — the run's header and ledger (:mod:`.state`), what ``resume`` checks
  and what keeps a request from being executed twice;
* ``OUTPUT.summary.json`` — the :class:`~templiqx_application.batch.BatchSummary`, written
  atomically when the run ends (also after Ctrl-C).

An existing output is never overwritten by accident: without ``resume`` or ``overwrite`` a run
that would write to one refuses (``TQX_BATCH_OUTPUT_EXISTS``). ``resume`` checks that the
package identity, contract, runtime, input file (SHA-256) and mapping are the ones the output
was started with, cuts a torn last line, skips the rows already written, and appends the rest,
so the finished output holds exactly one result per row. ``resume`` on an output that does not
exist yet simply starts it.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import msgspec

from templiqx_application.batch import BatchOptions, BatchResult, BatchSummary, RateBudget, RowHook
from templiqx_contracts import quote_input
from templiqx_local.batch.cache import SqliteResultCache
from templiqx_local.batch.datasets import Dataset, file_digest, open_dataset
from templiqx_local.batch.errors import BatchFileError
from templiqx_local.batch.journal import ResultJournal
from templiqx_local.batch.parquet import import_pyarrow, write_parquet
from templiqx_local.batch.state import STATE_SUFFIX, RunState

if TYPE_CHECKING:
    from templiqx_application import TempliqxService

__all__ = ["HEADER_VERSION", "BatchFiles", "BatchOutcome", "output_paths", "run_batch_files"]

HEADER_VERSION: Final = 1


@dataclass(frozen=True)
class BatchFiles:
    """What to run and where: the package and contract (``None``: each row names its own),
    the dataset and how to read it, the output and how to treat an existing one."""

    package: str
    contract: str | None
    input: str | os.PathLike[str]
    output: str | os.PathLike[str]
    input_format: str | None = None
    output_format: str | None = None
    mapping: list[str] = field(default_factory=list)
    resume: bool = False
    overwrite: bool = False
    cache: str | os.PathLike[str] | None = None
    summary: str | os.PathLike[str] | None = None
    options: BatchOptions = field(default_factory=BatchOptions)


@dataclass(frozen=True)
class OutputPaths:
    """The files of one output."""

    output: Path
    journal: Path
    state: Path
    summary: Path
    parquet: bool


@dataclass
class BatchOutcome:
    """How a file run ended: its summary and where everything is."""

    summary: BatchSummary
    paths: OutputPaths
    total_rows: int | None
    previously_done: int = 0
    cut_bytes: int = 0
    written: int = 0

    def report(self) -> dict[str, Any]:
        """The summary file's content: the summary plus the files and the resume counts."""
        body: dict[str, Any] = msgspec.to_builtins(self.summary)
        body["output"] = str(self.paths.output)
        if self.paths.parquet:
            body["journal"] = str(self.paths.journal)
        body["total_rows"] = self.total_rows
        body["previously_done"] = self.previously_done
        body["written"] = self.written
        if self.cut_bytes:
            body["cut_bytes"] = self.cut_bytes
        return body


def output_paths(files: BatchFiles) -> OutputPaths:
    output = Path(files.output)
    kind = files.output_format
    if kind is None:
        kind = "parquet" if output.suffix.lower() in (".parquet", ".pq") else "jsonl"
    if kind not in ("jsonl", "parquet"):
        raise BatchFileError(
            "TQX_BATCH_OPTION_INVALID",
            f"output format {quote_input(kind)} is not jsonl or parquet",
        )
    parquet = kind == "parquet"
    journal = output.with_name(output.name + ".jsonl") if parquet else output
    return OutputPaths(
        output=output,
        journal=journal,
        state=output.with_name(output.name + STATE_SUFFIX),
        summary=Path(files.summary)
        if files.summary is not None
        else output.with_name(output.name + ".summary.json"),
        parquet=parquet,
    )


def _write_atomic(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise BatchFileError("TQX_IO", f"{quote_input(str(path))}: {exc.strerror or exc}") from None


def _header(
    service: TempliqxService, files: BatchFiles, dataset: Dataset, identity: str | None
) -> dict[str, Any]:
    digest, size = file_digest(dataset.path)
    runtime = (
        "templiqx.fake/0.2.0"
        if files.options.evaluate
        else f"{service.runtime_descriptor.id}/{service.runtime_descriptor.version}"
    )
    return {
        "version": HEADER_VERSION,
        "package": files.package,
        "contract": files.contract,
        "package_identity": identity,
        "runtime": runtime,
        "input": {"sha256": digest, "size": size, "format": dataset.format},
        "mapping": dataset.mapping.specs(),
        "evaluate": files.options.evaluate,
        "capabilities": None
        if files.options.capabilities is None
        else sorted(files.options.capabilities),
    }


_EXPLAINED = {
    "package_identity": "the package changed since the run started",
    "contract": "another contract",
    "package": "another package",
    "runtime": "another runtime",
    "input": "another input file (or the file changed)",
    "mapping": "another column mapping",
    "evaluate": "an eval run and a batch run cannot share an output",
    "capabilities": "other capabilities",
    "version": "an output written by another templiqx version",
}


def _differences(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    return [
        f"{name} ({_EXPLAINED.get(name, 'differs')})"
        for name in sorted(set(saved) | set(now))
        if saved.get(name) != now.get(name)
    ]


def _open_output(
    paths: OutputPaths, files: BatchFiles, header: dict[str, Any]
) -> tuple[ResultJournal, RunState, bool]:
    """Lock and open the journal and the state as ``resume``/``overwrite`` say."""
    exists = (paths.journal.exists() and paths.journal.stat().st_size > 0) or paths.state.exists()
    if exists and not files.resume and not files.overwrite:
        raise BatchFileError(
            "TQX_BATCH_OUTPUT_EXISTS",
            f"{quote_input(str(paths.output))} already holds a batch run's results",
        )
    resuming = exists and files.resume and not files.overwrite
    journal = ResultJournal(paths.journal, truncate=not resuming)
    try:
        if not resuming:
            RunState.remove(paths.state)
        state = RunState(paths.state)
        saved = state.header() if resuming else None
        if resuming and saved is None:
            state.close()
            raise BatchFileError(
                "TQX_BATCH_RESUME_MISMATCH",
                f"{quote_input(str(paths.output))} has no run state to resume "
                f"({paths.state.name} is missing or empty)",
            )
        if saved is not None and saved != header:
            state.close()
            raise BatchFileError(
                "TQX_BATCH_RESUME_MISMATCH",
                "cannot resume: " + "; ".join(_differences(saved, header)),
            )
        if saved is None:
            state.write_header(header)
    except BaseException:
        journal.close()
        raise
    return journal, state, resuming


def run_batch_files(
    service: TempliqxService,
    files: BatchFiles,
    *,
    on_start: Callable[[int | None, int], None] | None = None,
    on_result: Callable[[BatchResult], None] | None = None,
    cancel: threading.Event | None = None,
    on_row: RowHook | None = None,
    budget: RateBudget | None = None,
    count_rows: bool = True,
) -> BatchOutcome:
    """Run ``files`` (see the module docstring); the outcome (its summary is also written).

    ``on_start(total_rows, already_done)`` is called once before the first row (``total_rows``
    is ``None`` when ``count_rows`` is false); ``on_result`` with every result as it is written;
    setting ``cancel`` stops the run cleanly (a resumable output). Raises
    :class:`~templiqx_local.batch.errors.BatchFileError` for a dataset, output or state that
    cannot be used; a run the service refuses (unknown package or contract, bad options) ends
    with the reasons in ``summary.diagnostics``.
    """
    paths = output_paths(files)
    if paths.parquet:
        import_pyarrow()  # fail before any work, not after it
    dataset = open_dataset(files.input, format=files.input_format, mapping=files.mapping)
    exported = service.export_package_identity(files.package)
    identity = exported.fingerprints.get("package_identity") if exported.ok else None
    pinned = files.options.package_identity
    options = dataclasses.replace(files.options, package_identity=pinned or identity)
    if identity is None or (pinned is not None and pinned != identity):
        # the engine reports why (unknown package, another identity), touching no file
        run = service.batch(files.package, files.contract, [], options=options)
        list(run)
        return BatchOutcome(summary=run.summary, paths=paths, total_rows=None)
    header = _header(service, files, dataset, identity)
    journal, state, resuming = _open_output(paths, files, header)
    cache = SqliteResultCache(files.cache) if files.cache is not None else None
    outcome: BatchOutcome | None = None
    try:
        total = dataset.count() if count_rows else None
        done = journal.done
        if on_start is not None:
            on_start(total, len(done))
        if options.evaluate:
            run = service.test_dataset(
                files.package,
                dataset,
                contract=files.contract,
                capabilities=None if options.capabilities is None else list(options.capabilities),
                concurrency=options.concurrency,
                ledger=state,
                skip=done,
                previous=journal.results(),
                cancel=cancel,
            )
        else:
            run = service.batch(
                files.package,
                files.contract,
                dataset,
                options=options,
                ledger=state,
                cache=cache,
                budget=budget,
                skip=done,
                previous=journal.results(),
                on_row=on_row,
                cancel=cancel,
            )
        written = 0
        with run:
            for result in run:
                journal.append(result)
                written += 1
                if on_result is not None:
                    on_result(result)
        journal.sync()
        outcome = BatchOutcome(
            summary=run.summary,
            paths=paths,
            total_rows=total,
            previously_done=len(done) if resuming else 0,
            cut_bytes=journal.cut_bytes,
            written=written,
        )
    finally:
        journal.close()
        state.close()
        if cache is not None:
            cache.close()
    if outcome.summary.diagnostics and not resuming:
        # refused before its first row (a contract that does not load, say): leave no output
        # behind, so the same command runs once the cause is fixed
        paths.journal.unlink(missing_ok=True)
        RunState.remove(paths.state)
    finished = not outcome.summary.interrupted and not outcome.summary.diagnostics
    if paths.parquet and finished:
        write_parquet(paths.journal, paths.output)
    _write_atomic(paths.summary, msgspec.json.encode(outcome.report()) + b"\n")
    return outcome
