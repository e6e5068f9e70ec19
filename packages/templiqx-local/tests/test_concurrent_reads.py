"""Reads racing atomic replacements (regression found by the reliability suite, issue #9 R3).

A reader used to fail with ``TQX_PATH_INVALID ... changed while it was being opened`` when a
writer replaced the file between the reader's ``lstat`` and its ``open``: an ordinary concurrent
write, not an attack. The reader now looks the file up again and reads old or new bytes.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from templiqx_local import FilesystemPackageStore, confined
from templiqx_ports import InvalidPathError


def _source(tag: str) -> str:
    return f"id: c\ndescription: {tag}\n"


def test_reads_racing_atomic_replacements_see_whole_files(tmp_path: Path) -> None:
    store = FilesystemPackageStore(tmp_path / "root", create=True)
    store.create_package("p", "0.1.0")
    store.put_contract("p", "c", _source("w0"), guard=lambda _: None)
    stop = threading.Event()

    def write() -> None:
        writer = FilesystemPackageStore(tmp_path / "root")
        n = 0
        while not stop.is_set():
            n += 1
            writer.put_contract("p", "c", _source(f"w{n}"), guard=lambda _: None)

    thread = threading.Thread(target=write)
    thread.start()
    seen: set[str] = set()
    try:
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            seen.add(store.contract_source("p", "c"))
    finally:
        stop.set()
        thread.join()
    assert len(seen) > 1  # the writer really raced the reader
    assert all(text.startswith("id: c\ndescription: w") for text in seen)


def test_a_file_that_never_stops_changing_is_still_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FilesystemPackageStore(tmp_path / "root", create=True)
    store.create_package("p", "0.1.0")
    store.put_contract("p", "c", _source("w0"), guard=lambda _: None)
    other = os.lstat(store.root / "p" / "templiqx.yaml")  # a different inode, every time
    real = confined.lstat_entry

    def stale(parent: confined.DirHandle, name: str, *, display: str) -> os.stat_result | None:
        info = real(parent, name, display=display)
        return other if name == "c.yaml" and info is not None else info

    monkeypatch.setattr(confined, "lstat_entry", stale)
    with pytest.raises(InvalidPathError, match="changed while it was being opened"):
        store.contract_source("p", "c")
