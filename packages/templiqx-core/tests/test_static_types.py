"""Static typing of content (core.md §2.4-§2.6): references, expressions, nodes, components."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from templiqx_contracts import Contract
from templiqx_core import validate_contract
from templiqx_core.components import find_component_cycle, legacy_arguments
from templiqx_core.static_types import Kind, parse_index, schema_kind, value_kind

TEXT = {"kind": "text", "value": "t"}
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "open": {"type": "object"},
    },
}
FIELDS = {
    "people": {"schema": {"type": "array", "items": PERSON}},
    "person": {"schema": PERSON},
    "flag": {"schema": {"type": "boolean"}},
    "n": {"schema": {"type": "integer"}},
    "anything": {"schema": {}},
}


def ref(path: str) -> dict[str, Any]:
    return {"kind": "ref", "path": path}


def lit(value: Any) -> dict[str, Any]:
    return {"kind": "literal", "value": value}


def interp(expression: dict[str, Any], *filters: str) -> dict[str, Any]:
    return {"kind": "interpolate", "expression": expression, "filters": list(filters)}


def build(*nodes: Any, components: dict[str, Any] | None = None) -> Contract:
    return msgspec.convert(
        {
            "api_version": "templiqx/v1alpha1",
            "id": "static",
            "version": "1.0.0",
            "inputs": FIELDS,
            "context": {"flag": {"schema": {"type": "boolean"}}},
            "messages": [{"role": "user", "content": list(nodes)}],
            "output_schema": {"type": "object"},
            "components": components or {},
        },
        Contract,
    )


def check(*nodes: Any, components: dict[str, Any] | None = None) -> list[tuple[str, str | None]]:
    diagnostics = validate_contract(build(*nodes, components=components))
    assert all(d.severity == "error" for d in diagnostics)
    # `{}` schemas (used here to get Any-kind values) are outside the bounded subset; those
    # schema diagnostics are not what these tests look at.
    return [
        (d.code, d.json_pointer)
        for d in diagnostics
        if not (d.json_pointer or "").endswith(("/anything/schema/type", "/any/schema/type"))
    ]


P = "/messages/0/content/0"


@pytest.mark.parametrize(
    "path",
    [
        "inputs.person.name",
        "inputs.people.0.name",
        "inputs.people.+1.tags.007",
        "context.flag",
        "inputs.n",
    ],
)
def test_resolvable_paths(path: str) -> None:
    assert check(interp(ref(path))) == []


@pytest.mark.parametrize(
    "path",
    [
        "inputs",
        "inputs.",
        "inputs..person",
        "inputs.person.",
        "inputs.nope",
        "context.n",
        "inputs.person.missing",
        "inputs.people.name",
        "inputs.people.-1",
        "inputs.people.1e3",
        "inputs.people.18446744073709551616",
        "inputs.person.name.length",
        "inputs.person.open.key",
        "person",
        "",
    ],
)
def test_unresolvable_paths(path: str) -> None:
    found = check(interp(ref(path), "json"))
    assert found[0] == ("TQX_REF_UNKNOWN", f"{P}/expression")


def test_parse_index_follows_unsigned_parsing() -> None:
    assert parse_index("0") == 0
    assert parse_index("+12") == 12
    assert parse_index("012") == 12
    assert parse_index("18446744073709551615") == 2**64 - 1
    for bad in ("", "-0", "+", "1 ", " 1", "1_0", "\u0661", "0x1", "18446744073709551616", "1\n"):
        assert parse_index(bad) is None


def test_kinds() -> None:
    assert schema_kind({"type": "integer"}) is Kind.NUMBER
    assert schema_kind({"type": ["string"]}) is Kind.ANY
    assert schema_kind(True) is Kind.ANY
    assert [value_kind(v) for v in (None, True, 1, 1.5, "s", [], {})] == [
        Kind.NULL,
        Kind.BOOLEAN,
        Kind.NUMBER,
        Kind.NUMBER,
        Kind.STRING,
        Kind.ARRAY,
        Kind.OBJECT,
    ]


def test_expression_pointers() -> None:
    condition = {
        "kind": "and",
        "values": [
            {"kind": "equals", "left": ref("inputs.x"), "right": ref("inputs.n")},
            {"kind": "not", "value": ref("inputs.y")},
            {"kind": "or", "values": []},
            lit(1),
        ],
    }
    assert check({"kind": "when", "condition": condition, "then": []}) == [
        ("TQX_REF_UNKNOWN", f"{P}/condition/values/0/left"),
        ("TQX_REF_UNKNOWN", f"{P}/condition/values/1/value"),  # not also TQX_BOOLEAN_TYPE
        ("TQX_BOOLEAN_EMPTY", f"{P}/condition/values/2/values"),
        ("TQX_BOOLEAN_TYPE", f"{P}/condition/values/3"),
    ]


def test_equals_operands_are_not_compared_statically() -> None:
    condition = {"kind": "equals", "left": lit("a"), "right": ref("inputs.n")}
    assert check({"kind": "when", "condition": condition, "then": []}) == []


def test_interpolation_rules() -> None:
    assert check(interp(ref("inputs.person"))) == [("TQX_INTERPOLATION_TYPE", f"{P}/filters")]
    assert check(interp(ref("inputs.person"), "json")) == []
    assert check(interp(lit(None), "json")) == []
    assert check(interp(ref("inputs.anything"), "json")) == [
        ("TQX_INTERPOLATION_TYPE", f"{P}/expression")
    ]
    assert check(interp(ref("inputs.n"), "upper")) == [("TQX_FILTER_TYPE", f"{P}/filters")]
    # the chain is not type-tracked: json turns the object into a string, upper still fails
    assert check(interp(ref("inputs.person"), "json", "upper")) == [
        ("TQX_FILTER_TYPE", f"{P}/filters")
    ]
    assert check(interp(ref("inputs.n"), "format_number", "trim")) == [
        ("TQX_FILTER_TYPE", f"{P}/filters")
    ]
    assert check(interp(ref("inputs.person.name"), "format_number", "translate")) == []
    # an unknown reference is reported once, not again as an Any-kind or non-string value
    assert check(interp(ref("inputs.nope"), "trim")) == [("TQX_REF_UNKNOWN", f"{P}/expression")]


def test_when_branches_and_pointer_bases() -> None:
    node = {
        "kind": "when",
        "condition": ref("inputs.n"),
        "then": [TEXT, interp(ref("inputs.zz"), "json")],
        "else": [interp(ref("inputs.yy"), "json")],
    }
    assert check(node) == [
        ("TQX_CONDITION_TYPE", f"{P}/condition"),
        ("TQX_REF_UNKNOWN", f"{P}/then/1/expression"),
        ("TQX_REF_UNKNOWN", f"{P}/else/0/expression"),
    ]


def for_each(collection: Any, item: str, *body: Any) -> dict[str, Any]:
    return {"kind": "for_each", "collection": collection, "item": item, "body": list(body)}


def test_for_each_binds_item_schema_for_the_body() -> None:
    node = for_each(
        ref("inputs.people"),
        "p",
        interp(ref("p.name"), "trim"),
        for_each(ref("p.tags"), "tag", interp(ref("tag"), "upper")),
    )
    assert check(node) == []
    # an array literal has no item schema: the item is Any
    assert check(for_each(lit([1, 2]), "x", interp(ref("x")))) == [
        ("TQX_INTERPOLATION_TYPE", f"{P}/body/0/expression")
    ]


def test_consequences_of_an_unknown_reference_are_not_reported() -> None:
    # the loop over an unknown collection: no TQX_FOR_EACH_TYPE, and its item is unknown, so
    # neither `row.name` nor the interpolation of an unknown kind is reported again
    node = for_each(ref("inputs.rows"), "row", interp(ref("row.name"), "trim"))
    assert check(node) == [("TQX_REF_UNKNOWN", f"{P}/collection")]
    # a loop over a non-array: its item is unknown too
    node = for_each(ref("inputs.person"), "row", interp(ref("row.name"), "upper"))
    assert check(node) == [("TQX_FOR_EACH_TYPE", f"{P}/collection")]
    condition = {"kind": "or", "values": [ref("inputs.flg")]}
    assert check({"kind": "when", "condition": ref("inputs.flg"), "then": []}) == [
        ("TQX_REF_UNKNOWN", f"{P}/condition")
    ]
    assert check({"kind": "when", "condition": condition, "then": []}) == [
        ("TQX_REF_UNKNOWN", f"{P}/condition/values/0")
    ]


def ref_message(path: str) -> str:
    found = [
        d
        for d in validate_contract(build(interp(ref(path), "json")))
        if d.code == "TQX_REF_UNKNOWN"
    ]
    assert len(found) == 1
    return found[0].message


def test_unknown_references_say_what_is_declared() -> None:
    assert ref_message("inputs.nickname") == (
        "unknown or schema-incompatible reference path 'inputs.nickname': declared inputs: "
        "'anything', 'flag', 'n', 'people', 'person'"
    )
    assert ref_message("inputs.flg").startswith(
        "unknown or schema-incompatible reference path 'inputs.flg': did you mean 'inputs.flag'? "
        "declared inputs: 'anything'"
    )
    assert ref_message("context.nope").endswith(": declared context: 'flag'")
    assert (
        "did you mean 'inputs.person.name'? properties of 'inputs.person': 'name', 'open', 'tags'"
        in ref_message("inputs.person.nme")
    )
    assert "did you mean 'inputs' (the path starts with 'input')?" in ref_message("input.n")
    assert "declared context: 'flag'" in ref_message("input.n")
    assert "'inputs.n' is a Number, so it has no part 'x'" in ref_message("inputs.n.x")
    assert "'inputs.anything' has no declared type" in ref_message("inputs.anything.x")
    assert "an item index, as in 'inputs.people.0'" in ref_message("inputs.people.x")
    assert "no empty part" in ref_message("inputs..n")
    assert "name one of its fields: declared inputs:" in ref_message("inputs")
    # user text is quoted with its bound (quote_input)
    assert "(80000 characters)" in ref_message("x" * 80_000)


def test_for_each_type_and_invalid_item_skips_the_body() -> None:
    node = for_each(ref("inputs.person"), "bad item", interp(ref("nope")))
    assert check(node) == [
        ("TQX_FOR_EACH_TYPE", f"{P}/collection"),
        ("TQX_LOCAL_INVALID", f"{P}/item"),
    ]


def test_item_binding_ends_with_the_body_and_restores_an_outer_binding() -> None:
    inner = for_each(ref("p.tags"), "p", interp(ref("p"), "trim"))
    node = for_each(ref("inputs.people"), "p", inner, interp(ref("p.name"), "trim"))
    # The reference deletes the outer `p` after the inner loop and reports p.name; the port
    # restores it (docs/decisions/core-semantics.md).
    assert check(node) == []
    assert check(node, interp(ref("p"), "json")) == [
        ("TQX_REF_UNKNOWN", "/messages/0/content/1/expression")
    ]


def test_locals_never_shadow_inputs_statically() -> None:
    node = for_each(ref("inputs.people"), "inputs", interp(ref("inputs.n")))
    assert check(node) == []


def test_include_is_unexpanded() -> None:
    assert check({"kind": "include", "path": "x.yaml"}) == [("TQX_INCLUDE_UNEXPANDED", P)]


TYPED = {
    "parameters": {
        "who": {"schema": {"type": "string"}, "required": True},
        "count": {"schema": {"type": "integer"}},
        "any": {"schema": {}},
    },
    "content": [interp(ref("who"), "trim"), interp(ref("count"))],
}


def call(component: str, /, **arguments: Any) -> dict[str, Any]:
    return {"kind": "component", "name": component, "with": arguments}


def test_typed_component_calls() -> None:
    components = {"card": TYPED}
    assert check(call("card", who=lit("x")), components=components) == []
    assert check(
        call("card", who=ref("inputs.n"), count=lit("one"), any=lit([1]), zzz=ref("nope")),
        components=components,
    ) == [
        ("TQX_COMPONENT_ARGUMENT_TYPE", f"{P}/with/count"),
        ("TQX_COMPONENT_ARGUMENT_TYPE", f"{P}/with/who"),
        ("TQX_REF_UNKNOWN", f"{P}/with/zzz"),
        ("TQX_COMPONENT_ARGUMENT_UNKNOWN", f"{P}/with/zzz"),
    ]
    # an Any-kind argument is never a type mismatch
    assert check(call("card", who=ref("inputs.anything")), components=components) == []


def test_missing_component_reports_nothing_else() -> None:
    assert check(call("ghost", x=ref("nope"))) == [("TQX_COMPONENT_MISSING", f"{P}/name")]


def test_component_bodies_use_the_component_pointer_base() -> None:
    components = {
        "legacy": [TEXT, {"kind": "when", "condition": ref("flag"), "then": []}],
        "typed": {"parameters": {}, "content": [interp(ref("who"))]},
    }
    assert check(TEXT, components=components) == [
        ("TQX_CONDITION_TYPE", "/components/legacy/1/condition"),
        ("TQX_REF_UNKNOWN", "/components/typed/0/expression"),
    ]


def test_legacy_argument_inference() -> None:
    nodes = msgspec.convert(
        [
            interp(ref("recipient.name")),
            {
                "kind": "when",
                "condition": {"kind": "not", "value": ref("flag")},
                "then": [interp(ref("inputs.x"))],
                "else": [interp(ref("context.y"))],
            },
            for_each(ref("list"), "row", interp(ref("row")), interp(ref("outer"))),
            call("other", a=ref("arg")),
            {"kind": "include", "path": "p"},
            interp(lit("x")),
        ],
        list[Any],
    )
    from templiqx_contracts import Node

    typed_nodes = msgspec.convert(nodes, list[Node])
    assert legacy_arguments(typed_nodes) == ["arg", "flag", "list", "outer", "recipient"]


def test_legacy_arguments_are_required_strings() -> None:
    components = {"salutation": [{"kind": "text", "value": "Hello "}, interp(ref("r"), "trim")]}
    assert check(call("salutation", r=ref("inputs.person.name")), components=components) == []
    assert check(call("salutation"), components=components) == [
        ("TQX_COMPONENT_ARGUMENT_MISSING", f"{P}/with/r")
    ]
    assert check(call("salutation", r=ref("inputs.flag")), components=components) == [
        ("TQX_COMPONENT_ARGUMENT_TYPE", f"{P}/with/r")
    ]
    # the docs' promised failures inside legacy components
    bad = {
        "cond": [{"kind": "when", "condition": ref("c"), "then": []}],
        "loop": [for_each(ref("xs"), "x", TEXT)],
        "nested": [interp(ref("r.name"))],
    }
    assert check(TEXT, components=bad) == [
        ("TQX_CONDITION_TYPE", "/components/cond/0/condition"),
        ("TQX_FOR_EACH_TYPE", "/components/loop/0/collection"),
        ("TQX_REF_UNKNOWN", "/components/nested/0/expression"),
    ]


def test_cycle_detection_reports_one_cycle() -> None:
    components: dict[str, Any] = {
        "a": [call("b")],
        "b": [{"kind": "when", "condition": lit(True), "then": [call("c")]}],
        "c": [for_each(lit([]), "x", call("a"))],
        "d": [call("d")],
        "e": [call("undefined")],
    }
    assert check(TEXT, components=components) == [
        ("TQX_COMPONENT_MISSING", "/components/e/0/name"),
        ("TQX_COMPONENT_CYCLE", "/components/a"),
    ]
    contract_components = msgspec.convert(components, dict[str, Any])
    from templiqx_contracts import ComponentDefinition

    typed = msgspec.convert(contract_components, dict[str, ComponentDefinition])
    assert find_component_cycle(typed) == "a"
    del typed["a"]
    assert find_component_cycle(typed) == "d"
    del typed["d"]
    assert find_component_cycle(typed) is None


def test_cycle_found_from_a_later_root_names_the_reentered_component() -> None:
    components = {"a": [call("b")], "b": [call("c")], "c": [call("b")]}
    assert ("TQX_COMPONENT_CYCLE", "/components/b") in check(TEXT, components=components)
