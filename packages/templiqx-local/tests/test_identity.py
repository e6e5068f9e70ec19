"""Package identity: the normalized manifest plus the SHA-256 of every listed artifact (§4.6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from templiqx_contracts import fingerprint, fingerprint_bytes
from templiqx_local import FilesystemPackageStore
from templiqx_ports import InvalidPathError, NotFoundError

MANIFEST = """\
api_version: templiqx/v1alpha1
package: p
version: 0.1.0
contracts: [b, a]
components: [components/c.yaml]
evals: [evals/2.json, evals/1.json]
migrations: [migrations/m.json]
templates: [templates/t.html]
translations: [nl, en]
definitions: [definitions/z.yaml, definitions/y.yaml]
provenance: {owner: me}
signatures: [{key_id: k, algorithm: sha256-keyed, value: v}]
"""

FILES = {
    "contracts/a.yaml": "id: a\n",
    "contracts/b.yaml": "id: b\n",
    "components/c.yaml": "component\n",
    "evals/1.json": "{}",
    "evals/2.json": "[]",
    "migrations/m.json": "{}",
    "templates/t.html": "<p/>",
    "translations/en.yaml": "hi: Hello\n",
    "translations/nl.yaml": "hi: Hallo\n",
    "definitions/y.yaml": "y\n",
    "definitions/z.yaml": "z\n",
    "fixtures/unlisted.json": "{}",
}


@pytest.fixture
def package(root: Path, kit: Any) -> Path:
    folder = root / "p"
    kit.write(folder / "templiqx.yaml", MANIFEST)
    for relative, text in FILES.items():
        kit.write(folder / relative, text)
    return folder


def _fp(store: FilesystemPackageStore) -> str:
    return fingerprint(store.package_identity("p"))


def test_identity_shape(store: FilesystemPackageStore, package: Path) -> None:
    identity = store.package_identity("p")
    manifest = identity.manifest
    assert manifest.signatures == []
    assert manifest.contracts == ["a", "b"]
    assert manifest.evals == ["evals/1.json", "evals/2.json"]
    assert manifest.translations == ["en", "nl"]
    assert manifest.definitions == ["definitions/z.yaml", "definitions/y.yaml"]  # unsorted
    assert list(identity.artifacts) == sorted(
        [
            "components/c.yaml",
            "contracts/a.yaml",
            "contracts/b.yaml",
            "evals/1.json",
            "evals/2.json",
            "migrations/m.json",
            "templates/t.html",
            "translations/en.yaml",
            "translations/nl.yaml",
        ]
    )
    assert identity.artifacts["evals/1.json"] == fingerprint_bytes(b"{}")


@pytest.mark.parametrize(
    "relative",
    [
        "contracts/a.yaml",
        "components/c.yaml",
        "evals/2.json",
        "migrations/m.json",
        "templates/t.html",
        "translations/nl.yaml",
    ],
)
def test_any_listed_byte_changes_identity(
    store: FilesystemPackageStore, package: Path, relative: str
) -> None:
    before = _fp(store)
    target = package / relative
    target.write_bytes(target.read_bytes() + b"# comment only\n")
    assert _fp(store) != before


def test_unlisted_files_and_signatures_do_not_change_identity(
    store: FilesystemPackageStore, package: Path
) -> None:
    before = _fp(store)
    (package / "fixtures" / "unlisted.json").write_text('{"changed": true}')
    (package / "definitions" / "y.yaml").write_text("changed\n")
    (package / ".templiqx-tmp.1.0123456789abcdef").write_text("crash leftover")
    text = (package / "templiqx.yaml").read_text()
    (package / "templiqx.yaml").write_text(text.replace("value: v", "value: other"))
    assert _fp(store) == before


def test_inventory_order_does_not_matter(store: FilesystemPackageStore, package: Path) -> None:
    before = _fp(store)
    text = (package / "templiqx.yaml").read_text()
    text = text.replace("contracts: [b, a]", "contracts: [a, b]")
    text = text.replace("[evals/2.json, evals/1.json]", "[evals/1.json, evals/2.json]")
    text = text.replace("translations: [nl, en]", "translations: [en, nl]")
    (package / "templiqx.yaml").write_text(text)
    assert _fp(store) == before


def test_manifest_fields_are_part_of_identity(store: FilesystemPackageStore, package: Path) -> None:
    before = _fp(store)
    text = (package / "templiqx.yaml").read_text()
    (package / "templiqx.yaml").write_text(text.replace("owner: me", "owner: you"))
    assert _fp(store) != before


def test_lock_file_is_included(store: FilesystemPackageStore, package: Path) -> None:
    without = store.package_identity("p")
    assert "templiqx.lock" not in without.artifacts
    (package / "templiqx.lock").write_text("dependencies: {}\n")
    with_lock = store.package_identity("p")
    assert with_lock.artifacts["templiqx.lock"] == fingerprint_bytes(b"dependencies: {}\n")
    (package / "templiqx.lock").write_text("dependencies: {}\n# tampered\n")
    assert fingerprint(store.package_identity("p")) != fingerprint(with_lock)


def test_symlinked_lock_is_an_error(
    store: FilesystemPackageStore, package: Path, tmp_path: Path
) -> None:
    (tmp_path / "lock").write_text("dependencies: {}\n")
    (package / "templiqx.lock").symlink_to(tmp_path / "lock")
    with pytest.raises(InvalidPathError):
        store.package_identity("p")


def test_missing_listed_artifact_is_not_found(store: FilesystemPackageStore, package: Path) -> None:
    (package / "evals" / "2.json").unlink()
    with pytest.raises(NotFoundError) as raised:
        store.package_identity("p")
    assert str(raised.value) == "not found: evals/2.json"


def test_symlinked_listed_artifact_is_path_invalid(
    store: FilesystemPackageStore, package: Path, tmp_path: Path
) -> None:
    (tmp_path / "elsewhere.json").write_text("{}")
    (package / "evals" / "1.json").unlink()
    (package / "evals" / "1.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(InvalidPathError):
        store.package_identity("p")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("evals/1.json]", "../outside.json]"),
        ("evals/1.json]", "/etc/passwd]"),
        ("contracts: [b, a]", "contracts: [b, ../a]"),
        ("contracts: [b, a]", "contracts: [b, sub/a]"),
        ("translations: [nl, en]", "translations: [nl, ../en]"),
    ],
)
def test_traversal_in_inventory_is_path_invalid(
    store: FilesystemPackageStore, package: Path, old: str, new: str
) -> None:
    text = (package / "templiqx.yaml").read_text()
    (package / "templiqx.yaml").write_text(text.replace(old, new))
    with pytest.raises(InvalidPathError):
        store.package_identity("p")


def test_reference_identities_are_stable(reference_root: Path) -> None:
    store = FilesystemPackageStore(reference_root)
    first = {m.package: fingerprint(store.package_identity(m.package)) for m in store.discover()}
    second = {m.package: fingerprint(store.package_identity(m.package)) for m in store.discover()}
    assert first == second
    demo = store.package_identity("demo")
    assert sorted(demo.artifacts) == [
        "contracts/greeting.yaml",
        "translations/en.yaml",
        "translations/nl.yaml",
    ]
