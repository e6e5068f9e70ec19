"""Turning port errors and failures into diagnostics, and small diagnostic helpers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from templiqx_contracts import CanonicalJSONError, Diagnostic, fingerprint
from templiqx_ports import PortError, RuntimeFailureError

__all__ = [
    "address",
    "contract_file",
    "error",
    "fingerprint_or_diagnostic",
    "port_diagnostic",
    "with_file",
]


def error(code: str, message: str, pointer: str = "", *, help: str | None = None) -> Diagnostic:
    """An error diagnostic; the pointer is always present (possibly ``""``)."""
    return Diagnostic.error(code, message, pointer, help=help)


def port_diagnostic(exc: PortError) -> Diagnostic:
    """The diagnostic of a port error: its code, its display text and pointer ``""``.

    A runtime failure also carries the help line naming the adapter, the scenario, the retry
    hint and the failure fingerprint (never a payload); any other port error the fix its
    adapter gave it (``PortError.help``), if any.
    """
    help_text = exc.failure.help_text() if isinstance(exc, RuntimeFailureError) else exc.help
    return Diagnostic.error(exc.code, str(exc), "", help=help_text)


def with_file(diagnostic: Diagnostic, file: str) -> Diagnostic:
    """The diagnostic with ``file`` set."""
    return msgspec.structs.replace(diagnostic, file=file)


def contract_file(package: str, contract: str) -> str:
    """The portable label of a contract source: ``{package}/contracts/{contract}.yaml``."""
    return f"{package}/contracts/{contract}.yaml"


def address(diagnostics: Iterable[Diagnostic], package: str, contract: str) -> list[Diagnostic]:
    """Give every diagnostic without a ``file`` the contract's portable label."""
    label = contract_file(package, contract)
    return [d if d.file is not None else with_file(d, label) for d in diagnostics]


def fingerprint_or_diagnostic(value: Any) -> tuple[str | None, list[Diagnostic]]:
    """``fingerprint(value)``, or a ``TQX_SERIALIZE`` diagnostic when it cannot be written."""
    try:
        return fingerprint(value), []
    except CanonicalJSONError as exc:
        return None, [error("TQX_SERIALIZE", str(exc))]
