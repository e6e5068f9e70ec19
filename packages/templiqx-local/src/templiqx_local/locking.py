"""Advisory ``fcntl.flock`` locks on persistent lock files.

``flock`` locks belong to an open file description, so two handles opened independently block
each other even inside one process (threads included) — unlike ``fcntl``/``lockf`` record
locks, which are per process. Lock files are created on demand and never deleted: deleting a
lock file while another process waits on it would let two holders lock two different inodes.

The lock folder must be a real directory (no symlink) and the lock file a regular file opened
with ``O_NOFOLLOW``. POSIX only.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import weakref
from types import TracebackType

from templiqx_local.confined import DirHandle, child_label, open_child_dir, port_error
from templiqx_ports import InvalidPathError

__all__ = ["FileLock", "acquire_lock"]

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


def acquire_lock(parent: DirHandle, folder: str, name: str, *, exclusive: bool) -> FileLock:
    """Lock ``<parent>/<folder>/<name>.lock`` (shared or exclusive), creating it if needed.

    ``name`` must already satisfy the segment rule. Blocks until the lock is granted.
    """
    display = child_label(parent.label, f"{folder}/{name}.lock")
    with open_child_dir(parent, folder, display=display, create=True) as locks:
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
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidPathError(f"{display} is not a regular file")
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    except OSError as exc:
        os.close(fd)
        raise port_error(exc, display) from exc
    except BaseException:
        os.close(fd)
        raise
    return FileLock(fd, display)
