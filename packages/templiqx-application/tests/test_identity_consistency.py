"""export_package_identity reports a manifest token that belongs to the identity it returns
(regression found by the reliability suite, issue #9 R3: a write between its two reads paired
one state's identity with another state's token)."""

from __future__ import annotations

from pathlib import Path

from templiqx_application import TempliqxService
from templiqx_contracts import PackageIdentity, fingerprint
from templiqx_local import FilesystemArtifactWorkspace, FilesystemPackageStore


class RacingStore(FilesystemPackageStore):
    """A store where another writer updates the description right after each manifest read."""

    def __init__(self, root: Path, races: int) -> None:
        super().__init__(root, create=True)
        self.races = races
        self.writes = 0

    def package_identity(self, package: str) -> PackageIdentity:
        if self.races > 0:
            self.races -= 1
            self.writes += 1
            current = fingerprint(self.manifest(package))
            self.update_package(
                package,
                version=None,
                description=f"changed {self.writes}",
                expected_fingerprint=current,
            )
        return super().package_identity(package)


def _service(tmp_path: Path, races: int) -> tuple[TempliqxService, RacingStore]:
    store = RacingStore(tmp_path / "root", races)
    store.create_package("p", "1.0.0")
    return TempliqxService(store, FilesystemArtifactWorkspace(tmp_path / "ws")), store


def test_the_manifest_token_belongs_to_the_returned_identity(tmp_path: Path) -> None:
    service, store = _service(tmp_path, races=3)
    envelope = service.export_package_identity("p")
    assert envelope.ok
    assert store.writes == 3  # three reads were overtaken, the fourth was consistent
    assert envelope.result.manifest.description == "changed 3"
    assert envelope.fingerprints["manifest"] == fingerprint(store.manifest("p"))
    signed = service.update_package(
        "p", expected_fingerprint=envelope.fingerprints["manifest"], description="next"
    )
    assert signed.ok  # the token is the current one


def test_a_package_that_never_settles_is_a_conflict(tmp_path: Path) -> None:
    service, _ = _service(tmp_path, races=1_000)
    envelope = service.export_package_identity("p")
    assert [d.code for d in envelope.diagnostics] == ["TQX_CAS_CONFLICT"]
    assert "kept changing" in envelope.diagnostics[0].message
