"""Datasets: JSONL, CSV and Parquet files read as batch rows, one at a time.

:func:`open_dataset` names the format from the extension (``.jsonl``/``.ndjson``/``.json``,
``.csv``, ``.parquet``/``.pq``) unless told, and returns a :class:`Dataset`: iterating it yields
:class:`~templiqx_application.batch.BatchRow` values numbered from 0 (data rows only: blank
JSONL lines and the CSV header are not rows), built through a
:class:`~templiqx_local.batch.mapping.ColumnMapping`. Memory does not depend on the file's
size: JSONL is read a line at a time (a line longer than :data:`MAX_LINE_BYTES` is a problem
row, skipped without being held), CSV a record at a time, Parquet a record batch at a time.

A row that cannot be decoded — a line that is not JSON, not an object, a CSV record with more
cells than the header — becomes a *problem row*: it is recorded as failed
(``TQX_BATCH_ROW_INVALID``) and every other row still runs. A file that cannot be read at all
raises :class:`~templiqx_local.batch.errors.BatchFileError`.

Parquet needs pyarrow (``pip install 'templiqx-local[parquet]'``), imported only when a Parquet
file is opened; without it the error is ``TQX_BATCH_PARQUET_UNAVAILABLE``.
"""

from __future__ import annotations

import csv
import datetime
import decimal
import hashlib
import io
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import msgspec

from templiqx_application.batch import BatchRow
from templiqx_contracts import Diagnostic, quote_input
from templiqx_local.batch.errors import BatchFileError
from templiqx_local.batch.mapping import ColumnMapping
from templiqx_local.batch.parquet import import_pyarrow

__all__ = [
    "FORMATS",
    "MAX_LINE_BYTES",
    "Dataset",
    "detect_format",
    "file_digest",
    "open_dataset",
    "row_from_json",
    "row_from_record",
]

FORMATS: Final = ("jsonl", "csv", "parquet")

MAX_LINE_BYTES: Final = 16 * 1024 * 1024
"""The longest JSONL line (or CSV cell) read; a longer one is a problem row."""

_EXTENSIONS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_PARQUET_BATCH_ROWS = 1024
_DECODER = msgspec.json.Decoder()


def detect_format(path: str | os.PathLike[str], given: str | None = None) -> str:
    """The dataset format: ``given``, else the extension's."""
    if given is not None:
        if given not in FORMATS:
            raise BatchFileError(
                "TQX_BATCH_INPUT_INVALID",
                f"format {quote_input(given)} is not one of {', '.join(FORMATS)}",
            )
        return given
    found = _EXTENSIONS.get(Path(path).suffix.lower())
    if found is None:
        raise BatchFileError(
            "TQX_BATCH_INPUT_INVALID",
            f"cannot tell the format of {quote_input(str(path))} from its extension",
            help="name it with --input-format jsonl|csv|parquet",
        )
    return found


def file_digest(path: str | os.PathLike[str]) -> tuple[str, int]:
    """The SHA-256 (hex) and size of a file, read in chunks."""
    sha = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            sha.update(chunk)
            size += len(chunk)
    return sha.hexdigest(), size


def _problem(index: int, message: str) -> BatchRow:
    return BatchRow(
        index=index,
        problem=Diagnostic.error("TQX_BATCH_ROW_INVALID", f"row {index}: {message}"),
    )


def _jsonable(value: Any) -> Any:
    """A Parquet value as JSON: dates and times as ISO 8601 text, decimals as text."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray)):
        raise ValueError("binary values are not JSON")
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        raise ValueError("NaN and infinity are not JSON numbers")
    return value


class Dataset:
    """One dataset file: iterate it for rows (again from the start each time)."""

    def __init__(
        self, path: str | os.PathLike[str], format: str, mapping: ColumnMapping | None = None
    ) -> None:
        self.path = Path(path)
        self.format = format
        self.mapping = mapping if mapping is not None else ColumnMapping()
        if not self.path.is_file():
            raise BatchFileError(
                "TQX_BATCH_INPUT_INVALID", f"dataset {quote_input(str(path))} is not a file"
            )
        if format == "parquet":
            self._pyarrow_parquet()

    def __iter__(self) -> Iterator[BatchRow]:
        if self.format == "jsonl":
            return self._jsonl()
        if self.format == "csv":
            return self._csv()
        return self._parquet()

    def count(self) -> int:
        """How many rows iterating yields (a quick pass; Parquet reads only its footer)."""
        if self.format == "jsonl":
            total = 0
            with open(self.path, "rb") as handle:
                for line in _lines(handle):
                    if line is None or line.strip():
                        total += 1
            return total
        if self.format == "csv":
            return sum(1 for _ in self._csv_records())
        return int(self._pyarrow_parquet().ParquetFile(self.path).metadata.num_rows)

    # --- JSONL --------------------------------------------------------------------------------

    def _jsonl(self) -> Iterator[BatchRow]:
        index = 0
        with open(self.path, "rb") as handle:
            for line in _lines(handle):
                if line is None:
                    yield _problem(index, f"line longer than {MAX_LINE_BYTES} bytes")
                    index += 1
                    continue
                if not line.strip():
                    continue
                yield self._json_row(line, index)
                index += 1

    def _json_row(self, line: bytes, index: int) -> BatchRow:
        return row_from_json(line, index, self.mapping)

    # --- CSV ----------------------------------------------------------------------------------

    def _csv_records(self) -> Iterator[dict[str | None, Any]]:
        csv.field_size_limit(MAX_LINE_BYTES)
        with open(self.path, encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            try:
                if not reader.fieldnames:
                    raise BatchFileError(
                        "TQX_BATCH_INPUT_INVALID",
                        f"CSV file {quote_input(str(self.path))} has no header row",
                        help="put the column names on the first line",
                    )
                yield from reader
            except csv.Error as exc:
                raise BatchFileError(
                    "TQX_BATCH_INPUT_INVALID",
                    f"CSV file {quote_input(str(self.path))} cannot be read: {exc}",
                ) from None
            except UnicodeDecodeError as exc:
                raise BatchFileError(
                    "TQX_BATCH_INPUT_INVALID",
                    f"CSV file {quote_input(str(self.path))} is not UTF-8 ({exc.reason})",
                ) from None

    def _csv(self) -> Iterator[BatchRow]:
        for index, record in enumerate(self._csv_records()):
            if None in record:
                yield _problem(index, "the record has more cells than the header has columns")
                continue
            yield row_from_csv(record, index, self.mapping)

    # --- Parquet ------------------------------------------------------------------------------

    def _pyarrow_parquet(self) -> Any:
        import_pyarrow()
        import pyarrow.parquet

        return pyarrow.parquet

    def _parquet(self) -> Iterator[BatchRow]:
        parquet = self._pyarrow_parquet()
        try:
            handle = parquet.ParquetFile(self.path)
        except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError family
            raise BatchFileError(
                "TQX_BATCH_INPUT_INVALID",
                f"Parquet file {quote_input(str(self.path))} cannot be read: {exc}",
            ) from None
        index = 0
        for batch in handle.iter_batches(batch_size=_PARQUET_BATCH_ROWS):
            for record in batch.to_pylist():
                yield row_from_record(record, index, self.mapping)
                index += 1


def row_from_json(line: bytes | str, index: int, mapping: ColumnMapping) -> BatchRow:
    """The row of one JSONL line (a problem row when it is not a JSON object)."""
    try:
        record = _DECODER.decode(line)
    except msgspec.DecodeError as exc:
        return _problem(index, f"not valid JSON ({exc})")
    if not isinstance(record, dict):
        return _problem(index, f"a row is a JSON object, not {type(record).__name__}")
    return mapping.row(record, index)


def row_from_csv(record: Mapping[Any, Any], index: int, mapping: ColumnMapping) -> BatchRow:
    """The row of one CSV record (column name to cell text; a missing cell is ``None`` and
    left out): every cell is text, converted by the mapping's column types."""
    cells = {str(k): v for k, v in record.items() if v is not None}
    return mapping.row(cells, index, text_cells=True)


def row_from_record(record: dict[str, Any], index: int, mapping: ColumnMapping) -> BatchRow:
    """The row of one Parquet (Arrow) record: dates and times as ISO 8601 text, decimals as
    text; binary values, NaN and infinities make a problem row."""
    try:
        values = _jsonable(record)
    except ValueError as exc:
        return _problem(index, str(exc))
    return mapping.row(values, index)


def _lines(handle: io.BufferedReader) -> Iterator[bytes | None]:
    """The file's lines (``None`` for one too long, which is skipped unread)."""
    while True:
        line = handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:  # skip the rest of the line without holding it
                rest = handle.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line


def open_dataset(
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    mapping: ColumnMapping | list[str] | None = None,
) -> Dataset:
    """The dataset at ``path`` (``mapping``: a :class:`ColumnMapping` or its specs)."""
    parsed = ColumnMapping.parse(mapping) if isinstance(mapping, list) else mapping
    return Dataset(path, detect_format(path, format), parsed)
