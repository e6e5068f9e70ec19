"""validate_contract and validate_package."""

from __future__ import annotations

from templiqx_application.context import ServiceContext, envelope, port_failure
from templiqx_application.coverage import DEPENDENCY_UNPINNED, FILE_UNLISTED, inventory
from templiqx_application.diagnostics import (
    address,
    error,
    fingerprint_or_diagnostic,
    port_diagnostic,
    with_file,
)
from templiqx_application.includes import package_coverage, uncovered_includes
from templiqx_application.loading import LoadedContract
from templiqx_application.packages import normalized_manifest, version_problem
from templiqx_application.signing import signing_key, strict_from_environment, verify_signatures
from templiqx_contracts import (
    API_VERSION,
    Contract,
    ContractSummary,
    Diagnostic,
    OperationEnvelope,
    PackageIdentity,
    PackageLock,
    PackageManifest,
    fingerprint,
    fingerprint_bytes,
    has_errors,
    quote_input,
)
from templiqx_core import SourceMap, parse_lock
from templiqx_core import validate_contract as core_validate_contract
from templiqx_ports import NotFoundError, PortError

__all__ = ["validate_contract", "validate_contract_source", "validate_package"]

LOCK_FILE = "templiqx.lock"


def validate_contract(ctx: ServiceContext, package: str, contract: str) -> OperationEnvelope:
    """Validate one loaded contract; the summary is the result even when it is invalid."""
    return _validated(ctx, package, contract, ctx.loader.load(package, contract))


def validate_contract_source(
    ctx: ServiceContext, package: str, contract: str, source: str
) -> OperationEnvelope:
    """Validate ``source`` as if it were stored as the package's ``contracts/<contract>.yaml``
    (its includes, partials and tool contracts resolved against the package), writing nothing:
    the envelope ``validate_contract`` would answer once it is saved. For editors that check
    an edit before it is saved with ``put_contract``."""
    return _validated(ctx, package, contract, ctx.loader.load_source(package, contract, source))


def _validated(
    ctx: ServiceContext, package: str, contract: str, loaded: LoadedContract
) -> OperationEnvelope:
    operation = "validate_contract"
    if loaded.contract is None:
        return envelope(operation, diagnostics=loaded.diagnostics)
    diagnostics = address(
        _static_problems(loaded.contract, contract), package, contract, source=loaded.source
    )
    if loaded.source is not None:  # warn about included files the signatures do not cover
        diagnostics += uncovered_includes(
            ctx.store, package, contract, loaded.source, parsed=loaded.parsed
        )
    value, problems = fingerprint_or_diagnostic(loaded.contract)
    if value is None:
        return envelope(operation, diagnostics=diagnostics + problems)
    summary = ContractSummary(
        package=package, id=loaded.contract.id, version=loaded.contract.version, fingerprint=value
    )
    return envelope(
        operation, result=summary, diagnostics=diagnostics, fingerprints={"contract": value}
    )


def _static_problems(contract: Contract, contract_id: str) -> list[Diagnostic]:
    """The core's static problems of a loaded contract, and an id that is not its file name
    (unless the id is malformed: that one problem is reported, not also its consequence)."""
    found = core_validate_contract(contract)
    if any(d.code == "TQX_INVALID_ID" for d in found):
        return found
    return _id_mismatch(contract.id, contract_id) + found


def _id_mismatch(found: str, contract_id: str) -> list[Diagnostic]:
    """A contract whose ``id`` is not its file name (``contracts/<id>.yaml``, the manifest's
    inventory id): placed at the ``id`` in the contract, where it is fixed."""
    if found == contract_id:
        return []
    return [
        error(
            "TQX_CONTRACT_INVENTORY_ID",
            f"contract id {quote_input(found)} does not match its file name "
            f"contracts/{contract_id}.yaml and inventory id {quote_input(contract_id)}",
            "/id",
        )
    ]


def _manifest_checks(package: str, manifest: PackageManifest) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = []
    if manifest.api_version != API_VERSION:
        diagnostics.append(
            error("TQX_MANIFEST_API_VERSION", "unsupported manifest api_version", "/api_version")
        )
    if manifest.package != package:
        diagnostics.append(
            error("TQX_MANIFEST_PACKAGE", "manifest package does not match directory", "/package")
        )
    problem = version_problem(manifest.version)
    if problem is not None:
        diagnostics.append(problem)
    return diagnostics


def _hash_inventory(
    ctx: ServiceContext, package: str, manifest: PackageManifest, diagnostics: list[Diagnostic]
) -> dict[str, str]:
    hashes: dict[str, str] = {}
    seen: set[str] = set()
    for path, pointer in inventory(manifest):
        if path in seen:
            diagnostics.append(
                error(
                    "TQX_INVENTORY_DUPLICATE",
                    f"artifact '{path}' is listed more than once",
                    pointer,
                )
            )
            continue
        seen.add(path)
        try:
            hashes[path] = fingerprint_bytes(ctx.store.artifact_bytes(package, path))
        except PortError as exc:
            diagnostic = port_diagnostic(exc)
            diagnostics.append(
                Diagnostic.error(
                    diagnostic.code, diagnostic.message, pointer, file=f"{package}/{path}"
                )
            )
    return hashes


def _read_lock(
    ctx: ServiceContext, package: str, hashes: dict[str, str], diagnostics: list[Diagnostic]
) -> tuple[PackageLock | None, bool]:
    """The parsed lock (an empty one when it is invalid) and whether a lock file exists."""
    try:
        data = ctx.store.artifact_bytes(package, LOCK_FILE)
    except NotFoundError:
        return None, False
    except PortError as exc:
        # Present but unreadable (a symlink, too large, an I/O error): invalid, not absent.
        diagnostics.append(
            error("TQX_LOCK_INVALID", f"templiqx.lock is not valid: {exc}", "/templiqx.lock")
        )
        return PackageLock(), True
    hashes[LOCK_FILE] = fingerprint_bytes(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        detail = f"not UTF-8 ({exc})"
    else:
        lock, parse_diagnostics = parse_lock(text, file=f"{package}/{LOCK_FILE}")
        if lock is not None:
            return lock, True
        detail = parse_diagnostics[0].message if parse_diagnostics else "unreadable"
    diagnostics.append(
        error("TQX_LOCK_INVALID", f"templiqx.lock is not valid: {detail}", "/templiqx.lock")
    )
    return PackageLock(), True


def _dependency_checks(
    ctx: ServiceContext,
    manifest: PackageManifest,
    lock: PackageLock | None,
    lock_present: bool,
) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = []
    if manifest.dependencies and not lock_present:
        diagnostics.append(
            error(
                "TQX_LOCK_MISSING",
                "package declares dependencies but has no templiqx.lock",
                "/dependencies",
            )
        )
        return diagnostics
    pinned = lock.dependencies if lock is not None else {}
    for name in sorted(manifest.dependencies):
        pointer = f"/dependencies/{name}"
        entry = pinned.get(name)
        if entry is None:
            diagnostics.append(
                error(
                    "TQX_LOCK_DRIFT", f"dependency '{name}' is not pinned in templiqx.lock", pointer
                )
            )
        elif entry.fingerprint != manifest.dependencies[name]:
            diagnostics.append(
                error(
                    "TQX_LOCK_DRIFT",
                    f"lock fingerprint for '{name}' differs from manifest",
                    pointer,
                )
            )
        else:
            try:
                ctx.store.manifest(name)
            except PortError:
                diagnostics.append(
                    error(
                        "TQX_DEPENDENCY_ROOT_MISSING",
                        f"dependency '{name}' root not found in workspace",
                        pointer,
                    )
                )
    for name in sorted(pinned):
        if name not in manifest.dependencies:
            diagnostics.append(
                error(
                    "TQX_LOCK_DRIFT",
                    f"templiqx.lock pins '{name}' which the manifest does not declare",
                    "/templiqx.lock",
                )
            )
    return diagnostics


_COVERAGE_CODES = frozenset({FILE_UNLISTED, DEPENDENCY_UNPINNED})


def _coverage_warnings(
    ctx: ServiceContext,
    package: str,
    manifest: PackageManifest,
    found: list[Diagnostic],
    parsed: dict[str, tuple[str, Contract]],
) -> list[Diagnostic]:
    """A warning per included file the signatures do not cover, in every mode.

    In strict mode loading already refused the first such file of each contract; that file
    is not reported twice. ``parsed``: the contracts the loads parsed (not parsed again).
    """
    refused = {d.file for d in found if d.code in _COVERAGE_CODES}
    return [
        d
        for d in package_coverage(ctx.store, package, manifest, strict=False, parsed=parsed)
        if d.file not in refused
    ]


def validate_package(ctx: ServiceContext, package: str) -> OperationEnvelope:
    """Validate manifest, inventory, contracts, lock, dependencies and signatures.

    Included files the signatures do not cover are warnings (errors in strict mode, where
    loading the contracts that include them is refused).

    The contract summaries are the result even when the package is invalid; the ``package``
    fingerprint (the package identity's) is present only when it is valid.
    """
    operation = "validate_package"
    try:
        manifest = ctx.store.manifest(package)
    except PortError as exc:
        return port_failure(operation, exc)
    diagnostics = _manifest_checks(package, manifest)
    hashes = _hash_inventory(ctx, package, manifest, diagnostics)
    summaries: list[ContractSummary] = []
    parsed: dict[str, tuple[str, Contract]] = {}
    for contract_id in manifest.contracts:
        loaded = ctx.loader.load(package, contract_id, manifest=manifest)
        if loaded.source is not None and loaded.parsed is not None:
            parsed[contract_id] = (loaded.source, loaded.parsed)
        if loaded.contract is None:
            if loaded.source is None:  # not read: the inventory check may have said so already
                said = {(d.code, d.file) for d in diagnostics}
                diagnostics.extend(d for d in loaded.diagnostics if (d.code, d.file) not in said)
            else:
                diagnostics.extend(loaded.diagnostics)
            continue
        contract = loaded.contract
        diagnostics.extend(
            address(
                _static_problems(contract, contract_id),
                package,
                contract_id,
                source=loaded.source,
            )
        )
        value, problems = fingerprint_or_diagnostic(contract)
        diagnostics.extend(problems)
        summaries.append(
            ContractSummary(
                package=package, id=contract.id, version=contract.version, fingerprint=value or ""
            )
        )
    diagnostics.extend(_coverage_warnings(ctx, package, manifest, diagnostics, parsed))
    lock, lock_present = _read_lock(ctx, package, hashes, diagnostics)
    diagnostics.extend(_dependency_checks(ctx, manifest, lock, lock_present))
    identity = PackageIdentity(
        manifest=normalized_manifest(manifest), artifacts=dict(sorted(hashes.items()))
    )
    verify_signatures(
        identity,
        manifest.signatures,
        signing_key(),
        strict=strict_from_environment(),
        diagnostics=diagnostics,
    )
    fingerprints = {} if has_errors(diagnostics) else {"package_identity": fingerprint(identity)}
    diagnostics = _in_package_files(ctx, package, diagnostics)
    return envelope(operation, result=summaries, diagnostics=diagnostics, fingerprints=fingerprints)


MANIFEST_FILE = "templiqx.yaml"


def _in_package_files(
    ctx: ServiceContext, package: str, diagnostics: list[Diagnostic]
) -> list[Diagnostic]:
    """Give the package's own diagnostics their file (and, in the manifest, line and column).

    A diagnostic of ``validate_package`` with a pointer and no file is about ``templiqx.yaml``
    (its pointer addresses the manifest), or about the lock when its pointer is
    ``/templiqx.lock``.
    """
    lock_pointer = "/" + LOCK_FILE
    pending = [d for d in diagnostics if d.file is None and d.json_pointer]
    if not pending:
        return diagnostics
    try:
        manifest: SourceMap | None = SourceMap(ctx.store.artifact_bytes(package, MANIFEST_FILE))
    except PortError:
        manifest = None
    label = f"{package}/{MANIFEST_FILE}"
    placed: list[Diagnostic] = []
    for diagnostic in diagnostics:
        if diagnostic.file is None and diagnostic.json_pointer == lock_pointer:
            diagnostic = with_file(diagnostic, f"{package}/{LOCK_FILE}")
        elif diagnostic.file is None and diagnostic.json_pointer:
            located = manifest.locate([diagnostic], label) if manifest is not None else None
            diagnostic = located[0] if located else with_file(diagnostic, label)
        placed.append(diagnostic)
    return placed
