"""Port errors: what any adapter (store, workspace, runtime) may raise, each with a stable code.

``str(error)`` is the display text the application puts in the diagnostic message, e.g.
``not found: greeting`` or ``runtime failure TQX_RUNTIME_TIMEOUT: deadline exceeded``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar

import msgspec

__all__ = [
    "RETRYABLE_CODES",
    "BusyError",
    "ConflictError",
    "HostRetryExhaustedError",
    "InvalidDataError",
    "InvalidPathError",
    "InvalidResponseError",
    "NotFoundError",
    "PermanentFailureError",
    "PortError",
    "PortIOError",
    "RateLimitedError",
    "RuntimeCancelledError",
    "RuntimeFailure",
    "RuntimeFailureCode",
    "RuntimeFailureError",
    "RuntimeTimeoutError",
    "RuntimeUnavailableError",
    "UnsupportedError",
]


class PortError(Exception):
    """Base of every port error. ``code`` is the stable ``TQX_*`` diagnostic code.

    ``help``, when the adapter knows how to fix this particular failure, is the fix hint the
    application puts on the diagnostic (e.g. where a missing package was looked for).
    """

    CODE: ClassVar[str] = "TQX_IO"
    prefix: ClassVar[str] = "error"

    def __init__(self, detail: str, *, help: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.help = help
        self.code: str = self.CODE

    def __str__(self) -> str:
        return f"{self.prefix}: {self.detail}"


class NotFoundError(PortError):
    """Something addressed by name or path does not exist."""

    CODE = "TQX_NOT_FOUND"
    prefix = "not found"


class ConflictError(PortError):
    """A compare-and-swap token is stale, or the target already exists."""

    CODE = "TQX_CAS_CONFLICT"
    prefix = "conflict"


class BusyError(PortError):
    """A lock another writer held for longer than the adapter waits for it; retry later."""

    CODE = "TQX_BUSY"
    prefix = "busy"


class InvalidPathError(PortError):
    """A path is unsafe: traversal, absolute, backslash, NUL, symlink, or outside its root."""

    CODE = "TQX_PATH_INVALID"
    prefix = "invalid path"


class UnsupportedError(PortError):
    """The adapter cannot do what was asked."""

    CODE = "TQX_UNSUPPORTED"
    prefix = "unsupported"


class PortIOError(PortError):
    """An operating-system I/O failure."""

    CODE = "TQX_IO"
    prefix = "I/O error"


class InvalidDataError(PortError):
    """Stored or supplied data does not decode to what it must be."""

    CODE = "TQX_DATA_INVALID"
    prefix = "invalid data"


class RuntimeFailureCode(StrEnum):
    """Why a runtime execution failed. The value is the stable diagnostic code."""

    TIMEOUT = "TQX_RUNTIME_TIMEOUT"
    RATE_LIMITED = "TQX_RUNTIME_RATE_LIMITED"
    UNAVAILABLE = "TQX_RUNTIME_UNAVAILABLE"
    INVALID_RESPONSE = "TQX_RUNTIME_INVALID_RESPONSE"
    PERMANENT = "TQX_RUNTIME_PERMANENT"
    HOST_RETRY_EXHAUSTED = "TQX_HOST_RETRY_EXHAUSTED"
    CANCELLED = "TQX_RUNTIME_CANCELLED"

    @property
    def retryable(self) -> bool:
        """Whether a host may retry: only timeouts, rate limits and unavailability."""
        return self in RETRYABLE_CODES

    def __str__(self) -> str:
        return self.value


RETRYABLE_CODES: frozenset[RuntimeFailureCode] = frozenset(
    {RuntimeFailureCode.TIMEOUT, RuntimeFailureCode.RATE_LIMITED, RuntimeFailureCode.UNAVAILABLE}
)


class RuntimeFailure(msgspec.Struct, kw_only=True, frozen=True):
    """A runtime failure as a value (equality by every field).

    ``detail`` is a fixed sentence of the adapter's (it enters ``fingerprint``, so it never
    carries anything that varies between machines or providers). The optional fields say more
    about this occurrence without touching the fingerprint:

    * ``status`` — the HTTP status the server answered, when the failure came from one;
    * ``server`` — the ``host:port`` that was called (never user information, path or query);
    * ``provider_message`` — the server's own error message, sanitised by the adapter (control
      characters removed, length-capped, every configured secret redacted; DECISIONS 20);
    * ``remedy`` — what to check or change, in words, built from local settings.
    """

    code: RuntimeFailureCode
    adapter_id: str
    adapter_version: str
    fingerprint: str
    detail: str
    scenario_id: str | None = None
    retry_after_ms: int | None = None
    status: int | None = None
    server: str | None = None
    provider_message: str | None = None
    remedy: str | None = None

    @property
    def retryable(self) -> bool:
        """Whether a host may retry this failure."""
        return self.code.retryable

    @property
    def message(self) -> str:
        """The detail, then the server called and its own words when known.

        ``model server returned HTTP 404 (127.0.0.1:8080): "Invalid model name"``.
        """
        text = self.detail
        if self.server is not None:
            text += f" ({self.server})"
        if self.provider_message:
            text += f': "{self.provider_message}"'
        return text

    def help_text(self) -> str:
        """The diagnostic ``help`` line the application attaches to a runtime failure.

        The adapter's ``remedy`` when it gave one. Otherwise the identifying fields
        (``adapter=… version=… scenario=… retry_after_ms=… fingerprint=…``): the scripted mock
        gives no remedy, and its scenario goldens read the ``fingerprint=`` and
        ``retry_after_ms=`` tokens of this line.
        """
        if self.remedy is not None:
            return self.remedy
        scenario = self.scenario_id if self.scenario_id is not None else "none"
        retry = str(self.retry_after_ms) if self.retry_after_ms is not None else "none"
        return (
            f"adapter={self.adapter_id} version={self.adapter_version} scenario={scenario} "
            f"retry_after_ms={retry} fingerprint={self.fingerprint}"
        )


class RuntimeFailureError(PortError):
    """A runtime adapter failed; ``failure`` carries the full value object.

    Like :class:`OSError` with an ``errno``, constructing ``RuntimeFailureError(failure)``
    gives the subclass of the failure's code, so callers can catch one class of failure::

        try:
            runtime.execute(request)
        except RateLimitedError as error:
            wait_ms = error.failure.retry_after_ms
    """

    prefix = "runtime failure"
    FAILURE_CODE: ClassVar[RuntimeFailureCode | None] = None
    """The code every instance of this subclass carries (``None`` on the base class)."""

    def __new__(cls, failure: RuntimeFailure) -> RuntimeFailureError:
        if cls is RuntimeFailureError:
            cls = _ERROR_CLASSES.get(failure.code, RuntimeFailureError)
        return super().__new__(cls, failure)

    def __init__(self, failure: RuntimeFailure) -> None:
        super().__init__(failure.detail, help=failure.remedy)
        self.failure = failure
        self.code = failure.code.value

    def __str__(self) -> str:
        return f"runtime failure {self.failure.code.value}: {self.failure.message}"

    def __reduce__(self) -> tuple[type[RuntimeFailureError], tuple[RuntimeFailure]]:
        return (type(self), (self.failure,))


class RuntimeTimeoutError(RuntimeFailureError):
    """``TQX_RUNTIME_TIMEOUT``: the model did not answer within the deadline (retryable)."""

    FAILURE_CODE = RuntimeFailureCode.TIMEOUT


class RateLimitedError(RuntimeFailureError):
    """``TQX_RUNTIME_RATE_LIMITED``: retry after ``failure.retry_after_ms`` when given."""

    FAILURE_CODE = RuntimeFailureCode.RATE_LIMITED


class RuntimeUnavailableError(RuntimeFailureError):
    """``TQX_RUNTIME_UNAVAILABLE``: the server could not be reached or failed (retryable)."""

    FAILURE_CODE = RuntimeFailureCode.UNAVAILABLE


class InvalidResponseError(RuntimeFailureError):
    """``TQX_RUNTIME_INVALID_RESPONSE``: the answer was unusable (malformed, cut, too large)."""

    FAILURE_CODE = RuntimeFailureCode.INVALID_RESPONSE


class PermanentFailureError(RuntimeFailureError):
    """``TQX_RUNTIME_PERMANENT``: refused (credentials, request, policy); do not retry as is."""

    FAILURE_CODE = RuntimeFailureCode.PERMANENT


class HostRetryExhaustedError(RuntimeFailureError):
    """``TQX_HOST_RETRY_EXHAUSTED``: the host gave up after retrying."""

    FAILURE_CODE = RuntimeFailureCode.HOST_RETRY_EXHAUSTED


class RuntimeCancelledError(RuntimeFailureError):
    """``TQX_RUNTIME_CANCELLED``: the caller cancelled the execution."""

    FAILURE_CODE = RuntimeFailureCode.CANCELLED


_ERROR_CLASSES: dict[RuntimeFailureCode, type[RuntimeFailureError]] = {
    cls.FAILURE_CODE: cls
    for cls in (
        RuntimeTimeoutError,
        RateLimitedError,
        RuntimeUnavailableError,
        InvalidResponseError,
        PermanentFailureError,
        HostRetryExhaustedError,
        RuntimeCancelledError,
    )
    if cls.FAILURE_CODE is not None
}
