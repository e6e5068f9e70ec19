"""``FilesystemArtifactWorkspace``: generated artifacts, one folder per package.

Layout::

    <workspace>/<package>/...                          artifacts (rendered documents, ...)
    <workspace>/.templiqx-workspace-locks/<package>.lock   advisory lock files (kept forever)

Writers hold an :class:`OutputLease` (the package's *exclusive* lock) while they produce a file;
``delete_artifact`` takes the exclusive lock too; ``read_artifact`` and ``list_artifacts`` take
the *shared* lock when a writer has ever run (its lock file exists), so they wait for a writer to
finish and never see a half-written file — and write nothing themselves: the workspace and its
lock folder are created by the first write, never by a read.

**Per-call workspace overrides are confined.** A request may name another workspace folder
(an absolute path). Unlike the reference, which accepted and created any absolute folder on the
host, an override must lie inside one of the *override roots* the host configured (by default
only the workspace root itself); below that root it is walked component by component, created
where missing, and may not pass through a symlink. A host that wants the reference's behaviour
can pass ``override_roots=["/"]``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import TypeVar

from templiqx_contracts import WorkspaceArtifact, fingerprint_bytes, quote_input
from templiqx_local.confined import (
    DirHandle,
    check_regular,
    lstat_entry,
    open_child_dir,
    open_dirs,
    open_root,
    os_errors,
    read_file,
    sorted_entries,
)
from templiqx_local.locking import (
    DEFAULT_LOCK_TIMEOUT,
    FileLock,
    acquire_existing_lock,
    acquire_lock,
)
from templiqx_local.paths import (
    MAX_COMPONENT_BYTES,
    MAX_PATH_BYTES,
    check_package_name,
    check_relative_path,
    is_relative_path,
)
from templiqx_local.store import MAX_ARTIFACT_BYTES, _file_in_the_way, canonical_root
from templiqx_ports import (
    ArtifactWorkspace,
    ConflictError,
    InvalidPathError,
    NotFoundError,
    OutputLease,
    PortError,
)

__all__ = [
    "DEFAULT_WORKSPACE_DIR",
    "WORKSPACE_LOCKS_DIR",
    "FilesystemArtifactWorkspace",
    "FilesystemOutputLease",
]

WORKSPACE_LOCKS_DIR = ".templiqx-workspace-locks"
_T = TypeVar("_T")

DEFAULT_WORKSPACE_DIR = ".templiqx-workspace"
"""The default workspace folder inside a packages root (used by the default composition)."""


class FilesystemOutputLease(OutputLease):
    """An exclusive claim on one output path; the workspace lock is held until release."""

    def __init__(self, lock: FileLock, path: Path) -> None:
        self._lock = lock
        self._path = path

    @property
    def path(self) -> Path:
        return self._path

    @property
    def held(self) -> bool:
        """Whether the lease (and so the package's workspace lock) is still held."""
        return self._lock.held

    def release(self) -> None:
        """Release the lease (idempotent)."""
        self._lock.release()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "held" if self.held else "released"
        return f"FilesystemOutputLease({str(self._path)!r}, {state})"


def _override_parts(workspace: str) -> tuple[str, ...]:
    """The normalized components of an override (``/`` not included)."""
    if not isinstance(workspace, str) or workspace == "":
        raise InvalidPathError("workspace must be a non-empty absolute path")
    if "\x00" in workspace:
        raise InvalidPathError(f"workspace {quote_input(workspace)} must not contain NUL")
    if not workspace.startswith("/"):
        raise InvalidPathError(f"workspace {quote_input(workspace)} must be an absolute path")
    try:
        too_long = len(workspace.encode("utf-8")) > MAX_PATH_BYTES
    except UnicodeEncodeError:
        raise InvalidPathError(f"workspace {quote_input(workspace)} is not valid Unicode") from None
    if too_long:
        raise InvalidPathError(
            f"workspace {quote_input(workspace)} is longer than {MAX_PATH_BYTES} bytes"
        )
    parts = tuple(part for part in workspace.split("/") if part)
    for part in parts:
        if part in (".", ".."):
            raise InvalidPathError(
                f"workspace {quote_input(workspace)} must not contain '.' or '..' components"
            )
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            raise InvalidPathError(f"workspace {quote_input(workspace)} has an over-long component")
    return parts


class FilesystemArtifactWorkspace(ArtifactWorkspace):
    """Artifacts under ``root``, with confined per-call overrides.

    Nothing is created until something is written: ``root`` (and an override folder) comes
    into being with the first output lease, the lock folder with the first write (a lease or
    a delete), and reads and listings of a workspace that does not exist yet find nothing.
    ``override_roots`` lists the folders a per-call ``workspace`` may lie in (each is compared
    both as given and canonicalized); by default only ``root`` itself. ``lock_timeout`` bounds
    every wait for another writer of the same package (``TQX_BUSY`` after it).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        override_roots: Iterable[str | os.PathLike[str]] | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        self._root = _planned_root(root)
        self._lock_timeout = lock_timeout
        allowed: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        for entry in [self._root] if override_roots is None else override_roots:
            given = Path(entry)
            if not given.is_absolute():
                raise InvalidPathError(f"override root {quote_input(str(given))} must be absolute")
            parts = _override_parts(str(given))
            canonical = _override_parts(str(given.resolve()))
            allowed.append((parts, canonical))
        self._override_roots = allowed

    @property
    def root(self) -> Path:
        """The canonical default workspace root (which may not exist yet)."""
        return self._root

    @property
    def override_roots(self) -> list[Path]:
        """The canonical folders per-call workspace overrides must lie in."""
        return [Path("/", *canonical) for _, canonical in self._override_roots]

    def __repr__(self) -> str:
        return f"FilesystemArtifactWorkspace({str(self._root)!r})"

    # ---------------------------------------------------------------- workspace resolution

    def _open_workspace(self, workspace: str | None, *, create: bool) -> DirHandle | None:
        """The workspace folder, or ``None`` when it does not exist and ``create`` is unset."""
        try:
            if workspace is None:
                if create:
                    canonical_root(self._root, "workspace root")
                return open_root(self._root)
            parts = _override_parts(workspace)
            for given, canonical in self._override_roots:
                for base in (given, canonical):
                    if parts[: len(base)] == base:
                        anchor = Path("/", *canonical)
                        if create:
                            canonical_root(anchor, "workspace root")
                        with open_root(anchor) as start:
                            return open_dirs(
                                start, parts[len(base) :], display=workspace, create=create
                            )
        except NotFoundError:
            if create:
                raise
            return None
        allowed = ", ".join(str(path) for path in self.override_roots)
        raise InvalidPathError(
            f"workspace {quote_input(workspace)} is outside the allowed workspace roots "
            f"({allowed}); choose a folder inside one of them"
        )

    def resolve_workspace(self, workspace: str | None = None) -> Path:
        """The canonical folder a request's ``workspace`` designates (created if missing)."""
        handle = self._open_workspace(workspace, create=True)
        assert handle is not None  # created
        with handle:
            return handle.path

    def package_root(self, package: str, *, workspace: str | None = None) -> Path:
        """``<workspace>/<package>``; the workspace folder is created, the package's is not."""
        check_package_name(package)
        return self.resolve_workspace(workspace) / package

    def _lock(self, ws: DirHandle, package: str) -> FileLock:
        """The package's exclusive lock, for a write (creates the lock folder and file)."""
        return acquire_lock(
            ws, WORKSPACE_LOCKS_DIR, package, exclusive=True, timeout=self._lock_timeout
        )

    def _read(self, ws: DirHandle, package: str, read: Callable[[], _T]) -> _T:
        """``read()`` consistent with writers, without creating anything.

        Under the package's shared lock when its lock file exists. When none exists no writer
        has ever run, so ``read()`` goes ahead unlocked — and if a lock file has appeared by
        the time it finishes, a writer started meanwhile and ``read()`` runs again under it.
        """
        for attempt in range(2):
            lock = acquire_existing_lock(
                ws, WORKSPACE_LOCKS_DIR, package, timeout=self._lock_timeout
            )
            if lock is not None:
                with lock:
                    return read()
            if attempt:
                break
            try:
                result = read()
            except PortError:
                if self._no_writer_yet(ws, package):
                    raise
                continue
            if self._no_writer_yet(ws, package):
                return result
        return read()  # the lock file vanished: someone removed it by hand

    @staticmethod
    def _no_writer_yet(ws: DirHandle, package: str) -> bool:
        display = f"{WORKSPACE_LOCKS_DIR}/{package}.lock"
        try:
            with open_child_dir(ws, WORKSPACE_LOCKS_DIR, display=display) as locks:
                return lstat_entry(locks, f"{package}.lock", display=display) is None
        except NotFoundError:
            return True

    # ---------------------------------------------------------------- operations

    def list_artifacts(
        self, package: str, *, workspace: str | None = None, prefix: str | None = None
    ) -> list[WorkspaceArtifact]:
        """Regular files of the package workspace, sorted by portable path.

        ``prefix`` (one trailing ``/`` ignored; empty means everything) matches a path equal to
        it or below it. Symlinks, multiply-linked files, special files and names that are not
        valid portable paths are skipped. A package (or a workspace) with no folder has no
        artifacts; a package workspace that is a symlink or not a folder is
        ``InvalidPathError``.
        """
        check_package_name(package)
        wanted: str | None = None
        if prefix is not None:
            trimmed = prefix[:-1] if prefix.endswith("/") else prefix
            if trimmed:
                check_relative_path(trimmed, "prefix")
                wanted = trimmed
        ws = self._open_workspace(workspace, create=False)
        if ws is None:
            return []

        def listing() -> list[WorkspaceArtifact]:
            found: list[WorkspaceArtifact] = []
            if lstat_entry(ws, package, display=package) is None:
                return found
            with open_child_dir(ws, package, display=f"package workspace {package}") as folder:
                self._walk(folder, "", wanted, found)
            return sorted(found, key=lambda artifact: artifact.path)

        with ws:
            return self._read(ws, package, listing)

    def _walk(
        self, directory: DirHandle, prefix: str, wanted: str | None, out: list[WorkspaceArtifact]
    ) -> None:
        for name, info in sorted_entries(directory):
            relative = f"{prefix}{name}"
            if stat.S_ISLNK(info.st_mode) or not is_relative_path(relative):
                continue
            if stat.S_ISDIR(info.st_mode):
                if wanted is None or _related(relative, wanted):
                    with open_child_dir(directory, name, display=relative) as sub:
                        self._walk(sub, relative + "/", wanted, out)
            elif (
                stat.S_ISREG(info.st_mode)
                and info.st_nlink == 1
                and (wanted is None or relative == wanted or relative.startswith(wanted + "/"))
            ):
                out.append(WorkspaceArtifact(path=relative, size=info.st_size))

    def read_artifact(self, package: str, path: str, *, workspace: str | None = None) -> bytes:
        check_package_name(package)
        parts = check_relative_path(path, "artifact path")
        ws = self._open_workspace(workspace, create=False)
        if ws is None:
            raise NotFoundError(path)
        with ws:
            return self._read(ws, package, lambda: self._file(ws, package, parts, path))

    @staticmethod
    def _file(ws: DirHandle, package: str, parts: tuple[str, ...], path: str) -> bytes:
        with (
            open_child_dir(ws, package, display=path) as pkg,
            open_dirs(pkg, parts[:-1], display=path) as directory,
        ):
            return read_file(
                directory,
                parts[-1],
                display=path,
                max_bytes=MAX_ARTIFACT_BYTES,
                limit="MAX_ARTIFACT_BYTES",
            )

    def delete_artifact(
        self,
        package: str,
        path: str,
        *,
        expected_fingerprint: str,
        workspace: str | None = None,
    ) -> bytes:
        check_package_name(package)
        parts = check_relative_path(path, "artifact path")
        ws = self._open_workspace(workspace, create=False)
        if ws is None:
            raise NotFoundError(path)
        with ws, self._lock(ws, package):
            with (
                open_child_dir(ws, package, display=path) as pkg,
                open_dirs(pkg, parts[:-1], display=path) as directory,
            ):
                data = read_file(
                    directory,
                    parts[-1],
                    display=path,
                    max_bytes=MAX_ARTIFACT_BYTES,
                    limit="MAX_ARTIFACT_BYTES",
                )
                actual = fingerprint_bytes(data)
                if actual != expected_fingerprint:
                    raise ConflictError(f"expected {expected_fingerprint}, found {actual}")
                with os_errors(path):
                    os.unlink(parts[-1], dir_fd=directory.fd)
                directory.fsync()
            return data

    def lease_output_path(
        self, package: str, path: str, *, workspace: str | None = None
    ) -> FilesystemOutputLease:
        """Lock the package workspace exclusively, then prepare ``path`` for writing.

        The workspace, the package's folder and the parent folders are created (never through
        a symlink); an existing target must be a regular, singly-linked file. The lease holds
        the lock until it is released.
        """
        check_package_name(package)
        parts = check_relative_path(path, "output path")
        ws = self._open_workspace(workspace, create=True)
        assert ws is not None  # created
        with ws:
            lock = self._lock(ws, package)
            try:
                with (
                    open_child_dir(ws, package, display=path, create=True) as pkg,
                    open_dirs(pkg, parts[:-1], display=path, create=True) as directory,
                ):
                    info = lstat_entry(directory, parts[-1], display=path)
                    if info is not None:
                        check_regular(info, parts[-1], path)
                target = ws.path / package / PurePosixPath(*parts)
            except BaseException:
                lock.release()
                raise
        return FilesystemOutputLease(lock, Path(target))


def _planned_root(root: str | os.PathLike[str]) -> Path:
    """The canonical absolute path of a workspace root that may not exist yet.

    An existing one must be a folder; a file where the root or one of its parents should be is
    ``InvalidPathError`` now, not at the first write.
    """
    path = Path(root)
    blocker = _file_in_the_way(path)
    if blocker is not None:
        where = (
            "is a file"
            if blocker == path
            else f"cannot be created: {quote_input(str(blocker))} is a file"
        )
        raise InvalidPathError(
            f"workspace root {quote_input(str(path))} {where}; name a folder (created when first "
            "written)"
        )
    try:
        planned = path.resolve()
    except (OSError, ValueError, RuntimeError) as exc:  # NUL in the path, symlink loops
        raise InvalidPathError(
            f"workspace root {quote_input(str(path))} is not usable: {exc}"
        ) from exc
    return canonical_root(planned, "workspace root", create=False) if planned.exists() else planned


def _related(directory: str, wanted: str) -> bool:
    """Whether files below ``directory`` may match the prefix ``wanted``."""
    return (
        directory == wanted
        or directory.startswith(wanted + "/")
        or wanted.startswith(directory + "/")
    )
