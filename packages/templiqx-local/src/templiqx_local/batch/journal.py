"""The results journal: the JSONL output, appended durably as rows finish.

Each result is one line written by a single ``write`` of the whole line (looping only if the
kernel takes part of it), straight to the file descriptor — nothing waits in a user-space
buffer, so a line reported written survives the process being killed (``kill -9``). The file
is ``fsync``-ed at least every :data:`SYNC_INTERVAL_S` and when the journal is closed, which
bounds what a power loss can take.

The journal holds an exclusive ``flock`` while it is open, so two runs never append to one
output (the second gets ``TQX_BUSY``).

Reopening for a resumed run scans the file: every complete line must decode as a result (else
``TQX_BATCH_OUTPUT_CORRUPT``), a last line without its newline — a write cut short — is cut
off, and the indexes found are the rows already done (:class:`DoneSet`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import msgspec

from templiqx_application.batch import BatchResult
from templiqx_contracts import quote_input
from templiqx_local.batch.errors import BatchFileError

__all__ = ["SYNC_INTERVAL_S", "DoneSet", "ResultJournal"]

SYNC_INTERVAL_S: Final = 1.0

_ENCODER = msgspec.json.Encoder()


class _Indexed(msgspec.Struct):
    """What a resumed run reads of each result line."""

    index: int


_INDEXED = msgspec.json.Decoder(_Indexed)
_RESULT = msgspec.json.Decoder(BatchResult)


class DoneSet:
    """Row indexes already done, in memory that stays small when rows finish roughly in order:
    everything below a watermark, plus the few done above it."""

    def __init__(self) -> None:
        self.watermark = 0
        self._above: set[int] = set()
        self.count = 0

    def add(self, index: int) -> bool:
        """Add ``index``; ``False`` if it was there already."""
        if index in self:
            return False
        self.count += 1
        if index != self.watermark:
            self._above.add(index)
            return True
        self.watermark += 1
        while self.watermark in self._above:
            self._above.discard(self.watermark)
            self.watermark += 1
        return True

    def __contains__(self, index: object) -> bool:
        if not isinstance(index, int):
            return False
        return 0 <= index < self.watermark or index in self._above

    def __len__(self) -> int:
        return self.count


def _os_error(path: Path, exc: OSError) -> BatchFileError:
    return BatchFileError("TQX_IO", f"{quote_input(str(path))}: {exc.strerror or exc}")


class ResultJournal:
    """The output JSONL, open for appending under an exclusive lock (see the module doc)."""

    def __init__(self, path: str | os.PathLike[str], *, truncate: bool = False) -> None:
        self.path = Path(path)
        self.done = DoneSet()
        self.cut_bytes = 0
        self.appended = 0
        """Results appended since opening (:attr:`done` stays what the file held then)."""
        self._scanned = False
        self._lines = 0
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise _os_error(self.path, exc) from None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(self._fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise BatchFileError(
                    "TQX_BUSY",
                    f"another batch run is writing {quote_input(str(self.path))}",
                    help="wait for it to finish, or write to another --output",
                ) from None
            raise _os_error(self.path, exc) from None
        try:
            if truncate:
                os.ftruncate(self._fd, 0)
            else:
                self._scan()
            os.lseek(self._fd, 0, os.SEEK_END)
        except BaseException:
            os.close(self._fd)
            raise
        self._synced = time.monotonic()
        self._dirty = False

    def _scan(self) -> None:
        """Read the done rows; cut a torn last line."""
        good = 0
        self._scanned = True
        with os.fdopen(os.dup(self._fd), "rb") as handle:
            for number, line in enumerate(_raw_lines(handle), 1):
                if not line.endswith(b"\n"):
                    break  # a torn tail: cut below
                try:
                    index = _INDEXED.decode(line).index
                except msgspec.DecodeError:
                    raise BatchFileError(
                        "TQX_BATCH_OUTPUT_CORRUPT",
                        f"line {number} of {quote_input(str(self.path))} is not a result row",
                    ) from None
                if not self.done.add(index):
                    raise BatchFileError(
                        "TQX_BATCH_OUTPUT_CORRUPT",
                        f"line {number} of {quote_input(str(self.path))} repeats row {index}",
                    )
                good += len(line)
                self._lines += 1
        size = os.fstat(self._fd).st_size
        if size > good:
            self.cut_bytes = size - good
            os.ftruncate(self._fd, good)
            os.fsync(self._fd)

    def results(self) -> Iterator[BatchResult]:
        """The results the file held when it was opened (read again, one line at a time)."""
        if not self._scanned:
            return
        with open(self.path, "rb") as handle:
            for line, _ in zip(_raw_lines(handle), range(self._lines), strict=False):
                yield _RESULT.decode(line)

    @property
    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def append(self, result: BatchResult) -> None:
        """Write one result line (and ``fsync`` when the interval has passed)."""
        line = _ENCODER.encode(result) + b"\n"
        view = memoryview(line)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError as exc:
            raise _os_error(self.path, exc) from None
        self.appended += 1
        self._dirty = True
        now = time.monotonic()
        if now - self._synced >= SYNC_INTERVAL_S:
            self.sync()

    def sync(self) -> None:
        if self._dirty:
            try:
                os.fsync(self._fd)
            except OSError as exc:
                raise _os_error(self.path, exc) from None
            self._dirty = False
        self._synced = time.monotonic()

    def close(self) -> None:
        """Sync and release the lock (idempotent)."""
        if self._fd < 0:
            return
        try:
            self.sync()
        finally:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1


def _raw_lines(handle: object) -> Iterator[bytes]:
    assert hasattr(handle, "readline")
    while True:
        line: bytes = handle.readline()
        if not line:
            return
        yield line
