"""TQX_OUTPUT_SCHEMA names each violation: where in the output, which keyword, why (issue #15)."""

from __future__ import annotations

from typing import Any

import msgspec

from templiqx_contracts import Contract, RenderRequest
from templiqx_core import (
    OUTPUT_VIOLATION_LIMIT,
    compile_interaction,
    output_violations,
    validate_contract,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string"},
        "severity": {"type": "string", "enum": ["low", "high"]},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        "due": {"type": "string", "format": "date"},
    },
    "required": ["summary"],
    "additionalProperties": False,
}


def test_each_violation_has_its_pointer_keyword_and_reason() -> None:
    output = {"severity": "critical", "tags": ["a"], "extra": 1, "due": "2026-02-30"}
    found = output_violations(SCHEMA, output)
    assert all(d.code == "TQX_OUTPUT_SCHEMA" and d.severity == "error" for d in found)
    assert all(d.help for d in found)
    assert sorted(d.message for d in found) == [
        "/output breaks `additionalProperties`: Additional properties are not allowed "
        "('extra' was unexpected)",
        '/output breaks `required`: "summary" is a required property',
        "/output/due breaks `format`: value is not a valid date",
        '/output/severity breaks `enum`: "critical" is not one of "low" or "high"',
        '/output/tags breaks `minItems`: ["a"] has less than 2 items',
    ]
    assert {d.json_pointer for d in found} == {
        "/output",
        "/output/due",
        "/output/severity",
        "/output/tags",
    }


def test_a_valid_output_has_no_violation() -> None:
    assert output_violations(SCHEMA, {"summary": "ok", "tags": ["a", "b"]}) == []


def test_the_list_is_bounded_and_says_the_total() -> None:
    found = output_violations({"type": "array", "items": {"type": "integer"}}, ["x"] * 45)
    assert len(found) == OUTPUT_VIOLATION_LIMIT + 1
    assert [d.json_pointer for d in found[:3]] == ["/output/0", "/output/1", "/output/2"]
    assert found[-1].json_pointer == "/output"
    assert found[-1].message == "the output breaks the schema in 45 places; the first 20 are listed"


def test_a_huge_offending_value_is_not_echoed_whole() -> None:
    (found,) = output_violations({"type": "integer"}, "x" * 100_000)
    assert len(found.message) < 300
    assert found.message.endswith("characters)")


def _contract(capabilities: list[str]) -> Contract:
    return msgspec.convert(
        {
            "api_version": "templiqx/v1alpha1",
            "id": "c",
            "version": "1.0.0",
            "capabilities": capabilities,
            "messages": [{"role": "user", "content": []}],
            "output_schema": {"type": "string"},
        },
        Contract,
    )


def test_a_misspelt_capability_in_the_contract_is_one_validation_problem() -> None:
    """Issue #28: caught by validation, with the did-you-mean pointing at the right name, and
    not reported again as a capability the target lacks."""
    contract = _contract(["structured_ouput"])
    assert [(d.code, d.message, d.json_pointer) for d in validate_contract(contract)] == [
        (
            "TQX_CAPABILITY_UNKNOWN",
            "unknown capability 'structured_ouput'; did you mean 'structured_output'?",
            "/capabilities/0",
        )
    ]
    _, found = compile_interaction(contract, RenderRequest(), ["structured_output", "text"])
    assert [d.code for d in found] == ["TQX_CAPABILITY_UNKNOWN"]
    # a runtime's own (namespaced) capability and a short name are never flagged
    assert validate_contract(_contract(["vendor.structured_ouput", "txt", "vision"])) == []


def test_a_misspelt_offered_capability_is_named_as_the_one_to_correct() -> None:
    _, found = compile_interaction(
        _contract(["structured_output"]), RenderRequest(), ["structured_outptu", "text"]
    )
    assert [d.message for d in found] == [
        "target lacks required capability 'structured_output'; the target offers "
        "'structured_outptu', 'text', where 'structured_outptu' looks like a misspelling of "
        "'structured_output'"
    ]
