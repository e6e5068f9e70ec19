"""Advisory ``fcntl.flock`` locks on persistent lock files, with a bounded wait.

``flock`` locks belong to an open file description, so two handles opened independently block
each other even inside one process (threads included) — unlike ``fcntl``/``lockf`` record
locks, which are per process. Lock files are created on demand and never deleted: deleting a
lock file while another process waits on it would let two holders lock two different inodes.

Only a writer creates anything: :func:`acquire_lock` creates the lock folder (with a
``.gitignore`` that ignores the folder, so a package tree under version control stays clean)
and the lock file; :func:`acquire_existing_lock`, the readers' way in, locks a lock file that
is already there and creates nothing — where there is none, no writer has ever run.

No wait is unbounded: a lock another holder keeps for longer than ``timeout`` seconds ends in
:class:`~templiqx_ports.BusyError` (``TQX_BUSY``) saying to retry, so a stuck writer elsewhere
costs a caller at most ``timeout``, never its thread forever.

The lock folder must be a real directory (no symlink) and the lock file a regular file opened
with ``O_NOFOLLOW``. POSIX only.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
import weakref
from types import TracebackType
from typing import Final

from templiqx_local.atomic import write_atomic
from templiqx_local.confined import (
    DirHandle,
    child_label,
    lstat_entry,
    open_child_dir,
    os_errors,
    port_error,
)
from templiqx_ports import BusyError, InvalidPathError, NotFoundError

__all__ = ["DEFAULT_LOCK_TIMEOUT", "FileLock", "acquire_existing_lock", "acquire_lock"]

DEFAULT_LOCK_TIMEOUT: Final = 10.0
"""Seconds a lock is waited for before the operation gives up with ``TQX_BUSY``."""

IGNORE_FILE = ".gitignore"
_IGNORE_ALL = b"# written by templiqx: lock files, never part of a package\n*\n"

_OPEN_RW = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
_OPEN_RO = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


def _release(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)  # closing the last descriptor releases the flock


class FileLock:
    """A held lock; released by :meth:`release`, on ``with`` exit, or when garbage collected."""

    __slots__ = ("__weakref__", "_finalizer", "path")

    def __init__(self, fd: int, path: str) -> None:
        self.path = path
        self._finalizer = weakref.finalize(self, _release, fd)

    @property
    def held(self) -> bool:
        """Whether the lock is still held."""
        return self._finalizer.alive

    def release(self) -> None:
        """Release the lock (idempotent)."""
        self._finalizer()

    def __enter__(self) -> FileLock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def acquire_lock(
    parent: DirHandle,
    folder: str,
    name: str,
    *,
    exclusive: bool,
    timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> FileLock:
    """Lock ``<parent>/<folder>/<name>.lock`` (shared or exclusive), creating it if needed.

    ``name`` must already satisfy the segment rule. Waits at most ``timeout`` seconds for
    another holder, then raises :class:`~templiqx_ports.BusyError`.
    """
    display = child_label(parent.label, f"{folder}/{name}.lock")
    created = lstat_entry(parent, folder, display=display) is None
    with open_child_dir(parent, folder, display=display, create=True) as locks:
        if created:
            _ignore_folder(locks)
        filename = f"{name}.lock"
        try:
            fd = os.open(filename, _OPEN_RW, 0o666, dir_fd=locks.fd)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EROFS, errno.EPERM):
                raise port_error(exc, display) from exc
            # A read-only folder: an existing lock file can still be locked.
            try:
                fd = os.open(filename, _OPEN_RO, dir_fd=locks.fd)
            except OSError as again:
                raise port_error(again, display) from again
    return _locked(fd, display, name, exclusive=exclusive, timeout=timeout)


def acquire_existing_lock(
    parent: DirHandle, folder: str, name: str, *, timeout: float = DEFAULT_LOCK_TIMEOUT
) -> FileLock | None:
    """A shared lock on ``<parent>/<folder>/<name>.lock`` if that file exists, else ``None``.

    Nothing is created. ``None`` means no writer has ever locked this name (lock files are
    never deleted); a reader that went ahead without a lock asks again after reading, and
    trusts what it read only if there is still none.
    """
    display = child_label(parent.label, f"{folder}/{name}.lock")
    try:
        locks = open_child_dir(parent, folder, display=display)
    except NotFoundError:
        return None
    with locks:
        try:
            fd = os.open(f"{name}.lock", _OPEN_RO, dir_fd=locks.fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise port_error(exc, display) from exc
    return _locked(fd, display, name, exclusive=False, timeout=timeout)


def _ignore_folder(locks: DirHandle) -> None:
    """Write the lock folder's ``.gitignore`` (best effort: a lock works without it)."""
    with contextlib.suppress(OSError, InvalidPathError, BusyError, NotFoundError):
        if lstat_entry(locks, IGNORE_FILE, display=IGNORE_FILE) is None:
            write_atomic(locks, IGNORE_FILE, _IGNORE_ALL)


_FIRST_PAUSE = 0.001
_LONGEST_PAUSE = 0.05


def _locked(fd: int, display: str, name: str, *, exclusive: bool, timeout: float) -> FileLock:
    """Lock the open ``fd`` within ``timeout`` seconds, or close it and raise ``BusyError``."""
    try:
        with os_errors(display):
            info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidPathError(f"{display} is not a regular file")
        mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
        deadline = time.monotonic() + max(timeout, 0.0)
        pause = _FIRST_PAUSE
        while True:
            try:
                fcntl.flock(fd, mode)
                break
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _busy(display, name, timeout) from None
                time.sleep(min(pause, remaining))
                pause = min(pause * 2, _LONGEST_PAUSE)
            except OSError as exc:
                raise port_error(exc, display) from exc
    except BaseException:
        os.close(fd)
        raise
    return FileLock(fd, display)


def _busy(display: str, name: str, timeout: float) -> BusyError:
    return BusyError(
        f"'{name}' is locked by another writer and stayed locked for {timeout:g} s ({display})",
        help=(
            "Another call or process is writing to it; retry in a moment. If it stays busy, "
            f"find the process that holds {display} (a write that hung) and stop it."
        ),
    )
