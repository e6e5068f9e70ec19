"""Round-trip manifest writes: a hand-formatted manifest keeps every line a write leaves alone."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import msgspec
import pytest

from templiqx_contracts import PackageManifest, PackageSignature, fingerprint
from templiqx_core.parse import parse_manifest
from templiqx_local import FilesystemPackageStore
from templiqx_local.manifest_edit import edit_manifest
from templiqx_local.manifest_yaml import dump_manifest

HAND_WRITTEN = """\
# The greetings package: maintained by hand, reviewed in pull requests.
api_version: templiqx/v1alpha1
package: greetings   # folder name
version: '1.4.0'
description: >
  Friendly greetings
  for every locale.

# Contracts, in the order we review them (not sorted on purpose).
contracts:
    - welcome        # the first thing people see
    - farewell
    - "birthday"
components: [partials/sign-off.yaml]
evals: []
migrations: []
templates: []
provenance:
  owner: "team-greetings"
signatures: []
"""


def _changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def _manifest(text: str) -> PackageManifest:
    manifest, diagnostics = parse_manifest(text)
    assert manifest is not None, diagnostics
    return manifest


def _edited(text: str, **changes: Any) -> str:
    before = _manifest(text)
    after = msgspec.structs.replace(before, **changes)
    edited = edit_manifest(text, before, after)
    assert edited is not None
    assert _manifest(edited) == after
    return edited


@pytest.fixture
def package(tmp_path: Path) -> tuple[FilesystemPackageStore, Path]:
    root = tmp_path / "root"
    (root / "greetings" / "contracts").mkdir(parents=True)
    (root / "greetings" / "partials").mkdir()
    (root / "greetings" / "partials" / "sign-off.yaml").write_text("- {kind: text, value: x}\n")
    for contract in ("welcome", "farewell", "birthday"):
        (root / "greetings" / "contracts" / f"{contract}.yaml").write_text(f"id: {contract}\n")
    manifest = root / "greetings" / "templiqx.yaml"
    manifest.write_text(HAND_WRITTEN)
    return FilesystemPackageStore(root), manifest


def test_put_contract_adds_one_line_and_keeps_the_rest(
    package: tuple[FilesystemPackageStore, Path],
) -> None:
    store, path = package
    store.put_contract("greetings", "anniversary", "id: anniversary\n", guard=lambda _: None)
    # indented and quoted as the list's first item is
    assert _changed_lines(HAND_WRITTEN, path.read_text()) == ["+    - anniversary"]
    assert store.manifest("greetings").contracts == [
        "welcome",
        "farewell",
        "birthday",
        "anniversary",
    ]


def test_delete_contract_removes_its_line_only(
    package: tuple[FilesystemPackageStore, Path],
) -> None:
    store, path = package
    store.delete_contract("greetings", "farewell", guard=lambda _: None)
    assert _changed_lines(HAND_WRITTEN, path.read_text()) == ["-    - farewell"]


def test_update_package_changes_the_version_and_description_lines(
    package: tuple[FilesystemPackageStore, Path],
) -> None:
    store, path = package
    token = fingerprint(store.manifest("greetings"))
    store.update_package("greetings", version="1.5.0", description=None, expected_fingerprint=token)
    assert _changed_lines(HAND_WRITTEN, path.read_text()) == [
        "-version: '1.4.0'",
        "+version: '1.5.0'",
    ]
    token = fingerprint(store.manifest("greetings"))
    store.update_package("greetings", version=None, description="Hi.", expected_fingerprint=token)
    assert _changed_lines(HAND_WRITTEN, path.read_text()) == [
        "-version: '1.4.0'",
        "-description: >",
        "-  Friendly greetings",
        "-  for every locale.",
        "+version: '1.5.0'",
        '+description: "Hi."',
    ]


def test_signing_rewrites_only_the_signatures_entry(
    package: tuple[FilesystemPackageStore, Path],
) -> None:
    store, path = package
    token = fingerprint(store.manifest("greetings"))
    identity = fingerprint(store.package_identity("greetings"))
    signature = PackageSignature(key_id="ci", algorithm="sha256-keyed", value="ab" * 32)
    store.attach_package_signature(
        "greetings", signature, expected_fingerprint=token, identity_fingerprint=identity
    )
    assert _changed_lines(HAND_WRITTEN, path.read_text()) == [
        "-signatures: []",
        "+signatures:",
        '+  - key_id: "ci"',
        '+    algorithm: "sha256-keyed"',
        f'+    value: "{"ab" * 32}"',
    ]
    # the next write clears them again: back to the hand-written text, byte for byte
    store.put_contract("greetings", "welcome", "id: welcome\n# v2\n", guard=lambda _: None)
    assert path.read_text() == HAND_WRITTEN


def test_a_manifest_the_store_wrote_reads_as_if_it_had_been_dumped(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    store = FilesystemPackageStore(root)
    store.create_package("p", "0.1.0")
    for contract in ("b", "a", "c"):
        store.put_contract("p", contract, f"id: {contract}\n", guard=lambda _: None)
    text = (root / "p" / "templiqx.yaml").read_text()
    assert text == dump_manifest(store.manifest("p"))  # sorted, block style, as before
    store.delete_contract("p", "b", guard=lambda _: None)
    store.delete_contract("p", "a", guard=lambda _: None)
    store.delete_contract("p", "c", guard=lambda _: None)
    assert (root / "p" / "templiqx.yaml").read_text() == dump_manifest(store.manifest("p"))


@pytest.mark.parametrize(
    ("text", "changes", "expected"),
    [
        ("contracts: [a, c]\n", {"contracts": ["a", "b", "c"]}, "contracts: [a, b, c]\n"),
        ("contracts: [a, c]\n", {"contracts": ["a", "c", "d"]}, "contracts: [a, c, d]\n"),
        ("contracts: [a, b, c]\n", {"contracts": ["a", "c"]}, "contracts: [a, c]\n"),
        ("contracts: [a, b]  # ids\n", {"contracts": ["a"]}, "contracts: [a]  # ids\n"),
        ("contracts: [a]  # ids\n", {"contracts": []}, "contracts: []  # ids\n"),
        ("contracts:\n- a\n", {"contracts": []}, "contracts: []\n"),
        ("contracts:\n- a\n- c\n", {"contracts": ["a", "b", "c"]}, "contracts:\n- a\n- b\n- c\n"),
        ("contracts: []\n", {"contracts": ["a"]}, 'contracts:\n  - "a"\n'),
        ("version: 1.0.0\n", {"version": "1.0.1"}, "version: 1.0.1\n"),
        ('version: "1.0.0"\n', {"version": "2.0"}, 'version: "2.0"\n'),
        ("version: 1.0.0\n", {"version": "2.0"}, 'version: "2.0"\n'),  # plain 2.0 is a float
        ("version: 1.0.0\r\ncontracts: []\r\n", {"contracts": ["x"]}, None),
        ("version: 1.0.0", {"description": "d"}, 'version: 1.0.0\ndescription: "d"\n'),
    ],
)
def test_edits_in_place(text: str, changes: dict[str, Any], expected: str | None) -> None:
    base = "api_version: templiqx/v1alpha1\npackage: p\n"
    if "version" not in text:
        base += "version: 1.0.0\n"
    newline = "\r\n" if "\r\n" in text else "\n"
    edited = _edited(base.replace("\n", newline) + text, **changes)
    if expected is None:  # CRLF kept
        assert edited == (
            base.replace("\n", "\r\n") + 'version: 1.0.0\r\ncontracts:\r\n  - "x"\r\n'
        )
    else:
        assert edited == base + expected


@pytest.mark.parametrize(
    "text",
    [
        "api_version: templiqx/v1alpha1\npackage: p\nversion: &v 1.0.0\n",  # an anchor
        "{api_version: templiqx/v1alpha1, package: p, version: 1.0.0}\n",  # flow mapping
        "\ufeffapi_version: templiqx/v1alpha1\npackage: p\nversion: 1.0.0\n",  # BOM
    ],
)
def test_text_it_does_not_edit_in_place_falls_back_to_a_full_write(text: str) -> None:
    before = _manifest(text)
    after = msgspec.structs.replace(before, version="2.0.0")
    assert edit_manifest(text, before, after) is None


def test_the_store_falls_back_to_a_full_write(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "p").mkdir(parents=True)
    text = "{api_version: templiqx/v1alpha1, package: p, version: 1.0.0}\n"
    (root / "p" / "templiqx.yaml").write_text(text)
    store = FilesystemPackageStore(root)
    token = fingerprint(store.manifest("p"))
    updated = store.update_package(
        "p", version="2.0.0", description=None, expected_fingerprint=token
    )
    assert (root / "p" / "templiqx.yaml").read_text() == dump_manifest(updated)
