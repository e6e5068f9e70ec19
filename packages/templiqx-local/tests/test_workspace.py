"""The artifact workspace: listing, reading, deleting, leases and overrides (§4.11)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from templiqx_contracts import WorkspaceArtifact, fingerprint_bytes
from templiqx_local import FilesystemArtifactWorkspace
from templiqx_ports import ConflictError, InvalidPathError, NotFoundError


def _put(workspace: FilesystemArtifactWorkspace, package: str, path: str, data: bytes) -> Path:
    with workspace.lease_output_path(package, path) as lease:
        lease.path.write_bytes(data)
        return lease.path


@pytest.fixture
def filled(workspace: FilesystemArtifactWorkspace) -> FilesystemArtifactWorkspace:
    for path, data in {
        "out/a.txt": b"aaa",
        "out/sub/b.json": b"{}",
        "outer/c.txt": b"c",
        "out-file.txt": b"12345",
        "z.docx": b"\x00\x01",
    }.items():
        _put(workspace, "p", path, data)
    return workspace


def _paths(artifacts: list[WorkspaceArtifact]) -> list[str]:
    return [artifact.path for artifact in artifacts]


def test_list_sorted_with_sizes(filled: FilesystemArtifactWorkspace) -> None:
    assert [(a.path, a.size) for a in filled.list_artifacts("p")] == [
        ("out-file.txt", 5),
        ("out/a.txt", 3),
        ("out/sub/b.json", 2),
        ("outer/c.txt", 1),
        ("z.docx", 2),
    ]


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        (None, 5),
        ("", 5),
        ("/", 5),  # one trailing slash is stripped, leaving "": everything
        ("out", ["out/a.txt", "out/sub/b.json"]),
        ("out/", ["out/a.txt", "out/sub/b.json"]),
        ("out/sub", ["out/sub/b.json"]),
        ("out/a.txt", ["out/a.txt"]),
        ("out/a", []),
        ("ou", []),
        ("nothing", []),
    ],
)
def test_prefix_rules(
    filled: FilesystemArtifactWorkspace, prefix: str | None, expected: Any
) -> None:
    listed = _paths(filled.list_artifacts("p", prefix=prefix))
    if isinstance(expected, int):
        assert len(listed) == expected
    else:
        assert listed == expected


@pytest.mark.parametrize("prefix", ["../out", "/out", "out//", "a\\b", "./out", "out/../x", "//"])
def test_invalid_prefixes(filled: FilesystemArtifactWorkspace, prefix: str) -> None:
    with pytest.raises(InvalidPathError):
        filled.list_artifacts("p", prefix=prefix)


def test_listing_skips_symlinks_hard_links_and_special_files(
    filled: FilesystemArtifactWorkspace, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    folder = filled.root / "p"
    (folder / "link.txt").symlink_to(outside / "secret.txt")
    (folder / "linkdir").symlink_to(outside, target_is_directory=True)
    os.link(outside / "secret.txt", folder / "hard.txt")
    os.mkfifo(folder / "pipe")
    (folder / "bad\\name.txt").write_text("unreachable through the API")
    listed = _paths(filled.list_artifacts("p"))
    assert listed == ["out-file.txt", "out/a.txt", "out/sub/b.json", "outer/c.txt", "z.docx"]


def test_missing_package_workspace_is_empty_and_not_created(
    workspace: FilesystemArtifactWorkspace,
) -> None:
    assert workspace.list_artifacts("ghost") == []
    with pytest.raises(NotFoundError) as raised:
        workspace.read_artifact("ghost", "a.txt")
    assert str(raised.value) == "not found: a.txt"
    assert not (workspace.root / "ghost").exists()


def test_read_artifact(filled: FilesystemArtifactWorkspace) -> None:
    assert filled.read_artifact("p", "out/sub/b.json") == b"{}"
    with pytest.raises(NotFoundError) as raised:
        filled.read_artifact("p", "out/missing.txt")
    assert str(raised.value) == "not found: out/missing.txt"
    with pytest.raises(InvalidPathError, match="directory"):
        filled.read_artifact("p", "out/sub")


def test_read_refuses_symlinks_and_hard_links(
    filled: FilesystemArtifactWorkspace, tmp_path: Path
) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    folder = filled.root / "p"
    (folder / "link.txt").symlink_to(tmp_path / "secret.txt")
    (folder / "dirlink").symlink_to(tmp_path, target_is_directory=True)
    os.link(tmp_path / "secret.txt", folder / "hard.txt")
    for path in ("link.txt", "dirlink/secret.txt", "hard.txt"):
        with pytest.raises(InvalidPathError):
            filled.read_artifact("p", path)


def test_delete_artifact_byte_cas(filled: FilesystemArtifactWorkspace) -> None:
    target = filled.root / "p" / "out" / "a.txt"
    with pytest.raises(ConflictError) as raised:
        filled.delete_artifact("p", "out/a.txt", expected_fingerprint="0" * 64)
    assert str(raised.value) == f"conflict: expected {'0' * 64}, found {fingerprint_bytes(b'aaa')}"
    assert target.read_bytes() == b"aaa"
    data = filled.delete_artifact("p", "out/a.txt", expected_fingerprint=fingerprint_bytes(b"aaa"))
    assert data == b"aaa"
    assert not target.exists()
    assert target.parent.is_dir()  # empty parents remain
    with pytest.raises(NotFoundError):
        filled.delete_artifact("p", "out/a.txt", expected_fingerprint=fingerprint_bytes(b"aaa"))
    with pytest.raises(InvalidPathError):
        filled.delete_artifact("p", "../outside", expected_fingerprint="0" * 64)


def test_lease_creates_parents_and_returns_confined_absolute_path(
    workspace: FilesystemArtifactWorkspace,
) -> None:
    with workspace.lease_output_path("p", "deep/er/file.docx") as lease:
        assert lease.held
        assert lease.path == workspace.root / "p" / "deep" / "er" / "file.docx"
        assert lease.path.is_absolute()
        assert lease.path.parent.is_dir()
        assert not lease.path.exists()  # the holder writes it
        assert "held" in repr(lease)
    assert not lease.held
    assert "released" in repr(lease)


def test_lease_refuses_unsafe_targets(
    workspace: FilesystemArtifactWorkspace, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    folder = workspace.root / "p"
    folder.mkdir(parents=True)
    (folder / "link.txt").symlink_to(outside / "secret.txt")
    (folder / "linkdir").symlink_to(outside, target_is_directory=True)
    (folder / "dir").mkdir()
    os.link(outside / "secret.txt", folder / "hard.txt")
    for path in ("link.txt", "linkdir/new.txt", "linkdir/x/y.txt", "dir", "hard.txt"):
        with pytest.raises(InvalidPathError):
            workspace.lease_output_path("p", path)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    # the lock was released on every refusal
    workspace.lease_output_path("p", "ok.txt").release()


def test_symlinked_package_workspace_is_refused(
    workspace: FilesystemArtifactWorkspace, tmp_path: Path
) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "a.txt").write_text("a")
    workspace.root.mkdir()
    (workspace.root / "p").symlink_to(tmp_path / "outside", target_is_directory=True)
    with pytest.raises(InvalidPathError):
        workspace.read_artifact("p", "a.txt")
    with pytest.raises(InvalidPathError):
        workspace.lease_output_path("p", "b.txt")
    with pytest.raises(InvalidPathError):
        workspace.list_artifacts("p")
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == ["a.txt"]


def test_override_inside_root_is_created(workspace: FilesystemArtifactWorkspace) -> None:
    override = str(workspace.root / "runs" / "42")
    with workspace.lease_output_path("p", "a.txt", workspace=override) as lease:
        lease.path.write_text("x")
    assert (workspace.root / "runs" / "42" / "p" / "a.txt").read_text() == "x"
    assert _paths(workspace.list_artifacts("p", workspace=override)) == ["a.txt"]
    assert workspace.read_artifact("p", "a.txt", workspace=override + "/") == b"x"
    assert workspace.list_artifacts("p") == []
    assert workspace.resolve_workspace(override) == workspace.root / "runs" / "42"
    assert workspace.package_root("p", workspace=override) == workspace.root / "runs" / "42" / "p"


def test_override_outside_allowed_roots_is_refused(
    workspace: FilesystemArtifactWorkspace, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    with pytest.raises(InvalidPathError, match="outside the allowed workspace roots"):
        workspace.lease_output_path("p", "a.txt", workspace=str(elsewhere))
    with pytest.raises(InvalidPathError):
        workspace.read_artifact(".ssh", "id_rsa", workspace=str(Path.home()))
    assert not elsewhere.exists()


@pytest.mark.parametrize(
    "override",
    ["", "relative/dir", "./x", "/a/../b", "/a/./b", "/a\x00b", "~/x", "/" + "x" * 300],
)
def test_malformed_overrides(workspace: FilesystemArtifactWorkspace, override: str) -> None:
    with pytest.raises(InvalidPathError):
        workspace.list_artifacts("p", workspace=override)


def test_configured_override_roots(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    link = tmp_path / "alias"
    allowed.mkdir()
    link.symlink_to(allowed, target_is_directory=True)
    workspace = FilesystemArtifactWorkspace(tmp_path / "ws", override_roots=[link])
    assert workspace.override_roots == [allowed]
    # Named through the configured alias or through its canonical path: both land in `allowed`.
    for override in (str(link / "one"), str(allowed / "two")):
        with workspace.lease_output_path("p", "f.txt", workspace=override) as lease:
            lease.path.write_text("x")
    assert (allowed / "one" / "p" / "f.txt").is_file()
    assert (allowed / "two" / "p" / "f.txt").is_file()
    # The default root is no longer an allowed override, and symlinks below the root are refused.
    with pytest.raises(InvalidPathError):
        workspace.list_artifacts("p", workspace=str(tmp_path / "ws" / "x"))
    (allowed / "jump").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(InvalidPathError):
        workspace.lease_output_path("p", "f.txt", workspace=str(allowed / "jump" / "x"))
    assert not (tmp_path / "x").exists()


def test_host_may_allow_any_folder(tmp_path: Path) -> None:
    workspace = FilesystemArtifactWorkspace(tmp_path / "ws", override_roots=["/"])
    target = tmp_path / "anywhere" / "deep"
    with workspace.lease_output_path("p", "f.txt", workspace=str(target)) as lease:
        lease.path.write_text("x")
    assert (target / "p" / "f.txt").read_text() == "x"


def test_relative_override_root_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidPathError):
        FilesystemArtifactWorkspace(tmp_path / "ws", override_roots=["relative"])


def test_invalid_package_names(workspace: FilesystemArtifactWorkspace) -> None:
    for name in ("", "..", "a/b", ".templiqx-workspace-locks"):
        with pytest.raises(InvalidPathError):
            workspace.list_artifacts(name)
        with pytest.raises(InvalidPathError):
            workspace.lease_output_path(name, "a.txt")
