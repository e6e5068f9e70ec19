"""A run's state beside its output: what the run is, and what it has finished by request.

``OUTPUT.tqx-batch`` is a small SQLite database (Python's own ``sqlite3``; WAL journal) with:

* the run's *header* — package, contract, the package identity, the runtime, the input file's
  SHA-256 and size, the mapping and whether it is an eval run — which ``--resume`` checks
  before it appends anything (``TQX_BATCH_RESUME_MISMATCH`` names what differs);
* the run's *ledger* (:class:`~templiqx_application.batch.BatchLedger`): the result of every
  distinct request the run finished, by request key. The engine records a result here before
  the result is written to the output, so after a crash a row that had finished but whose line
  was lost is concluded from the ledger on resume, never executed twice; and a duplicate of a
  row finished before the crash is still a duplicate.

Everything is on disk, so the run's memory does not grow with the number of distinct requests.
A committed write survives the process being killed (SQLite's WAL is written before commit
returns); ``synchronous=NORMAL`` lets a power loss take the last transactions, which resuming
then simply runs again.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import msgspec

from templiqx_application.batch import BatchResult
from templiqx_contracts import quote_input
from templiqx_local.batch.errors import BatchFileError

__all__ = ["STATE_SUFFIX", "RunState"]

STATE_SUFFIX = ".tqx-batch"

_RESULT = msgspec.json.Decoder(BatchResult)
_ENCODER = msgspec.json.Encoder()


def _connect(path: Path) -> sqlite3.Connection:
    try:
        connection = sqlite3.connect(path, timeout=30.0, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.Error as exc:
        raise BatchFileError(
            "TQX_IO", f"cannot open {quote_input(str(path))} as a SQLite database: {exc}"
        ) from None
    return connection


class RunState:
    """The state database of one output (see the module docstring).

    Used by one run at a time (the output's journal holds the lock); its ledger methods are
    called from the run's event loop thread only.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._db = _connect(self.path)
        try:
            with self._db:
                self._db.execute("CREATE TABLE IF NOT EXISTS header (body TEXT NOT NULL)")
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS finished (key TEXT PRIMARY KEY, result BLOB)"
                )
        except sqlite3.Error as exc:
            self._db.close()
            raise BatchFileError(
                "TQX_BATCH_OUTPUT_CORRUPT",
                f"{quote_input(str(self.path))} is not a batch run's state: {exc}",
            ) from None

    @staticmethod
    def remove(path: str | os.PathLike[str]) -> None:
        """Delete a state database and its WAL files (starting an output again)."""
        for suffix in ("", "-wal", "-shm"):
            Path(f"{os.fspath(path)}{suffix}").unlink(missing_ok=True)

    # --- header --------------------------------------------------------------------------------

    def header(self) -> dict[str, Any] | None:
        row = self._db.execute("SELECT body FROM header").fetchone()
        if row is None:
            return None
        decoded = msgspec.json.decode(row[0])
        return decoded if isinstance(decoded, dict) else None

    def write_header(self, header: dict[str, Any]) -> None:
        with self._db:
            self._db.execute("DELETE FROM header")
            self._db.execute(
                "INSERT INTO header (body) VALUES (?)", (_ENCODER.encode(header).decode(),)
            )

    # --- ledger (BatchLedger) -----------------------------------------------------------------

    def finished(self, key: str) -> BatchResult | None:
        row = self._db.execute("SELECT result FROM finished WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return _RESULT.decode(row[0])
        except msgspec.DecodeError:
            return None  # unreadable: executed again rather than trusted

    def record(self, key: str, result: BatchResult) -> None:
        with self._db:
            self._db.execute(
                "INSERT OR IGNORE INTO finished (key, result) VALUES (?, ?)",
                (key, _ENCODER.encode(result)),
            )

    def close(self) -> None:
        self._db.close()
