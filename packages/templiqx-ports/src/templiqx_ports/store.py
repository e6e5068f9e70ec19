"""Storage ports: the package store and the artifact workspace.

Every method raises a :class:`~templiqx_ports.errors.PortError` on failure (never a bare
``OSError``). Paths given to these ports are package-relative portable paths (``/`` separated);
implementations confine them to their roots and refuse symlinks.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from templiqx_contracts import (
    PackageIdentity,
    PackageManifest,
    PackageSignature,
    WorkspaceArtifact,
)

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["ArtifactWorkspace", "ContractGuard", "OutputLease", "PackageStore"]

ContractGuard = Callable[[str | None], None]
"""Called under the package lock with the current contract source (``None`` when absent).

It raises :class:`~templiqx_ports.errors.ConflictError` (or another port error) to refuse the
write; the application uses it to compare its compare-and-swap token.
"""


class PackageStore(abc.ABC):
    """Packages: manifests, contract sources and inventoried artifacts."""

    @abc.abstractmethod
    def discover(self) -> list[PackageManifest]:
        """Every package under the root, sorted by (package, version)."""

    @abc.abstractmethod
    def manifest(self, package: str) -> PackageManifest:
        """The parsed ``templiqx.yaml`` of ``package``."""

    @abc.abstractmethod
    def create_package(self, name: str, version: str) -> PackageManifest:
        """Bootstrap an empty package; ``ConflictError`` if it exists."""

    @abc.abstractmethod
    def update_package(
        self,
        package: str,
        *,
        version: str | None,
        description: str | None,
        expected_fingerprint: str,
    ) -> PackageManifest:
        """Set version/description and clear signatures, if the manifest fingerprint matches."""

    @abc.abstractmethod
    def delete_package(self, package: str, expected_fingerprint: str) -> str:
        """Remove a package with no dependents and no untracked content; returns the manifest fp."""

    @abc.abstractmethod
    def contract_source(self, package: str, contract: str) -> str:
        """The text of ``contracts/<contract>.yaml``."""

    @abc.abstractmethod
    def put_contract(
        self, package: str, contract: str, source: str, *, guard: ContractGuard
    ) -> None:
        """Atomically write a contract (and add it to the inventory) if ``guard`` allows it."""

    @abc.abstractmethod
    def delete_contract(self, package: str, contract: str, *, guard: ContractGuard) -> None:
        """Remove a contract (and its inventory entry) if ``guard`` allows it."""

    @abc.abstractmethod
    def artifact_bytes(self, package: str, path: str) -> bytes:
        """The bytes of a confined, regular, non-symlinked file inside the package."""

    @abc.abstractmethod
    def package_identity(self, package: str) -> PackageIdentity:
        """The normalized manifest and the SHA-256 of every inventoried artifact."""

    @abc.abstractmethod
    def attach_package_signature(
        self,
        package: str,
        signature: PackageSignature,
        *,
        expected_fingerprint: str,
        identity_fingerprint: str,
    ) -> PackageManifest:
        """Store a signature if both the manifest and the identity are unchanged."""


class OutputLease(AbstractContextManager["OutputLease"]):
    """An exclusive claim on one output path in a package workspace, released on exit."""

    @property
    @abc.abstractmethod
    def path(self) -> Path:
        """The absolute, confined output path the holder may write."""


class ArtifactWorkspace(abc.ABC):
    """Generated artifacts, one folder per package, optionally under a per-call workspace root."""

    @abc.abstractmethod
    def list_artifacts(
        self, package: str, *, workspace: str | None = None, prefix: str | None = None
    ) -> list[WorkspaceArtifact]:
        """Regular files of the package workspace (symlinks skipped), sorted by path."""

    @abc.abstractmethod
    def read_artifact(self, package: str, path: str, *, workspace: str | None = None) -> bytes:
        """The bytes of one artifact."""

    @abc.abstractmethod
    def delete_artifact(
        self,
        package: str,
        path: str,
        *,
        expected_fingerprint: str,
        workspace: str | None = None,
    ) -> bytes:
        """Remove an artifact whose SHA-256 matches ``expected_fingerprint``; returns its bytes."""

    @abc.abstractmethod
    def lease_output_path(
        self, package: str, path: str, *, workspace: str | None = None
    ) -> OutputLease:
        """Claim an output path exclusively (held until the lease is closed)."""
