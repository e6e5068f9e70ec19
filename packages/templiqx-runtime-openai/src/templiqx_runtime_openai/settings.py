"""Settings of the OpenAI-compatible runtime: where the model is, how to authenticate, limits.

Settings are built explicitly (``OpenAISettings(base_url=..., api_key=..., model=...)``) or from
the environment (:meth:`OpenAISettings.from_env`). Every value is checked on construction; an
error names the setting (or environment variable) and never echoes a credential or a URL.
``repr()`` never shows the API key.

From the environment, every problem is reported at once (one :class:`SettingsError` listing
each missing or invalid variable), and ``MODEL_API_KEY`` / ``MODEL_BASE_URL`` fall back to
``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` when unset or blank (DECISIONS 23). The settings
remember which variable each value came from (:class:`SettingLabels`), so a failure's help line
can say which one to check.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, TypeVar

from templiqx_ports import InvalidDataError

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_STREAM_BYTES",
    "DEFAULT_TIMEOUT_MS",
    "ENV_FALLBACKS",
    "HELP_FOR_MODEL_SETTINGS",
    "EnvReader",
    "OpenAISettings",
    "SettingLabels",
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

ENV_FALLBACKS: Final[Mapping[str, str]] = {
    "MODEL_BASE_URL": "OPENAI_BASE_URL",
    "MODEL_API_KEY": "OPENAI_API_KEY",
}
"""The variables read when a ``MODEL_*`` one is unset or blank (DECISIONS 23)."""

_T = TypeVar("_T")


class SettingsError(InvalidDataError, ValueError):
    """A runtime setting is missing or invalid (``TQX_DATA_INVALID``).

    ``problems`` lists each problem found (one sentence each, naming the setting or variable);
    the message joins them.
    """

    def __init__(self, detail: str, *, help: str | None = None) -> None:
        super().__init__(detail, help=help)
        self.problems: tuple[str, ...] = (detail,)

    @classmethod
    def of(cls, what: str, problems: list[str], *, help: str | None = None) -> SettingsError:
        """One error for several problems: ``{what}: {problem}; {problem}; ...``."""
        error = cls(f"{what}: " + "; ".join(problems), help=help)
        error.problems = tuple(problems)
        return error


def require_env(environ: Mapping[str, str], name: str) -> str:
    """The non-blank value of ``name``, or a :class:`SettingsError` naming it."""
    value = environ.get(name, "").strip()
    if not value:
        raise SettingsError(f"missing required environment variable {name}")
    return value


def env_positive_int(environ: Mapping[str, str], name: str, default: int) -> int:
    """An optional positive integer from the environment (blank or unset means ``default``).

    The message never repeats the value (it may have been meant for another variable).
    """
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isascii() or not raw.isdigit() or int(raw) <= 0:
        raise SettingsError(f"{name} must be a positive whole number (milliseconds)")
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


class EnvReader:
    """Reads settings from an environment, collecting every problem instead of stopping.

    Use :meth:`text`, :meth:`checked` and :meth:`positive_int` for each setting, then
    :meth:`raise_problems` once; values that had a problem come back as ``None``.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.problems: list[str] = []

    def text(self, name: str) -> tuple[str, str] | None:
        """``(value, variable)`` of the first non-blank of ``name`` and its fallback, if any.

        A missing value is recorded as ``NAME is not set`` (``NAME (or FALLBACK) is not set``).
        """
        fallback = ENV_FALLBACKS.get(name)
        for variable in (name, fallback):
            if variable is None:
                continue
            value = self.environ.get(variable, "").strip()
            if value:
                return value, variable
        self.problems.append(
            f"{name} (or {fallback}) is not set" if fallback else f"{name} is not set"
        )
        return None

    def checked(self, name: str, check: Callable[[str, str], _T]) -> tuple[_T, str] | None:
        """:meth:`text`, then ``check(variable, value)``; its problem is recorded, not raised."""
        found = self.text(name)
        if found is None:
            return None
        value, variable = found
        try:
            return check(variable, value), variable
        except SettingsError as exc:
            self.problems.append(exc.detail)
            return None

    def positive_int(self, name: str, default: int) -> int:
        """:func:`env_positive_int`, recording a problem (and returning ``default``)."""
        try:
            return env_positive_int(self.environ, name, default)
        except SettingsError as exc:
            self.problems.append(exc.detail)
            return default

    def raise_problems(self, what: str, *, help: str) -> None:
        """Raise one :class:`SettingsError` listing every problem recorded, if any."""
        if self.problems:
            raise SettingsError.of(what, self.problems, help=help)


HELP_FOR_MODEL_SETTINGS: Final = (
    "set MODEL_BASE_URL (the API root, e.g. https://api.openai.com/v1), MODEL_API_KEY and "
    "MODEL_ID in the environment of this process; MODEL_BASE_URL and MODEL_API_KEY fall back to "
    "OPENAI_BASE_URL and OPENAI_API_KEY when unset; MODEL_TIMEOUT_MS is optional (default 30000)"
)


@dataclass(frozen=True, slots=True)
class SettingLabels:
    """Where each setting came from: an environment variable, or the constructor argument."""

    base_url: str = "base_url"
    api_key: str = "api_key"
    model: str = "model"
    timeout: str = "timeout_ms"


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
    labels: SettingLabels = field(default=SettingLabels(), repr=False, compare=False)
    """Which variable (or argument) each value came from; used in help lines."""

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

        The first three are required (blank counts as missing); ``MODEL_BASE_URL`` and
        ``MODEL_API_KEY`` fall back to ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``.
        ``MODEL_TIMEOUT_MS`` defaults to 30000 and must be a positive whole number. Every
        problem is listed in one :class:`SettingsError`.
        """
        reader = EnvReader(environ)
        settings = cls.read(reader)
        reader.raise_problems("model settings are missing or invalid", help=HELP_FOR_MODEL_SETTINGS)
        assert settings is not None
        return settings

    @classmethod
    def read(cls, reader: EnvReader) -> OpenAISettings | None:
        """The settings from ``reader``'s environment, or ``None`` with its problems recorded.

        For runtimes that read more settings and report all problems together.
        """
        before = len(reader.problems)
        base_url = reader.checked("MODEL_BASE_URL", check_http_url)
        api_key = reader.checked("MODEL_API_KEY", check_header_value)
        model = reader.text("MODEL_ID")
        timeout_ms = reader.positive_int("MODEL_TIMEOUT_MS", DEFAULT_TIMEOUT_MS)
        if base_url is None or api_key is None or model is None or len(reader.problems) > before:
            return None
        return cls(
            base_url=base_url[0],
            api_key=api_key[0],
            model=model[0],
            timeout_ms=timeout_ms,
            labels=SettingLabels(
                base_url=base_url[1],
                api_key=api_key[1],
                model=model[1],
                timeout="MODEL_TIMEOUT_MS",
            ),
        )
