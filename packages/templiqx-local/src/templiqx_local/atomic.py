"""Atomic file replacement: exclusive temp file + fsync + ``os.replace`` + directory fsync.

A write is split in two steps so that several files can be prepared before any of them is
committed: :func:`prepare` writes the new bytes into a fresh temporary file in the target's
directory (created with ``O_EXCL``, never following a symlink) and flushes it; :func:`commit`
renames it over the target and flushes the directory. A crash before the rename leaves the old
file untouched and, at worst, a stray temporary file whose name starts with
:data:`TEMP_PREFIX`; such files are never read, listed or counted as package content, and
every new write picks a fresh random name, so leftovers never get in the way.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat

from templiqx_local.confined import DirHandle, child_label, lstat_entry, os_errors, port_error

__all__ = ["TEMP_PREFIX", "commit", "discard", "is_temp_name", "prepare", "write_atomic"]

TEMP_PREFIX = ".templiqx-tmp."
_TEMP_NAME = re.compile(r"\.templiqx-tmp\.[0-9]+\.[0-9a-f]{16}")
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def is_temp_name(name: str) -> bool:
    """Whether ``name`` is one of this module's temporary file names."""
    return _TEMP_NAME.fullmatch(name) is not None


def prepare(directory: DirHandle, target: str, data: bytes) -> str:
    """Write ``data`` to a new temporary file beside ``target``; returns its name.

    The temporary file takes the permission bits of an existing ``target``.
    """
    display = child_label(directory.label, target)
    existing = lstat_entry(directory, target, display=display)
    mode = stat.S_IMODE(existing.st_mode) if existing is not None else None
    while True:
        name = f"{TEMP_PREFIX}{os.getpid()}.{os.urandom(8).hex()}"
        try:
            fd = os.open(name, _CREATE_FLAGS, 0o666, dir_fd=directory.fd)
        except FileExistsError:
            continue
        except OSError as exc:
            raise port_error(exc, display) from exc
        break
    try:
        with os_errors(display):
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        discard(directory, name)
        raise
    with os_errors(display):
        os.close(fd)
    return name


def commit(directory: DirHandle, temp: str, target: str) -> None:
    """Rename the prepared ``temp`` over ``target`` and flush the directory.

    On failure the temporary file is removed and a port error raised; ``target`` is unchanged.
    """
    display = child_label(directory.label, target)
    try:
        with os_errors(display):
            os.replace(temp, target, src_dir_fd=directory.fd, dst_dir_fd=directory.fd)
    except BaseException:
        discard(directory, temp)
        raise
    directory.fsync()


def discard(directory: DirHandle, temp: str) -> None:
    """Remove a prepared temporary file, ignoring failures (best-effort cleanup)."""
    with contextlib.suppress(OSError):
        os.unlink(temp, dir_fd=directory.fd)


def write_atomic(directory: DirHandle, target: str, data: bytes) -> None:
    """Atomically replace (or create) ``target`` in ``directory`` with ``data``."""
    temp = prepare(directory, target, data)
    commit(directory, temp, target)
