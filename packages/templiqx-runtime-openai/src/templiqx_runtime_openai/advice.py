"""What to check when a call fails: one remedy per failure class, built from local settings.

A runtime failure's ``remedy`` becomes the diagnostic's ``help`` line. It names the setting to
look at — by the environment variable it came from (``MODEL_API_KEY``, or ``OPENAI_API_KEY``
when that was the fallback used) — and the local values that help (the URL tried, the model id,
the deadline), never a credential and never anything the server sent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

from templiqx_ports import RuntimeFailureCode
from templiqx_runtime_openai.details import Detail

if TYPE_CHECKING:
    from templiqx_runtime_openai.settings import OpenAISettings

__all__ = ["Advisor", "server_address"]

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def server_address(url: str) -> str:
    """``host:port`` of an http(s) URL (the scheme's port when none is given)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port or _DEFAULT_PORTS.get(parts.scheme.lower(), 80)}"


@dataclass(frozen=True, slots=True)
class Advisor:
    """Builds failure remedies for one model endpoint (see :meth:`remedy`)."""

    server: str
    base_url: str
    completions_url: str
    model: str
    timeout_ms: int
    base_label: str
    key_label: str
    model_label: str
    timeout_label: str

    @classmethod
    def of(cls, settings: OpenAISettings) -> Advisor:
        """The advisor for ``settings`` (labels name the variables the values came from)."""
        labels = settings.labels
        return cls(
            server=server_address(settings.base_url),
            base_url=settings.base_url,
            completions_url=settings.completions_url,
            model=settings.model,
            timeout_ms=settings.timeout_ms,
            base_label=labels.base_url,
            key_label=labels.api_key,
            model_label=labels.model,
            timeout_label=labels.timeout,
        )

    def _key(self) -> str:
        if self.key_label == "OPENAI_API_KEY":
            return "OPENAI_API_KEY (used because MODEL_API_KEY is not set)"
        return self.key_label

    def _base(self) -> str:
        return f"{self.base_label} (now {self.base_url})"

    def for_status(self, status: int, retry_after: int | None, context_window: bool) -> str:
        """The remedy for an HTTP error status."""
        if status in (401, 403):
            what = "did not accept" if status == 401 else "does not allow this request with"
            return (
                f"the server at {self.server} {what} the API key: check {self._key()}, and that "
                f"it may use model '{self.model}'"
            )
        if status == 404:
            return (
                f"check {self._base()}: requests go to {self.completions_url}; and check "
                f"{self.model_label} (now '{self.model}') names a model this server offers"
            )
        if status == 429:
            return self._retry("the server is rate limiting these calls", retry_after)
        if 500 <= status <= 599:
            return self._retry(f"the server at {self.server} failed (HTTP {status})", retry_after)
        if 300 <= status <= 399:
            return (
                f"the server redirects instead of answering: set {self._base()} to the final "
                "API root URL (redirects are not followed, so the API key is never re-sent)"
            )
        if context_window:
            return (
                f"the prompt and the answer do not fit model '{self.model}''s context window: "
                "shorten the input, or lower runtime_policy.max_tokens in the contract"
            )
        return (
            f"the server refused the request (HTTP {status}); its message says why. Check "
            f"{self.model_label} (now '{self.model}'), runtime_policy, and the contract's "
            "output_schema (strict structured output accepts a subset of JSON Schema)"
        )

    def _retry(self, what: str, retry_after: int | None) -> str:
        if retry_after is not None:
            return f"{what}: retry after {retry_after} ms"
        return f"{what}: retry later (the server sent no retry hint)"

    def remedy(
        self,
        code: RuntimeFailureCode,
        detail: str,
        *,
        status: int | None = None,
        retry_after: int | None = None,
        context_window: bool = False,
    ) -> str:
        """The remedy for a failure of ``code`` with ``detail`` (and its HTTP ``status``)."""
        if status is not None:
            return self.for_status(status, retry_after, context_window)
        fixed = _BY_DETAIL.get(detail)
        if fixed is not None:
            return fixed(self)
        if code is RuntimeFailureCode.TIMEOUT:
            return (
                f"the server at {self.server} did not finish within {self.timeout_ms} ms: raise "
                f"{self.timeout_label} (now {self.timeout_ms}), or retry later"
            )
        if code is RuntimeFailureCode.RATE_LIMITED:
            return self._retry("the server reported a rate limit", retry_after)
        if code is RuntimeFailureCode.UNAVAILABLE:
            return self._retry(f"the server at {self.server} reported a failure", retry_after)
        if detail.startswith("runtime_policy."):
            return f"fix {detail.split(' ', 1)[0]} in the contract's runtime_policy"
        if "byte limit" in detail:
            return (
                "the answer was larger than this runtime accepts: lower runtime_policy.max_tokens"
                ", or raise the limit (OpenAISettings max_response_bytes, max_line_bytes, "
                "max_stream_bytes)"
            )
        return (
            "the server's answer could not be used as the contract's output; retrying "
            "unchanged is unlikely to help"
        )


def _connect(advisor: Advisor) -> str:
    return (
        f"could not reach {advisor.completions_url}: check {advisor._base()} and that the "
        "server is running and reachable from here"
    )


def _tls(advisor: Advisor) -> str:
    return (
        f"check that {advisor.base_label} uses the scheme the server speaks (http or https) and "
        f"that the certificate of {advisor.server} is trusted (REQUESTS_CA_BUNDLE or "
        "SSL_CERT_FILE for a private certificate authority)"
    )


def _dropped(advisor: Advisor) -> str:
    return (
        f"the connection to {advisor.server} ended before the answer was complete: retry; if it "
        "keeps happening, check the idle timeout of any proxy in between"
    )


def _not_api(advisor: Advisor) -> str:
    return (
        f"the server at {advisor.server} did not answer like an OpenAI-compatible "
        f"chat-completions API: check {advisor._base()} points at the API root (for OpenAI: "
        "https://api.openai.com/v1)"
    )


def _refused(advisor: Advisor) -> str:
    return (
        f"model '{advisor.model}' refused to answer: rephrase the input, or review the "
        "provider's content policy"
    )


def _not_json(advisor: Advisor) -> str:
    return (
        f"model '{advisor.model}' did not answer with JSON: use a model that supports strict "
        "structured output, or retry"
    )


def _truncated(advisor: Advisor) -> str:
    return (
        "the answer hit the token limit before the JSON was complete: raise "
        "runtime_policy.max_tokens in the contract, or ask for a shorter output"
    )


def _tool_arguments(advisor: Advisor) -> str:
    return (
        f"model '{advisor.model}' produced tool-call arguments that are not JSON: retry, or use "
        "a model with reliable tool calling"
    )


def _cancelled(advisor: Advisor) -> str:
    return "the caller cancelled the call; nothing to fix"


def _no_content(advisor: Advisor) -> str:
    return (
        f"model '{advisor.model}' returned no content for a structured-output contract: retry, "
        "or check the prompt asks for the JSON the schema describes"
    )


_BY_DETAIL: Final[dict[str, Callable[[Advisor], str]]] = {
    Detail.CONNECT: _connect,
    Detail.TLS: _tls,
    Detail.DROPPED: _dropped,
    Detail.NO_DONE: _dropped,
    Detail.DECODING: _not_api,
    Detail.NOT_COMPLETION: _not_api,
    Detail.NO_CHOICES: _not_api,
    Detail.MALFORMED_EVENT: _not_api,
    Detail.NOT_EVENT_STREAM: _not_api,
    Detail.NO_CONTENT: _no_content,
    Detail.NOT_JSON: _not_json,
    Detail.TRUNCATED: _truncated,
    Detail.TOOL_ARGUMENTS: _tool_arguments,
    Detail.REFUSED: _refused,
    Detail.CANCELLED: _cancelled,
}
"""Remedies of the fixed detail sentences."""
