"""The authorized merge context: requirement flag, shape, freshness and binding fingerprint."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from templiqx_application import (
    AUTHORIZATION_KEY_ENV,
    TempliqxService,
    requires_authorized_context,
    sign_authorized_context,
    validate_authorized_context,
)
from templiqx_application.authorized_context import parse_rfc3339
from templiqx_contracts import PackageManifest, fingerprint

NOW = datetime(2027, 1, 1, tzinfo=UTC)
KEY = "_templiqx_authorized_merge"
POINTER = f"/context/{KEY}"
HOST_KEY = b"host-authorization-key"


@pytest.fixture(autouse=True)
def _host_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(AUTHORIZATION_KEY_ENV, HOST_KEY.decode())


def merge(**overrides: str) -> dict[str, Any]:
    """A context the host issued (signed with its key), with ``overrides`` applied after."""
    fields = {
        "scope_id": "SYN-SCOPE-1",
        "policy_decision_id": "DEC-1",
        "policy_version": "1.0.0",
        "evidence_provenance_id": "PROV-1",
        "issued_at": "2026-07-15T10:00:00Z",
        "expires_at": "2099-12-31T23:59:59Z",
    }
    fields.update({k: v for k, v in overrides.items() if k != "fingerprint"})
    signed = sign_authorized_context(fields, HOST_KEY)
    if "fingerprint" in overrides:
        signed["fingerprint"] = overrides["fingerprint"]
    return signed


def check(value: Any, **options: Any) -> list[tuple[str, str, str]]:
    return [
        (d.code, d.json_pointer or "", d.message)
        for d in validate_authorized_context({KEY: value}, NOW, **options)
    ]


def test_a_well_formed_context_passes() -> None:
    assert check(merge()) == []
    assert check(merge(issued_at="2026-07-15T12:00:00+02:00")) == []
    assert check(merge(expires_at="2099-12-31t23:59:59.123456z")) == []


@pytest.mark.parametrize(
    ("value", "code", "suffix", "fragment"),
    [
        ("not an object", "TQX_AUTHORIZED_CONTEXT_INVALID", "", "not valid"),
        ({**merge(), "extra": "x"}, "TQX_AUTHORIZED_CONTEXT_INVALID", "", "not valid"),
        ({**merge(), "scope_id": 7}, "TQX_AUTHORIZED_CONTEXT_INVALID", "", "not valid"),
        (merge(scope_id="  "), "TQX_AUTHORIZED_CONTEXT_REDACTED", "/scope_id", "redacted"),
        (merge(issued_at="2026-07-15"), "TQX_AUTHORIZED_CONTEXT_INVALID", "/issued_at", "RFC3339"),
        (
            merge(issued_at="2026-13-15T10:00:00Z"),
            "TQX_AUTHORIZED_CONTEXT_INVALID",
            "/issued_at",
            "RFC3339",
        ),
        (merge(expires_at="tomorrow"), "TQX_AUTHORIZED_CONTEXT_INVALID", "/expires_at", "RFC3339"),
        (
            merge(expires_at="2026-12-31T23:59:59Z"),
            "TQX_AUTHORIZED_CONTEXT_EXPIRED",
            "/expires_at",
            "expired",
        ),
        (
            merge(issued_at="2099-12-31T23:59:59Z", expires_at="2098-01-01T00:00:00Z"),
            "TQX_AUTHORIZED_CONTEXT_INVALID",
            "/issued_at",
            "after it expires",
        ),
        (
            merge(issued_at="2098-01-01T00:00:00Z"),
            "TQX_AUTHORIZED_CONTEXT_INVALID",
            "/issued_at",
            "future",
        ),
        (merge(fingerprint="0" * 64), "TQX_AUTHORIZED_CONTEXT_MISMATCH", "/fingerprint", "match"),
    ],
)
def test_validation_failures(value: Any, code: str, suffix: str, fragment: str) -> None:
    ((found, pointer, message),) = check(value)
    assert found == code
    assert pointer == POINTER + suffix
    assert fragment in message


def test_a_caller_cannot_mint_a_context_without_the_host_key() -> None:
    """Issue #29: the reference's binding fingerprint is an unkeyed SHA-256 anyone can compute;
    a context a caller passes must carry the host's HMAC."""
    minted = merge(expires_at="2999-01-01T00:00:00Z")
    unkeyed = {k: v for k, v in minted.items() if k != "fingerprint"}
    minted["fingerprint"] = fingerprint(unkeyed)  # what the reference accepted
    ((code, pointer, message),) = check(minted)
    assert (code, pointer) == ("TQX_AUTHORIZED_CONTEXT_MISMATCH", POINTER + "/fingerprint")
    assert "signature" in message
    assert check(merge(), key=b"another host's key")[0][0] == "TQX_AUTHORIZED_CONTEXT_MISMATCH"
    # without a key the host vouches for nothing, however well-formed the context is
    ((code, pointer, message),) = check(merge(), key=None)
    assert (code, pointer) == ("TQX_AUTHORIZED_CONTEXT_UNVERIFIED", POINTER + "/fingerprint")
    assert AUTHORIZATION_KEY_ENV in message
    # a package's own eval fixture may carry the reference's unkeyed binding
    assert check(minted, key=None, package_data=True) == []
    assert check(merge(), package_data=True) == []  # or the host's signature


def test_missing_context() -> None:
    assert [d.code for d in validate_authorized_context({}, NOW)] == [
        "TQX_AUTHORIZED_CONTEXT_MISSING"
    ]


def test_requirement_flag() -> None:
    def flag(value: str | None) -> tuple[bool, list[str]]:
        provenance = {} if value is None else {"requires_authorized_context": value}
        manifest = PackageManifest.new("p", "1.0.0")
        manifest.provenance.update(provenance)
        required, diagnostics = requires_authorized_context(manifest)
        return required, [d.code for d in diagnostics]

    assert flag(None) == (False, [])
    assert flag("false") == (False, [])
    assert flag("true") == (True, [])
    assert flag("yes") == (False, ["TQX_AUTHORIZED_CONTEXT_REQUIREMENT_INVALID"])


def test_rfc3339_offsets() -> None:
    assert parse_rfc3339("2026-07-15T12:00:00+02:00") == parse_rfc3339("2026-07-15T10:00:00Z")
    for bad in ("2026-07-15T10:00Z", "2026-07-15T10:00:00", "2026-07-15T10:00:00+24:00"):
        with pytest.raises(ValueError, match="2026"):
            parse_rfc3339(bad)


CONTRACT = """\
api_version: templiqx/v1alpha1
id: note
version: 1.0.0
capabilities: [structured_output]
messages:
  - role: user
    content:
      - {kind: text, value: note}
output_schema: {type: object}
"""


@pytest.mark.parametrize(
    ("flag", "context", "codes"),
    [
        ("true", {}, ["TQX_AUTHORIZED_CONTEXT_MISSING"]),
        ("true", {KEY: merge()}, []),
        ("true", {KEY: merge(fingerprint="0" * 64)}, ["TQX_AUTHORIZED_CONTEXT_MISMATCH"]),
        ("false", {KEY: merge(fingerprint="stale")}, []),  # not required: never checked
        ("maybe", {KEY: merge()}, ["TQX_AUTHORIZED_CONTEXT_REQUIREMENT_INVALID"]),
    ],
)
def test_compile_applies_the_manifest_requirement(
    scratch_root: Path,
    make_service: Callable[..., TempliqxService],
    write_pkg: Callable[..., Path],
    flag: str,
    context: dict[str, Any],
    codes: list[str],
) -> None:
    write_pkg(
        scratch_root,
        "pkg",
        contracts={"note": CONTRACT},
        provenance={"requires_authorized_context": flag},
    )
    envelope = make_service(scratch_root).compile_contract(
        "pkg", "note", context=context, capabilities=["structured_output"]
    )
    assert [d.code for d in envelope.diagnostics] == codes
    if flag == "maybe":
        assert envelope.diagnostics[0].json_pointer == "/provenance/requires_authorized_context"


def test_the_service_clock_decides_freshness(
    scratch_root: Path,
    make_service: Callable[..., TempliqxService],
    write_pkg: Callable[..., Path],
) -> None:
    write_pkg(
        scratch_root,
        "pkg",
        contracts={"note": CONTRACT},
        provenance={"requires_authorized_context": "true"},
    )
    early = make_service(scratch_root, clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    envelope = early.compile_contract(
        "pkg", "note", context={KEY: merge()}, capabilities=["structured_output"]
    )
    assert [d.message for d in envelope.diagnostics] == [
        "authorized merge context was issued in the future"
    ]
