"""Where the model server is and how to reach it: explicit values, or ``ACME_OLLAMA_*`` variables.

The variables carry this adapter's own prefix, never the built-in ``openai`` runtime's
``MODEL_*`` names, so switching ``--runtime`` cannot send one provider's key to another. They are
read when the model is first called, and every missing one is named in a single error
(DECISIONS 23). A local Ollama needs no key; a hosted one (or a proxy in front of it) takes a
bearer token, so ``ACME_OLLAMA_API_KEY`` is optional.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from templiqx_ports import InvalidDataError

__all__ = ["ENV_PREFIX", "OllamaSettings", "SettingsError"]

ENV_PREFIX: Final = "ACME_OLLAMA_"
_REQUIRED: Final = ("BASE_URL", "MODEL")


class SettingsError(InvalidDataError):
    """A setting is missing or invalid (``TQX_DATA_INVALID``); never repeats a credential."""


@dataclass(frozen=True)
class OllamaSettings:
    """How to reach one Ollama-style chat API.

    ``base_url`` is the server root that ``/api/chat`` is appended to. ``api_key`` (optional) is
    sent as a bearer token. ``timeout_ms`` bounds a whole call (connect, headers, body or
    stream). The three ``max_*_bytes`` limits bound memory (DECISIONS 9).
    """

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    timeout_ms: int = 30_000
    max_response_bytes: int = 2_097_152
    max_line_bytes: int = 1_048_576
    max_stream_bytes: int = 67_108_864

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise SettingsError("base_url must start with http:// or https://")
        if any(ch.isspace() for ch in self.api_key):
            raise SettingsError("api_key must not contain spaces")
        if not self.model.strip():
            raise SettingsError("model must not be empty")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OllamaSettings:
        """Read ``ACME_OLLAMA_BASE_URL``, ``_MODEL``, ``_API_KEY`` and ``_TIMEOUT_MS``."""
        env = os.environ if environ is None else environ
        values = {name: env.get(ENV_PREFIX + name, "").strip() for name in _REQUIRED}
        missing = [ENV_PREFIX + name for name, value in values.items() if not value]
        if missing:
            raise SettingsError(
                f"missing environment variable(s) {', '.join(missing)}",
                help=f"set {', '.join(missing)} to reach the model server",
            )
        timeout = env.get(ENV_PREFIX + "TIMEOUT_MS", "").strip() or "30000"
        if not timeout.isdigit() or int(timeout) <= 0:
            raise SettingsError(f"{ENV_PREFIX}TIMEOUT_MS must be a positive whole number")
        return cls(
            base_url=values["BASE_URL"].rstrip("/"),
            model=values["MODEL"],
            api_key=env.get(ENV_PREFIX + "API_KEY", "").strip(),
            timeout_ms=int(timeout),
        )
