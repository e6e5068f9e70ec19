"""The authorized merge context: a host-issued envelope binding a render to a policy decision.

A package opts in with ``provenance.requires_authorized_context: "true"``. The context travels
in ``context._templiqx_authorized_merge``; templiqx checks presence, shape, freshness and the
binding fingerprint, never the policy itself. When the package does not require it, nothing is
checked (so a stale context in such a package is harmless).

The binding fingerprint is **authenticated with the host's key** (issue #29): the reference's
unkeyed SHA-256 of the six binding fields let any caller mint a "host-issued" context (one
expiring in 2999 satisfied every requiring package). A context a caller passes must carry the
HMAC-SHA256, under ``TEMPLIQX_AUTHORIZATION_KEY`` (the key's raw bytes), of
``templiqx-authorized-merge-v1`` NUL and the canonical JSON of the six fields
(:func:`authorized_context_signature`; a host issues contexts with
:func:`sign_authorized_context`). Without a key the host can vouch for nothing, and a requiring
package is refused (``TQX_AUTHORIZED_CONTEXT_UNVERIFIED``). A package's own eval fixtures are
the package's data, covered by its signatures and rendered only on the fake runtime: their
contexts may also carry the reference's unkeyed binding fingerprint, so the reference's eval
fixtures pass unchanged.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Final

import msgspec

from templiqx_application.diagnostics import error
from templiqx_contracts import (
    AuthorizedMergeContext,
    Diagnostic,
    PackageManifest,
    canonical_json,
    fingerprint,
)

__all__ = [
    "AUTHORIZATION_KEY_ENV",
    "AUTHORIZED_MERGE_KEY",
    "Clock",
    "authorization_key",
    "authorized_context_fingerprint",
    "authorized_context_signature",
    "parse_rfc3339",
    "requires_authorized_context",
    "sign_authorized_context",
    "utc_now",
    "validate_authorized_context",
]

AUTHORIZED_MERGE_KEY = "_templiqx_authorized_merge"
AUTHORIZATION_KEY_ENV: Final = "TEMPLIQX_AUTHORIZATION_KEY"
_AUTHORIZATION_KEY_ENV_BYTES: Final = AUTHORIZATION_KEY_ENV.encode("ascii")
_SIGNATURE_DOMAIN: Final = b"templiqx-authorized-merge-v1\0"
_BINDING_FIELDS: Final = (
    "scope_id",
    "policy_decision_id",
    "policy_version",
    "evidence_provenance_id",
    "issued_at",
    "expires_at",
)
_POINTER = f"/context/{AUTHORIZED_MERGE_KEY}"
_REQUIREMENT_POINTER = "/provenance/requires_authorized_context"

Clock = Callable[[], datetime]
"""Returns the current time as an aware datetime."""


def utc_now() -> datetime:
    """The wall clock in UTC (the default clock)."""
    return datetime.now(UTC)


def requires_authorized_context(manifest: PackageManifest) -> tuple[bool, list[Diagnostic]]:
    """Whether the package requires a context: absent or ``"false"`` no, ``"true"`` yes."""
    flag = manifest.provenance.get("requires_authorized_context")
    if flag is None or flag == "false":
        return False, []
    if flag == "true":
        return True, []
    return False, [
        error(
            "TQX_AUTHORIZED_CONTEXT_REQUIREMENT_INVALID",
            f"requires_authorized_context must be 'true' or 'false', got '{flag}'",
            _REQUIREMENT_POINTER,
        )
    ]


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})"
)


def parse_rfc3339(text: str) -> datetime:
    """Parse an RFC 3339 date-time (seconds and an offset are required); ``ValueError`` else."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ValueError(f"'{text}' does not have the form YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM)")
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = match.group(7)
    micro = int((fraction[1:] + "000000")[:6]) if fraction else 0
    offset_text = match.group(8)
    if offset_text in ("Z", "z"):
        zone = UTC
    else:
        sign = -1 if offset_text[0] == "-" else 1
        hours, minutes = int(offset_text[1:3]), int(offset_text[4:6])
        if hours > 23 or minutes > 59:
            raise ValueError(f"'{text}' has an out-of-range UTC offset")
        zone = timezone(sign * timedelta(hours=hours, minutes=minutes))
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=zone)


def authorized_context_fingerprint(context: AuthorizedMergeContext) -> str:
    """The reference's unkeyed binding fingerprint: the canonical fingerprint of the six
    non-fingerprint fields (accepted only from a package's own eval fixtures)."""
    return fingerprint(context.binding())


def authorization_key() -> bytes | None:
    """The host's authorization key from ``TEMPLIQX_AUTHORIZATION_KEY`` (raw bytes), or
    ``None`` when unset or empty."""
    return os.environb.get(_AUTHORIZATION_KEY_ENV_BYTES) or None


def authorized_context_signature(context: AuthorizedMergeContext, key: bytes) -> str:
    """The authenticated binding fingerprint: lowercase hex HMAC-SHA256 under ``key`` of
    ``templiqx-authorized-merge-v1`` NUL and the canonical JSON of the six binding fields."""
    payload = _SIGNATURE_DOMAIN + canonical_json(context.binding())
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def sign_authorized_context(fields: Mapping[str, str], key: bytes) -> dict[str, str]:
    """The context a host issues: the six binding fields (``scope_id``,
    ``policy_decision_id``, ``policy_version``, ``evidence_provenance_id``, ``issued_at``,
    ``expires_at``) and, as ``fingerprint``, their HMAC under the host's ``key``. Raises
    ``KeyError`` for a missing field."""
    binding = {name: fields[name] for name in _BINDING_FIELDS}
    merge = AuthorizedMergeContext(**binding, fingerprint="")
    return {**binding, "fingerprint": authorized_context_signature(merge, key)}


class _FromEnvironment:
    """The default of ``key``: :func:`authorization_key` at call time."""


_FROM_ENVIRONMENT: Final = _FromEnvironment()


def validate_authorized_context(
    context: Mapping[str, Any],
    now: datetime,
    *,
    key: bytes | _FromEnvironment | None = _FROM_ENVIRONMENT,
    package_data: bool = False,
) -> list[Diagnostic]:
    """Check the context carried in a render request's ``context``; the first failure only.

    ``key`` is the host's authorization key (default: ``TEMPLIQX_AUTHORIZATION_KEY``); the
    fingerprint must be :func:`authorized_context_signature` under it, and without a key a
    context cannot be verified (``TQX_AUTHORIZED_CONTEXT_UNVERIFIED``). ``package_data``: the
    context comes from the package's own eval fixture, which may also carry the reference's
    unkeyed binding fingerprint.
    """
    host_key = authorization_key() if isinstance(key, _FromEnvironment) else key
    if AUTHORIZED_MERGE_KEY not in context:
        return [
            error(
                "TQX_AUTHORIZED_CONTEXT_MISSING",
                "authorized merge context is required for this package",
                _POINTER,
            )
        ]
    try:
        merge = msgspec.convert(context[AUTHORIZED_MERGE_KEY], AuthorizedMergeContext, strict=True)
    except msgspec.ValidationError as exc:
        return [
            error(
                "TQX_AUTHORIZED_CONTEXT_INVALID",
                f"authorized merge context is not valid: {exc}",
                _POINTER,
            )
        ]
    if not merge.scope_id.strip():
        return [
            error(
                "TQX_AUTHORIZED_CONTEXT_REDACTED",
                "authorized scope is missing or redacted",
                f"{_POINTER}/scope_id",
            )
        ]
    try:
        issued = parse_rfc3339(merge.issued_at)
    except ValueError as exc:
        return [
            error(
                "TQX_AUTHORIZED_CONTEXT_INVALID",
                f"issued_at is not RFC3339: {exc}",
                f"{_POINTER}/issued_at",
            )
        ]
    try:
        expires = parse_rfc3339(merge.expires_at)
    except ValueError as exc:
        return [
            error(
                "TQX_AUTHORIZED_CONTEXT_INVALID",
                f"expires_at is not RFC3339: {exc}",
                f"{_POINTER}/expires_at",
            )
        ]
    if expires < now:
        return [
            error(
                "TQX_AUTHORIZED_CONTEXT_EXPIRED",
                "authorized merge context has expired",
                f"{_POINTER}/expires_at",
            )
        ]
    if issued > expires:
        return [
            error(
                "TQX_AUTHORIZED_CONTEXT_INVALID",
                "authorized merge context was issued after it expires",
                f"{_POINTER}/issued_at",
            )
        ]
    if issued > now:
        return [
            error(
                "TQX_AUTHORIZED_CONTEXT_INVALID",
                "authorized merge context was issued in the future",
                f"{_POINTER}/issued_at",
            )
        ]
    given = merge.fingerprint.encode("utf-8", "surrogatepass")
    if package_data and hmac.compare_digest(
        given, authorized_context_fingerprint(merge).encode("ascii")
    ):
        return []
    if host_key is None:
        return [
            error(
                "TQX_AUTHORIZED_CONTEXT_UNVERIFIED",
                "authorized merge context cannot be verified: this host has no authorization "
                f"key ({AUTHORIZATION_KEY_ENV}), so it vouches for no context",
                f"{_POINTER}/fingerprint",
            )
        ]
    expected = authorized_context_signature(merge, host_key).encode("ascii")
    if not hmac.compare_digest(given, expected):
        return [
            error(
                "TQX_AUTHORIZED_CONTEXT_MISMATCH",
                "authorized merge context fingerprint does not match the host's signature of "
                "its binding fields",
                f"{_POINTER}/fingerprint",
            )
        ]
    return []
