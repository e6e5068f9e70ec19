"""The reference core's own unit cases (core.md §7.1), on the shared ``typed`` contract."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from templiqx_contracts import Contract, Diagnostic, RenderRequest, fingerprint
from templiqx_core import (
    compile_interaction,
    parse_contract,
    validate_contract,
    validate_output,
    validate_values,
)

TYPED_YAML = """\
api_version: templiqx/v1alpha1
id: typed
version: 1.0.0
inputs:
  people:
    schema: {type: array, items: {type: string}}
    required: true
context:
  enabled:
    schema: {type: boolean}
    required: true
capabilities: [structured_output]
messages:
  - role: user
    content:
      - kind: when
        condition: {kind: ref, path: context.enabled}
        then:
          - kind: for_each
            collection: {kind: ref, path: inputs.people}
            item: person
            separator: ", "
            body:
              - kind: interpolate
                expression: {kind: ref, path: person}
                filters: [upper]
        else:
          - kind: text
            value: disabled
output_schema:
  type: object
  required: [ok]
  properties:
    ok: {type: boolean}
"""

TYPED: dict[str, Any] = {
    "api_version": "templiqx/v1alpha1",
    "id": "typed",
    "version": "1.0.0",
    "inputs": {
        "people": {"schema": {"type": "array", "items": {"type": "string"}}, "required": True}
    },
    "context": {"enabled": {"schema": {"type": "boolean"}, "required": True}},
    "capabilities": ["structured_output"],
    "messages": [
        {
            "role": "user",
            "content": [
                {
                    "kind": "when",
                    "condition": {"kind": "ref", "path": "context.enabled"},
                    "then": [
                        {
                            "kind": "for_each",
                            "collection": {"kind": "ref", "path": "inputs.people"},
                            "item": "person",
                            "separator": ", ",
                            "body": [
                                {
                                    "kind": "interpolate",
                                    "expression": {"kind": "ref", "path": "person"},
                                    "filters": ["upper"],
                                }
                            ],
                        }
                    ],
                    "else": [{"kind": "text", "value": "disabled"}],
                }
            ],
        }
    ],
    "output_schema": {
        "type": "object",
        "required": ["ok"],
        "properties": {"ok": {"type": "boolean"}},
    },
}

REQUEST = RenderRequest(inputs={"people": ["ada", "ryan"]}, context={"enabled": True})


def typed() -> dict[str, Any]:
    return copy.deepcopy(TYPED)


def build(data: dict[str, Any]) -> Contract:
    return msgspec.convert(data, Contract)


def codes(diagnostics: list[Diagnostic]) -> list[str]:
    return [d.code for d in diagnostics]


def pairs(diagnostics: list[Diagnostic]) -> list[tuple[str, str | None]]:
    return [(d.code, d.json_pointer) for d in diagnostics]


def test_the_yaml_fixture_and_the_dict_fixture_are_the_same_contract() -> None:
    parsed, diagnostics = parse_contract(TYPED_YAML, "typed.yaml")
    assert diagnostics == []
    assert parsed == build(typed())
    assert validate_contract(build(typed())) == []


def test_1_strict_yaml_rejects_unknown_fields() -> None:
    contract, diagnostics = parse_contract(TYPED_YAML + "unknown: true\n", "typed.yaml")
    assert contract is None
    assert diagnostics[0].code == "TQX_PARSE_YAML"
    assert diagnostics[0].file == "typed.yaml"


def test_2_renders_bounded_nodes_deterministically() -> None:
    compiled, diagnostics = compile_interaction(build(typed()), REQUEST, ["structured_output"])
    assert diagnostics == []
    assert compiled is not None
    assert compiled.messages[0].content == "ADA, RYAN"
    again, _ = compile_interaction(build(typed()), REQUEST, ["structured_output"])
    assert fingerprint(compiled) == fingerprint(again)
    disabled, _ = compile_interaction(
        build(typed()),
        RenderRequest(inputs={"people": ["ada"]}, context={"enabled": False}),
        ["structured_output"],
    )
    assert disabled is not None
    assert disabled.messages[0].content == "disabled"


def test_3_rejects_missing_values_and_capabilities_before_compile() -> None:
    compiled, diagnostics = compile_interaction(build(typed()), RenderRequest(), [])
    assert compiled is None
    assert pairs(diagnostics) == [
        ("TQX_VALUE_REQUIRED", "/inputs/people"),
        ("TQX_VALUE_REQUIRED", "/context/enabled"),
        ("TQX_CAPABILITY_UNSUPPORTED", "/capabilities"),
    ]
    assert all(d.severity == "error" for d in diagnostics)


def test_4_rejects_wrong_scope_reference() -> None:
    data = typed()
    data["messages"][0]["content"][0]["condition"]["path"] = "inputs.enabled"
    diagnostics = validate_contract(build(data))
    assert ("TQX_REF_UNKNOWN", "/messages/0/content/0/condition") in pairs(diagnostics)


def test_5_rejects_incompatible_structured_node_type() -> None:
    data = typed()
    data["inputs"]["people"]["schema"] = {"type": "string"}
    diagnostics = validate_contract(build(data))
    assert ("TQX_FOR_EACH_TYPE", "/messages/0/content/0/then/0/collection") in pairs(diagnostics)


def test_6_validates_nested_schema_paths_including_for_each_items() -> None:
    data = typed()
    data["inputs"]["people"]["schema"]["items"] = {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}},
    }
    body = data["messages"][0]["content"][0]["then"][0]["body"][0]
    body["expression"]["path"] = "person.name"
    assert validate_contract(build(data)) == []
    body["expression"]["path"] = "person.missing"
    # reported once: not again as an Any-kind interpolation or a non-string for the filter
    assert pairs(validate_contract(build(data))) == [
        ("TQX_REF_UNKNOWN", "/messages/0/content/0/then/0/body/0/expression"),
    ]


def test_7_rejects_non_boolean_operators_and_conditions() -> None:
    data = typed()
    data["messages"][0]["content"][0]["condition"] = {
        "kind": "not",
        "value": {"kind": "literal", "value": "nope"},
    }
    assert pairs(validate_contract(build(data))) == [
        ("TQX_BOOLEAN_TYPE", "/messages/0/content/0/condition/value")
    ]


def test_8_complex_interpolation_requires_json_filter() -> None:
    data = typed()
    node: dict[str, Any] = {
        "kind": "interpolate",
        "expression": {"kind": "ref", "path": "inputs.people"},
    }
    data["messages"][0]["content"] = [node]
    assert pairs(validate_contract(build(data))) == [
        ("TQX_INTERPOLATION_TYPE", "/messages/0/content/0/filters")
    ]
    node["filters"] = ["json"]
    assert validate_contract(build(data)) == []


def test_9_typed_components_reject_missing_unknown_and_incompatible_arguments() -> None:
    data = typed()
    data["inputs"]["count"] = {"schema": {"type": "integer"}}
    data["components"] = {
        "greeting": {
            "parameters": {
                "recipient": {"schema": {"type": "string"}, "required": True},
                "formal": {"schema": {"type": "boolean"}, "required": True},
            },
            "content": [{"kind": "text", "value": "hello"}],
        }
    }
    data["messages"][0]["content"] = [
        {
            "kind": "component",
            "name": "greeting",
            "with": {
                "recipient": {"kind": "ref", "path": "inputs.count"},
                "extra": {"kind": "literal", "value": True},
            },
        }
    ]
    diagnostics = validate_contract(build(data))
    assert pairs(diagnostics) == [
        ("TQX_COMPONENT_ARGUMENT_MISSING", "/messages/0/content/0/with/formal"),
        ("TQX_COMPONENT_ARGUMENT_UNKNOWN", "/messages/0/content/0/with/extra"),
        ("TQX_COMPONENT_ARGUMENT_TYPE", "/messages/0/content/0/with/recipient"),
    ]
    assert diagnostics[2].message == (
        "component 'greeting' parameter 'recipient' expects String, found Number"
    )


def test_10_rejects_unsupported_and_impossible_schema_constructs() -> None:
    data = typed()
    data["output_schema"] = {"type": "object", "oneOf": [{"type": "object"}]}
    assert pairs(validate_contract(build(data))) == [
        ("TQX_SCHEMA_KEYWORD_UNSUPPORTED", "/output_schema/oneOf")
    ]
    data = typed()
    data["inputs"]["people"]["schema"].update({"minItems": 3, "maxItems": 1})
    diagnostics = validate_contract(build(data))
    assert pairs(diagnostics) == [("TQX_SCHEMA_IMPOSSIBLE_BOUNDS", "/inputs/people/schema")]
    assert diagnostics[0].message == "minItems cannot exceed maxItems"


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (
            {"type": "string", "const": "a", "enum": ["b"]},
            [
                "TQX_SCHEMA_CONST_ENUM_CONTRADICTION",
                "TQX_SCHEMA_CONST_CONTRADICTION",
                "TQX_SCHEMA_ENUM_IMPOSSIBLE",
            ],
        ),
        ({"type": "number", "minimum": 2, "exclusiveMaximum": 2}, ["TQX_SCHEMA_IMPOSSIBLE_BOUNDS"]),
        ({"type": "integer", "const": 1, "minimum": 2}, ["TQX_SCHEMA_CONST_CONTRADICTION"]),
        (
            {"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 2},
            ["TQX_SCHEMA_IMPOSSIBLE_INTEGER_BOUNDS"],
        ),
        ({"type": "string", "const": "a", "minLength": 2}, ["TQX_SCHEMA_CONST_CONTRADICTION"]),
    ],
)
def test_11_rejects_cross_keyword_schema_contradictions(
    schema: dict[str, Any], expected: list[str]
) -> None:
    data = typed()
    data["output_schema"] = schema
    diagnostics = validate_contract(build(data))
    assert codes(diagnostics) == expected
    assert {d.json_pointer for d in diagnostics} == {"/output_schema"}


def test_12_rejects_invalid_component_and_extension_schemas() -> None:
    data = typed()
    data["components"] = {
        "broken": {
            "parameters": {"p": {"schema": {"type": "object", "properties": []}}},
            "content": [],
        }
    }
    data["extensions"] = {
        "vendor.invalid": {
            "capability": "vendor.invalid",
            "schema": {"type": "array", "items": {"type": "string"}, "minItems": -1},
            "value": [],
        }
    }
    diagnostics = validate_contract(build(data))
    # the reference points both at the schema; the port at the keyword that breaks it (#28)
    assert pairs(diagnostics) == [
        ("TQX_COMPONENT_SCHEMA_INVALID", "/components/broken/parameters/p/schema/properties"),
        ("TQX_EXTENSION_SCHEMA_INVALID", "/extensions/vendor.invalid/schema/minItems"),
    ]
    assert diagnostics[0].message.startswith(
        "invalid schema for component parameter 'p': keyword `properties`: "
    )
    assert diagnostics[1].message.startswith(
        "invalid schema for extension 'vendor.invalid': keyword `minItems`: "
    )


def test_12b_one_mistake_the_engine_and_the_subset_both_see_is_reported_once() -> None:
    # The engine rejects `items: []` exactly where the bounded subset does: the clearer
    # bounded diagnostic stays, the engine's is the same mistake (core-semantics.md).
    data = typed()
    data["extensions"] = {
        "vendor.invalid": {
            "capability": "vendor.invalid",
            "schema": {"type": "array", "items": []},
            "value": [],
        }
    }
    assert pairs(validate_contract(build(data))) == [
        ("TQX_SCHEMA_BOUNDED_SUBSET", "/extensions/vendor.invalid/schema/items"),
    ]
    data["output_schema"] = {"type": "strng"}
    diagnostics = validate_contract(build(data))
    assert pairs(diagnostics)[0] == ("TQX_SCHEMA_TYPE_UNSUPPORTED", "/output_schema/type")
    assert diagnostics[0].message == "schema type 'strng' is unsupported; did you mean 'string'?"


def test_13_enforces_date_and_date_time_formats_at_runtime() -> None:
    data = typed()
    data["inputs"]["day"] = {"schema": {"type": "string", "format": "date"}}
    contract = build(data)
    assert validate_contract(contract) == []
    request = RenderRequest(inputs={"people": [], "day": "2026-02-30"}, context={"enabled": True})
    assert pairs(validate_values(contract, request)) == [("TQX_VALUE_SCHEMA", "/inputs/day")]
    schema = {
        "type": "object",
        "properties": {"at": {"type": "string", "format": "date-time"}},
    }
    failures = validate_output(schema, {"at": "2026-07-11 10:00:00"})
    assert pairs(failures) == [("TQX_OUTPUT_SCHEMA", "/output/at")]
    assert failures[0].message == "value is not a valid date-time"
    assert validate_output(schema, {"at": "2026-07-11T10:00:00Z"}) == []


def test_14_typed_extension_validates_value_and_capability_gate() -> None:
    data = typed()
    extension = {
        "capability": "vendor.reasoning",
        "schema": {"type": "integer", "minimum": 1},
        "value": "high",
    }
    data["extensions"] = {"vendor.reasoning": extension}
    assert pairs(validate_contract(build(data))) == [
        ("TQX_EXTENSION_VALUE", "/extensions/vendor.reasoning/value")
    ]
    extension["value"] = 2
    compiled, diagnostics = compile_interaction(build(data), REQUEST, ["structured_output"])
    assert compiled is None
    assert pairs(diagnostics) == [("TQX_EXTENSION_UNSUPPORTED", "/extensions/vendor.reasoning")]
    assert diagnostics[0].message == (
        "target lacks capability 'vendor.reasoning' required by extension 'vendor.reasoning'"
        "; the target offers 'structured_output'"
    )
    compiled, diagnostics = compile_interaction(
        build(data), REQUEST, ["structured_output", "vendor.reasoning"]
    )
    assert diagnostics == []
    assert compiled is not None
    assert compiled.required_capabilities == ["structured_output", "vendor.reasoning"]
    assert compiled.extensions == {"vendor.reasoning": 2}
