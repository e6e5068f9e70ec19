"""The fixed failure sentences of the OpenAI-compatible runtime.

Every failure ``detail`` is one of these sentences (plus a status or a limit): they enter the
failure's fingerprint, so nothing a server sends and nothing that differs between machines is
ever part of one.
"""

from __future__ import annotations

from typing import Final

__all__ = ["Detail"]


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
    def context_window(status: int) -> str:
        """``model server returned HTTP {status}: the prompt exceeds the context window``.

        A 4xx whose error code or message says the context length was exceeded: a fixed
        sentence of its own, so it is told apart (and fingerprinted apart) from other 400s.
        """
        return f"model server returned HTTP {status}: the prompt exceeds the context window"

    @staticmethod
    def tool_field_limit(field: str, limit: int) -> str:
        """``model tool call {field} exceeded {limit} byte limit`` (``name`` or ``id``)."""
        return f"model tool call {field} exceeded {limit} byte limit"

    @staticmethod
    def settings(problems: str) -> str:
        """``runtime settings are missing or invalid: {problems}`` (variable names only)."""
        return f"runtime settings are missing or invalid: {problems}"

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
