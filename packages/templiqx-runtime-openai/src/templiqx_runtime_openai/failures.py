"""Runtime failures: stable codes, fixed detail sentences, payload-free fingerprints.

Every detail is one of the fixed sentences below (plus an HTTP status or a limit). Nothing a
provider sends — body text, headers other than retry hints, error messages — and no credential
ever reaches a detail, so a failure can be logged, fingerprinted and shown to users as is.

A failure's fingerprint is ``fingerprint({"adapter": <id>, "code": <code>, "detail": <detail>})``
(the recipe the reference uses for its HTTP adapter); with fixed details it is stable across
machines and runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from templiqx_contracts import fingerprint
from templiqx_ports import RuntimeFailure, RuntimeFailureCode, RuntimeFailureError

__all__ = [
    "Detail",
    "FailureSource",
    "in_band_code",
    "retry_after_ms",
    "status_failure",
]

_U64_MAX: Final = (1 << 64) - 1


class Detail:
    """The fixed failure sentences (a namespace of constants and small formatters)."""

    CANCELLED: Final = "model request was cancelled"
    CONNECT: Final = "could not connect to the model server"
    TLS: Final = "TLS connection to the model server failed"
    DROPPED: Final = "model server closed the connection before the response was complete"
    NO_DONE: Final = "model stream ended without [DONE]"
    DECODING: Final = "model response body could not be decoded (content encoding)"
    NOT_COMPLETION: Final = "model response was not a valid chat completion"
    NO_CHOICES: Final = "model response had no choices"
    NO_CONTENT: Final = "model response had no content"
    NOT_JSON: Final = "model output was not valid JSON"
    TRUNCATED: Final = "model output was cut off at the token limit before the JSON was complete"
    TOOL_ARGUMENTS: Final = "model tool call arguments were not valid JSON"
    REFUSED: Final = "the model refused the request"
    MALFORMED_EVENT: Final = "model stream carried a malformed event"
    NOT_EVENT_STREAM: Final = "model server answered a streaming request without an event stream"
    IN_BAND_ERROR: Final = "model server reported an error inside the response"
    REDIRECT: Final = "model server answered with a redirect, which is not followed"

    @staticmethod
    def http_status(status: int) -> str:
        """``model server returned HTTP {status}``."""
        return f"model server returned HTTP {status}"

    @staticmethod
    def deadline(timeout_ms: int) -> str:
        """``model request exceeded the {timeout_ms} ms deadline``."""
        return f"model request exceeded the {timeout_ms} ms deadline"

    @staticmethod
    def response_limit(limit: int) -> str:
        """``model response exceeded {limit} byte limit`` (body or assembled output)."""
        return f"model response exceeded {limit} byte limit"

    @staticmethod
    def line_limit(limit: int) -> str:
        """``model stream line exceeded {limit} byte limit``."""
        return f"model stream line exceeded {limit} byte limit"

    @staticmethod
    def stream_limit(limit: int) -> str:
        """``model stream exceeded {limit} byte limit`` (raw bytes received)."""
        return f"model stream exceeded {limit} byte limit"

    @staticmethod
    def policy(key: str, expected: str) -> str:
        """``runtime_policy.{key} must be {expected}``."""
        return f"runtime_policy.{key} must be {expected}"


@dataclass(frozen=True, slots=True)
class FailureSource:
    """The adapter identity a failure is attributed to."""

    adapter_id: str
    adapter_version: str

    def error(
        self, code: RuntimeFailureCode, detail: str, *, retry_after: int | None = None
    ) -> RuntimeFailureError:
        """A :class:`RuntimeFailureError` with this identity and a payload-free fingerprint."""
        failure = RuntimeFailure(
            code=code,
            adapter_id=self.adapter_id,
            adapter_version=self.adapter_version,
            fingerprint=fingerprint(
                {"adapter": self.adapter_id, "code": code.value, "detail": detail}
            ),
            detail=detail,
            scenario_id=None,
            retry_after_ms=retry_after,
        )
        return RuntimeFailureError(failure)


def _unsigned(text: str | None) -> int | None:
    if text is None:
        return None
    value = text.strip()
    if not value or not value.isascii() or not value.isdigit():
        return None
    number = int(value)
    return number if number <= _U64_MAX else None


def retry_after_ms(headers: Mapping[str, str]) -> int | None:
    """The retry hint of a 429 response in milliseconds, or ``None``.

    Precedence: ``x-retry-after-ms`` (milliseconds), then ``retry-after-ms`` (milliseconds, what
    OpenAI sends), then ``Retry-After`` as whole seconds. An unparsable value falls through to
    the next header; the HTTP-date form of ``Retry-After`` is ignored. ``headers`` must look
    names up case-insensitively (as ``requests`` response headers do).
    """
    for name in ("x-retry-after-ms", "retry-after-ms"):
        value = _unsigned(headers.get(name))
        if value is not None:
            return value
    seconds = _unsigned(headers.get("retry-after"))
    if seconds is None:
        return None
    millis = seconds * 1000
    return millis if millis <= _U64_MAX else None


def status_failure(
    source: FailureSource, status: int, headers: Mapping[str, str]
) -> RuntimeFailureError:
    """The failure for a non-2xx status (the body is never read)."""
    if status == 429:
        return source.error(
            RuntimeFailureCode.RATE_LIMITED,
            Detail.http_status(status),
            retry_after=retry_after_ms(headers),
        )
    if 500 <= status <= 599:
        return source.error(RuntimeFailureCode.UNAVAILABLE, Detail.http_status(status))
    if 300 <= status <= 399:
        return source.error(RuntimeFailureCode.PERMANENT, Detail.REDIRECT)
    return source.error(RuntimeFailureCode.PERMANENT, Detail.http_status(status))


def in_band_code(error: Any) -> RuntimeFailureCode:
    """Classify an in-band ``{"error": ...}`` payload by its ``type``/``code`` words only.

    Rate limits are ``TQX_RUNTIME_RATE_LIMITED``, invalid requests and policy refusals
    ``TQX_RUNTIME_PERMANENT``, anything else (overload, server errors) ``TQX_RUNTIME_UNAVAILABLE``.
    """
    words = ""
    if isinstance(error, Mapping):
        words = f"{error.get('type')} {error.get('code')}".lower()
    if "rate_limit" in words or "rate limit" in words:
        return RuntimeFailureCode.RATE_LIMITED
    if any(word in words for word in ("invalid_request", "content_filter", "content_policy")):
        return RuntimeFailureCode.PERMANENT
    return RuntimeFailureCode.UNAVAILABLE
