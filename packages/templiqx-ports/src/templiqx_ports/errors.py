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
    "InvalidDataError",
    "InvalidPathError",
    "NotFoundError",
    "PortError",
    "PortIOError",
    "RuntimeFailure",
    "RuntimeFailureCode",
    "RuntimeFailureError",
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
    """A runtime failure as a value (equality by every field)."""

    code: RuntimeFailureCode
    adapter_id: str
    adapter_version: str
    fingerprint: str
    detail: str
    scenario_id: str | None = None
    retry_after_ms: int | None = None

    @property
    def retryable(self) -> bool:
        """Whether a host may retry this failure."""
        return self.code.retryable

    def help_text(self) -> str:
        """The diagnostic ``help`` line the application attaches to a runtime failure."""
        scenario = self.scenario_id if self.scenario_id is not None else "none"
        retry = str(self.retry_after_ms) if self.retry_after_ms is not None else "none"
        return (
            f"adapter={self.adapter_id} version={self.adapter_version} scenario={scenario} "
            f"retry_after_ms={retry} fingerprint={self.fingerprint}"
        )


class RuntimeFailureError(PortError):
    """A runtime adapter failed; ``failure`` carries the full value object."""

    prefix = "runtime failure"

    def __init__(self, failure: RuntimeFailure) -> None:
        super().__init__(failure.detail)
        self.failure = failure
        self.code = failure.code.value

    def __str__(self) -> str:
        return f"runtime failure {self.failure.code.value}: {self.failure.detail}"

    def __reduce__(self) -> tuple[type[RuntimeFailureError], tuple[RuntimeFailure]]:
        return (type(self), (self.failure,))
