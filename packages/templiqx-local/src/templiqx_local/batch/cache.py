"""The opt-in result cache: runtime answers kept across runs, by request.

``--cache FILE`` (any path; created on first use) is a SQLite database of the receipts a
runtime returned, keyed by the runtime's identity and the request key (the runtime's request
fingerprint — see :meth:`templiqx_ports.RuntimeAdapter.request_fingerprint`). A later run with
the same cache concludes a row from the kept receipt when its request is the same, so after
editing one contract only the rows whose requests changed are executed again. The kept
receipt is concluded against the contract as it is now (the output is checked against today's
schema), and answers are kept only when the runtime answered (failures are not kept, so a
later run tries them again).

Several runs may share one cache (SQLite serialises the writers; a writer waits up to 30 s).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import msgspec

from templiqx_application.batch import CachedAnswer
from templiqx_contracts import quote_input
from templiqx_local.batch.errors import BatchFileError

__all__ = ["SqliteResultCache"]

_ANSWER = msgspec.json.Decoder(CachedAnswer)
_ENCODER = msgspec.json.Encoder()


class SqliteResultCache:
    """A :class:`~templiqx_application.batch.ResultCache` in one SQLite file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            self._db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            with self._db:
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS answers (scope TEXT NOT NULL, key TEXT NOT NULL,"
                    " answer BLOB NOT NULL, PRIMARY KEY (scope, key))"
                )
        except sqlite3.Error as exc:
            raise BatchFileError(
                "TQX_IO", f"cannot use {quote_input(str(path))} as a result cache: {exc}"
            ) from None
        self.hits = 0
        self.misses = 0

    def get(self, scope: str, key: str) -> CachedAnswer | None:
        row = self._db.execute(
            "SELECT answer FROM answers WHERE scope = ? AND key = ?", (scope, key)
        ).fetchone()
        if row is None:
            self.misses += 1
            return None
        try:
            answer = _ANSWER.decode(row[0])
        except msgspec.DecodeError:
            self.misses += 1
            return None
        self.hits += 1
        return answer

    def put(self, scope: str, key: str, answer: CachedAnswer) -> None:
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO answers (scope, key, answer) VALUES (?, ?, ?)",
                (scope, key, _ENCODER.encode(answer)),
            )

    def close(self) -> None:
        self._db.close()
