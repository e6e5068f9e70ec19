"""Value validation, output validation, the engine's semantics and the date grammar."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

import templiqx_contracts
from templiqx_contracts import Contract, Diagnostic, RenderRequest
from templiqx_core import (
    is_date,
    is_date_time,
    is_semver,
    strict_json_equal,
    validate_contract,
    validate_output,
    validate_values,
)
from templiqx_core.schema import accepts, compile_schema


def contract(inputs: dict[str, Any], context: dict[str, Any] | None = None) -> Contract:
    return msgspec.convert(
        {
            "api_version": "templiqx/v1alpha1",
            "id": "values",
            "version": "1.0.0",
            "inputs": inputs,
            "context": context or {},
            "messages": [{"role": "user", "content": []}],
            "output_schema": {"type": "object"},
        },
        Contract,
    )


def pairs(diagnostics: list[Diagnostic]) -> list[tuple[str, str | None]]:
    assert all(d.severity == "error" for d in diagnostics)
    return [(d.code, d.json_pointer) for d in diagnostics]


def test_value_validation_order_and_pointers() -> None:
    fields = {
        "b": {"schema": {"type": "string"}, "required": True},
        "a": {"schema": {"type": "integer"}},
        "c": {"schema": {"type": "string"}},
    }
    request = RenderRequest(
        inputs={"a": "x", "zz": 1, "c": None, "aa": 2},
        context={"_templiqx_translations": {}, "_templiqx_other": 1, "locale": "nl", "_x": 1},
    )
    diagnostics = validate_values(contract(fields, {"b": {"schema": {"type": "boolean"}}}), request)
    assert pairs(diagnostics) == [
        ("TQX_VALUE_SCHEMA", "/inputs/a"),
        ("TQX_VALUE_REQUIRED", "/inputs/b"),
        ("TQX_VALUE_SCHEMA", "/inputs/c"),
        ("TQX_VALUE_UNKNOWN", "/inputs/aa"),
        ("TQX_VALUE_UNKNOWN", "/inputs/zz"),
        ("TQX_VALUE_UNKNOWN", "/context/_x"),
        ("TQX_VALUE_UNKNOWN", "/context/locale"),
    ]
    messages = [d.message for d in diagnostics]
    assert messages[1] == "required inputs value 'b' is missing"
    assert messages[0] == '"x" is not of type "integer"'
    assert messages[2] == 'null is not of type "string"'
    assert messages[3] == "undeclared inputs value 'aa'; declared inputs: 'a', 'b', 'c'"


def test_a_misspelt_value_is_one_problem_with_did_you_mean() -> None:
    """Issue #28: ``nmae`` for a required ``name`` is the unknown value, with the name that was
    meant, and the required value is not also reported missing."""
    fields = {
        "name": {"schema": {"type": "string"}, "required": True},
        "nickname": {"schema": {"type": "string"}},
    }
    diagnostics = validate_values(contract(fields), RenderRequest(inputs={"nmae": "Ada"}))
    assert [(d.code, d.json_pointer, d.message) for d in diagnostics] == [
        (
            "TQX_VALUE_UNKNOWN",
            "/inputs/nmae",
            "undeclared inputs value 'nmae'; did you mean 'name'?",
        )
    ]


def test_reserved_prefix_is_skipped_only_in_context() -> None:
    diagnostics = validate_values(contract({}), RenderRequest(inputs={"_templiqx_translations": 1}))
    assert pairs(diagnostics) == [("TQX_VALUE_UNKNOWN", "/inputs/_templiqx_translations")]


def test_engine_errors_all_land_on_the_field_pointer() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["a"],
        "properties": {"b": {"type": "string", "minLength": 3}},
    }
    diagnostics = validate_values(
        contract({"o": {"schema": schema}}), RenderRequest(inputs={"o": {"b": "x", "z": 1}})
    )
    assert {d.json_pointer for d in diagnostics} == {"/inputs/o"}
    assert sorted(d.message for d in diagnostics) == sorted(
        [
            '"a" is a required property',
            "Additional properties are not allowed ('z' was unexpected)",
            '"x" is shorter than 3 characters',
        ]
    )


def test_format_failures_point_into_the_instance() -> None:
    schema = {
        "type": "object",
        "properties": {
            "day": {"type": "string", "format": "date"},
            "list": {"type": "array", "items": {"type": "string", "format": "date-time"}},
        },
    }
    value = {"day": "2026-13-01", "list": ["2026-07-11T10:00:00Z", "nope"], "extra": "x"}
    diagnostics = validate_values(
        contract({"o": {"schema": schema}}), RenderRequest(inputs={"o": value})
    )
    assert pairs(diagnostics) == [
        ("TQX_VALUE_SCHEMA", "/inputs/o/day"),
        ("TQX_VALUE_SCHEMA", "/inputs/o/list/1"),
    ]
    assert [d.message for d in diagnostics] == [
        "value is not a valid date",
        "value is not a valid date-time",
    ]


def test_field_schema_invalid_in_values_has_the_bare_engine_message() -> None:
    bad = {"type": "object", "properties": []}
    c = contract({"x": {"schema": bad}})
    from_values = validate_values(c, RenderRequest(inputs={"x": {}}))
    from_contract = [d for d in validate_contract(c) if d.code == "TQX_FIELD_SCHEMA_INVALID"]
    assert pairs(from_values) == [("TQX_FIELD_SCHEMA_INVALID", "/inputs/x")]
    assert from_contract[0].json_pointer == "/inputs/x/schema/properties"
    assert from_contract[0].message == (
        f"invalid schema for 'x': keyword `properties`: {from_values[0].message}"
    )
    assert validate_values(c, RenderRequest()) == []


def test_engine_semantics_that_matter() -> None:
    assert accepts({"type": "integer"}, 1.0)
    assert not accepts({"type": "integer"}, 1.5)
    assert not accepts({"type": "integer"}, True)
    assert accepts({"type": "string", "minLength": 2, "maxLength": 2}, "😀😀")
    assert accepts({"type": "string", "maxLength": 1}, "é")
    assert accepts({"enum": [1]}, 1.0)
    assert accepts({"const": 1.0}, 1)
    assert not accepts({"enum": [1]}, True)
    assert not accepts({"type": "array", "uniqueItems": True}, [1, 1.0])
    # format is never asserted by the engine, only by the core's date walk
    assert compile_schema({"type": "string", "format": "email"}).is_valid("nope")
    assert accepts({"type": "string", "format": "email"}, "nope")
    assert not accepts({"type": "string", "format": "date"}, "nope")


def test_schema_validity_is_draft_2020_12_with_meta_schema_and_no_network() -> None:
    assert compile_schema({"type": "string"}).error is None
    assert compile_schema(True).error is None
    for bad in (
        {"type": "foo"},
        {"minLength": -1},
        {"type": "string", "pattern": "("},
        {"$ref": "http://example.com/schema.json"},
        {"$ref": "#/$defs/missing"},
        {"$ref": "tool_contract:x"},
        [1],
        None,
    ):
        assert compile_schema(bad).error, bad
    assert compile_schema({"$schema": "http://json-schema.org/draft-07/schema#"}).error is None


def test_compiled_schemas_are_cached() -> None:
    schema = {"type": "object", "properties": {"cache-probe": {"type": "string"}}}
    first = compile_schema(schema)
    assert compile_schema(dict(schema)) is first
    assert (
        compile_schema({"type": "object", "properties": {"cache-probe": {"type": "integer"}}})
        is not first
    )


def test_validate_output() -> None:
    schema = {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}
    assert validate_output(schema, {"ok": True}) == []
    failures = validate_output(schema, {"ok": 1})
    assert pairs(failures) == [("TQX_OUTPUT_SCHEMA", "/output")]
    assert failures[0].message == '1 is not of type "boolean"'
    assert pairs(validate_output(False, 1)) == [("TQX_OUTPUT_SCHEMA", "/output")]
    assert pairs(validate_output({"type": 3}, {})) == [
        ("TQX_OUTPUT_SCHEMA_INVALID", "/output_schema")
    ]
    assert pairs(validate_output({"type": "string"}, object())) == [
        ("TQX_OUTPUT_SCHEMA", "/output")
    ]


def test_the_date_grammar_is_the_shared_one() -> None:
    # The grammar and its cases live in templiqx-contracts; the core re-exports it.
    assert is_date is templiqx_contracts.is_date
    assert is_date_time is templiqx_contracts.is_date_time
    assert is_date("2024-02-29")
    assert not is_date("2026-+1-01")
    assert is_date_time("2026-07-11T10:00:00Z")
    assert not is_date_time("2026-07-11 10:00:00")


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1, True),
        (1, 1.0, False),
        (True, 1, False),
        (False, 0, False),
        (0.0, -0.0, True),
        (None, None, True),
        (None, False, False),
        ("\u00e9", "e\u0301", False),
        ([1, [2.0]], [1, [2.0]], True),
        ([1], [1, 1], False),
        ({"a": 1, "b": [True]}, {"b": [True], "a": 1}, True),
        ({"a": 1}, {"a": 1.0}, False),
        ({"a": 1}, {"b": 1}, False),
        (2**70, 2**70, True),
    ],
)
def test_strict_json_equality(a: Any, b: Any, equal: bool) -> None:
    assert strict_json_equal(a, b) is equal
    assert strict_json_equal(b, a) is equal


@pytest.mark.parametrize(
    ("version", "valid"),
    [
        ("0.0.0", True),
        ("1.2.3", True),
        ("1.0.0-alpha", True),
        ("1.0.0-alpha.1.x-y", True),
        ("1.0.0-0.3.7", True),
        ("1.0.0+20130313144700", True),
        ("1.0.0-beta+exp.sha.5114f85", True),
        ("1.0.0+001", True),
        ("18446744073709551615.0.0", True),
        ("18446744073709551616.0.0", False),
        ("1.0", False),
        ("v1.0.0", False),
        ("01.0.0", False),
        ("1.0.0-01", False),
        ("1.0.0-", False),
        ("1.0.0-a..b", False),
        ("1.0.0+", False),
        (" 1.0.0", False),
        ("1.0.0\n", False),
        ("1.0.0-ü", False),
        ("", False),
    ],
)
def test_semver(version: str, valid: bool) -> None:
    assert is_semver(version) is valid


def test_every_meta_schema_problem_is_reported_at_its_keyword() -> None:
    """Issue #28: not only the first, not at the schema's root, and naming the keyword."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": -1},
            "age": {"type": "integer", "maximum": "ten"},
        },
        "required": "name",
    }
    c = contract({"x": {"schema": schema}})
    found = [d for d in validate_contract(c) if d.code == "TQX_FIELD_SCHEMA_INVALID"]
    assert sorted((d.json_pointer or "", d.message) for d in found) == [
        (
            "/inputs/x/schema/properties/age/maximum",
            'invalid schema for \'x\': keyword `maximum`: "ten" is not of type "number"',
        ),
        (
            "/inputs/x/schema/properties/name/minLength",
            "invalid schema for 'x': keyword `minLength`: -1 is less than the minimum of 0",
        ),
        (
            "/inputs/x/schema/required",
            'invalid schema for \'x\': keyword `required`: "name" is not of type "array"',
        ),
    ]
