"""The failure vocabulary: every way a call can fail, as a ``RuntimeFailureError`` with a code.

Details are fixed sentences; the provider's own error message may follow, sanitised as
DECISIONS 20 asks (control characters removed, at most 300 characters, every credential
redacted). A refusal's text is never shown (DECISIONS 7b). The failure fingerprint binds the
code and the fixed sentence only, so it does not change with the provider's wording.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Final

from templiqx_contracts import fingerprint
from templiqx_ports import RuntimeFailure, RuntimeFailureCode, RuntimeFailureError

__all__ = ["ADAPTER_ID", "ADAPTER_VERSION", "Code", "failure", "in_band", "sanitised", "status"]

ADAPTER_ID: Final = "acme-messages"
ADAPTER_VERSION: Final = "1.0.0"
Code = RuntimeFailureCode
_PROVIDER_TEXT_CAP: Final = 300

_IN_BAND: Final = {
    "rate_limit_error": Code.RATE_LIMITED,
    "overloaded_error": Code.UNAVAILABLE,
    "api_error": Code.UNAVAILABLE,
    "timeout_error": Code.TIMEOUT,
}


def failure(
    code: Code,
    sentence: str,
    *,
    provider_text: str = "",
    retry_after_ms: int | None = None,
) -> RuntimeFailureError:
    """A runtime failure: ``sentence`` (fixed), then the provider's words if any."""
    detail = f"{sentence}: {provider_text}" if provider_text else sentence
    return RuntimeFailureError(
        RuntimeFailure(
            code=code,
            adapter_id=ADAPTER_ID,
            adapter_version=ADAPTER_VERSION,
            fingerprint=fingerprint({"adapter": ADAPTER_ID, "code": code.value, "why": sentence}),
            detail=detail,
            retry_after_ms=retry_after_ms,
        )
    )


def sanitised(text: Any, secrets: tuple[str, ...]) -> str:
    """Provider text fit to show: control characters gone, secrets redacted, capped."""
    if not isinstance(text, str):
        return ""
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    kept = "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in text)
    compact = " ".join(kept.split())
    if len(compact) > _PROVIDER_TEXT_CAP:
        compact = compact[: _PROVIDER_TEXT_CAP - 1] + "…"
    return compact


def _message(body: Any) -> Any:
    error = body.get("error") if isinstance(body, dict) else None
    return error.get("message") if isinstance(error, dict) else None


def status(
    code_number: int, headers: dict[str, str], body: Any, where: str, secrets: tuple[str, ...]
) -> RuntimeFailureError:
    """The failure for an HTTP status of 300 or more (``where`` is ``host:port``)."""
    text = sanitised(_message(body), secrets)
    sentence = f"the model server {where} returned HTTP {code_number}"
    if code_number == 429:
        seconds = headers.get("retry-after", "")
        retry = int(seconds) * 1000 if seconds.isdigit() else None
        return failure(Code.RATE_LIMITED, sentence, provider_text=text, retry_after_ms=retry)
    if code_number == 408:
        return failure(Code.TIMEOUT, sentence, provider_text=text)
    if code_number >= 500:
        return failure(Code.UNAVAILABLE, sentence, provider_text=text)
    return failure(Code.PERMANENT, sentence, provider_text=text)


def in_band(body: Any, secrets: tuple[str, ...]) -> RuntimeFailureError:
    """The failure for an ``error`` object the server sent with a 200 status or mid-stream."""
    error = body.get("error") if isinstance(body, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    code = _IN_BAND.get(kind, Code.PERMANENT) if isinstance(kind, str) else Code.PERMANENT
    text = sanitised(_message(body), secrets)
    return failure(code, "the model server reported an error", provider_text=text)
