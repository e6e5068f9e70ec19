"""Discovery and manifest reads (application.md §4.2)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from templiqx_local import FilesystemArtifactWorkspace, FilesystemPackageStore
from templiqx_local.confined import port_error
from templiqx_ports import InvalidDataError, InvalidPathError, NotFoundError, PortError


def test_discovers_the_reference_packages(reference_root: Path) -> None:
    store = FilesystemPackageStore(reference_root)
    manifests = store.discover()
    assert [m.package for m in manifests] == ["basenet-legal", "crm3", "demo", "synthetic-opco"]
    demo = store.manifest("demo")
    assert demo.contracts == ["greeting"]
    assert demo.translations == ["en", "nl"]
    assert demo.signatures == []  # filled in by the reader
    legal = store.manifest("basenet-legal")
    assert legal.definitions == ["definitions/dunning-letter-v1.yaml"]
    assert store.contract_source("demo", "greeting").startswith("api_version:")


def test_root_is_canonicalized(tmp_path: Path) -> None:
    target = tmp_path / "real"
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    (target / "nested" / "packages").mkdir(parents=True)
    store = FilesystemPackageStore(link / "nested" / "packages")
    assert store.root == (target / "nested" / "packages")
    assert store.discover() == []


def test_a_missing_root_is_refused_and_never_created(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "packages"
    with pytest.raises(InvalidPathError) as raised:
        FilesystemPackageStore(missing)
    assert raised.value.code == "TQX_PATH_INVALID"
    assert str(raised.value) == f"invalid path: packages root '{missing}' does not exist"
    assert raised.value.help is not None
    assert "create it first" in raised.value.help
    assert not (tmp_path / "typo").exists()
    created = FilesystemPackageStore(missing, create=True)  # asked for: a writer's choice
    assert created.root == missing
    assert missing.is_dir()


def test_root_that_is_a_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("file").write_text("x")
    with pytest.raises(InvalidPathError) as raised:
        FilesystemPackageStore("file")
    assert str(raised.value) == (
        "invalid path: packages root 'file' is a file, not a directory; name an existing folder"
    )
    with pytest.raises(InvalidPathError) as raised:
        FilesystemArtifactWorkspace(Path("file") / "below")
    assert str(raised.value).startswith(
        "invalid path: workspace root 'file/below' cannot be created: 'file' is a file;"
    )


def test_skips_non_packages_and_store_bookkeeping(
    store: FilesystemPackageStore, root: Path, kit: type
) -> None:
    kit.make_package(store, "b")
    kit.make_package(store, "a")
    (root / ".git" / "objects").mkdir(parents=True)
    (root / ".hidden-without-manifest").mkdir()
    (root / "notes with spaces").mkdir()  # no manifest: skipped whatever its name
    (root / "README.md").write_text("not a package")
    (root / ".templiqx-workspace" / "a").mkdir(parents=True)
    (root / ".templiqx-tmp.1.0123456789abcdef").mkdir()
    kit.write(root / ".templiqx-tmp.1.0123456789abcdef" / "templiqx.yaml", "broken: [")
    assert [m.package for m in store.discover()] == ["a", "b"]


def test_sorted_by_package_then_version(store: FilesystemPackageStore, root: Path) -> None:
    for folder, name, version in [("z", "same", "2.0.0"), ("y", "same", "1.0.0"), ("x", "aa", "9")]:
        (root / folder).mkdir()
        (root / folder / "templiqx.yaml").write_text(
            f"api_version: templiqx/v1alpha1\npackage: {name}\nversion: '{version}'\n"
        )
    assert [(m.package, m.version) for m in store.discover()] == [
        ("aa", "9"),
        ("same", "1.0.0"),
        ("same", "2.0.0"),
    ]


def test_symlinked_package_directory_is_skipped(
    store: FilesystemPackageStore, root: Path, tmp_path: Path, kit: type
) -> None:
    kit.make_package(store, "real")
    elsewhere = tmp_path / "elsewhere"
    kit.write(elsewhere / "templiqx.yaml", "api_version: x\npackage: evil\nversion: '1'\n")
    (root / "evil").symlink_to(elsewhere, target_is_directory=True)
    assert [m.package for m in store.discover()] == ["real"]
    with pytest.raises(InvalidPathError):
        store.manifest("evil")


def test_malformed_manifest_aborts_discovery(store: FilesystemPackageStore, root: Path) -> None:
    (root / "bad").mkdir()
    (root / "bad" / "templiqx.yaml").write_text("package: [unclosed\n")
    with pytest.raises(InvalidDataError) as raised:
        store.discover()
    assert raised.value.code == "TQX_DATA_INVALID"
    assert str(raised.value).startswith("invalid data: bad/templiqx.yaml: ")


def test_unknown_manifest_field_is_invalid_data(store: FilesystemPackageStore, root: Path) -> None:
    (root / "bad").mkdir()
    (root / "bad" / "templiqx.yaml").write_text(
        "api_version: templiqx/v1alpha1\npackage: bad\nversion: '1'\nsurprise: 1\n"
    )
    with pytest.raises(InvalidDataError, match="surprise"):
        store.manifest("bad")


def test_symlinked_manifest_is_path_invalid(
    store: FilesystemPackageStore, root: Path, tmp_path: Path, kit: type
) -> None:
    target = kit.write(
        tmp_path / "outside.yaml", "api_version: templiqx/v1alpha1\npackage: p\nversion: '1'\n"
    )
    (root / "p").mkdir()
    (root / "p" / "templiqx.yaml").symlink_to(target)
    for call in (store.discover, lambda: store.manifest("p")):
        with pytest.raises(InvalidPathError) as raised:
            call()
        assert raised.value.code == "TQX_PATH_INVALID"
        assert "symbolic link" in str(raised.value)


def test_manifest_in_invalid_folder_name_aborts(store: FilesystemPackageStore, root: Path) -> None:
    (root / "has space").mkdir()
    (root / "has space" / "templiqx.yaml").write_text("package: x\n")
    with pytest.raises(InvalidPathError, match="not a valid package name"):
        store.discover()


def test_manifest_directory_instead_of_file(store: FilesystemPackageStore, root: Path) -> None:
    (root / "p" / "templiqx.yaml").mkdir(parents=True)
    with pytest.raises(InvalidPathError, match="directory"):
        store.discover()


def test_missing_package_and_missing_manifest(store: FilesystemPackageStore, root: Path) -> None:
    with pytest.raises(NotFoundError) as raised:
        store.manifest("ghost")
    assert str(raised.value) == "not found: ghost"
    (root / "empty").mkdir()
    with pytest.raises(NotFoundError) as raised:
        store.manifest("empty")
    assert str(raised.value) == "not found: empty/templiqx.yaml"


def test_missing_contract_names_the_absolute_path(
    store: FilesystemPackageStore, root: Path, kit: type
) -> None:
    kit.make_package(store, "p")
    with pytest.raises(NotFoundError) as raised:
        store.contract_source("p", "nope")
    assert str(raised.value) == "not found: p/contracts/nope.yaml"
    os.rmdir(root / "p" / "contracts")  # a hand-made package without contracts/
    with pytest.raises(NotFoundError):
        store.contract_source("p", "nope")


def test_contract_source_must_be_utf8(store: FilesystemPackageStore, root: Path, kit: type) -> None:
    kit.make_package(store, "p")
    (root / "p" / "contracts" / "bin.yaml").write_bytes(b"id: \xff\xfe\n")
    with pytest.raises(InvalidDataError, match="UTF-8"):
        store.contract_source("p", "bin")


def test_os_failures_become_port_errors(
    store: FilesystemPackageStore, kit: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    kit.make_package(store, "p", files={"evals/x.json": "{}"})

    def broken_read(fd: int, size: int) -> bytes:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "read", broken_read)
    with pytest.raises(PortError) as raised:
        store.artifact_bytes("p", "evals/x.json")
    assert raised.value.code == "TQX_IO"
    assert str(raised.value) == "I/O error: evals/x.json: Input/output error"


@pytest.mark.parametrize(
    ("number", "code"),
    [
        (errno.ENOENT, "TQX_NOT_FOUND"),
        (errno.ELOOP, "TQX_PATH_INVALID"),
        (errno.ENAMETOOLONG, "TQX_PATH_INVALID"),
        (errno.ENOTDIR, "TQX_PATH_INVALID"),
        (errno.EISDIR, "TQX_PATH_INVALID"),
        (errno.EACCES, "TQX_IO"),
        (errno.ENOSPC, "TQX_IO"),
    ],
)
def test_errno_mapping(number: int, code: str) -> None:
    assert port_error(OSError(number, os.strerror(number)), "x").code == code


def test_reads_never_write(reference_root: Path, kit: type) -> None:
    """A read-only package root works for every read (nothing is created, not even locks)."""
    store = FilesystemPackageStore(reference_root)
    before = kit.snapshot(reference_root)
    for manifest in store.discover():
        store.manifest(manifest.package)
        store.package_identity(manifest.package)
        for contract in manifest.contracts:
            store.contract_source(manifest.package, contract)
    assert store.artifact_bytes("demo", "translations/en.yaml")
    with pytest.raises(NotFoundError):
        store.artifact_bytes("demo", "no/such/file")
    assert kit.snapshot(reference_root) == before
