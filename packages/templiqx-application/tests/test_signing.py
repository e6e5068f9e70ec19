"""Acceptance 5: sign_package, validate_package and verify_package_trust agree on one payload."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
import yaml

from templiqx_application import TempliqxService, signature_value
from templiqx_contracts import (
    PackageIdentity,
    PackageManifest,
    PackageTrustReport,
    canonical_json,
    fingerprint,
)

KEY = "dev-signing-key-7f3a"
Factory = Callable[..., TempliqxService]


@pytest.fixture
def service(copied_packages: Path, make_service: Factory) -> TempliqxService:
    return make_service(copied_packages)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEMPLIQX_PACKAGE_SIGNING_KEY", raising=False)
    monkeypatch.delenv("TEMPLIQX_PACKAGE_STRICT", raising=False)


def _sign(service: TempliqxService, key_id: str = "ci") -> PackageManifest:
    token = service.export_package_identity("demo").fingerprints["manifest"]
    signed = service.sign_package("demo", key_id=key_id, expected_fingerprint=token)
    assert signed.ok, signed.diagnostics
    assert isinstance(signed.result, PackageManifest)
    assert signed.fingerprints == {"package": fingerprint(signed.result)}
    return signed.result


def _codes(service: TempliqxService, *, strict: bool = False) -> tuple[list[str], list[str]]:
    validated = service.validate_package("demo")
    trusted = service.verify_package_trust("demo", strict=strict)
    return [d.code for d in validated.diagnostics], [d.code for d in trusted.diagnostics]


def test_signed_package_validates_and_verifies(
    service: TempliqxService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", KEY)
    manifest = _sign(service)
    (signature,) = manifest.signatures
    assert (signature.key_id, signature.algorithm) == ("ci", "sha256-keyed")

    exported = service.export_package_identity("demo")
    identity = exported.result
    assert isinstance(identity, PackageIdentity)
    assert signature.value == signature_value(identity, KEY.encode(), "ci")
    # One payload: the canonical JSON of the identity (DECISIONS 12), computed independently.
    payload = json.dumps(
        msgspec.to_builtins(identity), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode()
    assert payload == canonical_json(identity)
    expected = hashlib.sha256(
        b"templiqx-package-signing-v1\0"
        + KEY.encode()
        + b"\0key-id\0ci\0algorithm\0sha256-keyed\0payload\0"
        + payload
    ).hexdigest()
    assert signature.value == expected

    validated = service.validate_package("demo")
    assert validated.ok, validated.diagnostics
    trusted = service.verify_package_trust("demo", strict=True)
    assert trusted.ok, trusted.diagnostics
    report = trusted.result
    assert isinstance(report, PackageTrustReport)
    assert report.verified_key_ids == ["ci"]
    assert report.strict is True
    identity_fp = exported.fingerprints["package_identity"]
    assert report.identity_fingerprint == identity_fp
    assert trusted.fingerprints == {"package_identity": identity_fp}
    assert validated.fingerprints == {"package_identity": identity_fp}
    monkeypatch.setenv("TEMPLIQX_PACKAGE_STRICT", "1")
    assert service.validate_package("demo").ok


def test_wrong_key_fails_both(service: TempliqxService, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", KEY)
    _sign(service)
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", "another-key")
    validated, trusted = _codes(service)
    assert validated == trusted == ["TQX_PACKAGE_SIGNATURE_INVALID"]
    report = service.verify_package_trust("demo").result
    assert isinstance(report, PackageTrustReport)
    assert report.verified_key_ids == []
    assert "package_identity" not in service.validate_package("demo").fingerprints


def test_tampered_artifact_fails_both(
    service: TempliqxService, copied_packages: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", KEY)
    _sign(service)
    contract = copied_packages / "demo" / "contracts" / "greeting.yaml"
    contract.write_text(contract.read_text("utf-8") + "# a comment changes the bytes\n", "utf-8")
    validated, trusted = _codes(service)
    assert validated == trusted == ["TQX_PACKAGE_SIGNATURE_INVALID"]
    message = service.verify_package_trust("demo").diagnostics[0].message
    assert message == "signature for key 'ci' does not match package identity"


def test_tampered_lock_fails_both(
    service: TempliqxService, copied_packages: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = copied_packages / "demo" / "templiqx.lock"
    lock.write_text("dependencies: {}\n", "utf-8")
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", KEY)
    _sign(service)
    assert service.validate_package("demo").ok
    lock.write_text("dependencies: {}\n# tampered\n", "utf-8")
    validated, trusted = _codes(service)
    assert validated == trusted == ["TQX_PACKAGE_SIGNATURE_INVALID"]


def test_strict_unsigned_is_a_publication_error(
    service: TempliqxService, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _codes(service) == ([], [])
    assert _codes(service, strict=True)[1] == ["TQX_PACKAGE_UNSIGNED"]
    monkeypatch.setenv("TEMPLIQX_PACKAGE_STRICT", "1")
    validated = service.validate_package("demo")
    assert [d.code for d in validated.diagnostics] == ["TQX_PACKAGE_UNSIGNED"]
    assert validated.diagnostics[0].json_pointer == "/signatures"
    assert validated.fingerprints == {}
    monkeypatch.setenv("TEMPLIQX_PACKAGE_STRICT", "yes")  # only "1" means strict
    assert service.validate_package("demo").ok


def test_signing_without_a_key_fails_closed(service: TempliqxService) -> None:
    token = service.export_package_identity("demo").fingerprints["manifest"]
    envelope = service.sign_package("demo", key_id="ci", expected_fingerprint=token)
    (diagnostic,) = envelope.diagnostics
    assert diagnostic.code == "TQX_PACKAGE_SIGNING_KEY_MISSING"
    assert diagnostic.json_pointer == "/signatures"
    assert "result" not in envelope.to_builtins()


def test_signatures_without_a_key_are_unverified(
    service: TempliqxService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", KEY)
    _sign(service)
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", "")  # empty means unset
    validated, trusted = _codes(service)
    assert validated == trusted == ["TQX_PACKAGE_SIGNATURE_UNVERIFIED"]


def test_duplicate_and_unsupported_signatures_fail_closed(
    service: TempliqxService, copied_packages: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", KEY)
    manifest = _sign(service)
    path = copied_packages / "demo" / "templiqx.yaml"
    data = yaml.safe_load(path.read_text("utf-8"))
    good = {"key_id": "ci", "algorithm": "sha256-keyed", "value": manifest.signatures[0].value}
    data["signatures"] = [good, good, {"key_id": "old", "algorithm": "md5", "value": "00"}]
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    validated, trusted = _codes(service)
    expected = ["TQX_PACKAGE_SIGNATURE_DUPLICATE", "TQX_PACKAGE_SIGNATURE_ALGORITHM_UNSUPPORTED"]
    assert validated == trusted == expected


def test_sign_rejects_a_stale_manifest_and_another_key_id_adds_a_signature(
    service: TempliqxService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", KEY)
    stale = service.export_package_identity("demo").fingerprints["manifest"]
    _sign(service, "ci")
    again = service.sign_package("demo", key_id="ci", expected_fingerprint=stale)
    assert [d.code for d in again.diagnostics] == ["TQX_CAS_CONFLICT"]
    manifest = _sign(service, "release")
    assert [s.key_id for s in manifest.signatures] == ["ci", "release"]
    report = service.verify_package_trust("demo").result
    assert isinstance(report, PackageTrustReport)
    assert report.verified_key_ids == ["ci", "release"]


def test_updating_the_package_clears_signatures(
    service: TempliqxService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", KEY)
    signed = _sign(service)
    updated = service.update_package(
        "demo", expected_fingerprint=fingerprint(signed), description="changed"
    )
    assert updated.ok
    assert isinstance(updated.result, PackageManifest)
    assert updated.result.signatures == []


def test_the_key_never_appears_in_any_envelope(
    service: TempliqxService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", KEY)
    _sign(service)
    envelopes = [
        service.export_package_identity("demo"),
        service.validate_package("demo"),
        service.verify_package_trust("demo", strict=True),
    ]
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", "wrong-key-4242")
    envelopes += [service.validate_package("demo"), service.verify_package_trust("demo")]
    for envelope in envelopes:
        text = json.dumps(envelope.to_builtins())
        assert KEY not in text
        assert "wrong-key-4242" not in text


def test_a_key_that_is_not_utf8_signs_and_verifies_byte_for_byte(
    service: TempliqxService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression (issue #18 item 7): such a key gave TQX_INTERNAL naming the byte and position.
    raw = b"dev-signing-key-\xff\xfe-\x80"
    monkeypatch.setitem(os.environb, b"TEMPLIQX_PACKAGE_SIGNING_KEY", raw)
    manifest = _sign(service)
    identity = service.export_package_identity("demo").result
    assert isinstance(identity, PackageIdentity)
    assert manifest.signatures[0].value == signature_value(identity, raw, "ci")
    assert _codes(service, strict=True) == ([], [])
    trusted = service.verify_package_trust("demo", strict=True)
    assert isinstance(trusted.result, PackageTrustReport)
    assert trusted.result.verified_key_ids == ["ci"]
    # A different non-UTF-8 key does not verify, and neither key shows anywhere.
    monkeypatch.setitem(os.environb, b"TEMPLIQX_PACKAGE_SIGNING_KEY", b"\xff\xfe")
    assert _codes(service) == (
        ["TQX_PACKAGE_SIGNATURE_INVALID"],
        ["TQX_PACKAGE_SIGNATURE_INVALID"],
    )
    for envelope in (service.validate_package("demo"), service.verify_package_trust("demo")):
        text = json.dumps(envelope.to_builtins())
        assert "dev-signing-key" not in text
        assert "position" not in text
        assert "TQX_INTERNAL" not in text


def test_a_key_id_that_is_not_text_is_a_diagnostic(
    service: TempliqxService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", KEY)
    token = service.export_package_identity("demo").fingerprints["manifest"]
    signed = service.sign_package("demo", key_id="ci-\udcff", expected_fingerprint=token)
    assert [d.code for d in signed.diagnostics] == ["TQX_DATA_INVALID"]
    assert "lone surrogate" in signed.diagnostics[0].message
