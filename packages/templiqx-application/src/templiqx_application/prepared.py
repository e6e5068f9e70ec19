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
is bounded both in entries (:data:`MAX_ENTRIES`) and in the memory its entries hold
(:data:`MAX_PREPARED_BYTES`, estimated from each loaded contract's values and text by
:func:`prepared_weight`, never from its source: issue #29 found 8 KB contracts whose aliases
expanded to 64 MiB each), within the process-wide ceiling every cache shares
(:mod:`templiqx_contracts.lru`); the least recently used entry goes first. Only loads of valid
contracts are kept: a failed load, or one that validation refuses, leaves nothing behind. It is
thread-safe.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from templiqx_contracts import LRU, PackageManifest
from templiqx_contracts.lru import value_shape
from templiqx_ports import PackageStore, PortError

if TYPE_CHECKING:
    from templiqx_application.loading import LoadedContract

__all__ = [
    "MAX_ENTRIES",
    "MAX_PREPARED_BYTES",
    "ContractCache",
    "ReadRecorder",
    "digest",
    "prepared_weight",
]

MAX_ENTRIES: Final = 256
"""Loaded contracts kept at most."""

MAX_PREPARED_BYTES: Final = 64 * 1024 * 1024
"""Total estimated memory of the kept loads (:func:`prepared_weight`) at most."""

_NODE_BYTES: Final = 160
"""What one value of a loaded contract holds, at most (a struct, dict or list slot with its
object; measured: 25-105 bytes retained a YAML node)."""


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


def prepared_weight(loaded: LoadedContract, source: str, partial_bytes: int) -> int:
    """A conservative estimate of the bytes a kept load holds: every value and struct field of
    the loaded contract at :data:`_NODE_BYTES`, its text, and the source and partial texts."""
    nodes, text = value_shape(loaded.contract)
    return nodes * _NODE_BYTES + text + len(source) + partial_bytes


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
        max_bytes: int = MAX_PREPARED_BYTES,
    ) -> None:
        self._store = store
        self._entries: LRU[tuple[str, str], _Entry] = LRU(
            max_entries, max_weight=max_bytes, weigh=lambda entry: entry.size
        )

    def get(
        self, package: str, contract_id: str, source: str, manifest: PackageManifest
    ) -> LoadedContract | None:
        """The kept load of this contract, if its source, manifest and partials still match."""
        entry = self._entries.get((package, contract_id))
        if entry is None or entry.source != digest(source) or entry.manifest != manifest:
            return None
        for target, path, expected in entry.partials:
            try:
                if digest(self._store.artifact_bytes(target, path)) != expected:
                    return None
            except PortError:
                return None
        return entry.loaded

    def put(
        self,
        loaded: LoadedContract,
        source: str,
        manifest: PackageManifest,
        recorder: ReadRecorder,
    ) -> None:
        """Keep ``loaded`` (the load of ``source`` against ``manifest``)."""
        size = prepared_weight(loaded, source, recorder.size)
        entry = _Entry(digest(source), manifest, tuple(recorder.reads), size, loaded)
        self._entries.put((loaded.package, loaded.contract_id), entry)

    def forget(self, package: str, contract_id: str) -> None:
        """Drop the kept load of one contract, if any."""
        self._entries.pop((package, contract_id))

    @property
    def weight(self) -> int:
        """The estimated bytes the kept loads hold."""
        return self._entries.weight

    def clear(self) -> None:
        """Forget every kept load."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
