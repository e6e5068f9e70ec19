"""Turning port errors and failures into diagnostics, and small diagnostic helpers.

Every diagnostic says how to fix its problem (:func:`with_help`) and, when it is about a
contract's text, where in that text (:func:`address`): the file label and the line and column
the JSON pointer leads to.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import msgspec

from templiqx_application.codes import fix_hint
from templiqx_contracts import CanonicalJSONError, Diagnostic, OperationEnvelope, fingerprint
from templiqx_ports import PortError, RuntimeFailureError

__all__ = [
    "REQUEST_CODES",
    "address",
    "contract_file",
    "envelope_placed_in_request",
    "error",
    "fingerprint_or_diagnostic",
    "output_schema_problems",
    "placed_in_request",
    "port_diagnostic",
    "with_file",
    "with_help",
]

REQUEST_CODES: Final = frozenset({"TQX_VALUE_REQUIRED", "TQX_VALUE_SCHEMA", "TQX_VALUE_UNKNOWN"})
"""Codes whose pointer addresses the render request, not the contract text: never located in it."""


def error(code: str, message: str, pointer: str = "", *, help: str | None = None) -> Diagnostic:
    """An error diagnostic; the pointer is always present (possibly ``""``); ``help`` defaults
    to the code's fix hint."""
    return Diagnostic.error(code, message, pointer, help=help or fix_hint(code))


def with_help(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics, each without ``help`` given its code's fix hint (when the code has one)."""
    helped: list[Diagnostic] = []
    for diagnostic in diagnostics:
        hint = None if diagnostic.help else fix_hint(diagnostic.code)
        helped.append(
            diagnostic if hint is None else msgspec.structs.replace(diagnostic, help=hint)
        )
    return helped


def port_diagnostic(exc: PortError) -> Diagnostic:
    """The diagnostic of a port error: its code, its display text and pointer ``""``.

    A runtime failure also carries the help line naming the adapter, the scenario, the retry
    hint and the failure fingerprint (never a payload); any other port error the fix its
    adapter gave it (``PortError.help``), if any.
    """
    help_text = exc.failure.help_text() if isinstance(exc, RuntimeFailureError) else exc.help
    return Diagnostic.error(exc.code, str(exc), "", help=help_text or fix_hint(exc.code))


def with_file(diagnostic: Diagnostic, file: str) -> Diagnostic:
    """The diagnostic with ``file`` set."""
    return msgspec.structs.replace(diagnostic, file=file)


def contract_file(package: str, contract: str) -> str:
    """The portable label of a contract source: ``{package}/contracts/{contract}.yaml``."""
    return f"{package}/contracts/{contract}.yaml"


def address(
    diagnostics: Iterable[Diagnostic], package: str, contract: str, *, source: str | None = None
) -> list[Diagnostic]:
    """Give every diagnostic without a ``file`` the contract's portable label.

    With the contract's ``source`` text, a diagnostic whose pointer leads into it also gets the
    ``span`` of that place (request-value problems, whose pointers address the request, and
    render problems, whose pointer is ``""``, are left without one).
    """
    label = contract_file(package, contract)
    found = list(diagnostics)
    located = source is not None and any(_locatable(d) for d in found)
    source_map = None
    if located and source is not None:
        from templiqx_core import SourceMap  # the YAML reader: loaded when a source is located

        source_map = SourceMap(source)
    addressed: list[Diagnostic] = []
    for diagnostic in found:
        if source_map is not None and _locatable(diagnostic):
            (diagnostic,) = source_map.locate([diagnostic])
        addressed.append(
            diagnostic if diagnostic.file is not None else with_file(diagnostic, label)
        )
    return addressed


def envelope_placed_in_request(
    envelope: OperationEnvelope, text: str | bytes, file: str
) -> OperationEnvelope:
    """``envelope`` with its request-value problems placed in ``text`` (see
    :func:`placed_in_request`); the same envelope when it has none."""
    placed = placed_in_request(envelope.diagnostics, text, file)
    if placed == list(envelope.diagnostics):
        return envelope
    return msgspec.structs.replace(envelope, diagnostics=placed)


def placed_in_request(
    diagnostics: Iterable[Diagnostic], text: str | bytes, file: str
) -> list[Diagnostic]:
    """The diagnostics, with each request-value problem placed in the request document it is
    about: ``text``, known to its reader as ``file`` (a CLI's ``--values`` file as given).

    Its pointer (``/inputs/customer/seats``) leads to the value in that text (an undeclared
    one is shown by its key); a missing value points at the mapping that lacks it
    (``inputs``), as far as the text goes.
    """
    found = list(diagnostics)
    if not any(_about_request(d) for d in found):
        return found
    from templiqx_core import SourceMap  # the YAML reader: loaded when a request is located

    request = SourceMap(text)
    return [
        msgspec.structs.replace(
            d,
            file=file,
            span=request.span(d.json_pointer or "", key=d.code == "TQX_VALUE_UNKNOWN"),
        )
        if _about_request(d)
        else d
        for d in found
    ]


def _about_request(diagnostic: Diagnostic) -> bool:
    pointer = diagnostic.json_pointer or ""
    return diagnostic.code in REQUEST_CODES and pointer.startswith(("/inputs", "/context"))


def _locatable(diagnostic: Diagnostic) -> bool:
    return (
        diagnostic.span is None
        and bool(diagnostic.json_pointer)
        and diagnostic.file is None
        and diagnostic.code not in REQUEST_CODES
    )


def output_schema_problems(schema: Any, output: Any) -> list[Diagnostic]:
    """One ``TQX_OUTPUT_SCHEMA`` per way a runtime's output breaks the contract's schema.

    Each at its pointer under ``/output``, naming the schema keyword and the reason; at most
    ``templiqx_core.OUTPUT_VIOLATION_LIMIT``, then the total (``output_violations``).
    """
    from templiqx_core import output_violations  # the schema engine, loaded on first use

    return with_help(
        msgspec.structs.replace(d, help=None) for d in output_violations(schema, output)
    )


def fingerprint_or_diagnostic(value: Any) -> tuple[str | None, list[Diagnostic]]:
    """``fingerprint(value)``, or a ``TQX_SERIALIZE`` diagnostic when it cannot be written."""
    try:
        return fingerprint(value), []
    except CanonicalJSONError as exc:
        return None, [error("TQX_SERIALIZE", str(exc))]
