"""Settings of the Langfuse tracing: where Langfuse is, its keys, what a trace may carry."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from templiqx_runtime_openai import (
    EnvReader,
    SettingsError,
    check_header_value,
    check_http_url,
)

__all__ = [
    "DEFAULT_TRACE_TIMEOUT_MS",
    "HELP_FOR_LANGFUSE_SETTINGS",
    "ExportMode",
    "LangfuseSettings",
    "PayloadPolicy",
]

DEFAULT_TRACE_TIMEOUT_MS: Final = 2000
"""The whole-call deadline of one ingestion POST: short, so tracing never stalls execution."""


HELP_FOR_LANGFUSE_SETTINGS: Final = (
    "set LANGFUSE_HOST (e.g. https://cloud.langfuse.com), LANGFUSE_PUBLIC_KEY and "
    "LANGFUSE_SECRET_KEY in the environment of this process; TEMPLIQX_LANGFUSE_PAYLOAD "
    "(full or fingerprints_only), TEMPLIQX_LANGFUSE_EXPORT (ingestion, otlp or both) and "
    "TEMPLIQX_LANGFUSE_TIMEOUT_MS are optional"
)


class PayloadPolicy(StrEnum):
    """What a trace carries besides ids, fingerprints, timings, usage and status."""

    FINGERPRINTS_ONLY = "fingerprints_only"
    """No prompt and no output: only ids, fingerprints, timings, usage and the outcome."""
    FULL = "full"
    """The reference behaviour: the prompt messages and the output too."""


class ExportMode(StrEnum):
    """Which Langfuse endpoint traces go to."""

    INGESTION = "ingestion"
    """The batch ingestion API, as the reference does (the default)."""
    OTLP = "otlp"
    """Langfuse's OpenTelemetry endpoint (``/api/public/otel/v1/traces``), OTLP/HTTP JSON."""
    BOTH = "both"
    """Both, one after the other (e.g. while moving dashboards from one to the other)."""

    @property
    def ingestion(self) -> bool:
        """Whether traces go to the ingestion API."""
        return self is not ExportMode.OTLP

    @property
    def otlp(self) -> bool:
        """Whether traces go to the OTLP endpoint."""
        return self is not ExportMode.INGESTION


@dataclass(frozen=True, slots=True)
class LangfuseSettings:
    """How to reach Langfuse. ``repr()`` never shows either key."""

    host: str
    public_key: str = field(repr=False)
    secret_key: str = field(repr=False)
    payload_policy: PayloadPolicy = PayloadPolicy.FINGERPRINTS_ONLY
    timeout_ms: int = DEFAULT_TRACE_TIMEOUT_MS
    export: ExportMode = ExportMode.INGESTION

    def __post_init__(self) -> None:
        object.__setattr__(self, "host", check_http_url("langfuse host", self.host))
        check_header_value("langfuse public_key", self.public_key)
        check_header_value("langfuse secret_key", self.secret_key)
        try:
            object.__setattr__(self, "payload_policy", PayloadPolicy(self.payload_policy))
        except ValueError:
            raise SettingsError("payload_policy must be 'full' or 'fingerprints_only'") from None
        try:
            object.__setattr__(self, "export", ExportMode(self.export))
        except ValueError:
            raise SettingsError("export must be 'ingestion', 'otlp' or 'both'") from None
        timeout = self.timeout_ms
        if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout <= 0:
            raise SettingsError("timeout_ms must be a positive integer")

    @property
    def ingestion_url(self) -> str:
        """``{host}/api/public/ingestion`` (the batch ingestion endpoint)."""
        return self.host + "/api/public/ingestion"

    @property
    def otlp_url(self) -> str:
        """``{host}/api/public/otel/v1/traces`` (the OpenTelemetry traces endpoint)."""
        return self.host + "/api/public/otel/v1/traces"

    @property
    def authorization(self) -> str:
        """``Basic base64(public_key:secret_key)``."""
        token = base64.b64encode(f"{self.public_key}:{self.secret_key}".encode("ascii"))
        return "Basic " + token.decode("ascii")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LangfuseSettings:
        """Read ``LANGFUSE_HOST``, ``LANGFUSE_PUBLIC_KEY``, ``LANGFUSE_SECRET_KEY`` (required),
        ``TEMPLIQX_LANGFUSE_PAYLOAD`` (``full`` or ``fingerprints_only``, the default),
        ``TEMPLIQX_LANGFUSE_EXPORT`` (``ingestion``, the default, ``otlp`` or ``both``) and
        ``TEMPLIQX_LANGFUSE_TIMEOUT_MS`` (default 2000); every problem in one error."""
        reader = EnvReader(environ)
        settings = cls.read(reader)
        reader.raise_problems(
            "Langfuse settings are missing or invalid", help=HELP_FOR_LANGFUSE_SETTINGS
        )
        assert settings is not None
        return settings

    @classmethod
    def read(cls, reader: EnvReader) -> LangfuseSettings | None:
        """The settings from ``reader``'s environment, or ``None`` with its problems recorded."""
        before = len(reader.problems)
        host = reader.checked("LANGFUSE_HOST", check_http_url)
        public_key = reader.checked("LANGFUSE_PUBLIC_KEY", check_header_value)
        secret_key = reader.checked("LANGFUSE_SECRET_KEY", check_header_value)
        raw_policy = reader.environ.get("TEMPLIQX_LANGFUSE_PAYLOAD", "").strip()
        if raw_policy and raw_policy not in {p.value for p in PayloadPolicy}:
            reader.problems.append(
                "TEMPLIQX_LANGFUSE_PAYLOAD must be 'full' or 'fingerprints_only'"
            )
        raw_export = reader.environ.get("TEMPLIQX_LANGFUSE_EXPORT", "").strip()
        if raw_export and raw_export not in {m.value for m in ExportMode}:
            reader.problems.append("TEMPLIQX_LANGFUSE_EXPORT must be 'ingestion', 'otlp' or 'both'")
        timeout_ms = reader.positive_int("TEMPLIQX_LANGFUSE_TIMEOUT_MS", DEFAULT_TRACE_TIMEOUT_MS)
        if host is None or public_key is None or secret_key is None:
            return None
        if len(reader.problems) > before:
            return None
        return cls(
            host=host[0],
            public_key=public_key[0],
            secret_key=secret_key[0],
            payload_policy=PayloadPolicy(raw_policy)
            if raw_policy
            else PayloadPolicy.FINGERPRINTS_ONLY,
            timeout_ms=timeout_ms,
            export=ExportMode(raw_export) if raw_export else ExportMode.INGESTION,
        )
