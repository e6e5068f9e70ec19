"""flock semantics: independent handles block each other even in one process (§4.5, §4.11)."""

from __future__ import annotations

import fcntl
import gc
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from templiqx_contracts import fingerprint, fingerprint_bytes
from templiqx_local import FilesystemArtifactWorkspace, FilesystemPackageStore
from templiqx_local.confined import open_root
from templiqx_local.locking import acquire_lock
from templiqx_ports import BusyError, InvalidPathError, NotFoundError

BLOCKED_FOR = 0.3


class Background:
    """Run ``call`` in a thread and tell whether it is still waiting."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()

        def run() -> None:
            try:
                self.result = call()
            except BaseException as error:
                self.error = error
            finally:
                self.done.set()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def still_blocked(self) -> bool:
        return not self.done.wait(BLOCKED_FOR)

    def finish(self) -> Any:
        assert self.done.wait(10), "the waiter never got the lock"
        if self.error is not None:
            raise self.error
        return self.result


@contextmanager
def external_flock(path: Path, operation: int = fcntl.LOCK_EX) -> Iterator[None]:
    """A lock taken through an independent handle, as another tool or process would."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, operation)
        yield
    finally:
        os.close(fd)


def test_two_handles_in_one_process_block_each_other(tmp_path: Path) -> None:
    with open_root(tmp_path) as root:
        first = acquire_lock(root, "locks", "p", exclusive=True)
        waiter = Background(lambda: acquire_lock(root, "locks", "p", exclusive=True))
        assert waiter.still_blocked()
        first.release()
        second = waiter.finish()
        assert second.held
        second.release()
        assert not second.held
        second.release()  # idempotent


def test_shared_and_exclusive(tmp_path: Path) -> None:
    with open_root(tmp_path) as root:
        reader_one = acquire_lock(root, "locks", "p", exclusive=False)
        reader_two = acquire_lock(root, "locks", "p", exclusive=False)  # shared: no wait
        writer = Background(lambda: acquire_lock(root, "locks", "p", exclusive=True))
        assert writer.still_blocked()
        reader_one.release()
        assert writer.still_blocked()
        reader_two.release()
        held = writer.finish()
        reader = Background(lambda: acquire_lock(root, "locks", "p", exclusive=False))
        assert reader.still_blocked()
        held.release()
        reader.finish().release()


def test_other_packages_are_not_blocked(tmp_path: Path) -> None:
    with open_root(tmp_path) as root, acquire_lock(root, "locks", "a", exclusive=True):
        acquire_lock(root, "locks", "b", exclusive=True).release()


def test_garbage_collected_lock_is_released(tmp_path: Path) -> None:
    with open_root(tmp_path) as root:
        acquire_lock(root, "locks", "p", exclusive=True)  # dropped at once
        gc.collect()
        acquire_lock(root, "locks", "p", exclusive=True).release()


def test_symlinked_lock_folder_or_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "locks").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "root" / "real").mkdir()
    (tmp_path / "root" / "real" / "p.lock").symlink_to(tmp_path / "elsewhere" / "target")
    with open_root(tmp_path / "root") as root:
        with pytest.raises(InvalidPathError):
            acquire_lock(root, "locks", "p", exclusive=True)
        with pytest.raises(InvalidPathError):
            acquire_lock(root, "real", "p", exclusive=True)
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_external_package_lock_serializes_update_and_create(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p")
    token = fingerprint(store.manifest("p"))
    with external_flock(root / ".templiqx-package-locks" / "p.lock"):
        update = Background(
            lambda: store.update_package(
                "p", version="2", description=None, expected_fingerprint=token
            )
        )
        assert update.still_blocked()
        assert store.manifest("p").version == "0.1.0"  # reads take no lock
    assert update.finish().version == "2"
    with external_flock(root / ".templiqx-package-locks" / "q.lock"):
        create = Background(lambda: store.create_package("q", "1"))
        assert create.still_blocked()
        assert not (root / "q").exists()
    assert create.finish().package == "q"


def test_contract_guard_runs_under_the_package_lock(
    store: FilesystemPackageStore, root: Path, kit: Any
) -> None:
    kit.make_package(store, "p")
    inside = threading.Event()
    release = threading.Event()

    def slow_guard(current: str | None) -> None:
        inside.set()
        assert release.wait(10)

    writer = Background(lambda: store.put_contract("p", "a", "one", guard=slow_guard))
    assert inside.wait(10)
    rival = Background(lambda: store.put_contract("p", "a", "two", guard=kit.allow))
    assert rival.still_blocked()
    release.set()
    writer.finish()
    rival.finish()
    assert store.contract_source("p", "a") == "two"


@pytest.fixture
def leased(workspace: FilesystemArtifactWorkspace) -> FilesystemArtifactWorkspace:
    with workspace.lease_output_path("p", "out/result.txt") as lease:
        lease.path.write_text("result")
    return workspace


def test_reader_waits_for_writer_lease(leased: FilesystemArtifactWorkspace) -> None:
    lease = leased.lease_output_path("p", "out/result.txt")
    lease.path.write_text("partial")
    reader = Background(lambda: leased.read_artifact("p", "out/result.txt"))
    lister = Background(lambda: leased.list_artifacts("p"))
    assert reader.still_blocked()
    assert not lister.done.is_set()
    lease.path.write_text("complete!")
    lease.release()
    assert reader.finish() == b"complete!"
    assert [(a.path, a.size) for a in lister.finish()] == [("out/result.txt", 9)]


def test_delete_waits_for_writer_lease(leased: FilesystemArtifactWorkspace) -> None:
    with leased.lease_output_path("p", "other.txt") as lease:
        deleter = Background(
            lambda: leased.delete_artifact(
                "p", "out/result.txt", expected_fingerprint=fingerprint_bytes(b"result")
            )
        )
        assert deleter.still_blocked()
        assert lease.held
    assert not lease.held
    assert deleter.finish() == b"result"


def test_leases_are_exclusive(leased: FilesystemArtifactWorkspace) -> None:
    first = leased.lease_output_path("p", "a.txt")
    second = Background(lambda: leased.lease_output_path("p", "b.txt"))
    assert second.still_blocked()
    other_package = leased.lease_output_path("q", "a.txt")  # another package is independent
    other_package.release()
    first.release()
    second.finish().release()


def test_readers_share(leased: FilesystemArtifactWorkspace) -> None:
    lock = leased.root / ".templiqx-workspace-locks" / "p.lock"
    with external_flock(lock, fcntl.LOCK_SH):
        assert leased.read_artifact("p", "out/result.txt") == b"result"
        assert len(leased.list_artifacts("p")) == 1
        lease = Background(lambda: leased.lease_output_path("p", "x.txt"))
        assert lease.still_blocked()
    lease.finish().release()


def test_workspace_lock_files_persist(leased: FilesystemArtifactWorkspace) -> None:
    lock = leased.root / ".templiqx-workspace-locks" / "p.lock"
    inode = os.stat(lock).st_ino
    leased.delete_artifact("p", "out/result.txt", expected_fingerprint=fingerprint_bytes(b"result"))
    assert os.stat(lock).st_ino == inode


# --- bounded waits (issue #16) --------------------------------------------------------------


def test_a_lock_held_elsewhere_ends_in_busy_after_the_timeout(
    root: Path, kit: Any, tmp_path: Path
) -> None:
    store = FilesystemPackageStore(root, lock_timeout=0.2)
    kit.make_package(store, "p")
    token = fingerprint(store.manifest("p"))
    with external_flock(root / ".templiqx-package-locks" / "p.lock"):
        started = time.monotonic()
        with pytest.raises(BusyError) as raised:
            store.update_package("p", version="2", description=None, expected_fingerprint=token)
        waited = time.monotonic() - started
        assert 0.2 <= waited < 5
        assert raised.value.code == "TQX_BUSY"
        assert str(raised.value) == (
            "busy: 'p' is locked by another writer and stayed locked for 0.2 s "
            "(.templiqx-package-locks/p.lock)"
        )
        assert raised.value.help is not None
        assert "retry in a moment" in raised.value.help
        kit.make_package(store, "other")  # another package is not held up
    assert (
        store.update_package("p", version="2", description=None, expected_fingerprint=token).version
        == "2"
    )
    workspace = FilesystemArtifactWorkspace(tmp_path / "ws", lock_timeout=0.2)
    with workspace.lease_output_path("p", "a.txt") as lease:
        lease.path.write_text("a")
    with external_flock(workspace.root / ".templiqx-workspace-locks" / "p.lock"):
        with pytest.raises(BusyError):
            workspace.read_artifact("p", "a.txt")
        with pytest.raises(BusyError):
            workspace.lease_output_path("p", "b.txt")


def test_a_waiter_gets_the_lock_as_soon_as_it_is_released(tmp_path: Path) -> None:
    with open_root(tmp_path) as root:
        first = acquire_lock(root, "locks", "p", exclusive=True)
        waiter = Background(lambda: acquire_lock(root, "locks", "p", exclusive=True, timeout=30))
        assert waiter.still_blocked()
        released = time.monotonic()
        first.release()
        waiter.finish().release()
        assert time.monotonic() - released < 1  # polled, but finely


# --- reads write nothing (issue #16) --------------------------------------------------------


def test_reads_create_no_workspace_and_no_lock_folder(tmp_path: Path) -> None:
    workspace = FilesystemArtifactWorkspace(tmp_path / "ws")
    assert not (tmp_path / "ws").exists()
    assert workspace.list_artifacts("p") == []
    with pytest.raises(NotFoundError):
        workspace.read_artifact("p", "a.txt")
    with pytest.raises(NotFoundError):
        workspace.delete_artifact("p", "a.txt", expected_fingerprint="0" * 64)
    assert not (tmp_path / "ws").exists()
    (tmp_path / "ws" / "p").mkdir(parents=True)  # artifacts put there by another tool
    (tmp_path / "ws" / "p" / "a.txt").write_text("a")
    assert workspace.read_artifact("p", "a.txt") == b"a"
    assert [a.path for a in workspace.list_artifacts("p")] == ["a.txt"]
    assert sorted(os.listdir(tmp_path / "ws")) == ["p"]
    with workspace.lease_output_path("p", "b.txt") as lease:  # the first write creates them
        lease.path.write_text("b")
    assert sorted(os.listdir(tmp_path / "ws")) == [".templiqx-workspace-locks", "p"]


def test_a_read_that_raced_the_first_writer_reads_again_under_its_lock(tmp_path: Path) -> None:
    workspace = FilesystemArtifactWorkspace(tmp_path / "ws")
    (tmp_path / "ws" / "p").mkdir(parents=True)
    (tmp_path / "ws" / "p" / "a.txt").write_text("old")
    calls: list[str] = []
    real = FilesystemArtifactWorkspace._file

    def racing(*args: Any) -> bytes:
        data = real(*args)
        if not calls:  # a writer starts while the first, unlocked read is under way
            lease = workspace.lease_output_path("p", "a.txt")
            lease.path.write_text("new")
            lease.release()
        calls.append("read")
        return data

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(FilesystemArtifactWorkspace, "_file", staticmethod(racing))
        assert workspace.read_artifact("p", "a.txt") == b"new"
    assert calls == ["read", "read"]


def test_store_reads_and_failed_writes_create_no_lock_folder(root: Path, kit: Any) -> None:
    store = FilesystemPackageStore(root)
    kit.make_package(store, "p")
    locks = root / ".templiqx-package-locks"
    shutil.rmtree(locks)
    store.manifest("p")
    store.discover()
    store.package_identity("p")
    with pytest.raises(NotFoundError):
        store.update_package("nope", version="2", description=None, expected_fingerprint="x")
    assert not locks.exists()


def test_the_lock_folder_ignores_itself_for_version_control(root: Path, kit: Any) -> None:
    store = FilesystemPackageStore(root)
    kit.make_package(store, "p")
    ignore = root / ".templiqx-package-locks" / ".gitignore"
    assert ignore.read_text().splitlines()[-1] == "*"
    assert [d.package for d in store.discover()] == ["p"]
