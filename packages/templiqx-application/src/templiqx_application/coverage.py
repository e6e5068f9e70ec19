"""What a package's signed identity covers, and the rendered files it does not.

The identity hashes the normalized manifest, the lock and every file the manifest lists (its
*inventory*): ``contracts/<id>.yaml`` per contract, every ``components``, ``evals``,
``migrations`` and ``templates`` entry and ``translations/<locale>.yaml`` per locale. A file
that reaches a rendered prompt is **covered** when a signature over that identity vouches for
its bytes:

* a contract or a partial of the package itself: listed in its inventory;
* a partial of another package (``from_dependency``): the including package pins that
  package under ``dependencies`` (inside its own identity), the pin equals the dependency's
  current identity fingerprint, and the file is listed in the dependency's inventory.

Translations are only ever read when listed. Nothing else in a package reaches a prompt.

An uncovered file keeps its use outside strict mode, and ``validate_package`` (every mode) and
``verify_package_trust`` warn about it; in strict mode (``TEMPLIQX_PACKAGE_STRICT=1``, or
``verify_package_trust --strict``) it is an error, and loading a contract that needs it is
refused (issue #18: a partial the manifest did not list could be replaced with new
instructions while the signature, the identity and strict verification stayed the same).
"""

from __future__ import annotations

from templiqx_application.codes import fix_hint
from templiqx_application.diagnostics import contract_file, error
from templiqx_contracts import Diagnostic, PackageManifest, fingerprint
from templiqx_ports import PackageStore, PortError

__all__ = [
    "DEPENDENCY_UNPINNED",
    "FILE_UNLISTED",
    "Coverage",
    "inventory",
    "unlisted_contract",
]

FILE_UNLISTED = "TQX_PACKAGE_FILE_UNLISTED"
DEPENDENCY_UNPINNED = "TQX_PACKAGE_DEPENDENCY_UNPINNED"


def inventory(manifest: PackageManifest) -> list[tuple[str, str]]:
    """(package-relative path, manifest pointer) of every listed file, sorted by path."""
    pairs = [(f"contracts/{cid}.yaml", f"/contracts/{cid}") for cid in manifest.contracts]
    for section in ("components", "evals", "migrations", "templates"):
        pairs.extend((entry, f"/{section}/{entry}") for entry in getattr(manifest, section))
    pairs.extend(
        (f"translations/{locale}.yaml", f"/translations/{locale}")
        for locale in manifest.translations
    )
    return sorted(pairs, key=lambda pair: pair[0])


def _problem(code: str, message: str, pointer: str) -> Diagnostic:
    """An error with the code's fix hint."""
    return error(code, message, pointer, help=fix_hint(code))


def unlisted_contract(
    package: str, contract_id: str, manifest: PackageManifest | None
) -> Diagnostic | None:
    """``TQX_PACKAGE_FILE_UNLISTED`` when the manifest does not list the contract."""
    if manifest is not None and contract_id in manifest.contracts:
        return None
    label = contract_file(package, contract_id)
    return _problem(
        FILE_UNLISTED,
        f"contract '{label}' is not listed under `contracts` in the manifest of '{package}', "
        "so the package identity and its signatures do not cover it",
        "/contracts",
    )


class Coverage:
    """Decides whether included files are covered; remembers what it read for one load."""

    def __init__(self, store: PackageStore) -> None:
        self._store = store
        self._manifests: dict[str, PackageManifest | PortError] = {}
        self._identities: dict[str, str | PortError] = {}

    def include_problem(self, source: str, target: str, path: str) -> Diagnostic | None:
        """Why ``target``'s ``path``, included by a file of package ``source``, is uncovered.

        ``None`` when it is covered. The diagnostic is an error; callers that only warn
        lower its severity.
        """
        label = f"{target}/{path}"
        if target != source:
            problem = self._pin_problem(source, target, label)
            if problem is not None:
                return problem
        manifest = self._manifest(target)
        if isinstance(manifest, PortError):
            return _problem(
                FILE_UNLISTED,
                f"included file '{label}' cannot be checked against the manifest of "
                f"'{target}', which cannot be read ({manifest}); nothing signs it",
                "/components",
            )
        if any(listed == path for listed, _ in inventory(manifest)):
            return None
        return _problem(
            FILE_UNLISTED,
            f"included file '{label}' is not listed in the manifest of '{target}' "
            "(list partials under `components`), so the package identity and its signatures "
            "do not cover it",
            "/components",
        )

    def _pin_problem(self, source: str, target: str, label: str) -> Diagnostic | None:
        manifest = self._manifest(source)
        pin = None if isinstance(manifest, PortError) else manifest.dependencies.get(target)
        if pin is None:
            return _problem(
                DEPENDENCY_UNPINNED,
                f"included file '{label}' comes from package '{target}', which '{source}' does "
                "not pin under `dependencies`, so its signatures do not cover it",
                "/dependencies",
            )
        actual = self._identity(target)
        if isinstance(actual, PortError):
            return _problem(
                DEPENDENCY_UNPINNED,
                f"included file '{label}' comes from package '{target}', whose identity "
                f"cannot be computed ({actual}) to compare it with the pin in '{source}'",
                f"/dependencies/{target}",
            )
        if actual != pin:
            return _problem(
                DEPENDENCY_UNPINNED,
                f"included file '{label}' comes from package '{target}', whose identity "
                f"{actual} differs from the {pin} that '{source}' pins, so the signatures of "
                f"'{source}' do not cover it",
                f"/dependencies/{target}",
            )
        return None

    def _manifest(self, package: str) -> PackageManifest | PortError:
        if package not in self._manifests:
            try:
                self._manifests[package] = self._store.manifest(package)
            except PortError as exc:
                self._manifests[package] = exc
        return self._manifests[package]

    def _identity(self, package: str) -> str | PortError:
        if package not in self._identities:
            try:
                self._identities[package] = fingerprint(self._store.package_identity(package))
            except PortError as exc:
                self._identities[package] = exc
        return self._identities[package]
