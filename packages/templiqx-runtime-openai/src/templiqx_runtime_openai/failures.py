"""Runtime failures: stable codes, fixed detail sentences, the server's words beside them.

Every ``detail`` is one of the fixed sentences of :class:`~.details.Detail` (plus an HTTP
status or a limit), and a failure's fingerprint is
``fingerprint({"adapter": <id>, "code": <code>, "detail": <detail>})`` (the recipe the reference
uses for its HTTP adapter), so it is stable across machines, runs and providers.

What varies goes into the failure's other fields (DECISIONS 20), filled in by the
:class:`FailureSource` of a client that knows its endpoint: ``status``, ``server``
(``host:port``), ``provider_message`` (the server's own error message, sanitised by a
:class:`~.server_errors.Redactor`) and ``remedy`` (what to check, from :class:`~.advice.Advisor`).
A source without an advisor (e.g. the Langfuse ingestion transport) adds none of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from templiqx_contracts import fingerprint
from templiqx_ports import RuntimeFailure, RuntimeFailureCode, RuntimeFailureError
from templiqx_runtime_openai.advice import Advisor
from templiqx_runtime_openai.details import Detail
from templiqx_runtime_openai.retry_hints import retry_after_ms
from templiqx_runtime_openai.server_errors import Redactor, ServerError, from_error_object

__all__ = [
    "Detail",
    "FailureSource",
    "in_band_failure",
    "retry_after_ms",
    "status_failure",
]

_CONTEXT_WORDS: Final = (
    "context_length_exceeded",
    "contextwindowexceeded",
    "context length",
    "context window",
    "maximum context",
)


@dataclass(frozen=True, slots=True)
class FailureSource:
    """The adapter a failure is attributed to, and (optionally) the endpoint it was calling.

    ``advisor`` adds ``server`` and a ``remedy`` to every failure; ``redactor`` is what makes a
    server's message safe to show — without one, no provider text is ever kept.
    """

    adapter_id: str
    adapter_version: str
    advisor: Advisor | None = None
    redactor: Redactor | None = None

    def error(
        self,
        code: RuntimeFailureCode,
        detail: str,
        *,
        retry_after: int | None = None,
        status: int | None = None,
        said: ServerError | None = None,
        context_window: bool = False,
    ) -> RuntimeFailureError:
        """A :class:`RuntimeFailureError` with this identity and a payload-free fingerprint.

        ``said`` is what the server said about it (its message is shown only after the
        redactor has cleaned it); ``status`` the HTTP status it answered.
        """
        advisor = self.advisor
        message = None
        if said is not None and self.redactor is not None:
            message = self.redactor.clean(said.message)
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
            status=status,
            server=advisor.server if advisor is not None else None,
            provider_message=message,
            remedy=(
                advisor.remedy(
                    code,
                    detail,
                    status=status,
                    retry_after=retry_after,
                    context_window=context_window,
                )
                if advisor is not None
                else None
            ),
        )
        return RuntimeFailureError(failure)


def _exceeds_context(said: ServerError) -> bool:
    text = f"{said.words} {said.message or ''}".lower()
    return any(word in text for word in _CONTEXT_WORDS)


def status_failure(
    source: FailureSource,
    status: int,
    headers: Mapping[str, str],
    said: ServerError | None = None,
) -> RuntimeFailureError:
    """The failure for a non-2xx status, with what the server said in its body (if read).

    429 → rate limited and 5xx → unavailable, both with the retry hint of the headers; 3xx →
    permanent (redirects are not followed); other 4xx → permanent, with a detail of its own
    when the server says the context window was exceeded.
    """
    said = said or ServerError()
    if status == 429 or 500 <= status <= 599:
        code = RuntimeFailureCode.RATE_LIMITED if status == 429 else RuntimeFailureCode.UNAVAILABLE
        return source.error(
            code,
            Detail.http_status(status),
            retry_after=retry_after_ms(headers),
            status=status,
            said=said,
        )
    if 300 <= status <= 399:
        return source.error(RuntimeFailureCode.PERMANENT, Detail.REDIRECT, status=status)
    if _exceeds_context(said):
        return source.error(
            RuntimeFailureCode.PERMANENT,
            Detail.context_window(status),
            status=status,
            said=said,
            context_window=True,
        )
    return source.error(
        RuntimeFailureCode.PERMANENT, Detail.http_status(status), status=status, said=said
    )


def in_band_failure(source: FailureSource, error: Any) -> RuntimeFailureError:
    """The failure for an in-band ``{"error": ...}`` (a stream event, or a 2xx body).

    Classified by the error's ``type``/``code`` words only: rate limits are
    ``TQX_RUNTIME_RATE_LIMITED``, invalid requests and policy refusals
    ``TQX_RUNTIME_PERMANENT``, anything else (overload, server errors)
    ``TQX_RUNTIME_UNAVAILABLE``. The error's message is shown, sanitised.
    """
    said = from_error_object(error)
    words = said.words
    if "rate_limit" in words or "rate limit" in words:
        code = RuntimeFailureCode.RATE_LIMITED
    elif any(word in words for word in ("invalid_request", "content_filter", "content_policy")):
        code = RuntimeFailureCode.PERMANENT
    else:
        code = RuntimeFailureCode.UNAVAILABLE
    return source.error(code, Detail.IN_BAND_ERROR, said=said)
