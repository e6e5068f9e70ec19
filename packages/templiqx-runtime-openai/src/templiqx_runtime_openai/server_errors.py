"""The server's own words about a failure, made safe to show (DECISIONS 20).

A failed call may carry the provider's error message — ``error.message`` of the OpenAI error
shape, a gateway's ``{"error": "..."}``, ``{"message": ...}`` or ``{"detail": ...}``, or a short
plain-text body. :func:`server_error` finds it; :class:`Redactor` makes it presentable:

* control and invisible formatting characters (C0/C1 controls, bidi overrides, zero-width
  marks, line separators) are removed or turned into spaces, and runs of spaces collapsed;
* every configured secret is replaced with ``[redacted]`` — exact occurrences, and any word
  that shares :data:`SECRET_FRAGMENT` or more consecutive characters with a secret (a server
  that quotes a masked key such as ``sk-proj-****abcd`` leaks no part of it either);
* the result is capped at :data:`MESSAGE_LIMIT` characters (after redaction, so a cut can never
  leave part of a secret behind).

Only the message is kept, never the body around it (which may echo the request), and HTML error
pages are ignored. The message is shown beside the adapter's fixed detail, never inside it: a
failure's fingerprint never depends on what a server says.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

import msgspec

__all__ = [
    "ERROR_BODY_LIMIT",
    "MESSAGE_LIMIT",
    "SECRET_FRAGMENT",
    "Redactor",
    "ServerError",
    "server_error",
]

ERROR_BODY_LIMIT: Final = 16_384
"""How much of an error body is read (bytes); the rest is discarded unread."""
MESSAGE_LIMIT: Final = 300
"""The longest provider message shown (characters, after sanitising)."""
SECRET_FRAGMENT: Final = 8
"""Words sharing this many consecutive characters with a secret are redacted whole."""
_SCAN_LIMIT: Final = 4096
"""Characters of a raw message looked at (the shown part is far shorter)."""
REDACTED: Final = "[redacted]"

_SPACE_CATEGORIES: Final = frozenset({"Zs", "Zl", "Zp"})
_DROP_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})


@dataclass(frozen=True, slots=True)
class ServerError:
    """What a server said about a failure: its message (raw) and its machine-readable words."""

    message: str | None = None
    code: str | None = None
    type: str | None = None

    @property
    def words(self) -> str:
        """``type`` and ``code`` in lower case (for classifying the failure)."""
        return f"{self.type or ''} {self.code or ''}".lower()


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value
    return None


def _word(value: Any) -> str | None:
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        text = str(value)
        return text[:100] if text else None
    return None


def from_error_object(error: Any) -> ServerError:
    """The :class:`ServerError` of an ``error`` member (an object, or a bare string)."""
    if isinstance(error, dict):
        return ServerError(
            _text(error.get("message")), _word(error.get("code")), _word(error.get("type"))
        )
    return ServerError(_text(error))


def server_error(body: bytes, content_type: str = "") -> ServerError:
    """The server's own error message and codes in an error body, as far as it has them.

    JSON bodies: ``{"error": {"message", "code", "type"}}`` (OpenAI and compatible servers),
    ``{"error": "..."}``, ``{"message": "..."}`` or ``{"detail": "..."}``. Other bodies are
    taken as plain text unless they look like HTML. Nothing usable gives an empty result.
    """
    text = body.decode("utf-8", "replace").strip()
    if not text:
        return ServerError()
    if text[0] in "{[" or "json" in content_type.lower():
        try:
            data = msgspec.json.decode(body)
        except msgspec.DecodeError:
            data = None
        if isinstance(data, dict):
            if "error" in data:
                return from_error_object(data["error"])
            return ServerError(_text(data.get("message")) or _text(data.get("detail")))
        if data is not None:
            return ServerError()
    if text[0] == "<" or "html" in content_type.lower():
        return ServerError()
    return ServerError(text)


class Redactor:
    """Sanitises provider text for display, redacting the configured ``secrets``."""

    __slots__ = ("__weakref__", "_fragments", "_secrets")

    def __init__(self, secrets: Iterable[str]) -> None:
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._fragments = frozenset(
            secret[i : i + SECRET_FRAGMENT]
            for secret in self._secrets
            for i in range(len(secret) - SECRET_FRAGMENT + 1)
        )

    def __repr__(self) -> str:
        return f"Redactor(<{len(self._secrets)} secret(s)>)"

    def _leaks(self, word: str) -> bool:
        fragments = self._fragments
        return any(
            word[i : i + SECRET_FRAGMENT] in fragments
            for i in range(len(word) - SECRET_FRAGMENT + 1)
        )

    def redact(self, text: str) -> str:
        """``text`` with every secret, and every word sharing a fragment of one, redacted.

        Nothing else changes (for log lines, where the layout must stay as it was).
        """
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        if self._fragments:
            for word in {word for word in text.split() if self._leaks(word)}:
                text = text.replace(word, REDACTED)
        return text

    def clean(self, text: str | None, limit: int = MESSAGE_LIMIT) -> str | None:
        """``text`` without control characters or secrets, at most ``limit`` characters.

        ``None`` when nothing printable is left.
        """
        if text is None:
            return None
        kept: list[str] = []
        for char in text[:_SCAN_LIMIT]:
            category = unicodedata.category(char)
            if category in _SPACE_CATEGORIES or char in "\t\n\r\v\f":
                kept.append(" ")
            elif category not in _DROP_CATEGORIES:
                kept.append(char)
        cleaned = "".join(kept)
        for secret in self._secrets:
            cleaned = cleaned.replace(secret, REDACTED)
        words = cleaned.split()
        if self._fragments:
            words = [REDACTED if self._leaks(word) else word for word in words]
        shown = " ".join(words)
        if not shown:
            return None
        if len(shown) > limit:
            shown = shown[: limit - 1].rstrip() + "…"
        return shown
