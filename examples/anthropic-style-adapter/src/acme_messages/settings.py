"""Where the provider is and how to reach it: explicit values, or ``ACME_MESSAGES_*`` variables.

The variables carry this adapter's own prefix (``docs/writing-an-adapter.md`` §1): they never
collide with the built-in ``openai`` runtime's ``MODEL_*`` names, so switching ``--runtime``
cannot send one provider's key to another. They are read when the model is first called, and
every missing one is named in a single error (DECISIONS 23).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from templiqx_ports import InvalidDataError

__all__ = ["ENV_PREFIX", "MessagesSettings", "SettingsError"]

ENV_PREFIX: Final = "ACME_MESSAGES_"
_REQUIRED: Final = ("BASE_URL", "API_KEY", "MODEL")


class SettingsError(InvalidDataError):
    """A setting is missing or invalid (``TQX_DATA_INVALID``); never repeats a credential."""


@dataclass(frozen=True)
class MessagesSettings:
    """How to reach one Messages-style API.

    ``base_url`` is the API root that ``/v1/messages`` is appended to. ``timeout_ms`` bounds a
    whole call (connect, headers, body or stream). ``max_tokens`` is sent when the contract's
    ``runtime_policy`` gives none (the API requires one). The three ``max_*_bytes`` limits bound
    memory (DECISIONS 9).
    """

    base_url: str
    api_key: str = field(repr=False)
    model: str
    timeout_ms: int = 30_000
    max_tokens: int = 4096
    max_response_bytes: int = 2_097_152
    max_line_bytes: int = 1_048_576
    max_stream_bytes: int = 67_108_864

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise SettingsError("base_url must start with http:// or https://")
        if not self.api_key.strip() or any(ch.isspace() for ch in self.api_key):
            raise SettingsError("api_key must be a non-empty value without spaces")
        if not self.model.strip():
            raise SettingsError("model must not be empty")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> MessagesSettings:
        """Read ``ACME_MESSAGES_BASE_URL``, ``_API_KEY``, ``_MODEL`` and ``_TIMEOUT_MS``."""
        env = os.environ if environ is None else environ
        values = {name: env.get(ENV_PREFIX + name, "").strip() for name in _REQUIRED}
        missing = [ENV_PREFIX + name for name, value in values.items() if not value]
        if missing:
            raise SettingsError(
                f"missing environment variable(s) {', '.join(missing)}",
                help=f"set {', '.join(missing)} to reach the Messages API",
            )
        timeout = env.get(ENV_PREFIX + "TIMEOUT_MS", "").strip() or "30000"
        if not timeout.isdigit() or int(timeout) <= 0:
            raise SettingsError(f"{ENV_PREFIX}TIMEOUT_MS must be a positive whole number")
        return cls(
            base_url=values["BASE_URL"].rstrip("/"),
            api_key=values["API_KEY"],
            model=values["MODEL"],
            timeout_ms=int(timeout),
        )
