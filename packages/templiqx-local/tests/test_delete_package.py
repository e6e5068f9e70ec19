"""delete_package: CAS, dependents, untracked content, symlinks, lock persistence (§4.5)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from templiqx_contracts import fingerprint
from templiqx_local import FilesystemPackageStore
from templiqx_ports import ConflictError, InvalidDataError, InvalidPathError, NotFoundError


def _delete(store: FilesystemPackageStore, package: str) -> str:
    return store.delete_package(package, fingerprint(store.manifest(package)))


def test_deletes_tracked_package_and_returns_manifest_fp(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p", contracts=("a", "b"))
    expected = fingerprint(store.manifest("p"))
    assert store.delete_package("p", expected) == expected
    assert not (root / "p").exists()
    assert [p.name for p in root.iterdir()] == [".templiqx-package-locks"]
    with pytest.raises(NotFoundError):
        store.manifest("p")
    store.create_package("p", "2.0.0")  # the name is free again
    assert store.manifest("p").version == "2.0.0"


def test_stale_fingerprint_conflicts(store: FilesystemPackageStore, root: Path, kit: Any) -> None:
    kit.make_package(store, "p")
    with pytest.raises(ConflictError, match=r"expected 0+, found "):
        store.delete_package("p", "0" * 64)
    assert (root / "p" / "templiqx.yaml").is_file()


def test_manifest_dependency_blocks(store: FilesystemPackageStore, root: Path, kit: Any) -> None:
    kit.make_package(store, "dep")
    kit.make_package(store, "app")
    text = (root / "app" / "templiqx.yaml").read_text()
    (root / "app" / "templiqx.yaml").write_text(text + 'dependencies:\n  dep: "sha256:aaa"\n')
    with pytest.raises(ConflictError) as raised:
        _delete(store, "dep")
    assert str(raised.value) == "conflict: package 'app' depends on 'dep'"
    assert (root / "dep").is_dir()
    _delete(store, "app")
    _delete(store, "dep")


def test_lock_pin_blocks(store: FilesystemPackageStore, root: Path, kit: Any) -> None:
    kit.make_package(store, "dep")
    kit.make_package(store, "app")
    kit.write(
        root / "app" / "templiqx.lock",
        "dependencies:\n  dep: {path: ../dep, fingerprint: 'sha256:aaa'}\n",
    )
    with pytest.raises(ConflictError, match="package 'app' depends on 'dep'"):
        _delete(store, "dep")


def test_unparseable_lock_of_another_package_pins_nothing(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "dep")
    kit.make_package(store, "app")
    kit.write(root / "app" / "templiqx.lock", "dependencies: [dep\n")
    _delete(store, "dep")


def test_malformed_other_manifest_blocks_deletion(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p")
    kit.write(root / "broken" / "templiqx.yaml", "package: [")
    with pytest.raises(InvalidDataError) as raised:
        _delete(store, "p")
    assert raised.value.code == "TQX_DATA_INVALID"
    assert (root / "p").is_dir()


def test_untracked_content_blocks_with_first_sorted_path(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    # Depth-first listing order would report "a/b.txt" first; code-point order puts "a-c.txt"
    # ('-' < '/') first. The report is deterministic whatever the directory order.
    kit.make_package(
        store,
        "p",
        contracts=("c",),
        files={"a/b.txt": "x", "a-c.txt": "y", "zzz.txt": "z", "contracts/stray.yaml": "s"},
    )
    with pytest.raises(ConflictError) as raised:
        _delete(store, "p")
    assert str(raised.value) == "conflict: untracked content would be lost: a-c.txt"
    for relative in ("a-c.txt", "a/b.txt", "contracts/stray.yaml"):
        (root / "p" / relative).unlink()
    with pytest.raises(ConflictError, match=r"lost: zzz\.txt$"):
        _delete(store, "p")
    (root / "p" / "zzz.txt").unlink()
    _delete(store, "p")


def test_tracked_set_includes_inventory_locks_and_definitions(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p", contracts=("c",))
    text = (root / "p" / "templiqx.yaml").read_text()
    text = text.replace("evals: []", 'evals:\n  - "evals/e.json"')
    text = text.replace("templates: []", 'templates:\n  - "templates/t.docx"')
    text += 'translations:\n  - "en"\ndefinitions:\n  - "definitions/d.yaml"\n'
    (root / "p" / "templiqx.yaml").write_text(text)
    for relative in (
        "evals/e.json",
        "templates/t.docx",
        "translations/en.yaml",
        "definitions/d.yaml",
        "templiqx.lock",
        ".templiqx.lock",
        ".templiqx-tmp.123.0123456789abcdef",  # leftover of an interrupted write
        "contracts/.templiqx-tmp.9.fedcba9876543210",
    ):
        kit.write(root / "p" / relative, "x")
    _delete(store, "p")
    assert not (root / "p").exists()


def test_reference_package_with_unlisted_fixtures_is_blocked(reference_root: Path) -> None:
    store = FilesystemPackageStore(reference_root)
    with pytest.raises(ConflictError) as raised:
        _delete(store, "basenet-legal")
    assert str(raised.value) == (
        "conflict: untracked content would be lost: baselines/v5-legal-approved.docx"
    )


def test_symlink_inside_package_blocks(
    store: FilesystemPackageStore, root: Path, tmp_path: Path, kit: Any
) -> None:
    kit.make_package(store, "p")
    outside = tmp_path / "outside"
    outside.mkdir()
    kit.write(outside / "keep.txt", "keep")
    (root / "p" / "evals" / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidPathError, match="symbolic link"):
        _delete(store, "p")
    assert (outside / "keep.txt").read_text() == "keep"
    assert (root / "p").is_dir()


def test_lock_file_survives_deletion(store: FilesystemPackageStore, root: Path, kit: Any) -> None:
    kit.make_package(store, "p")
    lock = root / ".templiqx-package-locks" / "p.lock"
    inode = os.stat(lock).st_ino
    _delete(store, "p")
    assert os.stat(lock).st_ino == inode
    store.create_package("p", "1")
    assert os.stat(lock).st_ino == inode


def test_missing_and_symlinked_packages(
    store: FilesystemPackageStore, root: Path, tmp_path: Path
) -> None:
    with pytest.raises(NotFoundError):
        store.delete_package("ghost", "0" * 64)
    (tmp_path / "real").mkdir()
    (root / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    with pytest.raises(InvalidPathError):
        store.delete_package("link", "0" * 64)
    assert (tmp_path / "real").is_dir()
