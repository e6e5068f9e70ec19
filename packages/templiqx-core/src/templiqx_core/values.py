"""Validation of request values and of runtime output against their schemas."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from templiqx_contracts import Contract, Diagnostic, FieldSpec, RenderRequest, quote_input
from templiqx_core import codes
from templiqx_core.schema import compile_schema, validate_instance
from templiqx_core.suggest import closest, name_list

__all__ = ["RESERVED_CONTEXT_PREFIX", "validate_output", "validate_values"]

RESERVED_CONTEXT_PREFIX = "_templiqx_"
"""Context keys with this prefix (translations, authorization) are host-injected and skipped."""


def _misspellings(
    scope: str, fields: Mapping[str, FieldSpec], supplied: Mapping[str, Any]
) -> dict[str, str]:
    """Undeclared value -> the missing required field it is a likely misspelling of (each
    field taken once): one mistake, reported once, as the undeclared value."""
    skip_reserved = scope == "context"
    missing = [n for n in sorted(fields) if fields[n].required and n not in supplied]
    paired: dict[str, str] = {}
    for name in sorted(supplied):
        if name in fields or (skip_reserved and name.startswith(RESERVED_CONTEXT_PREFIX)):
            continue
        meant = closest(name, [n for n in missing if n not in paired.values()])
        if meant is not None:
            paired[name] = meant
    return paired


def _validate_scope(
    scope: str,
    fields: Mapping[str, FieldSpec],
    supplied: Mapping[str, Any],
    out: list[Diagnostic],
) -> None:
    misspelt = _misspellings(scope, fields, supplied)
    meant = set(misspelt.values())
    for name in sorted(fields):
        spec = fields[name]
        pointer = f"/{scope}/{name}"
        if name not in supplied:
            if spec.required and name not in meant:
                out.append(
                    codes.problem(
                        codes.VALUE_REQUIRED,
                        f"required {scope} value '{name}' is missing",
                        pointer,
                    )
                )
            continue
        engine = compile_schema(spec.schema)
        if engine.error is not None:
            out.append(codes.problem(codes.FIELD_SCHEMA_INVALID, engine.error, pointer))
            continue
        validate_instance(spec.schema, supplied[name], pointer, codes.VALUE_SCHEMA, out, engine)
    skip_reserved = scope == "context"
    for name in sorted(supplied):
        if skip_reserved and name.startswith(RESERVED_CONTEXT_PREFIX):
            continue
        if name not in fields:
            if name in misspelt:
                hint = f"; did you mean {quote_input(misspelt[name])}?"
            else:
                hint = f"; declared {scope}: {name_list(sorted(fields))}"
            out.append(
                codes.problem(
                    codes.VALUE_UNKNOWN,
                    f"undeclared {scope} value {quote_input(name)}{hint}",
                    f"/{scope}/{name}",
                )
            )


def validate_values(contract: Contract, request: RenderRequest) -> list[Diagnostic]:
    """Check the request's inputs, then its context, against the declared fields.

    Missing required values, schema failures (engine and date formats) and undeclared values
    are reported; ``_templiqx_*`` context keys are accepted without declaration. Never raises.
    """
    out: list[Diagnostic] = []
    try:
        _validate_scope("inputs", contract.inputs, request.inputs, out)
        _validate_scope("context", contract.context, request.context, out)
    except RecursionError:
        out.append(
            codes.problem(codes.CONTENT_TOO_DEEP, "the request nests too deeply to validate", "")
        )
    return out


def validate_output(schema: Any, output: Any) -> list[Diagnostic]:
    """Check runtime output against an output schema (``TQX_OUTPUT_SCHEMA`` at ``/output``).

    A schema that does not compile yields one ``TQX_OUTPUT_SCHEMA_INVALID`` at
    ``/output_schema``. Never raises.
    """
    engine = compile_schema(schema)
    if engine.error is not None:
        return [codes.problem(codes.OUTPUT_SCHEMA_INVALID, engine.error, "/output_schema")]
    out: list[Diagnostic] = []
    try:
        validate_instance(schema, output, "/output", codes.OUTPUT_SCHEMA, out, engine)
    except RecursionError:
        out.append(
            codes.problem(codes.CONTENT_TOO_DEEP, "the output nests too deeply to validate", "")
        )
    return out
