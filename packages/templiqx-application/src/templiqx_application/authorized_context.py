"""The authorized merge context: a host-issued envelope binding a render to a policy decision.

A package opts in with ``provenance.requires_authorized_context: "true"``. The context travels
in ``context._templiqx_authorized_merge``; templiqx checks presence, shape, freshness and the
binding fingerprint, never the policy itself. When the package does not require it, nothing is
checked (so a stale context in such a package is harmless).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import msgspec

from templiqx_application.diagnostics import error
from templiqx_contracts import AuthorizedMergeContext, Diagnostic, PackageManifest, fingerprint

__all__ = [
    "AUTHORIZED_MERGE_KEY",
    "Clock",
    "authorized_context_fingerprint",
    "parse_rfc3339",
    "requires_authorized_context",
    "utc_now",
    "validate_authorized_context",
]

AUTHORIZED_MERGE_KEY = "_templiqx_authorized_merge"
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
    """The binding fingerprint: the canonical fingerprint of the six non-fingerprint fields."""
    return fingerprint(context.binding())


def validate_authorized_context(context: Mapping[str, Any], now: datetime) -> list[Diagnostic]:
    """Check the context carried in a render request's ``context``; the first failure only."""
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
    if merge.fingerprint != authorized_context_fingerprint(merge):
        return [
            error(
                "TQX_AUTHORIZED_CONTEXT_MISMATCH",
                "authorized merge context fingerprint does not match binding fields",
                f"{_POINTER}/fingerprint",
            )
        ]
    return []
