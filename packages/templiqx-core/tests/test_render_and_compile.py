"""Rendering semantics (core.md §3) and the compiled interaction (§2.12, §4.1)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from templiqx_contracts import (
    COMPILER_ID,
    CompiledInteraction,
    Contract,
    Diagnostic,
    RenderRequest,
    canonical_json,
)
from templiqx_core import compile_interaction, render_messages

TEXT = {"kind": "text", "value": "t"}


def ref(path: str) -> dict[str, Any]:
    return {"kind": "ref", "path": path}


def lit(value: Any) -> dict[str, Any]:
    return {"kind": "literal", "value": value}


def interp(expression: dict[str, Any], *filters: str) -> dict[str, Any]:
    return {"kind": "interpolate", "expression": expression, "filters": list(filters)}


def when(condition: Any, then: list[Any], otherwise: list[Any] | None = None) -> dict[str, Any]:
    return {"kind": "when", "condition": condition, "then": then, "else": otherwise or []}


def make(*nodes: Any, **overrides: Any) -> Contract:
    data: dict[str, Any] = {
        "api_version": "templiqx/v1alpha1",
        "id": "render",
        "version": "1.0.0",
        "messages": [{"role": "user", "content": list(nodes)}],
        "output_schema": {"type": "object"},
    }
    data.update(overrides)
    return msgspec.convert(data, Contract)


def render(contract: Contract, **request: Any) -> str:
    messages, diagnostics = render_messages(contract, RenderRequest(**request))
    assert diagnostics == []
    assert messages is not None
    return messages[0].content


def render_error(contract: Contract, **request: Any) -> Diagnostic:
    messages, diagnostics = render_messages(contract, RenderRequest(**request))
    assert messages is None
    assert len(diagnostics) == 1
    assert diagnostics[0].json_pointer == ""
    assert diagnostics[0].severity == "error"
    return diagnostics[0]


# --- references and expressions --------------------------------------------------------------


def test_references_follow_members_and_indices() -> None:
    contract = make(interp(ref("inputs.a.b.1.c")), interp(ref("inputs.a.list.+0")))
    inputs = {"a": {"b": [None, {"c": "x"}], "list": ["y"]}}
    assert render(contract, inputs=inputs) == "xy"


@pytest.mark.parametrize(
    "path", ["inputs.a.b.5", "inputs.a.nope", "inputs.a.b.x", "inputs.s.0", "nothing", "inputs.zz"]
)
def test_missing_references_fail_with_value_missing(path: str) -> None:
    diagnostic = render_error(make(interp(ref(path))), inputs={"a": {"b": []}, "s": "str"})
    assert diagnostic.code == "TQX_VALUE_MISSING"
    assert diagnostic.message == f"reference '{path}' is missing"


def test_equals_is_strict_json_equality() -> None:
    def eq(left: Any, right: Any) -> str:
        node = when({"kind": "equals", "left": lit(left), "right": lit(right)}, [TEXT])
        return render(make(node))

    assert eq(1, 1) == "t"
    assert eq(1, 1.0) == ""
    assert eq(True, 1) == ""
    assert eq({"a": [1]}, {"a": [1]}) == "t"
    assert eq("a", "a") == "t"
    assert eq(None, None) == "t"


def test_and_or_short_circuit_and_never_coerce() -> None:
    missing = ref("inputs.nope")
    assert render(make(when({"kind": "and", "values": [lit(False), missing]}, [TEXT]))) == ""
    assert render(make(when({"kind": "or", "values": [lit(True), lit("x")]}, [TEXT]))) == "t"
    assert render(make(when({"kind": "and", "values": []}, [TEXT]))) == "t"
    assert render(make(when({"kind": "or", "values": []}, [TEXT]))) == ""
    assert render_error(
        make(when({"kind": "and", "values": [lit(True), missing]}, [TEXT]))
    ).code == ("TQX_VALUE_MISSING")
    diagnostic = render_error(make(when({"kind": "or", "values": [lit(False), lit(1)]}, [TEXT])))
    assert diagnostic.code == "TQX_BOOLEAN_TYPE"
    assert diagnostic.message == "boolean expression resolved to a non-boolean value"
    assert render_error(make(when(lit("true"), [TEXT]))).code == "TQX_BOOLEAN_TYPE"
    assert render(make(when({"kind": "not", "value": lit(False)}, [TEXT]))) == "t"


# --- nodes -----------------------------------------------------------------------------------


def test_for_each_joins_with_separator_and_scopes_the_item() -> None:
    loop = {
        "kind": "for_each",
        "collection": ref("inputs.xs"),
        "item": "x",
        "separator": " | ",
        "body": [interp(ref("x")), {"kind": "text", "value": "!"}],
    }
    contract = make(loop)
    assert render(contract, inputs={"xs": ["a", "b", "c"]}) == "a! | b! | c!"
    assert render(contract, inputs={"xs": []}) == ""
    assert render(contract, inputs={"xs": ["solo"]}) == "solo!"
    diagnostic = render_error(contract, inputs={"xs": "abc"})
    assert diagnostic.code == "TQX_FOR_EACH_TYPE"
    assert diagnostic.message == "for_each collection must resolve to an array"
    # the item is not visible after the loop
    after = make(loop, interp(ref("x")))
    assert render_error(after, inputs={"xs": ["a"]}).code == "TQX_VALUE_MISSING"


def test_nested_loops_shadow_and_restore() -> None:
    inner = {
        "kind": "for_each",
        "collection": ref("x.kids"),
        "item": "x",
        "separator": ",",
        "body": [interp(ref("x"))],
    }
    outer = {
        "kind": "for_each",
        "collection": ref("inputs.xs"),
        "item": "x",
        "separator": ";",
        "body": [inner, {"kind": "text", "value": "/"}, interp(ref("x.name"))],
    }
    inputs = {"xs": [{"kids": ["a", "b"], "name": "A"}, {"kids": [], "name": "B"}]}
    assert render(make(outer), inputs=inputs) == "a,b/A;/B"


def test_display_forms() -> None:
    contract = make(
        interp(ref("inputs.s")),
        interp(ref("inputs.n")),
        interp(ref("inputs.f")),
        interp(ref("inputs.b")),
        interp(ref("inputs.z")),
        interp(ref("inputs.o")),
        interp(ref("inputs.l")),
    )
    inputs = {
        "s": "s|",
        "n": 42,
        "f": 0.21,
        "b": True,
        "z": None,
        "o": {"b": [1, 2.5], "a": 1},
        "l": ["x", 1e16],
    }
    assert render(contract, inputs=inputs) == 's|420.21true{"a":1,"b":[1,2.5]}["x",1e+16]'


def test_locale_comes_from_the_root_context() -> None:
    loop = {
        "kind": "for_each",
        "collection": ref("inputs.days"),
        "item": "context",
        "body": [interp(ref("inputs.day"), "format_date")],
    }
    rendered = render(
        make(loop),
        inputs={"days": [{"locale": "en-US"}], "day": "2026-07-12"},
        context={"locale": "de"},
    )
    assert rendered == "12.07.2026"


def test_locals_named_like_scopes_never_shadow_the_request() -> None:
    loop = {
        "kind": "for_each",
        "collection": ref("inputs.xs"),
        "item": "inputs",
        "body": [interp(ref("inputs.name"))],
    }
    assert render(make(loop), inputs={"xs": [{"name": "local"}], "name": "root"}) == "root"


def test_components_bind_arguments_in_sorted_order_with_lexical_scope() -> None:
    components = {
        "card": {
            "parameters": {
                "who": {"schema": {"type": "string"}, "required": True},
                "title": {"schema": {"type": "string"}},
            },
            "content": [interp(ref("who")), {"kind": "text", "value": ":"}, interp(ref("title"))],
        },
        "outer": [{"kind": "component", "name": "card", "with": {"who": ref("name")}}],
    }
    call = {
        "kind": "component",
        "name": "card",
        "with": {"who": ref("inputs.who"), "title": lit("Dr")},
    }
    contract = make(call, components=components)
    assert render(contract, inputs={"who": "Ada"}) == "Ada:Dr"
    # an omitted optional parameter is missing at render, even if a caller local has its name
    loop = {
        "kind": "for_each",
        "collection": lit(["Mx"]),
        "item": "title",
        "body": [{"kind": "component", "name": "card", "with": {"who": lit("Bo")}}],
    }
    diagnostic = render_error(make(loop, components=components))
    assert diagnostic.code == "TQX_VALUE_MISSING"
    assert diagnostic.message == "reference 'title' is missing"
    nested = make(
        {"kind": "component", "name": "outer", "with": {"name": lit("Cy")}}, components=components
    )
    assert render_error(nested).message == "reference 'title' is missing"


def test_render_only_failures() -> None:
    cycle = make(
        {"kind": "component", "name": "a"}, components={"a": [{"kind": "component", "name": "a"}]}
    )
    diagnostic = render_error(cycle)
    assert (diagnostic.code, diagnostic.message) == (
        "TQX_COMPONENT_CYCLE",
        "component cycle at 'a'",
    )
    diagnostic = render_error(make({"kind": "component", "name": "ghost"}))
    assert (diagnostic.code, diagnostic.message) == (
        "TQX_COMPONENT_MISSING",
        "unknown component 'ghost'",
    )
    diagnostic = render_error(make({"kind": "include", "path": "p.yaml"}))
    assert diagnostic.code == "TQX_INCLUDE_UNEXPANDED"
    assert diagnostic.message == (
        "include node reached rendering unexpanded (composition layer must expand includes)"
    )


def test_the_first_render_error_stops_everything() -> None:
    contract = make(interp(ref("inputs.a")), interp(ref("inputs.b")))
    messages, diagnostics = render_messages(contract, RenderRequest())
    assert messages is None
    assert [d.message for d in diagnostics] == ["reference 'inputs.a' is missing"]


def test_non_json_values_are_reported_not_raised() -> None:
    contract = make(interp(ref("inputs.o"), "json"), interp(ref("inputs.o")))
    for bad in ({"x": float("inf")}, {"x": 2**70}, {1: "x", "a": object()}):
        assert render_error(contract, inputs={"o": bad}).code == "TQX_VALUE_NOT_JSON"
    number = make(interp(ref("inputs.n"), "format_number"))
    assert render_error(number, inputs={"n": 10**400}).code == "TQX_VALUE_NOT_JSON"
    assert render_error(number, inputs={"n": float("nan")}).code == "TQX_VALUE_NOT_JSON"


# --- compile ---------------------------------------------------------------------------------

GREETING_LIKE: dict[str, Any] = {
    "api_version": "templiqx/v1alpha1",
    "id": "cmp",
    "version": "2.0.0",
    "inputs": {"name": {"schema": {"type": "string"}, "required": True}},
    "capabilities": ["text", "structured_output", "text"],
    "messages": [
        {"role": "system", "content": [{"kind": "text", "value": "sys"}]},
        {"role": "user", "content": [interp(ref("inputs.name"))]},
        {"role": "user", "content": []},
    ],
    "output_schema": {"type": "object"},
    "runtime_policy": {"temperature": 0, "top_p": 0.5},
    "extensions": {
        "vendor.b": {"capability": "vendor.cap", "schema": {"type": "integer"}, "value": 3},
        "vendor.a": {
            "capability": "structured_output",
            "schema": {"type": "object"},
            "value": {"k": "v"},
        },
    },
}


def test_compiled_interaction_shape() -> None:
    contract = msgspec.convert(GREETING_LIKE, Contract)
    targets = ["vendor.cap", "text", "structured_output", "text", "extra"]
    compiled, diagnostics = compile_interaction(
        contract, RenderRequest(inputs={"name": "Ada"}), targets
    )
    assert diagnostics == []
    assert isinstance(compiled, CompiledInteraction)
    assert compiled.compiler == COMPILER_ID == "templiqx-core/0.2.0"
    assert (compiled.contract_id, compiled.contract_version) == ("cmp", "2.0.0")
    assert [(m.role, m.content) for m in compiled.messages] == [
        ("system", "sys"),
        ("user", "Ada"),
        ("user", ""),
    ]
    assert compiled.required_capabilities == ["structured_output", "text", "vendor.cap"]
    assert compiled.target_capabilities == ["extra", "structured_output", "text", "vendor.cap"]
    assert compiled.extensions == {"vendor.a": {"k": "v"}, "vendor.b": 3}
    assert compiled.runtime_policy == {"temperature": 0, "top_p": 0.5}
    assert compiled.output_schema == {"type": "object"}
    assert canonical_json(compiled).startswith(
        b'{"compiler":"templiqx-core/0.2.0","contract_id":"cmp"'
    )
    # the compiled interaction does not alias the contract's runtime policy
    compiled.runtime_policy["temperature"] = 1
    assert contract.runtime_policy["temperature"] == 0


def test_capability_negotiation_collects_everything_in_order() -> None:
    data = dict(GREETING_LIKE)
    data["api_version"] = "bad"
    contract = msgspec.convert(data, Contract)
    compiled, diagnostics = compile_interaction(contract, RenderRequest(inputs={"x": 1}), ["text"])
    assert compiled is None
    assert [(d.code, d.json_pointer) for d in diagnostics] == [
        ("TQX_API_VERSION", "/api_version"),
        ("TQX_VALUE_REQUIRED", "/inputs/name"),
        ("TQX_VALUE_UNKNOWN", "/inputs/x"),
        ("TQX_CAPABILITY_UNSUPPORTED", "/capabilities"),
        ("TQX_EXTENSION_UNSUPPORTED", "/extensions/vendor.a"),
        ("TQX_EXTENSION_UNSUPPORTED", "/extensions/vendor.b"),
    ]
    assert diagnostics[3].message == (
        "target lacks required capability 'structured_output'; the target offers 'text'"
    )


def test_duplicate_capabilities_give_duplicate_diagnostics() -> None:
    contract = msgspec.convert(GREETING_LIKE, Contract)
    _, diagnostics = compile_interaction(contract, RenderRequest(inputs={"name": "x"}), [])
    assert [d.message for d in diagnostics if d.code == "TQX_CAPABILITY_UNSUPPORTED"] == [
        "target lacks required capability 'text'; the target offers none",
        "target lacks required capability 'structured_output'; the target offers none",
        "target lacks required capability 'text'; the target offers none",
    ]


def test_a_capability_free_contract_compiles_with_no_targets() -> None:
    compiled, diagnostics = compile_interaction(make(TEXT), RenderRequest(), [])
    assert diagnostics == []
    assert compiled is not None
    assert compiled.required_capabilities == []
    assert compiled.target_capabilities == []


def test_render_errors_come_alone_after_checks_pass() -> None:
    contract = make(interp(ref("inputs.n")), inputs={"n": {"schema": {"type": "string"}}})
    compiled, diagnostics = compile_interaction(contract, RenderRequest(), [])
    assert compiled is None
    assert [(d.code, d.json_pointer) for d in diagnostics] == [("TQX_VALUE_MISSING", "")]


def test_cached_validation_returns_fresh_diagnostics() -> None:
    contract = make(TEXT, id="bad id")
    _, first = compile_interaction(contract, RenderRequest(), [])
    first[0].file = "somewhere.yaml"
    _, second = compile_interaction(contract, RenderRequest(), [])
    assert second[0].file is None
