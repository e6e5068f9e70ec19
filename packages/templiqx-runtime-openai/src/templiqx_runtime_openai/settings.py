"""Settings of the OpenAI-compatible runtime: where the model is, how to authenticate, limits.

Settings are built explicitly (``OpenAISettings(base_url=..., api_key=..., model=...)``) or from
the environment (:meth:`OpenAISettings.from_env`). Every value is checked on construction; an
error names the setting (or environment variable) and never echoes a credential or a URL.
``repr()`` never shows the API key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from templiqx_ports import InvalidDataError

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_STREAM_BYTES",
    "DEFAULT_TIMEOUT_MS",
    "OpenAISettings",
    "SettingsError",
    "check_header_value",
    "check_http_url",
    "env_positive_int",
    "require_env",
]

DEFAULT_TIMEOUT_MS: Final = 30_000
DEFAULT_MAX_RESPONSE_BYTES: Final = 2_097_152
"""Cap on a non-streamed body and on a stream's assembled output (content + tool arguments)."""
DEFAULT_MAX_LINE_BYTES: Final = 1_048_576
"""Cap on one line of an event stream."""
DEFAULT_MAX_STREAM_BYTES: Final = 67_108_864
"""Cap on the raw bytes of one event stream (framing included)."""


class SettingsError(InvalidDataError, ValueError):
    """A runtime setting is missing or invalid (``TQX_DATA_INVALID``)."""


def require_env(environ: Mapping[str, str], name: str) -> str:
    """The non-blank value of ``name``, or a :class:`SettingsError` naming it."""
    value = environ.get(name, "").strip()
    if not value:
        raise SettingsError(f"missing required environment variable {name}")
    return value


def env_positive_int(environ: Mapping[str, str], name: str, default: int) -> int:
    """An optional positive integer from the environment (blank or unset means ``default``)."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isascii() or not raw.isdigit() or int(raw) <= 0:
        raise SettingsError(f"invalid {name} '{raw}': it must be a positive whole number")
    return int(raw)


def check_http_url(label: str, url: str) -> str:
    """``url`` without trailing slashes, if it is a plain http(s) URL; else a SettingsError.

    The URL must start with ``http://`` or ``https://``, have a host, and carry no user
    information (``user:pass@``), query or fragment. The message never repeats the URL.
    """
    text = url.strip()
    if not text:
        raise SettingsError(f"{label} must not be empty")
    lowered = text[:8].lower()
    if lowered.startswith("https://"):
        rest = text[8:]
    elif lowered.startswith("http://"):
        rest = text[7:]
    else:
        raise SettingsError(f"{label} must use http:// or https://")
    authority = rest.split("/", 1)[0]
    if not authority or "@" in authority or "?" in text or "#" in text:
        raise SettingsError(f"{label} must not contain credentials, query, or fragment")
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
        raise SettingsError(f"{label} must not contain whitespace or control characters")
    return text.rstrip("/")


def check_header_value(label: str, value: str) -> str:
    """A credential that is safe to put in an HTTP header; the message never repeats it."""
    if not value or not value.strip():
        raise SettingsError(f"{label} must not be empty")
    if any(ch.isspace() or ord(ch) < 0x21 or ord(ch) > 0x7E for ch in value):
        raise SettingsError(
            f"{label} must be printable ASCII without spaces (check for a stray newline)"
        )
    return value


@dataclass(frozen=True, slots=True)
class OpenAISettings:
    """How to reach one OpenAI-compatible chat-completions server.

    ``base_url`` is the API root that ``/chat/completions`` is appended to (for OpenAI itself
    ``https://api.openai.com/v1``). ``timeout_ms`` bounds each whole call: connect, send,
    headers and the entire body or stream. The three ``max_*`` limits bound memory (see
    DECISIONS 9); exceeding one fails the call with ``TQX_RUNTIME_INVALID_RESPONSE``.
    """

    base_url: str
    api_key: str = field(repr=False)
    model: str
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_stream_bytes: int = DEFAULT_MAX_STREAM_BYTES

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", check_http_url("model base_url", self.base_url))
        check_header_value("model api_key", self.api_key)
        if not self.model.strip():
            raise SettingsError("model id must not be empty")
        for name in ("timeout_ms", "max_response_bytes", "max_line_bytes", "max_stream_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise SettingsError(f"{name} must be a positive integer")

    @property
    def completions_url(self) -> str:
        """``{base_url}/chat/completions``."""
        return self.base_url + "/chat/completions"

    @property
    def timeout_s(self) -> float:
        """The whole-call deadline in seconds."""
        return self.timeout_ms / 1000.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OpenAISettings:
        """Read ``MODEL_BASE_URL``, ``MODEL_API_KEY``, ``MODEL_ID`` and ``MODEL_TIMEOUT_MS``.

        The first three are required (blank counts as missing); ``MODEL_TIMEOUT_MS`` defaults
        to 30000 and must be a positive whole number.
        """
        env = os.environ if environ is None else environ
        base_url = require_env(env, "MODEL_BASE_URL")
        api_key = require_env(env, "MODEL_API_KEY")
        model = require_env(env, "MODEL_ID")
        timeout_ms = env_positive_int(env, "MODEL_TIMEOUT_MS", DEFAULT_TIMEOUT_MS)
        try:
            return cls(base_url=base_url, api_key=api_key, model=model, timeout_ms=timeout_ms)
        except SettingsError as exc:
            raise SettingsError(_env_label(exc.detail)) from None


def _env_label(detail: str) -> str:
    """Point an explicit-construction message at the environment variable it came from."""
    for label, name in (
        ("model base_url", "MODEL_BASE_URL"),
        ("model api_key", "MODEL_API_KEY"),
        ("model id", "MODEL_ID"),
    ):
        if detail.startswith(label):
            return f"{name} ({label}){detail[len(label) :]}"
    return detail
