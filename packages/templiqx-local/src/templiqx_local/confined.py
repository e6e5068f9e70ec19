"""Confined filesystem access: every path is walked one component at a time from an open
directory descriptor, and no symbolic link is ever followed.

Each step ``lstat``\\ s the next component relative to its parent's descriptor (so a symlink is
reported as such), then opens it with ``O_NOFOLLOW`` (so a symlink swapped in after the check
still cannot be followed). Because the walk starts at the root's descriptor and the path rules
forbid ``..``, whatever is reached is inside the root by construction: containment is a property
of the walk, never a string-prefix comparison.

Files with more than one hard link are refused as well: a hard link is indistinguishable from a
regular file by name, and may alias a file outside the root.

Every ``OSError`` is converted into a :class:`~templiqx_ports.PortError`. Messages name files by
their root-relative *label* (``welcome/templiqx.yaml``), never by host path, so an error reads
the same whatever the root is.

Files the store parses as YAML documents can be read with ``max_bytes``: a larger file is
refused from its ``fstat`` size, before a byte of it is read.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from templiqx_ports import (
    InvalidDataError,
    InvalidPathError,
    NotFoundError,
    PortError,
    PortIOError,
)

__all__ = [
    "DirHandle",
    "check_regular",
    "child_label",
    "digest_file",
    "lstat_entry",
    "open_child_dir",
    "open_dirs",
    "open_root",
    "os_errors",
    "port_error",
    "read_file",
    "read_optional_file",
    "sorted_entries",
]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def port_error(exc: OSError, display: str) -> PortError:
    """The port error for an operating-system failure on ``display``."""
    code = exc.errno
    if code == errno.ENOENT:
        return NotFoundError(display)
    if code == errno.ELOOP:
        return InvalidPathError(f"{display}: symbolic links are not allowed")
    if code == errno.ENAMETOOLONG:
        return InvalidPathError(f"{display}: name too long")
    if code == errno.ENOTDIR:
        return InvalidPathError(f"{display}: a path component is not a directory")
    if code == errno.EISDIR:
        return InvalidPathError(f"{display} is a directory, not a file")
    return PortIOError(f"{display}: {exc.strerror or exc}")


@contextmanager
def os_errors(display: str) -> Iterator[None]:
    """Convert any ``OSError`` raised inside the block into a port error."""
    try:
        yield
    except OSError as exc:
        raise port_error(exc, display) from exc


def child_label(label: str, name: str) -> str:
    """The label of ``name`` inside the folder labelled ``label`` (``""`` is the root)."""
    return f"{label}/{name}" if label else name


class DirHandle:
    """An open directory descriptor, its absolute path and its root-relative label.

    ``label`` (``""`` for a root) is what messages show; ``path`` is for callers that hand out
    real paths (output leases).
    """

    __slots__ = ("fd", "label", "path")

    def __init__(self, fd: int, path: Path, label: str = "") -> None:
        self.fd = fd
        self.path = path
        self.label = label

    def close(self) -> None:
        """Close the descriptor (idempotent)."""
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def fsync(self) -> None:
        """Flush the directory entry changes to stable storage."""
        with os_errors(self.label or "."):
            os.fsync(self.fd)

    def __enter__(self) -> DirHandle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open_root(path: Path) -> DirHandle:
    """Open a (canonical) root directory."""
    with os_errors(str(path)):
        fd = os.open(path, _DIR_FLAGS)
    return DirHandle(fd, path)


def lstat_entry(parent: DirHandle, name: str, *, display: str) -> os.stat_result | None:
    """``lstat`` ``name`` inside ``parent``; ``None`` when it does not exist."""
    try:
        return os.stat(name, dir_fd=parent.fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise port_error(exc, display) from exc


def open_child_dir(
    parent: DirHandle, name: str, *, display: str, create: bool = False
) -> DirHandle:
    """Open the real (non-symlinked) directory ``name`` inside ``parent``.

    Missing: created when ``create`` is set, else :class:`NotFoundError` (``display``). A
    symlink or a non-directory is :class:`InvalidPathError`.
    """
    info = lstat_entry(parent, name, display=display)
    if info is None and create:
        try:
            os.mkdir(name, mode=0o777, dir_fd=parent.fd)
        except FileExistsError:
            pass
        except OSError as exc:
            raise port_error(exc, display) from exc
        info = lstat_entry(parent, name, display=display)
    if info is None:
        raise NotFoundError(display)
    if stat.S_ISLNK(info.st_mode):
        raise InvalidPathError(f"{display}: '{name}' is a symbolic link; symlinks are refused")
    if not stat.S_ISDIR(info.st_mode):
        raise InvalidPathError(f"{display}: '{name}' is not a directory")
    with os_errors(display):
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent.fd)
    return DirHandle(fd, parent.path / name, child_label(parent.label, name))


def open_dirs(
    base: DirHandle, parts: tuple[str, ...], *, display: str, create: bool = False
) -> DirHandle:
    """Walk ``parts`` (directory names) from ``base``; the caller closes the result.

    ``base`` itself is never closed; the returned handle is always a new descriptor.
    """
    with os_errors(display):
        current = DirHandle(os.dup(base.fd), base.path, base.label)
    try:
        for part in parts:
            nxt = open_child_dir(current, part, display=display, create=create)
            current.close()
            current = nxt
    except BaseException:
        current.close()
        raise
    return current


def check_regular(info: os.stat_result, name: str, display: str) -> None:
    """Refuse anything but a regular, singly-linked file (``InvalidPathError``)."""
    if stat.S_ISLNK(info.st_mode):
        raise InvalidPathError(f"{display}: '{name}' is a symbolic link; symlinks are refused")
    if stat.S_ISDIR(info.st_mode):
        raise InvalidPathError(f"{display} is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise InvalidPathError(f"{display} is not a regular file")
    if info.st_nlink > 1:
        raise InvalidPathError(
            f"{display} has {info.st_nlink} hard links; multiply-linked files are refused "
            "because they may alias files outside the root"
        )


def _refuse_size(info: os.stat_result, display: str, max_bytes: int | None, limit: str) -> None:
    if max_bytes is not None and info.st_size > max_bytes:
        raise InvalidDataError(
            f"{display} is {info.st_size} bytes, more than the {max_bytes}-byte limit ({limit}); "
            "split the file or shrink the values it carries"
        )


def read_optional_file(
    parent: DirHandle,
    name: str,
    *,
    display: str,
    max_bytes: int | None = None,
    limit: str = "max_bytes",
) -> bytes | None:
    """The bytes of the regular, singly-linked file ``name`` in ``parent``; ``None`` if missing.

    With ``max_bytes``, a larger file is :class:`InvalidDataError` naming ``limit`` (the
    constant that sets it), decided from its size before anything is read.

    A file atomically replaced between its ``lstat`` and its ``open`` (a concurrent write) is
    looked up again: what is read is always the file that was checked, and a reader racing a
    writer sees the old or the new bytes, never a spurious error.
    """
    for _ in range(_REOPEN_ATTEMPTS - 1):
        data = _read_checked(parent, name, display, max_bytes, limit)
        if data is not _REPLACED:
            return data if isinstance(data, bytes) else None
    data = _read_checked(parent, name, display, max_bytes, limit)
    if data is _REPLACED:
        raise InvalidPathError(f"{display} changed while it was being opened")
    return data if isinstance(data, bytes) else None


_REOPEN_ATTEMPTS = 8
_REPLACED = object()


def _read_checked(
    parent: DirHandle,
    name: str,
    display: str,
    max_bytes: int | None,
    limit: str,
    sink: Callable[[bytes], None] | None = None,
) -> bytes | object | None:
    """The file's bytes, ``None`` when missing, or ``_REPLACED`` when it changed under us.

    With ``sink``, each chunk goes to ``sink`` instead and ``b""`` is returned (nothing kept)."""
    info = lstat_entry(parent, name, display=display)
    if info is None:
        return None
    check_regular(info, name, display)
    _refuse_size(info, display, max_bytes, limit)
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=parent.fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise port_error(exc, display) from exc
    try:
        with os_errors(display):
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                return _REPLACED
            check_regular(opened, name, display)
            _refuse_size(opened, display, max_bytes, limit)
            os.set_blocking(fd, True)
            chunks: list[bytes] = []
            size = 0
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                size += len(chunk)
                if max_bytes is not None and size > max_bytes:  # it grew while being read
                    raise InvalidDataError(
                        f"{display} is more than the {max_bytes}-byte limit ({limit})"
                    )
                if sink is not None:
                    sink(chunk)
                else:
                    chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def digest_file(
    parent: DirHandle,
    name: str,
    *,
    display: str,
    max_bytes: int | None = None,
    limit: str = "max_bytes",
) -> str:
    """The lowercase hex SHA-256 of the regular, singly-linked file ``name`` in ``parent``,
    read in 1 MiB chunks (memory stays bounded whatever its size); :class:`NotFoundError` when
    it is missing. ``max_bytes`` and ``limit`` are as for :func:`read_optional_file`."""
    for _ in range(_REOPEN_ATTEMPTS):
        hasher = hashlib.sha256()
        outcome = _read_checked(parent, name, display, max_bytes, limit, hasher.update)
        if outcome is None:
            raise NotFoundError(display)
        if outcome is not _REPLACED:
            return hasher.hexdigest()
    raise InvalidPathError(f"{display} changed while it was being opened")


def read_file(
    parent: DirHandle,
    name: str,
    *,
    display: str,
    max_bytes: int | None = None,
    limit: str = "max_bytes",
) -> bytes:
    """Like :func:`read_optional_file`, but a missing file is :class:`NotFoundError`."""
    data = read_optional_file(parent, name, display=display, max_bytes=max_bytes, limit=limit)
    if data is None:
        raise NotFoundError(display)
    return data


def sorted_entries(directory: DirHandle) -> list[tuple[str, os.stat_result]]:
    """The entries of ``directory`` with their ``lstat`` results, sorted by name.

    Entries that vanish between listing and ``lstat`` are left out.
    """
    with os_errors(directory.label or "."):
        names = sorted(os.listdir(directory.fd))
    entries: list[tuple[str, os.stat_result]] = []
    for name in names:
        info = lstat_entry(directory, name, display=child_label(directory.label, name))
        if info is not None:
            entries.append((name, info))
    return entries
