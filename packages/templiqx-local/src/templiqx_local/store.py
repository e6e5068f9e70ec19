"""``FilesystemPackageStore``: packages as folders under one root.

Layout::

    <root>/<package>/templiqx.yaml            the manifest
    <root>/<package>/templiqx.lock            optional dependency lock
    <root>/<package>/contracts/<id>.yaml      contract sources
    <root>/<package>/...                      components, evals, templates, translations, ...
    <root>/.templiqx-package-locks/<package>.lock   advisory lock files (kept forever)
    <root>/.templiqx-package-locks/.gitignore       ``*``: the lock folder is never versioned

The root must exist: the store never creates it (unless asked to), and a read never writes
anything. Every path is reached by a symlink-refusing walk from the root
(:mod:`templiqx_local.confined`); every mutation holds the package's exclusive ``flock``
(created by the first write, waited for at most ``lock_timeout`` seconds) and replaces files
atomically (:mod:`templiqx_local.atomic`). Reads take no lock: each file is replaced
atomically, so a reader sees either the old or the new bytes.

Messages name files relative to the root (``welcome/contracts/greeting.yaml``), never by host
path. Every read is bounded, whatever the file's name: YAML documents — manifests, locks,
contract sources and any ``*.yaml``/``*.yml`` artifact — larger than
:data:`~templiqx_core.limits.MAX_DOCUMENT_BYTES` are refused before they are read (the parser
would refuse them anyway, and reading them first would cost their size in memory), and so is
any other artifact larger than :data:`MAX_ARTIFACT_BYTES` (issue #29: a 1 GiB
``partials/big.txt`` was read whole by an include, 3 GiB ended in ``MemoryError``). The package
identity hashes each listed file in 1 MiB chunks, within the same limits.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import msgspec

from templiqx_application.packages import normalized_manifest
from templiqx_contracts import (
    PackageIdentity,
    PackageLock,
    PackageManifest,
    PackageSignature,
    fingerprint,
    fingerprint_bytes,
    quote_input,
)
from templiqx_core.limits import MAX_DOCUMENT_BYTES
from templiqx_local.atomic import TEMP_PREFIX, commit, discard, is_temp_name, prepare, write_atomic
from templiqx_local.confined import (
    DirHandle,
    child_label,
    digest_file,
    lstat_entry,
    open_child_dir,
    open_dirs,
    open_root,
    os_errors,
    port_error,
    read_file,
    read_optional_file,
    sorted_entries,
)
from templiqx_local.identity import (
    LOCK_FILE,
    MANIFEST_FILE,
    inventory_paths,
    tracked_paths,
)
from templiqx_local.locking import DEFAULT_LOCK_TIMEOUT, acquire_lock
from templiqx_local.manifest_yaml import dump_manifest, load_lock, load_manifest
from templiqx_local.paths import (
    check_package_name,
    check_relative_path,
    check_segment,
    is_reserved_name,
    is_segment,
)
from templiqx_ports import (
    ConflictError,
    ContractGuard,
    InvalidDataError,
    InvalidPathError,
    NotFoundError,
    PackageStore,
    PortError,
)

__all__ = [
    "CONTRACTS_DIR",
    "PACKAGE_LOCKS_DIR",
    "PACKAGE_SUBDIRS",
    "FilesystemPackageStore",
    "canonical_root",
]

PACKAGE_LOCKS_DIR = ".templiqx-package-locks"
CONTRACTS_DIR = "contracts"
PACKAGE_SUBDIRS = ("contracts", "components", "evals", "migrations", "templates", "translations")


def _file_in_the_way(path: Path) -> Path | None:
    """The first of ``path`` and its parents (outermost first) that exists but is no folder."""
    for candidate in (*reversed(path.parents), path):
        if candidate.exists() and not candidate.is_dir():
            return candidate
    return None


def canonical_root(
    root: str | os.PathLike[str], what: str = "root", *, create: bool = True
) -> Path:
    """The canonical absolute path of the folder ``root``, created when missing if ``create``.

    ``what`` names the folder in messages (``packages root``, ``workspace root``). A missing
    folder that is not to be created, a regular file at ``root`` and a file where one of its
    parent folders should be are each ``InvalidPathError`` saying so (not the operating
    system's "File exists").
    """
    path = Path(root)
    shown = quote_input(str(path))
    fix = "name a folder (created when missing)" if create else "name an existing folder"
    try:
        if create:
            path.mkdir(parents=True, exist_ok=True)
        canonical = path.resolve(strict=True)
    except (FileExistsError, NotADirectoryError) as exc:
        blocker = _file_in_the_way(path)
        if blocker is None or blocker == path:
            problem = f"{what} {shown} is a file, not a directory"
        else:
            verb = "cannot be created" if create else "does not exist"
            problem = f"{what} {shown} {verb}: {quote_input(str(blocker))} is a file"
        raise InvalidPathError(f"{problem}; {fix}") from exc
    except FileNotFoundError as exc:
        if create:
            raise port_error(exc, str(path)) from exc
        raise InvalidPathError(
            f"{what} {shown} does not exist",
            help=f"Name the existing folder that is the {what}, or create it first: "
            "it is never created for you.",
        ) from exc
    except OSError as exc:
        raise port_error(exc, str(path)) from exc
    except (ValueError, RuntimeError) as exc:  # NUL in the path, symlink loops
        raise InvalidPathError(f"{what} {shown} is not usable: {exc}") from exc
    if not canonical.is_dir():
        raise InvalidPathError(f"{what} {shown} is a file, not a directory; {fix}")
    return canonical


_DOCUMENT_SUFFIXES = (".yaml", ".yml")
_DOCUMENT_LIMIT = "MAX_DOCUMENT_BYTES"

MAX_ARTIFACT_BYTES = 16 * 1024 * 1024
"""The largest package file other than a YAML document that is read (16 MiB): partials and
templates of any extension, the files a package identity hashes."""


def _read_limit(name: str) -> tuple[int, str]:
    """The read limit of a file and the constant that sets it."""
    is_document = name.endswith(_DOCUMENT_SUFFIXES) or name == LOCK_FILE
    if is_document:
        return MAX_DOCUMENT_BYTES, _DOCUMENT_LIMIT
    return MAX_ARTIFACT_BYTES, "MAX_ARTIFACT_BYTES"


def _read_document(parent: DirHandle, name: str, display: str) -> bytes:
    return read_file(
        parent, name, display=display, max_bytes=MAX_DOCUMENT_BYTES, limit=_DOCUMENT_LIMIT
    )


def _read_optional_document(parent: DirHandle, name: str, display: str) -> bytes | None:
    return read_optional_file(
        parent, name, display=display, max_bytes=MAX_DOCUMENT_BYTES, limit=_DOCUMENT_LIMIT
    )


def _utf8(data: bytes, label: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidDataError(f"{label}: contract source is not valid UTF-8 ({exc})") from exc


def _missing_package(package: str) -> NotFoundError:
    """``not found: <package>``, with a fix that says where packages are looked for.

    The root itself is not named: messages never carry host paths, and each surface knows
    how its user chose the root (the CLI names its ``--root`` on its own).
    """
    return NotFoundError(
        package,
        help=(
            f"There is no package folder {package!r} under the packages root. Check the name "
            "(discover_packages lists the packages there), or use the packages root that "
            "holds it: the CLI's --root DIR, templiqx-mcp's --root DIR or "
            "TEMPLIQX_PACKAGES_ROOT, compose(root) in Python."
        ),
    )


def _with_item(listed: list[str], item: str) -> list[str]:
    """``listed`` with ``item`` added: in sort order when the list is sorted, else last."""
    if listed == sorted(listed):
        return sorted([*listed, item])
    return [*listed, item]


def _manifest_bytes(stored: tuple[PackageManifest, bytes], updated: PackageManifest) -> bytes:
    """The new manifest file: the stored text with only the changed entries edited, or, when
    that text cannot be edited in place, the whole manifest written anew."""
    before, data = stored
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    # Imported by the writes that edit a manifest, not by every command that reads one.
    from templiqx_local.manifest_edit import edit_manifest

    edited = None if text is None else edit_manifest(text, before, updated)
    return (edited if edited is not None else dump_manifest(updated)).encode("utf-8")


def _conflict(expected: str, actual: str) -> ConflictError:
    return ConflictError(f"expected {expected}, found {actual}")


class FilesystemPackageStore(PackageStore):
    """The package store over an existing folder of packages.

    A missing ``root`` is ``InvalidPathError`` (``TQX_PATH_INVALID``) unless ``create`` is
    set. ``lock_timeout`` is how many seconds a write waits for another writer of the same
    package before it gives up with ``TQX_BUSY``.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        create: bool = False,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        self._root = canonical_root(root, "packages root", create=create)
        self._lock_timeout = lock_timeout

    @property
    def root(self) -> Path:
        """The canonical packages root."""
        return self._root

    def __repr__(self) -> str:
        return f"FilesystemPackageStore({str(self._root)!r})"

    # ---------------------------------------------------------------- internal helpers

    def _open_root(self) -> DirHandle:
        return open_root(self._root)

    def _package_dir(self, root: DirHandle, package: str) -> DirHandle:
        check_package_name(package)
        if lstat_entry(root, package, display=package) is None:
            raise _missing_package(package)
        try:
            return open_child_dir(root, package, display=f"package directory {package}")
        except NotFoundError:
            raise _missing_package(package) from None

    def _read_manifest_bytes(self, pkg: DirHandle) -> bytes:
        return _read_document(pkg, MANIFEST_FILE, child_label(pkg.label, MANIFEST_FILE))

    def _read_manifest(self, pkg: DirHandle) -> PackageManifest:
        label = child_label(pkg.label, MANIFEST_FILE)
        return load_manifest(self._read_manifest_bytes(pkg), label)

    def _read_artifact(self, pkg: DirHandle, path: str) -> bytes:
        parts = check_relative_path(path, "artifact path")
        max_bytes, limit = _read_limit(parts[-1])
        with open_dirs(pkg, parts[:-1], display=path) as directory:
            return read_file(directory, parts[-1], display=path, max_bytes=max_bytes, limit=limit)

    def _digest_artifact(self, pkg: DirHandle, path: str) -> str:
        parts = check_relative_path(path, "artifact path")
        max_bytes, limit = _read_limit(parts[-1])
        with open_dirs(pkg, parts[:-1], display=path) as directory:
            return digest_file(directory, parts[-1], display=path, max_bytes=max_bytes, limit=limit)

    @contextmanager
    def _mutation(self, package: str) -> Iterator[tuple[DirHandle, DirHandle]]:
        """Hold the package's exclusive lock; yields (root, package directory)."""
        check_package_name(package)
        with self._open_root() as root:
            if lstat_entry(root, package, display=package) is None:
                raise _missing_package(package)
            with (
                acquire_lock(
                    root, PACKAGE_LOCKS_DIR, package, exclusive=True, timeout=self._lock_timeout
                ),
                self._package_dir(root, package) as pkg,
            ):
                yield root, pkg

    def _stored_manifest(self, pkg: DirHandle) -> tuple[PackageManifest, bytes]:
        """The manifest and the bytes it was read from."""
        data = self._read_manifest_bytes(pkg)
        return load_manifest(data, child_label(pkg.label, MANIFEST_FILE)), data

    def _manifest_cas(self, pkg: DirHandle, expected: str) -> tuple[PackageManifest, bytes]:
        manifest, data = self._stored_manifest(pkg)
        actual = fingerprint(manifest)
        if actual != expected:
            raise _conflict(expected, actual)
        return manifest, data

    def _write_manifest(
        self, pkg: DirHandle, stored: tuple[PackageManifest, bytes], updated: PackageManifest
    ) -> None:
        write_atomic(pkg, MANIFEST_FILE, _manifest_bytes(stored, updated))

    def _entries(self, root: DirHandle) -> list[tuple[str, PackageManifest]]:
        """(directory name, manifest) for every package under the root, in name order."""
        found: list[tuple[str, PackageManifest]] = []
        for name, info in sorted_entries(root):
            if not stat.S_ISDIR(info.st_mode) or is_reserved_name(name):
                continue  # plain files, symlinks (to directories or not), store bookkeeping
            try:
                directory = open_child_dir(root, name, display=name)
            except NotFoundError:
                continue  # removed while we were listing
            with directory:
                display = child_label(directory.label, MANIFEST_FILE)
                if lstat_entry(directory, MANIFEST_FILE, display=display) is None:
                    continue  # not a package (e.g. .git)
                if not is_segment(name):
                    raise InvalidPathError(
                        f"folder {quote_input(name)} under the root holds a {MANIFEST_FILE} but is "
                        "not a valid package name (ASCII letters, digits, '.', '_', '-'); "
                        "rename the folder"
                    )
                found.append((name, self._read_manifest(directory)))
        return found

    def _identity(self, pkg: DirHandle, manifest: PackageManifest) -> PackageIdentity:
        for contract in manifest.contracts:
            check_segment(contract, "contract id")
        for locale in manifest.translations:
            check_segment(locale, "translation locale")
        artifacts = {path: self._digest_artifact(pkg, path) for path in inventory_paths(manifest)}
        lock = _read_optional_document(pkg, LOCK_FILE, LOCK_FILE)
        if lock is not None:
            artifacts[LOCK_FILE] = fingerprint_bytes(lock)
        return PackageIdentity(manifest=normalized_manifest(manifest), artifacts=artifacts)

    # ---------------------------------------------------------------- reads

    def discover(self) -> list[PackageManifest]:
        """Every package under the root, sorted by (package, version).

        Folders without a ``templiqx.yaml`` (``.git``, the default workspace, ...), plain files
        and symlinks are skipped. A folder with a manifest but an invalid name, a symlinked
        manifest and a malformed manifest each abort discovery with their error.
        """
        with self._open_root() as root:
            manifests = [manifest for _, manifest in self._entries(root)]
        return sorted(manifests, key=lambda m: (m.package, m.version))

    def manifest(self, package: str) -> PackageManifest:
        with self._open_root() as root, self._package_dir(root, package) as pkg:
            return self._read_manifest(pkg)

    def contract_source(self, package: str, contract: str) -> str:
        check_segment(contract, "contract id")
        with self._open_root() as root, self._package_dir(root, package) as pkg:
            label = child_label(pkg.label, f"{CONTRACTS_DIR}/{contract}.yaml")
            with open_child_dir(pkg, CONTRACTS_DIR, display=label) as contracts:
                data = _read_document(contracts, f"{contract}.yaml", label)
            return _utf8(data, label)

    def artifact_bytes(self, package: str, path: str) -> bytes:
        check_package_name(package)
        check_relative_path(path, "artifact path")
        with self._open_root() as root, self._package_dir(root, package) as pkg:
            return self._read_artifact(pkg, path)

    def package_identity(self, package: str) -> PackageIdentity:
        with self._open_root() as root, self._package_dir(root, package) as pkg:
            return self._identity(pkg, self._read_manifest(pkg))

    # ---------------------------------------------------------------- package lifecycle

    def create_package(self, name: str, version: str) -> PackageManifest:
        check_package_name(name)
        manifest_bytes = dump_manifest(PackageManifest.new(name, version)).encode("utf-8")
        with (
            self._open_root() as root,
            acquire_lock(root, PACKAGE_LOCKS_DIR, name, exclusive=True, timeout=self._lock_timeout),
        ):
            info = lstat_entry(root, name, display=name)
            if info is not None:
                if stat.S_ISLNK(info.st_mode):
                    raise InvalidPathError(f"{name}: a symbolic link is in the package's place")
                raise ConflictError(f"package '{name}' already exists")
            staging = f"{TEMP_PREFIX}{os.getpid()}.{os.urandom(8).hex()}"
            try:
                with open_child_dir(root, staging, display=name, create=True) as building:
                    for sub in PACKAGE_SUBDIRS:
                        open_child_dir(building, sub, display=sub, create=True).close()
                    write_atomic(building, MANIFEST_FILE, manifest_bytes)
                with os_errors(name):
                    os.rename(staging, name, src_dir_fd=root.fd, dst_dir_fd=root.fd)
            except PortError as error:
                with suppress(OSError):
                    import shutil  # only to clean up a failed create (bz2, lzma behind it)

                    shutil.rmtree(staging, dir_fd=root.fd)
                if lstat_entry(root, name, display=name) is not None:
                    raise ConflictError(f"package '{name}' already exists") from error
                raise
            root.fsync()
            with self._package_dir(root, name) as pkg:
                return self._read_manifest(pkg)

    def update_package(
        self,
        package: str,
        *,
        version: str | None,
        description: str | None,
        expected_fingerprint: str,
    ) -> PackageManifest:
        with self._mutation(package) as (_, pkg):
            stored = self._manifest_cas(pkg, expected_fingerprint)
            manifest = stored[0]
            updated = msgspec.structs.replace(
                manifest,
                version=manifest.version if version is None else version,
                description=manifest.description if description is None else description,
                signatures=[],
            )
            self._write_manifest(pkg, stored, updated)
            return updated

    def delete_package(self, package: str, expected_fingerprint: str) -> str:
        """Remove a package: CAS on the manifest, then no dependents, then no untracked files.

        Untracked content is reported deterministically: the first offending path in sorted
        (code point) order. Stray temporary files of interrupted writes are not content.
        """
        with self._mutation(package) as (root, pkg):
            manifest, _ = self._manifest_cas(pkg, expected_fingerprint)
            self._refuse_dependents(root, package)
            untracked = self._untracked_files(pkg, tracked_paths(manifest))
            if untracked:
                raise ConflictError(f"untracked content would be lost: {untracked[0]}")
            trash = f"{TEMP_PREFIX}{os.getpid()}.{os.urandom(8).hex()}"
            with os_errors(package):
                os.rename(package, trash, src_dir_fd=root.fd, dst_dir_fd=root.fd)
            root.fsync()
            # The package is gone once renamed; a failure removing the hidden, reserved-name
            # remains cannot bring it back and does not affect any later operation.
            with suppress(OSError):
                import shutil  # only when a package is deleted (bz2, lzma behind it)

                shutil.rmtree(trash, dir_fd=root.fd)
            return fingerprint(manifest)

    def _refuse_dependents(self, root: DirHandle, package: str) -> None:
        for name, other in self._entries(root):
            if name == package:
                continue
            if package in other.dependencies or package in self._lock_pins(root, name):
                raise ConflictError(f"package '{other.package}' depends on '{package}'")

    def _lock_pins(self, root: DirHandle, name: str) -> frozenset[str]:
        """The package names pinned by a package's lock file; an unreadable lock pins nothing."""
        try:
            with open_child_dir(root, name, display=name) as directory:
                label = child_label(directory.label, LOCK_FILE)
                data = _read_optional_document(directory, LOCK_FILE, label)
                if data is None:
                    return frozenset()
                lock: PackageLock = load_lock(data, label)
        except PortError:
            return frozenset()
        return frozenset(lock.dependencies)

    def _untracked_files(self, pkg: DirHandle, tracked: frozenset[str]) -> list[str]:
        files: list[str] = []
        self._collect_files(pkg, "", files)
        return sorted(
            path
            for path in files
            if path not in tracked and not is_temp_name(path.rsplit("/", 1)[-1])
        )

    def _collect_files(self, directory: DirHandle, prefix: str, out: list[str]) -> None:
        for name, info in sorted_entries(directory):
            relative = f"{prefix}{name}"
            if stat.S_ISLNK(info.st_mode):
                raise InvalidPathError(
                    f"{relative} is a symbolic link; remove it before deleting the package"
                )
            if stat.S_ISDIR(info.st_mode):
                with open_child_dir(directory, name, display=relative) as sub:
                    self._collect_files(sub, relative + "/", out)
            else:
                out.append(relative)

    def attach_package_signature(
        self,
        package: str,
        signature: PackageSignature,
        *,
        expected_fingerprint: str,
        identity_fingerprint: str,
    ) -> PackageManifest:
        with self._mutation(package) as (_, pkg):
            stored = self._manifest_cas(pkg, expected_fingerprint)
            manifest = stored[0]
            actual = fingerprint(self._identity(pkg, manifest))
            if actual != identity_fingerprint:
                raise ConflictError(
                    f"expected package identity {identity_fingerprint}, found {actual}"
                )
            key = (signature.key_id, signature.algorithm)
            signatures = [s for s in manifest.signatures if (s.key_id, s.algorithm) != key]
            signatures.append(signature)
            signatures.sort(key=lambda s: (s.key_id, s.algorithm))
            updated = msgspec.structs.replace(manifest, signatures=signatures)
            self._write_manifest(pkg, stored, updated)
            return updated

    # ---------------------------------------------------------------- contracts

    def put_contract(
        self, package: str, contract: str, source: str, *, guard: ContractGuard
    ) -> None:
        """Write ``contracts/<contract>.yaml`` and list it in the inventory, if ``guard`` agrees.

        Under the package lock: read the current source (``None`` if absent), call
        ``guard(current)`` (it raises to refuse), then replace the contract atomically, add the
        id to ``contracts`` if it is not listed (where the sort order puts it when the list is
        sorted, else last) and clear the signatures; the manifest's other lines are kept
        (:func:`~templiqx_local.manifest_edit.edit_manifest`). The contract is committed before
        the manifest; if the manifest cannot be committed, the previous contract bytes are put
        back (or the new file removed).
        """
        check_package_name(package)
        check_segment(contract, "contract id")
        try:
            data = source.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidDataError(f"contract source is not valid Unicode text: {exc}") from exc
        filename = f"{contract}.yaml"
        with self._mutation(package) as (_, pkg):
            label = child_label(pkg.label, f"{CONTRACTS_DIR}/{filename}")
            with open_child_dir(pkg, CONTRACTS_DIR, display=label, create=True) as contracts:
                previous = _read_optional_document(contracts, filename, label)
                guard(None if previous is None else _utf8(previous, label))
                stored = self._stored_manifest(pkg)
                manifest = stored[0]
                updated = manifest
                if contract not in manifest.contracts:
                    listed = _with_item(manifest.contracts, contract)
                    updated = msgspec.structs.replace(updated, contracts=listed)
                if updated.signatures:
                    updated = msgspec.structs.replace(updated, signatures=[])
                new_manifest = None
                if updated is not manifest:
                    new_manifest = _manifest_bytes(stored, updated)
                contract_temp = prepare(contracts, filename, data)
                manifest_temp = None
                try:
                    if new_manifest is not None:
                        manifest_temp = prepare(pkg, MANIFEST_FILE, new_manifest)
                    commit(contracts, contract_temp, filename)
                except BaseException:
                    discard(contracts, contract_temp)
                    if manifest_temp is not None:
                        discard(pkg, manifest_temp)
                    raise
                if manifest_temp is not None:
                    try:
                        commit(pkg, manifest_temp, MANIFEST_FILE)
                    except BaseException:
                        self._restore_contract(contracts, filename, previous)
                        raise

    @staticmethod
    def _restore_contract(contracts: DirHandle, filename: str, previous: bytes | None) -> None:
        with suppress(PortError, OSError):
            if previous is None:
                os.unlink(filename, dir_fd=contracts.fd)
                contracts.fsync()
            else:
                write_atomic(contracts, filename, previous)

    def delete_contract(self, package: str, contract: str, *, guard: ContractGuard) -> None:
        """Remove ``contracts/<contract>.yaml`` and its inventory entry, if ``guard`` agrees.

        A missing contract is ``NotFoundError`` (the guard is not called). When the id is
        listed, the manifest (id removed, signatures cleared) is committed first and the file
        removed second, so an interruption leaves at worst an unlisted file, never a listed
        contract that is missing. An unlisted contract file is removed without touching the
        manifest: the package identity does not change, so its signatures stay valid.
        """
        check_package_name(package)
        check_segment(contract, "contract id")
        filename = f"{contract}.yaml"
        with self._mutation(package) as (_, pkg):
            label = child_label(pkg.label, f"{CONTRACTS_DIR}/{filename}")
            with open_child_dir(pkg, CONTRACTS_DIR, display=label) as contracts:
                current = _read_document(contracts, filename, label)
                guard(_utf8(current, label))
                stored = self._stored_manifest(pkg)
                manifest, previous_manifest = stored
                listed = contract in manifest.contracts
                if listed:
                    updated = msgspec.structs.replace(
                        manifest,
                        contracts=[c for c in manifest.contracts if c != contract],
                        signatures=[],
                    )
                    self._write_manifest(pkg, stored, updated)
                try:
                    with os_errors(label):
                        os.unlink(filename, dir_fd=contracts.fd)
                except BaseException:
                    if listed:
                        with suppress(PortError):
                            write_atomic(pkg, MANIFEST_FILE, previous_manifest)
                    raise
                contracts.fsync()
