"""Every way a call can fail, as a ``RuntimeFailureError`` with a stable code.

Details are fixed sentences; the server's own error text may follow, sanitised as DECISIONS 20
asks (control characters removed, at most 300 characters, the key redacted). The failure
fingerprint binds the code and the fixed sentence only, so it does not change with the wording.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Final

from templiqx_contracts import fingerprint
from templiqx_ports import RuntimeFailure, RuntimeFailureCode, RuntimeFailureError

__all__ = ["ADAPTER_ID", "ADAPTER_VERSION", "Code", "failure", "in_band", "sanitised", "status"]

ADAPTER_ID: Final = "acme-ollama"
ADAPTER_VERSION: Final = "1.0.0"
Code = RuntimeFailureCode
_TEXT_CAP: Final = 300


def failure(
    code: Code, sentence: str, *, server_text: str = "", retry_after_ms: int | None = None
) -> RuntimeFailureError:
    """A runtime failure: ``sentence`` (fixed), then the server's words if any."""
    return RuntimeFailureError(
        RuntimeFailure(
            code=code,
            adapter_id=ADAPTER_ID,
            adapter_version=ADAPTER_VERSION,
            fingerprint=fingerprint({"adapter": ADAPTER_ID, "code": code.value, "why": sentence}),
            detail=f"{sentence}: {server_text}" if server_text else sentence,
            retry_after_ms=retry_after_ms,
        )
    )


def sanitised(text: Any, secrets: tuple[str, ...]) -> str:
    """Server text fit to show: secrets redacted, control characters gone, capped."""
    if not isinstance(text, str):
        return ""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    kept = "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in text)
    compact = " ".join(kept.split())
    return compact if len(compact) <= _TEXT_CAP else compact[: _TEXT_CAP - 1] + "…"


def _said(body: Any) -> Any:
    return body.get("error") if isinstance(body, dict) else None


def status(
    number: int, headers: dict[str, str], body: Any, where: str, secrets: tuple[str, ...]
) -> RuntimeFailureError:
    """The failure for an HTTP status of 300 or more (``where`` is ``host:port``)."""
    text = sanitised(_said(body), secrets)
    sentence = f"the model server {where} returned HTTP {number}"
    if number == 429:
        seconds = headers.get("retry-after", "")
        retry = int(seconds) * 1000 if seconds.isdigit() else None
        return failure(Code.RATE_LIMITED, sentence, server_text=text, retry_after_ms=retry)
    if number == 408:
        return failure(Code.TIMEOUT, sentence, server_text=text)
    if number >= 500:
        return failure(Code.UNAVAILABLE, sentence, server_text=text)
    return failure(Code.PERMANENT, sentence, server_text=text)


def in_band(body: Any, secrets: tuple[str, ...]) -> RuntimeFailureError:
    """The failure for an ``{"error": ...}`` object sent with a 200 status or inside a stream."""
    text = sanitised(_said(body), secrets)
    return failure(Code.UNAVAILABLE, "the model server reported an error", server_text=text)
