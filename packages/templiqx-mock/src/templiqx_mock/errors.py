"""Errors raised while reading scenario manifests, inventories and the mock's configuration.

Every error is a :class:`templiqx_ports.PortError`, so it carries a stable ``code``:
``TQX_DATA_INVALID`` for anything malformed and ``TQX_IO`` when a file cannot be read.
``message`` is the bare explanation; ``str(error)`` is the display text, e.g.
``invalid mock scenario: scenario id and contract must be non-empty``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from templiqx_ports import PortError

__all__ = [
    "MockConfigurationError",
    "ScenarioError",
    "ScenarioIOError",
    "ScenarioJSONError",
    "ScenarioYAMLError",
]

ScenarioErrorKind = Literal["invalid", "io", "json", "yaml"]


class ScenarioError(PortError):
    """A scenario manifest or inventory breaks a rule of ``templiqx.mock/v1alpha1``.

    The base class is the validation failure (``kind == "invalid"``); the subclasses are the
    other ways reading a scenario can fail.
    """

    CODE = "TQX_DATA_INVALID"
    prefix = "invalid mock scenario"
    kind: ClassVar[ScenarioErrorKind] = "invalid"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __reduce__(self) -> tuple[type[ScenarioError], tuple[str]]:
        return (type(self), (self.message,))


class ScenarioJSONError(ScenarioError):
    """The document is not JSON, or does not have the manifest's shape (types, unknown fields)."""

    prefix = "invalid JSON mock scenario"
    kind = "json"


class ScenarioYAMLError(ScenarioError):
    """The document is not YAML, or does not have the manifest's shape (types, unknown fields)."""

    prefix = "invalid YAML mock scenario"
    kind = "yaml"


class ScenarioIOError(ScenarioError):
    """A manifest or inventory file cannot be read."""

    CODE = "TQX_IO"
    kind = "io"

    def __init__(self, path: str, source: str) -> None:
        super().__init__(source)
        self.path = path

    def __str__(self) -> str:
        return f"I/O error reading {self.path}: {self.message}"

    def __reduce__(self) -> tuple[type[ScenarioError], tuple[str, str]]:  # type: ignore[override]
        return (type(self), (self.path, self.message))


class MockConfigurationError(PortError):
    """``create_runtime()`` cannot build the mock from its environment variables.

    The message names the variable and says how to fix it. ``code`` is the code of the
    underlying problem (``TQX_DATA_INVALID``, or ``TQX_IO`` for an unreadable manifest).
    """

    CODE = "TQX_DATA_INVALID"
    prefix = "invalid mock runtime configuration"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __reduce__(
        self,
    ) -> tuple[type[MockConfigurationError], tuple[str], dict[str, str]]:
        return (type(self), (self.message,), {"code": self.code})
