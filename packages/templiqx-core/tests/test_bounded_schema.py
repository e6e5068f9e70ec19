"""The bounded JSON-Schema subset, step by step (core.md §2.3), and where each schema is checked."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from templiqx_contracts import Contract, Diagnostic
from templiqx_core import validate_contract
from templiqx_core.bounded import validate_bounded_schema


def bounded(schema: Any, pointer: str = "/s") -> list[tuple[str, str | None]]:
    out: list[Diagnostic] = []
    validate_bounded_schema(schema, pointer, out)
    assert all(d.severity == "error" for d in out)
    return [(d.code, d.json_pointer) for d in out]


def messages(schema: Any) -> list[str]:
    out: list[Diagnostic] = []
    validate_bounded_schema(schema, "/s", out)
    return [d.message for d in out]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "null"},
        {"type": "boolean", "description": "d", "title": "t"},
        {"type": "integer", "minimum": 0, "maximum": 0},
        {"type": "number", "exclusiveMinimum": 0, "maximum": 0.5},
        {"type": "string", "minLength": 1, "maxLength": 1, "format": "date"},
        {"type": "string", "format": "date-time", "enum": ["2026-07-11T10:00:00Z"]},
        {"type": "array", "items": {"type": "string"}, "minItems": 0, "uniqueItems": True},
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["a"],
            "properties": {"a": {"type": "integer", "const": 3, "enum": [3, 4]}},
        },
        {"type": "number", "minLength": 4},
        {"type": "object", "required": ["not-checked-without-properties"]},
    ],
)
def test_schemas_inside_the_subset_pass(schema: dict[str, Any]) -> None:
    assert bounded(schema) == []


def test_step_1_non_object_schemas_stop_the_walk() -> None:
    for schema in (True, False, None, [], "string", 3):
        assert bounded(schema) == [("TQX_SCHEMA_BOUNDED_SUBSET", "/s")]
    assert messages(True) == [
        "a schema here must be a JSON object (true and false schemas are not supported)"
    ]


def test_step_2_unsupported_keywords_in_sorted_order_then_step_3_stops() -> None:
    schema = {"oneOf": [], "$schema": "x", "default": 1, "pattern": "a"}
    assert bounded(schema) == [
        ("TQX_SCHEMA_KEYWORD_UNSUPPORTED", "/s/$schema"),
        ("TQX_SCHEMA_KEYWORD_UNSUPPORTED", "/s/default"),
        ("TQX_SCHEMA_KEYWORD_UNSUPPORTED", "/s/oneOf"),
        ("TQX_SCHEMA_KEYWORD_UNSUPPORTED", "/s/pattern"),
        ("TQX_SCHEMA_TYPE_REQUIRED", "/s/type"),
    ]
    assert messages({"type": "string", "pattern": "a"}) == [
        "JSON Schema keyword 'pattern' is not supported in templiqx schemas"
    ]


def test_step_3_type_must_be_one_string() -> None:
    assert bounded({"type": ["string", "null"], "items": True}) == [
        ("TQX_SCHEMA_TYPE_REQUIRED", "/s/type")
    ]
    assert messages({}) == ["a schema needs exactly one `type`, written as a string"]


def test_step_4_unknown_type_continues() -> None:
    assert bounded({"type": "date", "enum": ["x"]}) == [
        ("TQX_SCHEMA_TYPE_UNSUPPORTED", "/s/type"),
        ("TQX_SCHEMA_ENUM_IMPOSSIBLE", "/s/enum"),
        ("TQX_SCHEMA_ENUM_IMPOSSIBLE", "/s"),
    ]
    assert messages({"type": "date"}) == ["schema type 'date' is unsupported"]


def test_step_5_additional_properties_must_be_boolean() -> None:
    assert bounded({"type": "object", "additionalProperties": {}}) == [
        ("TQX_SCHEMA_KEYWORD_UNSUPPORTED", "/s/additionalProperties")
    ]
    assert messages({"type": "object", "additionalProperties": {}}) == [
        "additionalProperties must be true or false (a schema there is not supported)"
    ]


def test_steps_6_and_10_enum_checks() -> None:
    assert bounded({"type": "string", "enum": []}) == [
        ("TQX_SCHEMA_ENUM_IMPOSSIBLE", "/s/enum"),
        ("TQX_SCHEMA_ENUM_IMPOSSIBLE", "/s"),
    ]
    # integer enum with only a float: the float does not match the type "integer" (step 6)
    # but the engine accepts 2.0 as an integer, so step 10 is satisfied.
    assert bounded({"type": "integer", "enum": [2.0]}) == [
        ("TQX_SCHEMA_ENUM_IMPOSSIBLE", "/s/enum")
    ]
    assert bounded({"type": "string", "enum": ["a", "bb"], "minLength": 3}) == [
        ("TQX_SCHEMA_ENUM_IMPOSSIBLE", "/s")
    ]
    assert messages({"type": "string", "enum": ["a"], "minLength": 3}) == [
        "every enum value is rejected by another constraint in the same schema"
    ]
    # a date format rejects every enum value (the core's format check counts)
    assert bounded({"type": "string", "format": "date", "enum": ["2026-02-30"]}) == [
        ("TQX_SCHEMA_ENUM_IMPOSSIBLE", "/s")
    ]


def test_steps_7_to_9_const_checks_use_strict_equality() -> None:
    assert bounded({"type": "string", "const": 1}) == [
        ("TQX_SCHEMA_CONST_IMPOSSIBLE", "/s/const"),
        ("TQX_SCHEMA_CONST_CONTRADICTION", "/s"),
    ]
    # 1 and 1.0 differ for the const-in-enum check, though the engine accepts 1 for enum [1.0]
    assert bounded({"type": "number", "const": 1, "enum": [1.0]}) == [
        ("TQX_SCHEMA_CONST_ENUM_CONTRADICTION", "/s")
    ]
    assert bounded({"type": "boolean", "const": True, "enum": [1]}) == [
        ("TQX_SCHEMA_ENUM_IMPOSSIBLE", "/s/enum"),
        ("TQX_SCHEMA_CONST_ENUM_CONTRADICTION", "/s"),
        ("TQX_SCHEMA_CONST_CONTRADICTION", "/s"),
        ("TQX_SCHEMA_ENUM_IMPOSSIBLE", "/s"),
    ]
    assert bounded({"type": "string", "format": "date-time", "const": "2026-07-11"}) == [
        ("TQX_SCHEMA_CONST_CONTRADICTION", "/s")
    ]


def test_engine_invalid_schema_accepts_nothing() -> None:
    # minLength -1 is rejected by the meta-schema, so const and enum are "never accepted"
    assert bounded({"type": "string", "minLength": -1, "const": "a", "enum": ["a"]}) == [
        ("TQX_SCHEMA_CONST_CONTRADICTION", "/s"),
        ("TQX_SCHEMA_ENUM_IMPOSSIBLE", "/s"),
    ]


def test_step_11_properties_recursion_and_required() -> None:
    schema = {
        "type": "string",
        "properties": {"b": {"type": "bad"}, "a": True},
        "required": ["a", "c", 5, "d"],
    }
    assert bounded(schema) == [
        ("TQX_SCHEMA_KEYWORD_TYPE", "/s/properties"),
        ("TQX_SCHEMA_BOUNDED_SUBSET", "/s/properties/a"),
        ("TQX_SCHEMA_TYPE_UNSUPPORTED", "/s/properties/b/type"),
        ("TQX_SCHEMA_REQUIRED_UNKNOWN", "/s/required"),
        ("TQX_SCHEMA_REQUIRED_UNKNOWN", "/s/required"),
    ]
    assert messages({"type": "object", "properties": {}, "required": ["x"]}) == [
        "required property 'x' is not declared"
    ]
    # properties that is not an object: only the type check applies
    assert bounded({"type": "object", "properties": [], "required": ["x"]}) == []


def test_step_12_items() -> None:
    assert bounded({"type": "array", "items": []}) == [("TQX_SCHEMA_BOUNDED_SUBSET", "/s/items")]
    assert bounded({"type": "string", "items": {"type": "array"}}) == [
        ("TQX_SCHEMA_KEYWORD_TYPE", "/s/items"),
        ("TQX_SCHEMA_ITEMS_REQUIRED", "/s/items/items"),
    ]
    assert messages({"type": "array"}) == ["array schemas require a typed items schema"]
    assert messages({"type": "null", "items": {"type": "null"}}) == [
        "items is only valid for array schemas"
    ]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "format": "email"},
        {"type": "integer", "format": "date"},
        {"type": "string", "format": 7},
    ],
)
def test_step_13_only_date_formats_on_strings(schema: dict[str, Any]) -> None:
    assert bounded(schema) == [("TQX_SCHEMA_FORMAT_UNSUPPORTED", "/s/format")]
    assert messages(schema) == ["only date and date-time string formats are supported"]


def test_step_14_pairs_in_order() -> None:
    schema = {
        "type": "integer",
        "minimum": 5,
        "maximum": 1,
        "minItems": 2,
        "maxItems": 1,
        "minLength": 9,
        "maxLength": 2,
    }
    assert messages(schema) == [
        "minLength cannot exceed maxLength",
        "minItems cannot exceed maxItems",
        "minimum cannot exceed maximum",
        "integer bounds contain no integer value",
    ]
    assert bounded({"type": "integer", "minimum": True, "maximum": False}) == []


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "number", "minimum": 2, "exclusiveMaximum": 2},
        {"type": "number", "exclusiveMinimum": 2, "maximum": 2},
        {"type": "number", "exclusiveMinimum": 3, "exclusiveMaximum": 3.0},
    ],
)
def test_step_15_exclusive_bounds(schema: dict[str, Any]) -> None:
    assert messages(schema) == ["numeric lower bound leaves no value below the upper bound"]


@pytest.mark.parametrize(
    ("schema", "empty"),
    [
        ({"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 2}, True),
        ({"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 3}, False),
        ({"type": "integer", "minimum": 1.5, "maximum": 1.9}, True),
        ({"type": "integer", "minimum": 1.5, "maximum": 2}, False),
        ({"type": "integer", "exclusiveMinimum": 0.5, "exclusiveMaximum": 1.5}, False),
        ({"type": "integer", "exclusiveMinimum": -0.5, "exclusiveMaximum": 0.5}, False),
        ({"type": "number", "minimum": 1.5, "maximum": 1.9}, False),
    ],
)
def test_step_16_integer_bounds(schema: dict[str, Any], empty: bool) -> None:
    found = ("TQX_SCHEMA_IMPOSSIBLE_INTEGER_BOUNDS", "/s") in bounded(schema)
    assert found is empty


def test_pointers_are_not_escaped() -> None:
    schema = {"type": "object", "properties": {"a/b~c": {"type": "bad"}}}
    assert bounded(schema, "/inputs/x/y/schema") == [
        ("TQX_SCHEMA_TYPE_UNSUPPORTED", "/inputs/x/y/schema/properties/a/b~c/type")
    ]


def test_every_schema_position_is_checked_in_order() -> None:
    bad = {"type": "string", "pattern": "x"}
    contract = msgspec.convert(
        {
            "api_version": "templiqx/v1alpha1",
            "id": "c",
            "version": "1.0.0",
            "inputs": {"b": {"schema": bad}, "a/x": {"schema": bad}},
            "context": {"c": {"schema": bad}},
            "messages": [{"role": "user", "content": []}],
            "output_schema": bad,
            "components": {"k": {"parameters": {"p": {"schema": bad}}, "content": []}},
            "extensions": {"v.e": {"capability": "v", "schema": bad, "value": "x"}},
        },
        Contract,
    )
    assert [d.json_pointer for d in validate_contract(contract)] == [
        "/output_schema/pattern",
        "/inputs/a/x/schema/pattern",
        "/inputs/b/schema/pattern",
        "/context/c/schema/pattern",
        "/components/k/parameters/p/schema/pattern",
        "/extensions/v.e/schema/pattern",
    ]
