"""The diagnostic codes of batch runs (:mod:`templiqx_application.batch`), with fix hints.

The engine reports the first three; the file layer (``templiqx_local.batch``) and templiqx-ray
the rest. They are documented with the application's codes (docs/reference/diagnostics.md).
"""

from __future__ import annotations

__all__ = ["BATCH_CODES"]

BATCH_CODES: dict[str, str] = {
    "TQX_BATCH_OPTION_INVALID": "Fix the named batch option (concurrency 1-1024, positive "
    "budgets, a window of at least 1).",
    "TQX_BATCH_IDENTITY_MISMATCH": "The package differs from the one the run was pinned to: "
    "ship the same package folder to every worker, or take its identity again "
    "(`templiqx identity PACKAGE`) after a deliberate change.",
    "TQX_BATCH_ROW_INVALID": "Fix the row in the dataset (valid JSON object, the mapped columns "
    "present and of the mapped type, a contract name when the batch runs a whole package); the "
    "other rows still run.",
    "TQX_BATCH_INPUT_INVALID": "Give a readable JSONL, CSV (with a header row) or Parquet file; "
    "name its format with --input-format when the extension does not say it.",
    "TQX_BATCH_MAPPING_INVALID": "Write each mapping as COLUMN=TARGET[:TYPE], TARGET one of "
    "inputs.NAME, context.NAME, id, contract, output, expected or - (drop), TYPE one of str, "
    "int, float, bool, json.",
    "TQX_BATCH_OUTPUT_EXISTS": "Pass --resume to finish the run that wrote it, --overwrite to "
    "start again, or another --output.",
    "TQX_BATCH_RESUME_MISMATCH": "Resume with the same package, contract, runtime, input file "
    "and mapping as the run that wrote the output, or start a new output (--cache keeps the "
    "answers that did not change).",
    "TQX_BATCH_OUTPUT_CORRUPT": "A line other than the last of the output is not a result row "
    "(edited by hand?): restore it, or start again with --overwrite.",
    "TQX_BATCH_PARQUET_UNAVAILABLE": "Parquet needs pyarrow: pip install 'templiqx-local[parquet]' "
    "(or use JSONL or CSV).",
}
