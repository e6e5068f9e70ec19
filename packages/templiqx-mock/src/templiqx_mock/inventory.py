"""Scenario inventories: the versioned list of a package's scenarios and their expectations.

``inventory.json`` sits in ``<package>/scenarios/``; every entry's ``manifest`` path is relative
to the folder that holds the package (the inventory folder's grandparent), e.g.
``crm3/scenarios/intake-document-01/manifest.json``.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import msgspec

from templiqx_contracts import JSONDecodeError
from templiqx_mock.errors import ScenarioError, ScenarioJSONError
from templiqx_mock.scenario import (
    COMPUTED,
    MOCK_API_VERSION,
    ScenarioManifest,
    decode_json_document,
    expected_output_schema_valid,
    read_scenario_file,
)

__all__ = [
    "InventoryEntry",
    "InventoryExpectation",
    "InventoryScenario",
    "LoadedInventory",
    "ScenarioInventory",
    "load_inventory",
]


class InventoryExpectation(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What executing the scenario over a transport must yield.

    ``receipt_fingerprint`` is transport-specific and is not checked by the loader.
    """

    status: str
    receipt_fingerprint: str
    diagnostic_code: str | None = None
    output_schema_valid: bool | None = None
    output_fingerprint: str | None = None


class InventoryEntry(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One listed scenario."""

    id: str
    manifest: str
    expectation: InventoryExpectation


class ScenarioInventory(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The ``inventory.json`` document."""

    api_version: str
    package: str
    scenarios: list[InventoryEntry]


class InventoryScenario(msgspec.Struct, kw_only=True, frozen=True):
    """A checked entry with its loaded, validated manifest and the manifest file's path."""

    entry: InventoryEntry
    manifest: ScenarioManifest
    path: Path


class LoadedInventory(msgspec.Struct, kw_only=True, frozen=True):
    """A fully checked inventory, its scenarios in file order."""

    api_version: str
    package: str
    base: Path
    scenarios: tuple[InventoryScenario, ...]

    def ids(self) -> list[str]:
        """The scenario ids, sorted."""
        return sorted(s.entry.id for s in self.scenarios)

    def get(self, scenario_id: str) -> InventoryScenario | None:
        """The scenario with this id, if listed."""
        for scenario in self.scenarios:
            if scenario.entry.id == scenario_id:
                return scenario
        return None


def _is_package_relative(manifest: str) -> bool:
    if "\\" in manifest or manifest.startswith("/") or PurePosixPath(manifest).is_absolute():
        return False
    return ".." not in PurePosixPath(manifest).parts


def load_inventory(path: str | os.PathLike[str], expected_package: str) -> LoadedInventory:
    """Read ``inventory.json``, load every listed manifest and check it against its entry.

    Raises :class:`~templiqx_mock.errors.ScenarioError` (or its I/O / JSON subclasses) naming
    the first problem, in the reference's order and wording.
    """
    inventory_path = Path(path)
    data = read_scenario_file(inventory_path)
    try:
        inventory = msgspec.convert(decode_json_document(data), ScenarioInventory, strict=True)
    except (JSONDecodeError, msgspec.ValidationError) as exc:
        raise ScenarioJSONError(str(exc)) from exc

    if inventory.api_version != MOCK_API_VERSION:
        raise ScenarioError(f"unsupported inventory api_version '{inventory.api_version}'")
    if inventory.package != expected_package:
        raise ScenarioError(
            f"inventory package '{inventory.package}' does not match '{expected_package}'"
        )

    base = inventory_path.absolute().parent.parent.parent
    ids: set[str] = set()
    manifests: set[str] = set()
    loaded: list[InventoryScenario] = []
    for entry in inventory.scenarios:
        if not entry.id.strip() or not entry.manifest.strip():
            raise ScenarioError("inventory entries require non-empty id and manifest")
        if entry.id in ids:
            raise ScenarioError(f"duplicate inventory id '{entry.id}'")
        ids.add(entry.id)
        if entry.manifest in manifests:
            raise ScenarioError(f"duplicate inventory manifest '{entry.manifest}'")
        manifests.add(entry.manifest)
        if not _is_package_relative(entry.manifest):
            raise ScenarioError(
                f"inventory manifest path is not package-relative: {entry.manifest}"
            )
        manifest_path = base / entry.manifest
        if not manifest_path.is_file():
            raise ScenarioError(f"inventory manifest is missing: {entry.manifest}")
        manifest = ScenarioManifest.load(manifest_path)
        if manifest.id != entry.id:
            raise ScenarioError(
                f"inventory id '{entry.id}' does not match manifest id '{manifest.id}'"
            )
        if not _expectation_matches(entry.expectation, manifest):
            raise ScenarioError(
                f"inventory expectation for '{entry.id}' does not match its manifest"
            )
        loaded.append(InventoryScenario(entry=entry, manifest=manifest, path=manifest_path))
    return LoadedInventory(
        api_version=inventory.api_version,
        package=inventory.package,
        base=base,
        scenarios=tuple(loaded),
    )


def _expectation_matches(expectation: InventoryExpectation, manifest: ScenarioManifest) -> bool:
    return (
        expectation.status == manifest.expected_status
        and expectation.diagnostic_code == manifest.expected_failure
        and _validity_matches(expectation.output_schema_valid, manifest)
        and expectation.output_fingerprint == manifest.expected_output_fingerprint
    )


def _validity_matches(declared: bool | None, manifest: ScenarioManifest) -> bool:
    derived = expected_output_schema_valid(manifest)
    if derived == COMPUTED:
        # Decided at run time against the contract's schema; whoever runs the scenario checks
        # the receipt. Here only its shape is known: a success carries a boolean.
        return declared is not None
    return declared == derived
