"""Package signatures: algorithm ``sha256-keyed`` (a development and CI mechanism, not PKI).

One payload everywhere (signing, trust verification and package validation): the canonical
JSON of the package identity. The key comes from ``TEMPLIQX_PACKAGE_SIGNING_KEY`` at call time,
is used as the environment's raw bytes (any bytes, UTF-8 or not) and never appears in any
result, diagnostic or error.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from templiqx_application.diagnostics import error
from templiqx_contracts import (
    SIGNATURE_ALGORITHM,
    Diagnostic,
    PackageIdentity,
    PackageSignature,
    canonical_json,
    has_errors,
)

__all__ = [
    "SIGNING_KEY_ENV",
    "STRICT_ENV",
    "signature_value",
    "signing_key",
    "strict_from_environment",
    "verify_signatures",
]

SIGNING_KEY_ENV = "TEMPLIQX_PACKAGE_SIGNING_KEY"
_SIGNING_KEY_ENV_BYTES = SIGNING_KEY_ENV.encode("ascii")
STRICT_ENV = "TEMPLIQX_PACKAGE_STRICT"
_POINTER = "/signatures"


def signing_key() -> bytes | None:
    """The signing key from the environment, as its raw bytes, or ``None`` when unset or empty.

    Read from ``os.environb``, so a key that is not UTF-8 is used byte for byte (decoding it
    and encoding it again failed with a message that showed the offending byte and position).
    """
    value = os.environb.get(_SIGNING_KEY_ENV_BYTES)
    return value or None


def strict_from_environment() -> bool:
    """Whether ``TEMPLIQX_PACKAGE_STRICT`` is exactly ``"1"``."""
    return os.environ.get(STRICT_ENV) == "1"


def signature_value(identity: PackageIdentity, key: bytes, key_id: str) -> str:
    """The lowercase hex signature of ``identity`` under ``key`` and ``key_id``."""
    digest = hashlib.sha256()
    digest.update(b"templiqx-package-signing-v1\0")
    digest.update(key)
    digest.update(b"\0key-id\0")
    digest.update(key_id.encode("utf-8", "surrogatepass"))
    digest.update(b"\0algorithm\0")
    digest.update(SIGNATURE_ALGORITHM.encode("ascii"))
    digest.update(b"\0payload\0")
    digest.update(canonical_json(identity))
    return digest.hexdigest()


def verify_signatures(
    identity: PackageIdentity,
    signatures: list[PackageSignature],
    key: bytes | None,
    *,
    strict: bool,
    diagnostics: list[Diagnostic],
) -> list[str]:
    """Verify ``signatures`` over ``identity``, appending problems to ``diagnostics``.

    Returns the verified key ids in signature order, or ``[]`` whenever any error exists
    (including errors already in ``diagnostics``): verification never accepts part of a set.
    """
    if not signatures:
        if strict:
            diagnostics.append(
                error(
                    "TQX_PACKAGE_UNSIGNED",
                    "package has no manifest signatures",
                    _POINTER,
                    help="set TEMPLIQX_PACKAGE_SIGNING_KEY and add signatures for strict "
                    "publication",
                )
            )
        return []
    seen: set[tuple[str, str]] = set()
    for signature in signatures:
        if signature.algorithm != SIGNATURE_ALGORITHM:
            diagnostics.append(
                error(
                    "TQX_PACKAGE_SIGNATURE_ALGORITHM_UNSUPPORTED",
                    f"unsupported package signature algorithm '{signature.algorithm}'",
                    _POINTER,
                )
            )
        pair = (signature.key_id, signature.algorithm)
        if pair in seen:
            diagnostics.append(
                error(
                    "TQX_PACKAGE_SIGNATURE_DUPLICATE",
                    f"duplicate package signature for key '{signature.key_id}' and algorithm "
                    f"'{signature.algorithm}'",
                    _POINTER,
                )
            )
        seen.add(pair)
    if has_errors(diagnostics):
        return []
    if key is None:
        diagnostics.append(
            error(
                "TQX_PACKAGE_SIGNATURE_UNVERIFIED",
                f"package signatures present but {SIGNING_KEY_ENV} is unset",
                _POINTER,
            )
        )
        return []
    verified: list[str] = []
    for signature in signatures:
        expected = signature_value(identity, key, signature.key_id)
        given = signature.value.encode("utf-8", "surrogatepass")
        if hmac.compare_digest(expected.encode("ascii"), given):
            verified.append(signature.key_id)
        else:
            diagnostics.append(
                error(
                    "TQX_PACKAGE_SIGNATURE_INVALID",
                    f"signature for key '{signature.key_id}' does not match package identity",
                    _POINTER,
                )
            )
    return [] if has_errors(diagnostics) else verified
