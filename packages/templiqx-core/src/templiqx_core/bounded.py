"""The bounded JSON-Schema subset every contract schema must stay inside.

This is an additional check on top of the engine: the engine still compiles and enforces every
keyword present, and this walk reports what falls outside the subset or can never be satisfied.
The steps and their order are fixed (they decide the order of diagnostics).
"""

from __future__ import annotations

import math
from typing import Any

from templiqx_contracts import Diagnostic, quote_input
from templiqx_core import codes
from templiqx_core.equality import strict_json_equal
from templiqx_core.schema import accepts
from templiqx_core.suggest import did_you_mean

__all__ = ["ALLOWED_KEYWORDS", "SCALAR_TYPES", "validate_bounded_schema"]

ALLOWED_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "format",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
        "uniqueItems",
        "description",
        "title",
    }
)
SCALAR_TYPES = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})
_BOUND_PAIRS = (("minLength", "maxLength"), ("minItems", "maxItems"), ("minimum", "maximum"))


def _number(value: Any) -> float | None:
    """A JSON number as an f64 (``None`` for anything else, booleans included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf
    return None if math.isnan(number) else number


def _matches_type(value: Any, type_name: str) -> bool:
    if type_name == "null":
        return value is None
    if type_name == "boolean":
        return isinstance(value, bool)
    if type_name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "array":
        return isinstance(value, list)
    if type_name == "object":
        return isinstance(value, dict)
    return False


def validate_bounded_schema(schema: Any, pointer: str, out: list[Diagnostic]) -> None:
    """Append the bounded-subset diagnostics of ``schema`` (rooted at ``pointer``) to ``out``."""
    if not isinstance(schema, dict):
        out.append(
            codes.problem(
                codes.SCHEMA_BOUNDED_SUBSET,
                "a schema here must be a JSON object (true and false schemas are not supported)",
                pointer,
            )
        )
        return
    for key in sorted(schema):
        if key not in ALLOWED_KEYWORDS:
            unused = sorted(ALLOWED_KEYWORDS - schema.keys())
            out.append(
                codes.problem(
                    codes.SCHEMA_KEYWORD_UNSUPPORTED,
                    f"JSON Schema keyword {quote_input(key)} is not supported in templiqx "
                    f"schemas{did_you_mean(key, unused, quote_input)}",
                    f"{pointer}/{key}",
                )
            )
    type_name = schema.get("type")
    if not isinstance(type_name, str):
        out.append(
            codes.problem(
                codes.SCHEMA_TYPE_REQUIRED,
                "a schema needs exactly one `type`, written as a string",
                f"{pointer}/type",
            )
        )
        return
    if type_name not in SCALAR_TYPES:
        out.append(
            codes.problem(
                codes.SCHEMA_TYPE_UNSUPPORTED,
                f"schema type {quote_input(type_name)} is unsupported"
                f"{did_you_mean(type_name, sorted(SCALAR_TYPES), quote_input)}",
                f"{pointer}/type",
            )
        )
    if "additionalProperties" in schema and not isinstance(schema["additionalProperties"], bool):
        out.append(
            codes.problem(
                codes.SCHEMA_KEYWORD_UNSUPPORTED,
                "additionalProperties must be true or false (a schema there is not supported)",
                f"{pointer}/additionalProperties",
            )
        )
    _check_enum_and_const(schema, type_name, pointer, out)
    _check_structure(schema, type_name, pointer, out)
    if "format" in schema and (
        type_name != "string" or schema["format"] not in ("date", "date-time")
    ):
        out.append(
            codes.problem(
                codes.SCHEMA_FORMAT_UNSUPPORTED,
                "only date and date-time string formats are supported",
                f"{pointer}/format",
            )
        )
    _check_bounds(schema, type_name, pointer, out)


def _check_enum_and_const(
    schema: dict[str, Any], type_name: str, pointer: str, out: list[Diagnostic]
) -> None:
    enum = schema.get("enum")
    enum_list = enum if isinstance(enum, list) else None
    if enum_list is not None and not any(_matches_type(v, type_name) for v in enum_list):
        out.append(
            codes.problem(
                codes.SCHEMA_ENUM_IMPOSSIBLE,
                "enum must contain at least one value matching the declared type",
                f"{pointer}/enum",
            )
        )
    has_const = "const" in schema
    const = schema.get("const")
    if has_const and not _matches_type(const, type_name):
        out.append(
            codes.problem(
                codes.SCHEMA_CONST_IMPOSSIBLE,
                "const does not match the declared type",
                f"{pointer}/const",
            )
        )
    if (
        has_const
        and enum_list is not None
        and not any(strict_json_equal(const, v) for v in enum_list)
    ):
        out.append(
            codes.problem(
                codes.SCHEMA_CONST_ENUM_CONTRADICTION,
                "const must be one of the values allowed by enum",
                pointer,
            )
        )
    if has_const and not accepts(schema, const):
        out.append(
            codes.problem(
                codes.SCHEMA_CONST_CONTRADICTION,
                "const is rejected by another constraint in the same schema",
                pointer,
            )
        )
    if enum_list is not None and not any(accepts(schema, v) for v in enum_list):
        out.append(
            codes.problem(
                codes.SCHEMA_ENUM_IMPOSSIBLE,
                "every enum value is rejected by another constraint in the same schema",
                pointer,
            )
        )


def _check_structure(
    schema: dict[str, Any], type_name: str, pointer: str, out: list[Diagnostic]
) -> None:
    if "properties" in schema:
        properties = schema["properties"]
        if type_name != "object":
            out.append(
                codes.problem(
                    codes.SCHEMA_KEYWORD_TYPE,
                    "properties is only valid for object schemas",
                    f"{pointer}/properties",
                )
            )
        if isinstance(properties, dict):
            for name in sorted(properties):
                validate_bounded_schema(properties[name], f"{pointer}/properties/{name}", out)
            required = schema.get("required")
            if isinstance(required, list):
                for name in required:
                    if isinstance(name, str) and name not in properties:
                        out.append(
                            codes.problem(
                                codes.SCHEMA_REQUIRED_UNKNOWN,
                                f"required property '{name}' is not declared",
                                f"{pointer}/required",
                            )
                        )
    if "items" in schema:
        if type_name != "array":
            out.append(
                codes.problem(
                    codes.SCHEMA_KEYWORD_TYPE,
                    "items is only valid for array schemas",
                    f"{pointer}/items",
                )
            )
        validate_bounded_schema(schema["items"], f"{pointer}/items", out)
    elif type_name == "array":
        out.append(
            codes.problem(
                codes.SCHEMA_ITEMS_REQUIRED,
                "array schemas require a typed items schema",
                f"{pointer}/items",
            )
        )


def _check_bounds(
    schema: dict[str, Any], type_name: str, pointer: str, out: list[Diagnostic]
) -> None:
    for lower_key, upper_key in _BOUND_PAIRS:
        lower, upper = _number(schema.get(lower_key)), _number(schema.get(upper_key))
        if lower is not None and upper is not None and lower > upper:
            out.append(
                codes.problem(
                    codes.SCHEMA_IMPOSSIBLE_BOUNDS,
                    f"{lower_key} cannot exceed {upper_key}",
                    pointer,
                )
            )
    minimum = _number(schema.get("minimum"))
    exclusive_minimum = _number(schema.get("exclusiveMinimum"))
    maximum = _number(schema.get("maximum"))
    exclusive_maximum = _number(schema.get("exclusiveMaximum"))
    if (
        (minimum is not None and exclusive_maximum is not None and minimum >= exclusive_maximum)
        or (exclusive_minimum is not None and maximum is not None and exclusive_minimum >= maximum)
        or (
            exclusive_minimum is not None
            and exclusive_maximum is not None
            and exclusive_minimum >= exclusive_maximum
        )
    ):
        out.append(
            codes.problem(
                codes.SCHEMA_IMPOSSIBLE_BOUNDS,
                "numeric lower bound leaves no value below the upper bound",
                pointer,
            )
        )
    if type_name != "integer":
        return
    lowers = []
    if minimum is not None:
        lowers.append(_ceil(minimum))
    if exclusive_minimum is not None:
        lowers.append(_floor(exclusive_minimum) + 1.0)
    uppers = []
    if maximum is not None:
        uppers.append(_floor(maximum))
    if exclusive_maximum is not None:
        uppers.append(_ceil(exclusive_maximum) - 1.0)
    if lowers and uppers and max(lowers) > min(uppers):
        out.append(
            codes.problem(
                codes.SCHEMA_IMPOSSIBLE_INTEGER_BOUNDS,
                "integer bounds contain no integer value",
                pointer,
            )
        )


def _ceil(value: float) -> float:
    return value if math.isinf(value) else float(math.ceil(value))


def _floor(value: float) -> float:
    return value if math.isinf(value) else float(math.floor(value))
