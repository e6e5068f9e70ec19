"""Batch runs between files: datasets in, a durable, resumable output, an opt-in result cache.

* :func:`open_dataset` — JSONL, CSV or Parquet rows, mapped to inputs and context by column
  (:class:`ColumnMapping`);
* :class:`ResultJournal` — the JSONL output, appended durably, scanned on resume;
* :class:`RunState` — the run's header and ledger beside the output;
* :class:`SqliteResultCache` — answers kept across runs, by request;
* :func:`run_batch_files` — all of it around ``service.batch(...)``.

Parquet needs the ``parquet`` extra (pyarrow), imported only when a Parquet file is used.
"""

from templiqx_local.batch.cache import SqliteResultCache
from templiqx_local.batch.datasets import (
    FORMATS,
    Dataset,
    detect_format,
    open_dataset,
    row_from_csv,
    row_from_json,
    row_from_record,
)
from templiqx_local.batch.errors import BatchFileError
from templiqx_local.batch.journal import DoneSet, ResultJournal
from templiqx_local.batch.mapping import ColumnMapping, ColumnTarget
from templiqx_local.batch.parquet import PARQUET_INSTALL, write_parquet
from templiqx_local.batch.runner import (
    BatchFiles,
    BatchOutcome,
    OutputPaths,
    output_paths,
    run_batch_files,
)
from templiqx_local.batch.state import STATE_SUFFIX, RunState

__all__ = [
    "FORMATS",
    "PARQUET_INSTALL",
    "STATE_SUFFIX",
    "BatchFileError",
    "BatchFiles",
    "BatchOutcome",
    "ColumnMapping",
    "ColumnTarget",
    "Dataset",
    "DoneSet",
    "OutputPaths",
    "ResultJournal",
    "RunState",
    "SqliteResultCache",
    "detect_format",
    "open_dataset",
    "output_paths",
    "row_from_csv",
    "row_from_json",
    "row_from_record",
    "run_batch_files",
    "write_parquet",
]
