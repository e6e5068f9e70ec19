"""Fixtures for the filesystem store and workspace tests.

Every test works in pytest's ``tmp_path``; reference packages are copied there, never into the
repository.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from templiqx_contracts import fingerprint_bytes
from templiqx_local import FilesystemArtifactWorkspace, FilesystemPackageStore
from templiqx_ports import ConflictError

REFERENCE_PACKAGES = ("basenet-legal", "crm3", "demo", "synthetic-opco")


def allow(current: str | None) -> None:
    """A guard that accepts any current state."""


def expect_source(expected: str | None) -> Callable[[str | None], None]:
    """A guard comparing the current source's SHA-256 (``None`` = must be absent)."""

    def guard(current: str | None) -> None:
        actual = None if current is None else fingerprint_bytes(current.encode())
        wanted = None if expected is None else fingerprint_bytes(expected.encode())
        if actual != wanted:
            raise ConflictError(f"expected {wanted}, found {actual}")

    return guard


def write(path: Path, text: str | bytes) -> Path:
    """Write a file, creating its parents."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def snapshot(folder: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every entry below ``folder`` (not following symlinks): kind and content or target."""
    state: dict[str, tuple[str, bytes | str]] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            state[key] = ("link", str(path.readlink()))
        elif path.is_dir():
            state[key] = ("dir", "")
        else:
            state[key] = ("file", path.read_bytes())
    return state


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty packages root."""
    folder = tmp_path / "root"
    folder.mkdir()
    return folder


@pytest.fixture
def store(root: Path) -> FilesystemPackageStore:
    """A store over the empty ``root``."""
    return FilesystemPackageStore(root)


@pytest.fixture
def workspace(tmp_path: Path) -> FilesystemArtifactWorkspace:
    """A workspace over ``tmp_path/ws``."""
    return FilesystemArtifactWorkspace(tmp_path / "ws")


@pytest.fixture
def reference_root(reference: Path, tmp_path: Path) -> Path:
    """The reference example packages and ``crm3`` copied into a fresh root."""
    folder = tmp_path / "reference-root"
    folder.mkdir()
    for package in sorted((reference / "packages").iterdir()):
        if package.is_dir():
            shutil.copytree(package, folder / package.name, symlinks=True)
    shutil.copytree(reference / "crm3", folder / "crm3", symlinks=True)
    return folder


GREETING = """\
api_version: templiqx/v1alpha1
id: {id}
version: 0.1.0
description: a test contract
"""


def contract_text(contract_id: str, extra: str = "") -> str:
    """A small contract source (the store does not validate it)."""
    return GREETING.format(id=contract_id) + extra


def make_package(
    store: FilesystemPackageStore,
    name: str,
    *,
    contracts: tuple[str, ...] = (),
    files: dict[str, str] | None = None,
) -> Path:
    """Create a package, put contracts, and drop extra files (unlisted) into it."""
    store.create_package(name, "0.1.0")
    for contract in contracts:
        store.put_contract(name, contract, contract_text(contract), guard=allow)
    folder = store.root / name
    for relative, text in (files or {}).items():
        write(folder / relative, text)
    return folder


class Kit:
    """Test helpers, handed to tests through the ``kit`` fixture (test modules cannot import
    conftest under ``--import-mode=importlib``)."""

    allow = staticmethod(allow)
    expect_source = staticmethod(expect_source)
    write = staticmethod(write)
    snapshot = staticmethod(snapshot)
    contract_text = staticmethod(contract_text)
    make_package = staticmethod(make_package)


@pytest.fixture
def kit() -> type[Kit]:
    """The helper namespace."""
    return Kit
