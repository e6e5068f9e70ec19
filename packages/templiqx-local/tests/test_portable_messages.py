"""Store messages name files relative to the root, and oversized YAML documents are refused
before they are read (regressions found by the reliability suites, issue #9 R1/R7)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from templiqx_core.limits import MAX_DOCUMENT_BYTES
from templiqx_local import FilesystemPackageStore
from templiqx_ports import InvalidDataError, NotFoundError, PortError

OVERSIZED = MAX_DOCUMENT_BYTES + 1


def _store(base: Path) -> FilesystemPackageStore:
    store = FilesystemPackageStore(base / "root", create=True)
    store.create_package("p", "0.1.0")
    store.put_contract("p", "a", "id: a\n", guard=lambda _: None)
    return store


def _message(call: object) -> str:
    assert callable(call)
    with pytest.raises(PortError) as raised:
        call()
    return f"{raised.value.code} {raised.value}"


def _broken_messages(base: Path) -> list[str]:
    store = _store(base)
    package = store.root / "p"
    (package / "contracts" / "latin1.yaml").write_bytes(b"id: caf\xe9\n")
    messages = [
        _message(lambda: store.contract_source("p", "latin1")),
        _message(lambda: store.contract_source("p", "missing")),
    ]
    (package / "templiqx.yaml").write_text("package: [unclosed\n")
    messages += [
        _message(store.discover),
        _message(lambda: store.manifest("p")),
        _message(lambda: store.package_identity("p")),
        _message(lambda: store.put_contract("p", "b", "id: b\n", guard=lambda _: None)),
    ]
    (package / "templiqx.yaml").unlink()
    messages.append(_message(lambda: store.manifest("p")))
    return messages


def test_messages_are_the_same_whatever_the_root(tmp_path: Path) -> None:
    first = _broken_messages(tmp_path / "one")
    second = _broken_messages(tmp_path / "elsewhere" / "two")
    assert first == second
    for message in first:
        assert str(tmp_path) not in message
    assert first[0].startswith("TQX_DATA_INVALID invalid data: p/contracts/latin1.yaml: ")
    assert first[1] == "TQX_NOT_FOUND not found: p/contracts/missing.yaml"
    assert first[2].startswith("TQX_DATA_INVALID invalid data: p/templiqx.yaml: line 2, column 1")
    assert first[-1] == "TQX_NOT_FOUND not found: p/templiqx.yaml"


def _oversize(path: Path) -> None:
    """A sparse file one byte over the limit (no disk or memory cost)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        out.truncate(OVERSIZED)


@pytest.mark.parametrize(
    ("relative", "read"),
    [
        ("templiqx.yaml", lambda store: store.manifest("p")),
        ("contracts/a.yaml", lambda store: store.contract_source("p", "a")),
        ("templiqx.lock", lambda store: store.package_identity("p")),
        ("partials/big.yaml", lambda store: store.artifact_bytes("p", "partials/big.yaml")),
        ("translations/nl.yml", lambda store: store.artifact_bytes("p", "translations/nl.yml")),
        ("contracts/a.yaml", lambda store: store.put_contract("p", "a", "x", guard=_refuse)),
        ("contracts/a.yaml", lambda store: store.delete_contract("p", "a", guard=_refuse)),
    ],
)
def test_oversized_yaml_documents_are_refused_before_reading(
    tmp_path: Path, relative: str, read: object
) -> None:
    store = _store(tmp_path)
    _oversize(store.root / "p" / relative)
    assert callable(read)
    with pytest.raises(InvalidDataError) as raised:
        read(store)
    message = str(raised.value)
    assert f"p/{relative}" in message or message.startswith(f"invalid data: {relative}")
    assert f"is {OVERSIZED} bytes, more than the {MAX_DOCUMENT_BYTES}-byte limit" in message
    assert "(MAX_DOCUMENT_BYTES)" in message
    assert str(tmp_path) not in message


def _refuse(current: str | None) -> None:
    raise AssertionError("the guard must not see an oversized contract")


def test_other_artifacts_are_not_capped(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _oversize(store.root / "p" / "templates" / "big.docx")
    assert len(store.artifact_bytes("p", "templates/big.docx")) == OVERSIZED


def test_a_document_at_the_limit_is_read(tmp_path: Path) -> None:
    store = _store(tmp_path)
    path = store.root / "p" / "partials" / "edge.yaml"
    path.parent.mkdir()
    with path.open("wb") as out:
        out.truncate(MAX_DOCUMENT_BYTES)
    assert len(store.artifact_bytes("p", "partials/edge.yaml")) == MAX_DOCUMENT_BYTES


def test_missing_package_and_contract_messages(tmp_path: Path) -> None:
    store = _store(tmp_path)
    with pytest.raises(NotFoundError) as raised:
        store.contract_source("ghost", "a")
    assert str(raised.value) == "not found: ghost"
    os.unlink(store.root / "p" / "contracts" / "a.yaml")
    with pytest.raises(NotFoundError) as raised:
        store.delete_contract("p", "a", guard=_refuse)
    assert str(raised.value) == "not found: p/contracts/a.yaml"
