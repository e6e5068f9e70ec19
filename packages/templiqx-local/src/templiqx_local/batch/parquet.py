"""Parquet through pyarrow, an optional extra: imported only when a Parquet file is used.

Results go to Parquet by converting the durable JSONL journal once the run has finished,
record batch by record batch (memory does not depend on the run's size), into a temporary file
renamed into place. Columns: ``index`` (int64), ``id``, ``contract``, ``request_fingerprint``,
``source`` (string), ``ok`` (bool), ``output`` (the output as JSON text: an answer's shape is
the contract's, not a table's), ``diagnostics`` (list of {code, severity, message}),
``prompt_tokens``, ``completion_tokens``, ``total_tokens``, ``attempts`` (int64),
``latency_ms`` (double) and ``eval_passed`` (bool, for eval runs).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from templiqx_local.batch.errors import BatchFileError

__all__ = ["PARQUET_INSTALL", "import_pyarrow", "write_parquet"]

PARQUET_INSTALL = "pip install 'templiqx-local[parquet]'"

_BATCH_ROWS = 4096


def import_pyarrow() -> Any:
    """``pyarrow``, or ``TQX_BATCH_PARQUET_UNAVAILABLE`` naming the install command."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise BatchFileError(
            "TQX_BATCH_PARQUET_UNAVAILABLE",
            "reading or writing Parquet needs pyarrow, which is not installed",
            help=f"{PARQUET_INSTALL} (or use JSONL or CSV)",
        ) from None
    return pyarrow


def _columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    columns: dict[str, list[Any]] = {
        name: []
        for name in (
            "index",
            "id",
            "contract",
            "request_fingerprint",
            "source",
            "ok",
            "output",
            "diagnostics",
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
            "attempts",
            "latency_ms",
            "eval_passed",
        )
    }
    for row in rows:
        usage = row.get("usage") or {}
        evaluated = row.get("eval")
        columns["index"].append(row["index"])
        columns["id"].append(row.get("id"))
        columns["contract"].append(row.get("contract"))
        columns["request_fingerprint"].append(row.get("request_fingerprint"))
        columns["source"].append(row.get("source"))
        columns["ok"].append(row.get("ok"))
        output = row.get("output")
        columns["output"].append(None if output is None else msgspec.json.encode(output).decode())
        columns["diagnostics"].append(row.get("diagnostics") or [])
        columns["prompt_tokens"].append(usage.get("prompt_tokens"))
        columns["completion_tokens"].append(usage.get("completion_tokens"))
        columns["total_tokens"].append(usage.get("total_tokens"))
        columns["attempts"].append(row.get("attempts", 0))
        columns["latency_ms"].append(row.get("latency_ms"))
        columns["eval_passed"].append(evaluated.get("passed") if evaluated else None)
    return columns


def write_parquet(journal: str | os.PathLike[str], target: str | os.PathLike[str]) -> int:
    """Convert a JSONL results journal into a Parquet file; the number of rows written."""
    pyarrow = import_pyarrow()
    import pyarrow.parquet as parquet

    diagnostic = pyarrow.struct(
        [("code", pyarrow.string()), ("severity", pyarrow.string()), ("message", pyarrow.string())]
    )
    schema = pyarrow.schema(
        [
            ("index", pyarrow.int64()),
            ("id", pyarrow.string()),
            ("contract", pyarrow.string()),
            ("request_fingerprint", pyarrow.string()),
            ("source", pyarrow.string()),
            ("ok", pyarrow.bool_()),
            ("output", pyarrow.string()),
            ("diagnostics", pyarrow.list_(diagnostic)),
            ("prompt_tokens", pyarrow.int64()),
            ("completion_tokens", pyarrow.int64()),
            ("total_tokens", pyarrow.int64()),
            ("attempts", pyarrow.int64()),
            ("latency_ms", pyarrow.float64()),
            ("eval_passed", pyarrow.bool_()),
        ]
    )
    final = Path(target)
    temporary = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    written = 0
    try:
        with parquet.ParquetWriter(temporary, schema) as writer, open(journal, "rb") as source:
            pending: list[dict[str, Any]] = []
            for line in source:
                if not line.endswith(b"\n"):
                    break  # a torn last line is not a result
                pending.append(msgspec.json.decode(line))
                if len(pending) >= _BATCH_ROWS:
                    writer.write_table(pyarrow.table(_columns(pending), schema=schema))
                    written += len(pending)
                    pending = []
            if pending:
                writer.write_table(pyarrow.table(_columns(pending), schema=schema))
                written += len(pending)
        with open(temporary, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, final)
    finally:
        if temporary.exists():
            temporary.unlink()
    return written
