"""The package model: manifest, identity, signatures, lock and the authorized merge context."""

from __future__ import annotations

from typing import Any

import msgspec

from templiqx_contracts.contract import API_VERSION

__all__ = [
    "SIGNATURE_ALGORITHM",
    "AuthorizedMergeContext",
    "LockedDependency",
    "PackageIdentity",
    "PackageLock",
    "PackageManifest",
    "PackageSignature",
    "PackageTrustReport",
    "ToolContractRef",
]

SIGNATURE_ALGORITHM = "sha256-keyed"


class PackageSignature(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A manifest signature ``{key_id, algorithm, value}``."""

    key_id: str
    algorithm: str
    value: str


class ToolContractRef(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A tool-contract table entry: a declared (opaque) fingerprint pin and its JSON Schema."""

    fingerprint: str
    schema: Any


class PackageManifest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """``templiqx.yaml``.

    The first eleven fields are always serialized and therefore have no defaults here (readers
    fill them in); ``dependencies``, ``tool_contracts``, ``translations`` and ``definitions``
    are written only when non-empty. Use :meth:`new` to build a fresh manifest.
    """

    api_version: str
    package: str
    version: str
    description: str
    contracts: list[str]
    components: list[str]
    evals: list[str]
    migrations: list[str]
    templates: list[str]
    provenance: dict[str, str]
    signatures: list[PackageSignature]
    dependencies: dict[str, str] = msgspec.field(default_factory=dict)
    tool_contracts: dict[str, ToolContractRef] = msgspec.field(default_factory=dict)
    translations: list[str] = msgspec.field(default_factory=list)
    definitions: list[str] = msgspec.field(default_factory=list)

    @classmethod
    def new(cls, package: str, version: str, *, description: str = "") -> PackageManifest:
        """A manifest with empty inventories, as ``create_package`` writes it."""
        return cls(
            api_version=API_VERSION,
            package=package,
            version=version,
            description=description,
            contracts=[],
            components=[],
            evals=[],
            migrations=[],
            templates=[],
            provenance={},
            signatures=[],
        )


class PackageIdentity(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What a signature covers: the normalized manifest and the SHA-256 of each artifact."""

    manifest: PackageManifest
    artifacts: dict[str, str]


class PackageTrustReport(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Result of ``verify_package_trust``."""

    identity_fingerprint: str
    strict: bool
    verified_key_ids: list[str]


class LockedDependency(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One ``templiqx.lock`` entry."""

    path: str
    fingerprint: str


class PackageLock(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``templiqx.lock``."""

    dependencies: dict[str, LockedDependency] = msgspec.field(default_factory=dict)


class AuthorizedMergeContext(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The host-issued authorization envelope carried in ``context._templiqx_authorized_merge``."""

    scope_id: str
    policy_decision_id: str
    policy_version: str
    evidence_provenance_id: str
    issued_at: str
    expires_at: str
    fingerprint: str

    def binding(self) -> dict[str, str]:
        """The six bound fields (everything but ``fingerprint``) whose fingerprint it must carry."""
        return {
            "scope_id": self.scope_id,
            "policy_decision_id": self.policy_decision_id,
            "policy_version": self.policy_version,
            "evidence_provenance_id": self.evidence_provenance_id,
            "issued_at": self.issued_at,
            "expires_at": self.expires_at,
        }
