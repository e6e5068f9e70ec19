"""The package inventory: which files a manifest lists and which files a package may hold.

The normalized (signable) manifest the identity carries is the application's
:func:`templiqx_application.packages.normalized_manifest`, shared so both build it alike.
"""

from __future__ import annotations

from templiqx_contracts import PackageManifest

__all__ = [
    "LEGACY_LOCK_FILE",
    "LOCK_FILE",
    "MANIFEST_FILE",
    "inventory_paths",
    "tracked_paths",
]

MANIFEST_FILE = "templiqx.yaml"
LOCK_FILE = "templiqx.lock"
LEGACY_LOCK_FILE = ".templiqx.lock"


def inventory_paths(manifest: PackageManifest) -> list[str]:
    """Sorted, de-duplicated package-relative paths the identity hashes (unvalidated).

    ``contracts/<id>.yaml`` per contract, every component/eval/migration/template entry and
    ``translations/<locale>.yaml`` per locale. ``definitions`` are not part of the identity.
    """
    paths = {f"contracts/{contract}.yaml" for contract in manifest.contracts}
    paths.update(manifest.components, manifest.evals, manifest.migrations, manifest.templates)
    paths.update(f"translations/{locale}.yaml" for locale in manifest.translations)
    return sorted(paths)


def tracked_paths(manifest: PackageManifest) -> frozenset[str]:
    """Files ``delete_package`` may remove without reporting them as untracked content.

    The inventory, the manifest, both lock-file names and the ``definitions`` entries (which
    the reference left out, making a package with definitions impossible to delete).
    """
    return frozenset(
        [
            *inventory_paths(manifest),
            *manifest.definitions,
            MANIFEST_FILE,
            LOCK_FILE,
            LEGACY_LOCK_FILE,
        ]
    )
