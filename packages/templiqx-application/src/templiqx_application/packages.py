"""Package operations: discovery, lifecycle (compare-and-swap), identity and trust."""

from __future__ import annotations

import msgspec

from templiqx_application.context import ServiceContext, envelope, port_failure
from templiqx_application.diagnostics import error
from templiqx_application.includes import package_coverage
from templiqx_application.signing import (
    SIGNING_KEY_ENV,
    signature_value,
    signing_key,
    verify_signatures,
)
from templiqx_contracts import (
    SIGNATURE_ALGORITHM,
    Diagnostic,
    OperationEnvelope,
    PackageIdentity,
    PackageManifest,
    PackageSignature,
    PackageTrustReport,
    fingerprint,
)
from templiqx_core import is_semver
from templiqx_ports import PortError

__all__ = [
    "create_package",
    "delete_package",
    "discover_packages",
    "export_package_identity",
    "normalized_manifest",
    "sign_package",
    "update_package",
    "verify_package_trust",
    "version_problem",
]


def normalized_manifest(manifest: PackageManifest) -> PackageManifest:
    """The manifest as the identity covers it: no signatures, inventory lists sorted.

    ``definitions`` keeps its order (as in the reference). The filesystem store builds its
    package identities with this function too.
    """
    return msgspec.structs.replace(
        manifest,
        signatures=[],
        contracts=sorted(manifest.contracts),
        components=sorted(manifest.components),
        evals=sorted(manifest.evals),
        migrations=sorted(manifest.migrations),
        templates=sorted(manifest.templates),
        translations=sorted(manifest.translations),
    )


def version_problem(version: str) -> Diagnostic | None:
    """``TQX_MANIFEST_VERSION_INVALID`` at ``/version`` unless ``version`` is SemVer."""
    if is_semver(version):
        return None
    return error(
        "TQX_MANIFEST_VERSION_INVALID", "manifest version must be semantic versioning", "/version"
    )


def discover_packages(ctx: ServiceContext) -> OperationEnvelope:
    """Every package under the root."""
    operation = "discover_packages"
    try:
        manifests = ctx.store.discover()
    except PortError as exc:
        return port_failure(operation, exc)
    return envelope(operation, result=manifests)


def create_package(ctx: ServiceContext, name: str, version: str) -> OperationEnvelope:
    """Bootstrap an empty package; fingerprint ``package`` (the manifest's CAS token, which the
    next write of the package expects)."""
    operation = "create_package"
    problem = version_problem(version)
    if problem is not None:
        return envelope(operation, diagnostics=[problem])
    try:
        manifest = ctx.store.create_package(name, version)
    except PortError as exc:
        return port_failure(operation, exc)
    return envelope(operation, result=manifest, fingerprints={"package": fingerprint(manifest)})


def update_package(
    ctx: ServiceContext,
    package: str,
    expected_fingerprint: str,
    version: str | None,
    description: str | None,
) -> OperationEnvelope:
    """Set version and/or description if the manifest is unchanged; clears signatures."""
    operation = "update_package"
    if version is None and description is None:
        return envelope(
            operation,
            diagnostics=[
                error("TQX_PACKAGE_UPDATE_EMPTY", "version or description must be provided", "/")
            ],
        )
    if version is not None:
        problem = version_problem(version)
        if problem is not None:
            return envelope(operation, diagnostics=[problem])
    try:
        manifest = ctx.store.update_package(
            package,
            version=version,
            description=description,
            expected_fingerprint=expected_fingerprint,
        )
    except PortError as exc:
        return port_failure(operation, exc)
    return envelope(operation, result=manifest, fingerprints={"package": fingerprint(manifest)})


def delete_package(
    ctx: ServiceContext, package: str, expected_fingerprint: str
) -> OperationEnvelope:
    """Remove a package; the result is its manifest as it was, fingerprint ``package`` its
    manifest's last CAS token."""
    operation = "delete_package"
    try:
        manifest = ctx.store.manifest(package)
        removed = ctx.store.delete_package(package, expected_fingerprint)
    except PortError as exc:
        return port_failure(operation, exc)
    return envelope(operation, result=manifest, fingerprints={"package": removed})


_CONSISTENT_READ_ATTEMPTS = 8


def export_package_identity(ctx: ServiceContext, package: str) -> OperationEnvelope:
    """The identity; fingerprints ``package_identity`` and ``manifest`` (the signing CAS token).

    The manifest and the identity are two reads of a store that takes no read lock; they are
    repeated until the identity covers the manifest that was read, so the ``manifest`` token
    always belongs to the state the result shows (a concurrent write in between used to pair
    one state's identity with another's token).
    """
    operation = "export_package_identity"
    for _ in range(_CONSISTENT_READ_ATTEMPTS):
        try:
            manifest = ctx.store.manifest(package)
            identity = ctx.store.package_identity(package)
        except PortError as exc:
            return port_failure(operation, exc)
        if identity.manifest == normalized_manifest(manifest):
            return envelope(
                operation,
                result=identity,
                fingerprints={
                    "package_identity": fingerprint(identity),
                    "manifest": fingerprint(manifest),
                },
            )
    return envelope(
        operation,
        diagnostics=[
            error(
                "TQX_CAS_CONFLICT",
                f"package '{package}' kept changing while its identity was read; retry",
            )
        ],
    )


def sign_package(
    ctx: ServiceContext, package: str, key_id: str, expected_fingerprint: str
) -> OperationEnvelope:
    """Attach a ``sha256-keyed`` signature over the identity; fingerprint ``package``."""
    operation = "sign_package"
    key = signing_key()
    if key is None:
        return envelope(
            operation,
            diagnostics=[
                error(
                    "TQX_PACKAGE_SIGNING_KEY_MISSING",
                    f"{SIGNING_KEY_ENV} is required for local dev/CI signing",
                    "/signatures",
                )
            ],
        )
    try:
        identity = ctx.store.package_identity(package)
        signature = PackageSignature(
            key_id=key_id,
            algorithm=SIGNATURE_ALGORITHM,
            value=signature_value(identity, key, key_id),
        )
        manifest = ctx.store.attach_package_signature(
            package,
            signature,
            expected_fingerprint=expected_fingerprint,
            identity_fingerprint=fingerprint(identity),
        )
    except PortError as exc:
        return port_failure(operation, exc)
    return envelope(operation, result=manifest, fingerprints={"package": fingerprint(manifest)})


def verify_package_trust(ctx: ServiceContext, package: str, strict: bool) -> OperationEnvelope:
    """Verify the signatures with the environment's key; the report is always the result.

    Included files the signatures do not cover are warnings, and errors when ``strict``.
    """
    operation = "verify_package_trust"
    try:
        identity = ctx.store.package_identity(package)
        manifest = ctx.store.manifest(package)
    except PortError as exc:
        return port_failure(operation, exc)
    uncovered = package_coverage(ctx.store, package, manifest, strict=strict)
    return _trust_envelope(operation, identity, manifest.signatures, strict, uncovered)


def _trust_envelope(
    operation: str,
    identity: PackageIdentity,
    signatures: list[PackageSignature],
    strict: bool,
    uncovered: list[Diagnostic],
) -> OperationEnvelope:
    diagnostics = list(uncovered)
    identity_fingerprint = fingerprint(identity)
    verified = verify_signatures(
        identity, signatures, signing_key(), strict=strict, diagnostics=diagnostics
    )
    report = PackageTrustReport(
        identity_fingerprint=identity_fingerprint, strict=strict, verified_key_ids=verified
    )
    return envelope(
        operation,
        result=report,
        diagnostics=diagnostics,
        fingerprints={"package_identity": identity_fingerprint},
    )
