"""Prepared contracts: loaded contracts kept between calls while their files are unchanged.

Loading a contract (parse, resolve tool-contract references, expand includes) was about 85% of
an ``execute_contract``'s CPU, and the same contract is usually executed many times.
:class:`ContractCache` keeps the outcome of each successful load under ``(package, contract)``
and hands it out again when everything the load read is still the same:

* the contract's source text (its SHA-256: the text is read on every call, parsing is what is
  saved);
* the package manifest the references were resolved against (compared as a value);
* every partial the includes read (each is read again and its SHA-256 compared).

So an edited contract, manifest or partial is picked up by the next call, through any surface,
without a restart; a cached load gives byte-identical envelopes because it *is* the load the
same files produce. Entries are keyed by fingerprints, never by whole documents, and the cache
is bounded both in entries (:data:`MAX_ENTRIES`) and in the source bytes it represents
(:data:`MAX_SOURCE_BYTES`); the least recently used entry goes first. Failed loads are not
kept. It is thread-safe.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from templiqx_contracts import PackageManifest
from templiqx_ports import PackageStore, PortError

if TYPE_CHECKING:
    from templiqx_application.loading import LoadedContract

__all__ = ["MAX_ENTRIES", "MAX_SOURCE_BYTES", "ContractCache", "ReadRecorder", "digest"]

MAX_ENTRIES = 256
"""Loaded contracts kept at most."""

MAX_SOURCE_BYTES = 64 * 1024 * 1024
"""Total size of the sources (contract and partials) the kept loads were made from."""


def digest(data: bytes | str) -> bytes:
    """The SHA-256 of ``data`` (UTF-8 for text)."""
    # surrogatepass: a text with a lone surrogate (which the reader refuses) still has an
    # identity, distinct from every other text's, instead of raising here
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    return hashlib.sha256(raw).digest()


class ReadRecorder:
    """Stands in for the store while includes are expanded, noting every partial read."""

    def __init__(self, store: PackageStore) -> None:
        self._store = store
        self.reads: list[tuple[str, str, bytes]] = []
        self.size = 0

    def artifact_bytes(self, package: str, path: str) -> bytes:
        """The store's bytes, remembered by their digest."""
        data = self._store.artifact_bytes(package, path)
        self.reads.append((package, path, digest(data)))
        self.size += len(data)
        return data

    def __getattr__(self, name: str) -> Any:
        """Every other store method, unrecorded (only partial reads decide a load's validity;
        strict-mode loads, which also read other manifests, are never cached)."""
        return getattr(self._store, name)


@dataclass(frozen=True)
class _Entry:
    source: bytes
    manifest: PackageManifest
    partials: tuple[tuple[str, str, bytes], ...]
    size: int
    loaded: LoadedContract


class ContractCache:
    """Successful contract loads, valid while the files they read are unchanged."""

    def __init__(
        self,
        store: PackageStore,
        *,
        max_entries: int = MAX_ENTRIES,
        max_source_bytes: int = MAX_SOURCE_BYTES,
    ) -> None:
        self._store = store
        self._max_entries = max_entries
        self._max_bytes = max_source_bytes
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(
        self, package: str, contract_id: str, source: str, manifest: PackageManifest
    ) -> LoadedContract | None:
        """The kept load of this contract, if its source, manifest and partials still match."""
        key = (package, contract_id)
        with self._lock:
            entry = self._entries.get(key)
        if entry is None or entry.source != digest(source) or entry.manifest != manifest:
            return None
        for target, path, expected in entry.partials:
            try:
                if digest(self._store.artifact_bytes(target, path)) != expected:
                    return None
            except PortError:
                return None
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
        return entry.loaded

    def put(
        self,
        loaded: LoadedContract,
        source: str,
        manifest: PackageManifest,
        recorder: ReadRecorder,
    ) -> None:
        """Keep ``loaded`` (the load of ``source`` against ``manifest``)."""
        size = len(source) + recorder.size
        if size > self._max_bytes:
            return
        entry = _Entry(digest(source), manifest, tuple(recorder.reads), size, loaded)
        key = (loaded.package, loaded.contract_id)
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self._bytes -= previous.size
            self._entries[key] = entry
            self._bytes += size
            while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.size

    def clear(self) -> None:
        """Forget every kept load."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
