"""Compare-and-swap writes, contract guards, inventory updates, races and crashes (§4.4, §4.5)."""

from __future__ import annotations

import multiprocessing
import os
import runpy
from pathlib import Path
from typing import Any

import msgspec
import pytest

from templiqx_contracts import PackageSignature, fingerprint, fingerprint_bytes
from templiqx_local import FilesystemPackageStore
from templiqx_local.manifest_yaml import load_manifest
from templiqx_ports import (
    ConflictError,
    InvalidDataError,
    InvalidPathError,
    NotFoundError,
    PortError,
)

CHILD = Path(__file__).with_name("_child.py")
STALE = "0" * 64


def _refuse(current: str | None) -> None:
    raise ConflictError("refused by the guard")


def _bytes(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


# ------------------------------------------------------------------------ create / update


def test_create_package_bootstraps_layout(store: FilesystemPackageStore, root: Path) -> None:
    manifest = store.create_package("fresh", "0.1.0")
    assert manifest.package == "fresh"
    assert manifest.version == "0.1.0"
    assert manifest.contracts == []
    assert manifest.signatures == []
    folder = root / "fresh"
    assert sorted(p.name for p in folder.iterdir()) == [
        "components",
        "contracts",
        "evals",
        "migrations",
        "templates",
        "templiqx.yaml",
        "translations",
    ]
    assert load_manifest((folder / "templiqx.yaml").read_bytes(), "x") == manifest
    assert (root / ".templiqx-package-locks" / "fresh.lock").is_file()
    assert [p.name for p in root.iterdir() if p.name.startswith(".templiqx-tmp")] == []


def test_create_package_conflicts_and_refusals(
    store: FilesystemPackageStore, root: Path, tmp_path: Path
) -> None:
    store.create_package("p", "1")
    with pytest.raises(ConflictError) as raised:
        store.create_package("p", "2")
    assert str(raised.value) == "conflict: package 'p' already exists"
    (root / "plainfile").write_text("x")
    with pytest.raises(ConflictError):
        store.create_package("plainfile", "1")
    (tmp_path / "elsewhere").mkdir()
    (root / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(InvalidPathError):
        store.create_package("linked", "1")
    assert list((tmp_path / "elsewhere").iterdir()) == []
    for bad in ("", "..", "a/b", "has space", ".templiqx-workspace"):
        with pytest.raises(InvalidPathError):
            store.create_package(bad, "1")


def test_create_package_version_is_written_verbatim(store: FilesystemPackageStore) -> None:
    manifest = store.create_package("p", "not: semver\n# really")
    assert manifest.version == "not: semver\n# really"
    assert store.manifest("p").version == "not: semver\n# really"


def test_update_package_cas_and_signature_clearing(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p", contracts=("a",))
    signed = _attach(store, "p", "k1")
    assert signed.signatures
    before = (root / "p" / "templiqx.yaml").read_bytes()
    with pytest.raises(ConflictError) as raised:
        store.update_package("p", version="0.2.0", description=None, expected_fingerprint=STALE)
    assert str(raised.value) == f"conflict: expected {STALE}, found {fingerprint(signed)}"
    assert (root / "p" / "templiqx.yaml").read_bytes() == before
    updated = store.update_package(
        "p", version="0.2.0", description="new words", expected_fingerprint=fingerprint(signed)
    )
    assert updated.version == "0.2.0"
    assert updated.description == "new words"
    assert updated.signatures == []
    assert store.manifest("p") == updated
    kept = store.update_package(
        "p", version=None, description=None, expected_fingerprint=fingerprint(updated)
    )
    assert kept == updated
    with pytest.raises(NotFoundError):
        store.update_package("ghost", version="1", description=None, expected_fingerprint=STALE)


# ------------------------------------------------------------------------ signatures


def _attach(store: FilesystemPackageStore, package: str, key: str) -> Any:
    manifest = store.manifest(package)
    identity = fingerprint(store.package_identity(package))
    return store.attach_package_signature(
        package,
        PackageSignature(key_id=key, algorithm="sha256-keyed", value=f"sig-{key}"),
        expected_fingerprint=fingerprint(manifest),
        identity_fingerprint=identity,
    )


def test_attach_signature_replaces_and_sorts(store: FilesystemPackageStore, kit: Any) -> None:
    kit.make_package(store, "p", contracts=("a",))
    _attach(store, "p", "zeta")
    _attach(store, "p", "alpha")
    manifest = store.attach_package_signature(
        "p",
        PackageSignature(key_id="zeta", algorithm="sha256-keyed", value="replaced"),
        expected_fingerprint=fingerprint(store.manifest("p")),
        identity_fingerprint=fingerprint(store.package_identity("p")),
    )
    assert [(s.key_id, s.value) for s in manifest.signatures] == [
        ("alpha", "sig-alpha"),
        ("zeta", "replaced"),
    ]
    assert store.manifest("p") == manifest


def test_attach_signature_rejects_stale_manifest_and_identity(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p", contracts=("a",))
    manifest = store.manifest("p")
    identity = fingerprint(store.package_identity("p"))
    signature = PackageSignature(key_id="k", algorithm="sha256-keyed", value="v")
    before = (root / "p" / "templiqx.yaml").read_bytes()
    with pytest.raises(ConflictError):
        store.attach_package_signature(
            "p", signature, expected_fingerprint=STALE, identity_fingerprint=identity
        )
    # An artifact changes after the identity was exported: the signature would be stale.
    (root / "p" / "contracts" / "a.yaml").write_text("# changed\n")
    with pytest.raises(ConflictError) as raised:
        store.attach_package_signature(
            "p",
            signature,
            expected_fingerprint=fingerprint(manifest),
            identity_fingerprint=identity,
        )
    assert str(raised.value).startswith(f"conflict: expected package identity {identity}, found ")
    assert (root / "p" / "templiqx.yaml").read_bytes() == before
    assert store.manifest("p").signatures == []


# ------------------------------------------------------------------------ contracts


def test_put_contract_creates_lists_and_clears_signatures(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p", contracts=("m", "b"))
    assert store.manifest("p").contracts == ["b", "m"]
    _attach(store, "p", "k")
    source = kit.contract_text("a", "# comment ✓\n")
    seen: list[str | None] = []
    store.put_contract("p", "a", source, guard=seen.append)
    assert seen == [None]
    assert store.contract_source("p", "a") == source
    manifest = store.manifest("p")
    assert manifest.contracts == ["a", "b", "m"]
    assert manifest.signatures == []
    # Overwrite: the guard sees the current source; the list stays de-duplicated.
    store.put_contract("p", "a", "new", guard=seen.append)
    assert seen == [None, source]
    assert store.manifest("p").contracts == ["a", "b", "m"]
    assert (root / "p" / "contracts" / "a.yaml").read_text() == "new"


def test_put_contract_leaves_manifest_alone_when_nothing_changes(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p", contracts=("a",))
    manifest_file = root / "p" / "templiqx.yaml"
    custom = manifest_file.read_text() + "# hand-written comment\n"
    manifest_file.write_text(custom)
    store.put_contract("p", "a", "updated", guard=kit.allow)
    assert manifest_file.read_text() == custom


def test_put_contract_refused_by_guard_changes_nothing(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p", contracts=("a",))
    _attach(store, "p", "k")
    before = _bytes(root / "p")
    for contract in ("a", "new"):
        with pytest.raises(ConflictError, match="refused by the guard"):
            store.put_contract("p", contract, "x", guard=_refuse)
    assert _bytes(root / "p") == before
    with pytest.raises(ConflictError):
        store.put_contract("p", "a", "x", guard=kit.expect_source("not the current text"))
    assert _bytes(root / "p") == before


def test_guard_may_raise_any_port_error(store: FilesystemPackageStore, kit: Any) -> None:
    kit.make_package(store, "p")

    def invalid(current: str | None) -> None:
        raise InvalidDataError("contract id 'x' does not match inventory id 'p'")

    with pytest.raises(InvalidDataError):
        store.put_contract("p", "c", "x", guard=invalid)
    assert store.manifest("p").contracts == []


def test_put_contract_recreates_missing_contracts_folder(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p")
    (root / "p" / "contracts").rmdir()
    store.put_contract("p", "c", "text", guard=kit.allow)
    assert (root / "p" / "contracts" / "c.yaml").read_text() == "text"


def test_put_contract_refuses_unparseable_manifest(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p")
    (root / "p" / "templiqx.yaml").write_text("broken: [")
    with pytest.raises(InvalidDataError):
        store.put_contract("p", "c", "text", guard=kit.allow)
    assert not (root / "p" / "contracts" / "c.yaml").exists()


def test_delete_contract(store: FilesystemPackageStore, root: Path, kit: Any) -> None:
    kit.make_package(store, "p", contracts=("a", "b"))
    _attach(store, "p", "k")
    source = store.contract_source("p", "a")
    seen: list[str | None] = []
    store.delete_contract("p", "a", guard=seen.append)
    assert seen == [source]
    assert not (root / "p" / "contracts" / "a.yaml").exists()
    manifest = store.manifest("p")
    assert manifest.contracts == ["b"]
    assert manifest.signatures == []
    with pytest.raises(NotFoundError) as raised:
        store.delete_contract("p", "a", guard=seen.append)
    assert str(raised.value) == "not found: p/contracts/a.yaml"
    assert len(seen) == 1  # the guard is not called for a missing contract


def test_delete_unlisted_contract_keeps_manifest(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p", contracts=("a",), files={"contracts/stray.yaml": "x"})
    signed = _attach(store, "p", "k")
    manifest_bytes = (root / "p" / "templiqx.yaml").read_bytes()
    store.delete_contract("p", "stray", guard=kit.allow)
    assert not (root / "p" / "contracts" / "stray.yaml").exists()
    assert (root / "p" / "templiqx.yaml").read_bytes() == manifest_bytes
    assert store.manifest("p") == signed


def test_delete_contract_refused_by_guard(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p", contracts=("a",))
    before = _bytes(root / "p")
    with pytest.raises(ConflictError):
        store.delete_contract("p", "a", guard=_refuse)
    with pytest.raises(ConflictError):
        store.delete_contract("p", "a", guard=kit.expect_source("stale"))
    assert _bytes(root / "p") == before


# ------------------------------------------------------------------------ failures mid-write


def test_failure_before_replace_keeps_old_file(
    store: FilesystemPackageStore, root: Path, kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    kit.make_package(store, "p", contracts=("a",))
    before = _bytes(root / "p")

    def failing_replace(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(PortError) as raised:
        store.put_contract("p", "a", "new text", guard=kit.allow)
    assert raised.value.code == "TQX_IO"
    with pytest.raises(PortError):
        store.update_package(
            "p",
            version="2",
            description=None,
            expected_fingerprint=fingerprint(store.manifest("p")),
        )
    monkeypatch.undo()
    assert _bytes(root / "p") == before  # unchanged, and no temporary file left behind


def test_manifest_commit_failure_restores_previous_contract(
    store: FilesystemPackageStore, root: Path, kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    kit.make_package(store, "p", contracts=("a",))
    _attach(store, "p", "k")  # signatures force a manifest rewrite on put
    before = _bytes(root / "p")
    real_replace = os.replace

    def replace_contract_only(src: Any, dst: Any, **kwargs: Any) -> None:
        if dst == "templiqx.yaml":
            raise OSError(5, "Input/output error")
        real_replace(src, dst, **kwargs)

    monkeypatch.setattr(os, "replace", replace_contract_only)
    with pytest.raises(PortError):
        store.put_contract("p", "a", "replacement", guard=kit.allow)
    with pytest.raises(PortError):
        store.put_contract("p", "brand-new", "text", guard=kit.allow)
    monkeypatch.undo()
    assert _bytes(root / "p") == before


def _spawn(params: dict[str, Any]) -> Any:
    context = multiprocessing.get_context("spawn")
    return context.Process(target=runpy.run_path, args=(str(CHILD), {"PARAMS": params}))


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".templiqx-tmp."))


def test_killed_writer_leaves_old_files_and_later_operations_work(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p", contracts=("a",))
    _attach(store, "p", "k")
    before = _bytes(root / "p")
    for action in ("crash-put", "crash-update"):
        child = _spawn(
            {"action": action, "root": str(root), "package": "p", "contract": "a", "content": "X"}
        )
        child.start()
        child.join(60)
        assert child.exitcode == 17, f"{action} did not die at os.replace"
    after = _bytes(root / "p")
    assert {k: v for k, v in after.items() if ".templiqx-tmp." not in k} == before
    # The crashes left fsynced temp files beside their targets; they are inert.
    assert _leftovers(root / "p")
    assert _leftovers(root / "p" / "contracts")
    assert store.contract_source("p", "a") == kit.contract_text("a")
    identity = store.package_identity("p")
    assert ".templiqx-tmp." not in str(identity.artifacts)
    store.put_contract("p", "a", "after the crash", guard=kit.allow)
    manifest = store.update_package(
        "p", version="3", description=None, expected_fingerprint=fingerprint(store.manifest("p"))
    )
    assert manifest.version == "3"
    store.delete_package("p", fingerprint(manifest))  # temp files are not untracked content
    assert not (root / "p").exists()


@pytest.mark.parametrize("action", ["race-put-existing", "race-put-create", "race-update"])
def test_racing_processes_produce_exactly_one_winner(
    store: FilesystemPackageStore, root: Path, kit: Any, action: str
) -> None:
    kit.make_package(store, "p", contracts=("a",))
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    results = context.Queue()
    contract = "b" if action == "race-put-create" else "a"
    if action == "race-update":
        expected: str | None = fingerprint(store.manifest("p"))
    elif action == "race-put-existing":
        expected = fingerprint_bytes(store.contract_source("p", "a").encode())
    else:
        expected = None
    children = [
        _spawn(
            {
                "action": "race-update" if action == "race-update" else "race-put",
                "root": str(root),
                "package": "p",
                "contract": contract,
                "content": f"writer {index}",
                "expected": expected,
                "delay": 0.2,
                "barrier": barrier,
                "results": results,
            }
        )
        for index in range(2)
    ]
    for child in children:
        child.start()
    outcomes = dict(results.get(timeout=60) for _ in children)
    for child in children:
        child.join(60)
        assert child.exitcode == 0
    assert sorted(outcomes.values()) == ["conflict", "won"], outcomes
    winner = next(content for content, outcome in outcomes.items() if outcome == "won")
    if action == "race-update":
        assert store.manifest("p").description == winner
    else:
        assert store.contract_source("p", contract) == winner
        assert store.manifest("p").contracts == sorted({"a", contract})
    assert _leftovers(root / "p") == []
    assert _leftovers(root / "p" / "contracts") == []


def test_manifest_written_by_store_is_parsed_identically(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p")
    manifest = store.update_package(
        "p",
        version="1.0.0-rc.1+build",
        description='quotes " and \\ and\nnewlines: # not a comment',
        expected_fingerprint=fingerprint(store.manifest("p")),
    )
    assert store.manifest("p") == manifest
    assert msgspec.json.encode(store.manifest("p")) == msgspec.json.encode(manifest)
