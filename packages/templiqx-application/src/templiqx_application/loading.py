"""The contract load pipeline: read → parse → resolve tool-contract refs → expand includes.

Every contract-addressed operation sees contracts through this pipeline, and the fingerprint of
its result is the contract's compare-and-swap token (DECISIONS 13): what ``inspect_contract``
reports is what ``put_contract`` and ``delete_contract`` accept. The loaded contract is not
validated here; callers validate or compile it — except when it does not parse: then the load
reports every parse problem and the static problems of what did parse (those that are not
consequences of a parse problem), all with their line and column, so one run shows them all.

Successful loads are kept in a :class:`~templiqx_application.prepared.ContractCache` and
reused while the contract's source, the manifest and every included partial are unchanged, so
repeated executions skip the parsing (prepared contracts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from templiqx_application.coverage import unlisted_contract
from templiqx_application.diagnostics import contract_file, port_diagnostic, with_file
from templiqx_application.includes import expand_includes
from templiqx_application.prepared import ContractCache, ReadRecorder
from templiqx_application.signing import signing_key, strict_from_environment, verify_signatures
from templiqx_contracts import (
    CanonicalJSONError,
    Contract,
    Diagnostic,
    PackageManifest,
    fingerprint,
    has_errors,
)
from templiqx_core import ContractSource, resolve_tool_contract_refs, validate_contract
from templiqx_ports import InvalidDataError, NotFoundError, PackageStore, PortError

__all__ = ["ContractLoader", "LoadedContract"]


@dataclass(frozen=True)
class LoadedContract:
    """The outcome of loading one contract.

    ``source`` is the text that was read (``None`` when reading failed); ``contract`` the
    loaded contract (``None`` when any step failed, with ``diagnostics`` saying why);
    ``manifest`` the package manifest the load resolved tool-contract references against
    (``None`` when it was not reached or could not be read), for callers that need it next;
    ``parsed`` the contract as parsed from ``source``, its includes not expanded (``None`` when
    the text was not parsed or does not parse), so that a caller auditing the includes of the
    same text does not parse it again.
    """

    package: str
    contract_id: str
    source: str | None
    contract: Contract | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    manifest: PackageManifest | None = None
    parsed: Contract | None = field(default=None, compare=False, repr=False)

    @property
    def token(self) -> str | None:
        """The compare-and-swap token of the stored contract.

        The fingerprint of the loaded contract; for a stored contract that does not load, the
        fingerprint of its source text (so a broken contract can still be repaired or
        removed); ``None`` when nothing could be read, or the contract cannot be fingerprinted.
        """
        try:
            if self.contract is not None:
                return fingerprint(self.contract)
            if self.source is not None:
                return fingerprint(self.source)
        except CanonicalJSONError:
            return None
        return None


class ContractLoader:
    """Loads contracts from a package store through the full pipeline."""

    def __init__(self, store: PackageStore) -> None:
        self._store = store
        self.cache = ContractCache(store)

    def load(
        self, package: str, contract_id: str, *, manifest: PackageManifest | None = None
    ) -> LoadedContract:
        """Read ``contracts/<contract_id>.yaml`` of ``package`` and load it.

        ``manifest``: the package's manifest when the caller has already read it (otherwise
        the load reads it). In strict mode (``TEMPLIQX_PACKAGE_STRICT=1``) a contract the
        manifest does not list is refused: no signature covers it; and in a signed package
        every signature must still verify (a listed file changed since signing is refused).
        """
        try:
            source = self._store.contract_source(package, contract_id)
        except NotFoundError as exc:
            # A missing package is named by the store; a missing contract gets its portable
            # label, never a host path, so every surface reports it identically.
            missing = (
                exc if exc.detail == package else NotFoundError(contract_file(package, contract_id))
            )
            return LoadedContract(package, contract_id, None, None, [port_diagnostic(missing)])
        except InvalidDataError as exc:
            return LoadedContract(
                package, contract_id, None, None, self._undecodable(package, contract_id, exc)
            )
        except PortError as exc:
            label = contract_file(package, contract_id)
            return LoadedContract(
                package, contract_id, None, None, [with_file(port_diagnostic(exc), label)]
            )
        if strict_from_environment():
            manifest = manifest if manifest is not None else self._manifest(package)
            unlisted = unlisted_contract(package, contract_id, manifest)
            if unlisted is not None:
                return LoadedContract(package, contract_id, source, None, [unlisted], manifest)
            forged = self._signature_problems(package, manifest)
            if forged:
                return LoadedContract(package, contract_id, source, None, forged, manifest)
        return self.load_source(package, contract_id, source, manifest=manifest)

    def _signature_problems(
        self, package: str, manifest: PackageManifest | None
    ) -> list[Diagnostic]:
        """In strict mode, a signed package whose files no longer match its signatures.

        Issue #29: strict mode checked at load only that files were listed; a tampered listed
        file compiled. A package that carries signatures is now verified on every strict load
        (its identity hashes every listed file, the lock and the manifest), and refused unless
        every signature verifies under ``TEMPLIQX_PACKAGE_SIGNING_KEY``. An unsigned package
        keeps the coverage check alone (``validate_package`` reports it as unsigned).
        """
        if manifest is None or not manifest.signatures:
            return []
        try:
            identity = self._store.package_identity(package)
        except PortError as exc:
            return [port_diagnostic(exc)]
        problems: list[Diagnostic] = []
        verify_signatures(
            identity, manifest.signatures, signing_key(), strict=True, diagnostics=problems
        )
        return [with_file(problem, f"{package}/templiqx.yaml") for problem in problems]

    def load_source(
        self,
        package: str,
        contract_id: str,
        source: str,
        *,
        manifest: PackageManifest | None = None,
    ) -> LoadedContract:
        """Load ``source`` as if it were stored as ``contracts/<contract_id>.yaml``.

        A load of the same source against the same manifest and partials is reused.
        """
        if manifest is None:
            manifest = self._manifest(package)
        # A strict load also checks that signatures cover every included file, which reads
        # other packages' manifests: it is never served from (or kept in) the cache.
        cacheable = manifest is not None and not strict_from_environment()
        if cacheable and manifest is not None:
            kept = self.cache.get(package, contract_id, source, manifest)
            if kept is not None:
                return kept
        read = ContractSource(source, file=contract_file(package, contract_id))
        parsed = read.contract
        if parsed is None:
            tools = manifest.tool_contracts if manifest is not None else None
            diagnostics = read.diagnostics + read.problems_beyond_parsing(tools)
            return LoadedContract(package, contract_id, source, None, diagnostics, manifest)
        ref_diagnostics = read.locate(_resolve_refs(parsed, manifest))
        if ref_diagnostics:
            return LoadedContract(
                package, contract_id, source, None, ref_diagnostics, manifest, parsed
            )
        recorder = ReadRecorder(self._store)
        expanded, include_diagnostics = expand_includes(
            cast(PackageStore, recorder), parsed, package
        )
        if expanded is None:
            # an include problem is about this contract (its include node) unless it names the
            # partial it found in; one with the include node's pointer is located in the text
            located = read.locate(include_diagnostics, as_written=True)
            return LoadedContract(package, contract_id, source, None, located, manifest, parsed)
        loaded = LoadedContract(package, contract_id, source, expanded, [], manifest, parsed)
        # Only a valid contract is kept (its validation is cached too, so the caller's own
        # validation costs nothing more): a refused one must leave nothing behind.
        if cacheable and manifest is not None and not has_errors(validate_contract(expanded)):
            self.cache.put(loaded, source, manifest, recorder)
        return loaded

    def _undecodable(
        self, package: str, contract_id: str, exc: InvalidDataError
    ) -> list[Diagnostic]:
        """A contract the store read but could not decode (not UTF-8): the parser's own
        located diagnostic of its bytes (``TQX_PARSE_ENCODING`` at the first bad byte)."""
        label = contract_file(package, contract_id)
        try:
            data = self._store.artifact_bytes(package, f"contracts/{contract_id}.yaml")
        except PortError:
            data = None
        if data is not None:
            found = ContractSource(data, file=label).diagnostics
            if found:
                return found
        return [with_file(port_diagnostic(exc), label)]

    def _manifest(self, package: str) -> PackageManifest | None:
        try:
            return self._store.manifest(package)
        except PortError:
            # A manifest that cannot be read leaves references unresolved; the contract then
            # fails its ordinary validation, and package operations report the manifest.
            return None


def _resolve_refs(contract: Contract, manifest: PackageManifest | None) -> list[Diagnostic]:
    """Resolve the tool-contract references in place; the diagnostics when that failed."""
    if manifest is None or not manifest.tool_contracts:
        return []
    # Resolves in place, all or nothing; the contract was freshly parsed for this load.
    diagnostics = resolve_tool_contract_refs(contract, manifest.tool_contracts)
    if any(d.severity == "error" for d in diagnostics):
        return diagnostics
    return []
