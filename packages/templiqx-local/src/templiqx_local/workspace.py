"""``FilesystemArtifactWorkspace``: generated artifacts, one folder per package.

Layout::

    <workspace>/<package>/...                          artifacts (rendered documents, ...)
    <workspace>/.templiqx-workspace-locks/<package>.lock   advisory lock files (kept forever)

Writers hold an :class:`OutputLease` (the package's *exclusive* lock) while they produce a file;
``delete_artifact`` takes the exclusive lock too; ``read_artifact`` and ``list_artifacts`` take
the *shared* lock, so they wait for a writer to finish and never see a half-written file.

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
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from types import TracebackType

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
from templiqx_local.locking import FileLock, acquire_lock
from templiqx_local.paths import (
    MAX_COMPONENT_BYTES,
    MAX_PATH_BYTES,
    check_package_name,
    check_relative_path,
    is_relative_path,
)
from templiqx_local.store import canonical_root
from templiqx_ports import (
    ArtifactWorkspace,
    ConflictError,
    InvalidPathError,
    OutputLease,
)

__all__ = [
    "DEFAULT_WORKSPACE_DIR",
    "WORKSPACE_LOCKS_DIR",
    "FilesystemArtifactWorkspace",
    "FilesystemOutputLease",
]

WORKSPACE_LOCKS_DIR = ".templiqx-workspace-locks"
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
    """Artifacts under ``root`` (created if missing), with confined per-call overrides.

    ``override_roots`` lists the folders a per-call ``workspace`` may lie in (each is compared
    both as given and canonicalized); by default only ``root`` itself.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        override_roots: Iterable[str | os.PathLike[str]] | None = None,
    ) -> None:
        self._root = canonical_root(root, "workspace root")
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
        """The canonical default workspace root."""
        return self._root

    @property
    def override_roots(self) -> list[Path]:
        """The canonical folders per-call workspace overrides must lie in."""
        return [Path("/", *canonical) for _, canonical in self._override_roots]

    def __repr__(self) -> str:
        return f"FilesystemArtifactWorkspace({str(self._root)!r})"

    # ---------------------------------------------------------------- workspace resolution

    def _open_workspace(self, workspace: str | None) -> DirHandle:
        if workspace is None:
            return open_root(self._root)
        parts = _override_parts(workspace)
        for given, canonical in self._override_roots:
            for base in (given, canonical):
                if parts[: len(base)] == base:
                    anchor = canonical_root(Path("/", *canonical))
                    with open_root(anchor) as start:
                        return open_dirs(start, parts[len(base) :], display=workspace, create=True)
        allowed = ", ".join(str(path) for path in self.override_roots)
        raise InvalidPathError(
            f"workspace {quote_input(workspace)} is outside the allowed workspace roots "
            f"({allowed}); choose a folder inside one of them"
        )

    def resolve_workspace(self, workspace: str | None = None) -> Path:
        """The canonical folder a request's ``workspace`` designates (created if missing)."""
        with self._open_workspace(workspace) as handle:
            return handle.path

    def package_root(self, package: str, *, workspace: str | None = None) -> Path:
        """``<workspace>/<package>``, without creating it."""
        check_package_name(package)
        return self.resolve_workspace(workspace) / package

    def _lock(self, ws: DirHandle, package: str, *, exclusive: bool) -> FileLock:
        return acquire_lock(ws, WORKSPACE_LOCKS_DIR, package, exclusive=exclusive)

    # ---------------------------------------------------------------- operations

    def list_artifacts(
        self, package: str, *, workspace: str | None = None, prefix: str | None = None
    ) -> list[WorkspaceArtifact]:
        """Regular files of the package workspace, sorted by portable path.

        ``prefix`` (one trailing ``/`` ignored; empty means everything) matches a path equal to
        it or below it. Symlinks, multiply-linked files, special files and names that are not
        valid portable paths are skipped. A package with no workspace folder has no artifacts; a
        package workspace that is a symlink or not a folder is ``InvalidPathError``.
        """
        check_package_name(package)
        wanted: str | None = None
        if prefix is not None:
            trimmed = prefix[:-1] if prefix.endswith("/") else prefix
            if trimmed:
                check_relative_path(trimmed, "prefix")
                wanted = trimmed
        found: list[WorkspaceArtifact] = []
        with self._open_workspace(workspace) as ws, self._lock(ws, package, exclusive=False):
            if lstat_entry(ws, package, display=package) is None:
                return []
            with open_child_dir(ws, package, display=f"package workspace {package}") as directory:
                self._walk(directory, "", wanted, found)
        return sorted(found, key=lambda artifact: artifact.path)

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
        with self._open_workspace(workspace) as ws, self._lock(ws, package, exclusive=False):
            return self._read(ws, package, parts, path)

    def _read(self, ws: DirHandle, package: str, parts: tuple[str, ...], path: str) -> bytes:
        with (
            open_child_dir(ws, package, display=path) as pkg,
            open_dirs(pkg, parts[:-1], display=path) as directory,
        ):
            return read_file(directory, parts[-1], display=path)

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
        with self._open_workspace(workspace) as ws, self._lock(ws, package, exclusive=True):
            with (
                open_child_dir(ws, package, display=path) as pkg,
                open_dirs(pkg, parts[:-1], display=path) as directory,
            ):
                data = read_file(directory, parts[-1], display=path)
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

        Parent folders are created (never through a symlink); an existing target must be a
        regular, singly-linked file. The lease holds the lock until it is released.
        """
        check_package_name(package)
        parts = check_relative_path(path, "output path")
        with self._open_workspace(workspace) as ws:
            lock = self._lock(ws, package, exclusive=True)
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


def _related(directory: str, wanted: str) -> bool:
    """Whether files below ``directory`` may match the prefix ``wanted``."""
    return (
        directory == wanted
        or directory.startswith(wanted + "/")
        or wanted.startswith(directory + "/")
    )
