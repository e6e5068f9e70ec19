"""Every code in CORE_CODES is produced by a scenario, with its severity and JSON pointer."""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from templiqx_contracts import Contract, Diagnostic, RenderRequest, ToolContractRef
from templiqx_core import (
    CORE_CODES,
    compile_interaction,
    parse_contract,
    render_messages,
    resolve_tool_contract_refs,
    validate_contract,
    validate_output,
    validate_tool_answer,
    validate_values,
)
from templiqx_core.fuel import Fuel


def _cancelled() -> threading.Event:
    token = threading.Event()
    token.set()
    return token


SRC = Path(__file__).resolve().parents[1] / "src" / "templiqx_core"
# The codes of the tool-call answer rule live beside the rule, in the bottom layer.
ANSWER_RULE = (
    Path(__file__).resolve().parents[2]
    / "templiqx-contracts"
    / "src"
    / "templiqx_contracts"
    / "tools.py"
)
TEXT = {"kind": "text", "value": "hi"}


def contract(**overrides: Any) -> Contract:
    data: dict[str, Any] = {
        "api_version": "templiqx/v1alpha1",
        "id": "codes",
        "version": "1.0.0",
        "messages": [{"role": "user", "content": [TEXT]}],
        "output_schema": {"type": "object"},
    }
    data.update(overrides)
    return msgspec.convert(data, Contract)


def content(*nodes: Any, **overrides: Any) -> Contract:
    return contract(messages=[{"role": "user", "content": list(nodes)}], **overrides)


def ref(path: str) -> dict[str, Any]:
    return {"kind": "ref", "path": path}


def lit(value: Any) -> dict[str, Any]:
    return {"kind": "literal", "value": value}


def interpolate(expression: dict[str, Any], *filters: str) -> dict[str, Any]:
    return {"kind": "interpolate", "expression": expression, "filters": list(filters)}


def when(condition: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "when", "condition": condition, "then": [TEXT]}


def for_each(collection: dict[str, Any], item: str = "x") -> dict[str, Any]:
    return {"kind": "for_each", "collection": collection, "item": item, "body": [TEXT]}


def call(component: str, /, **arguments: Any) -> dict[str, Any]:
    return {"kind": "component", "name": component, "with": arguments}


def field(schema: Any, required: bool = False) -> dict[str, Any]:
    return {"schema": schema, "required": required}


def output(schema: Any) -> list[Diagnostic]:
    return validate_contract(contract(output_schema=schema))


def render(
    node: dict[str, Any],
    request: RenderRequest | None = None,
    *,
    fuel: Fuel | None = None,
    **more: Any,
) -> list[Diagnostic]:
    messages, diagnostics = render_messages(content(node, **more), request or RenderRequest(), fuel)
    assert messages is None
    return diagnostics


def compiled(contract_: Contract, request: RenderRequest, targets: list[str]) -> list[Diagnostic]:
    result, diagnostics = compile_interaction(contract_, request, targets)
    assert result is None
    return diagnostics


def extension(
    key: str, capability: str = "vendor.cap", schema: Any = None, value: Any = 1
) -> Contract:
    spec = {"capability": capability, "schema": schema or {"type": "integer"}, "value": value}
    return contract(extensions={key: spec})


TYPED_COMPONENT = {
    "parameters": {"name": field({"type": "string"}, required=True)},
    "content": [TEXT],
}
NUMBER_INPUT = {"n": field({"type": "number"})}
OBJECT_INPUT = {"o": field({"type": "object"})}
CYCLE = {"a": [call("b")], "b": [call("a")]}
CHAIN = {f"c{i}": [call(f"c{i + 1}")] for i in range(3000)} | {"c3000": [TEXT]}

LOOKUP = {
    "name": "lookup",
    "description": "Look a customer up.",
    "arguments": {
        "type": "object",
        "properties": {"email": {"type": "string"}},
        "required": ["email"],
    },
}


def tool(**overrides: Any) -> dict[str, Any]:
    return LOOKUP | overrides


def tooled(*tools: dict[str, Any], **overrides: Any) -> Contract:
    return contract(tools=list(tools) or [LOOKUP], **overrides)


def answered(output: Any, **overrides: Any) -> list[Diagnostic]:
    interaction, diagnostics = compile_interaction(tooled(**overrides), RenderRequest(), [])
    assert interaction is not None, diagnostics
    return validate_tool_answer(interaction, output) or []


def calls(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(entries)}


Scenario = tuple[str, str | None, Callable[[], list[Diagnostic]]]

SCENARIOS: list[Scenario] = [
    ("TQX_PARSE_YAML", None, lambda: parse_contract("api_version: [", "bad.yaml")[1]),
    ("TQX_API_VERSION", "/api_version", lambda: validate_contract(contract(api_version="v0"))),
    ("TQX_INVALID_ID", "/id", lambda: validate_contract(contract(id="a b"))),
    ("TQX_VERSION_INVALID", "/version", lambda: validate_contract(contract(version="1.0"))),
    ("TQX_MESSAGES_EMPTY", "/messages", lambda: validate_contract(contract(messages=[]))),
    (
        "TQX_OUTPUT_SCHEMA_INVALID",
        "/output_schema",
        lambda: output({"type": "string", "minLength": -1}),
    ),
    (
        "TQX_OUTPUT_SCHEMA_INVALID",
        "/output_schema",
        lambda: validate_output({"type": "object", "properties": []}, {}),
    ),
    ("TQX_OUTPUT_SCHEMA_UNSATISFIABLE", "/output_schema", lambda: output(False)),
    (
        "TQX_FIELD_SCHEMA_INVALID",
        "/inputs/x/schema",
        lambda: validate_contract(
            contract(inputs={"x": field({"type": "object", "properties": []})})
        ),
    ),
    (
        "TQX_FIELD_SCHEMA_INVALID",
        "/context/x",
        lambda: validate_values(
            contract(context={"x": field({"type": "nope"})}), RenderRequest(context={"x": 1})
        ),
    ),
    (
        "TQX_COMPONENT_SCHEMA_INVALID",
        "/components/c/parameters/p/schema",
        lambda: validate_contract(
            contract(
                components={"c": {"parameters": {"p": field({"minLength": -1})}, "content": []}}
            )
        ),
    ),
    ("TQX_SCHEMA_BOUNDED_SUBSET", "/output_schema", lambda: output(True)),
    (
        "TQX_SCHEMA_KEYWORD_UNSUPPORTED",
        "/output_schema/pattern",
        lambda: output({"type": "string", "pattern": "a"}),
    ),
    (
        "TQX_SCHEMA_KEYWORD_UNSUPPORTED",
        "/output_schema/additionalProperties",
        lambda: output({"type": "object", "additionalProperties": {"type": "string"}}),
    ),
    (
        "TQX_SCHEMA_TYPE_REQUIRED",
        "/output_schema/type",
        lambda: output({"type": ["string", "null"]}),
    ),
    ("TQX_SCHEMA_TYPE_UNSUPPORTED", "/output_schema/type", lambda: output({"type": "date"})),
    (
        "TQX_SCHEMA_ENUM_IMPOSSIBLE",
        "/output_schema/enum",
        lambda: output({"type": "string", "enum": [1]}),
    ),
    (
        "TQX_SCHEMA_CONST_IMPOSSIBLE",
        "/output_schema/const",
        lambda: output({"type": "integer", "const": 2.0}),
    ),
    (
        "TQX_SCHEMA_CONST_ENUM_CONTRADICTION",
        "/output_schema",
        lambda: output({"type": "integer", "const": 1, "enum": [1.0, 2]}),
    ),
    (
        "TQX_SCHEMA_CONST_CONTRADICTION",
        "/output_schema",
        lambda: output({"type": "string", "const": "a", "maxLength": 0}),
    ),
    (
        "TQX_SCHEMA_KEYWORD_TYPE",
        "/output_schema/properties",
        lambda: output({"type": "string", "properties": {}}),
    ),
    (
        "TQX_SCHEMA_KEYWORD_TYPE",
        "/output_schema/items",
        lambda: output({"type": "object", "items": {"type": "string"}}),
    ),
    (
        "TQX_SCHEMA_REQUIRED_UNKNOWN",
        "/output_schema/required",
        lambda: output({"type": "object", "properties": {}, "required": ["a"]}),
    ),
    ("TQX_SCHEMA_ITEMS_REQUIRED", "/output_schema/items", lambda: output({"type": "array"})),
    (
        "TQX_SCHEMA_FORMAT_UNSUPPORTED",
        "/output_schema/format",
        lambda: output({"type": "string", "format": "email"}),
    ),
    (
        "TQX_SCHEMA_IMPOSSIBLE_BOUNDS",
        "/output_schema",
        lambda: output({"type": "string", "minLength": 3, "maxLength": 1}),
    ),
    (
        "TQX_SCHEMA_IMPOSSIBLE_INTEGER_BOUNDS",
        "/output_schema",
        lambda: output({"type": "integer", "minimum": 1.2, "maximum": 1.8}),
    ),
    (
        "TQX_REF_UNKNOWN",
        "/messages/0/content/0/expression",
        lambda: validate_contract(content(interpolate(ref("inputs.nope")))),
    ),
    (
        "TQX_BOOLEAN_EMPTY",
        "/messages/0/content/0/condition/values",
        lambda: validate_contract(content(when({"kind": "or", "values": []}))),
    ),
    (
        "TQX_BOOLEAN_TYPE",
        "/messages/0/content/0/condition/values/1",
        lambda: validate_contract(content(when({"kind": "and", "values": [lit(True), lit(1)]}))),
    ),
    ("TQX_BOOLEAN_TYPE", "", lambda: render(when({"kind": "not", "value": lit("x")}))),
    (
        "TQX_INCLUDE_UNEXPANDED",
        "/messages/0/content/0",
        lambda: validate_contract(content({"kind": "include", "path": "partials/a.yaml"})),
    ),
    ("TQX_INCLUDE_UNEXPANDED", "", lambda: render({"kind": "include", "path": "partials/a.yaml"})),
    (
        "TQX_INTERPOLATION_TYPE",
        "/messages/0/content/0/filters",
        lambda: validate_contract(content(interpolate(lit(None)))),
    ),
    (
        "TQX_INTERPOLATION_TYPE",
        "/messages/0/content/0/expression",
        lambda: validate_contract(
            content(interpolate(ref("inputs.n"), "json"), inputs={"n": field({})})
        ),
    ),
    (
        "TQX_FILTER_TYPE",
        "/messages/0/content/0/filters",
        lambda: validate_contract(
            content(interpolate(ref("inputs.n"), "trim"), inputs=NUMBER_INPUT)
        ),
    ),
    (
        "TQX_CONDITION_TYPE",
        "/messages/0/content/0/condition",
        lambda: validate_contract(content(when(lit("yes")))),
    ),
    (
        "TQX_LOCAL_INVALID",
        "/messages/0/content/0/item",
        lambda: validate_contract(content(for_each(lit([1]), item="a b"))),
    ),
    (
        "TQX_FOR_EACH_TYPE",
        "/messages/0/content/0/collection",
        lambda: validate_contract(content(for_each(lit("abc")))),
    ),
    ("TQX_FOR_EACH_TYPE", "", lambda: render(for_each(lit("abc")))),
    (
        "TQX_COMPONENT_MISSING",
        "/messages/0/content/0/name",
        lambda: validate_contract(content(call("ghost"))),
    ),
    ("TQX_COMPONENT_MISSING", "", lambda: render(call("ghost"))),
    (
        "TQX_COMPONENT_ARGUMENT_MISSING",
        "/messages/0/content/0/with/name",
        lambda: validate_contract(content(call("c"), components={"c": TYPED_COMPONENT})),
    ),
    (
        "TQX_COMPONENT_ARGUMENT_UNKNOWN",
        "/messages/0/content/0/with/other",
        lambda: validate_contract(
            content(call("c", name=lit("a"), other=lit("b")), components={"c": TYPED_COMPONENT})
        ),
    ),
    (
        "TQX_COMPONENT_ARGUMENT_TYPE",
        "/messages/0/content/0/with/name",
        lambda: validate_contract(
            content(call("c", name=lit(1)), components={"c": TYPED_COMPONENT})
        ),
    ),
    ("TQX_COMPONENT_CYCLE", "/components/a", lambda: validate_contract(contract(components=CYCLE))),
    ("TQX_COMPONENT_CYCLE", "", lambda: render(call("a"), components=CYCLE)),
    ("TQX_CONTENT_TOO_DEEP", "", lambda: render(call("c0"), components=CHAIN)),
    (
        "TQX_EXTENSION_NAMESPACE",
        "/extensions/vendor",
        lambda: validate_contract(extension("vendor")),
    ),
    (
        "TQX_EXTENSION_CAPABILITY",
        "/extensions/vendor.x/capability",
        lambda: validate_contract(extension("vendor.x", capability="has space")),
    ),
    (
        "TQX_EXTENSION_SCHEMA_INVALID",
        "/extensions/vendor.x/schema",
        lambda: validate_contract(
            extension("vendor.x", schema={"type": "string", "maxLength": "5"})
        ),
    ),
    (
        "TQX_EXTENSION_VALUE",
        "/extensions/vendor.x/value",
        lambda: validate_contract(extension("vendor.x", value="high")),
    ),
    (
        "TQX_TOOL_CONTRACT_REF_UNRESOLVED",
        "/extensions/vendor.x/schema",
        lambda: resolve_tool_contract_refs(
            extension("vendor.x", schema={"$ref": "tool_contract:t", "fingerprint": "b"}),
            {"t": ToolContractRef(fingerprint="a", schema={"type": "integer"})},
        ),
    ),
    (
        "TQX_VALUE_REQUIRED",
        "/inputs/n",
        lambda: validate_values(
            contract(inputs={"n": field({"type": "number"}, True)}), RenderRequest()
        ),
    ),
    (
        "TQX_VALUE_SCHEMA",
        "/inputs/n",
        lambda: validate_values(contract(inputs=NUMBER_INPUT), RenderRequest(inputs={"n": "x"})),
    ),
    (
        "TQX_VALUE_UNKNOWN",
        "/context/extra",
        lambda: validate_values(contract(), RenderRequest(context={"extra": 1})),
    ),
    (
        "TQX_CAPABILITY_UNSUPPORTED",
        "/capabilities",
        lambda: compiled(contract(capabilities=["text"]), RenderRequest(), []),
    ),
    (
        "TQX_EXTENSION_UNSUPPORTED",
        "/extensions/vendor.x",
        lambda: compiled(extension("vendor.x"), RenderRequest(), []),
    ),
    (
        "TQX_VALUE_MISSING",
        "",
        lambda: compiled(
            content(interpolate(ref("inputs.n")), inputs=NUMBER_INPUT), RenderRequest(), []
        ),
    ),
    (
        "TQX_VALUE_NOT_JSON",
        "",
        lambda: compiled(
            content(interpolate(ref("inputs.o"), "json"), inputs=OBJECT_INPUT),
            RenderRequest(inputs={"o": {"x": float("nan")}}),
            [],
        ),
    ),
    (
        "TQX_FILTER_INPUT",
        "",
        lambda: compiled(
            content(interpolate(ref("inputs.n"), "format_date"), inputs=NUMBER_INPUT),
            RenderRequest(inputs={"n": 1}),
            [],
        ),
    ),
    (
        "TQX_TRANSLATION_MISSING",
        "",
        lambda: compiled(content(interpolate(lit("k"), "translate")), RenderRequest(), []),
    ),
    (
        "TQX_TRANSLATION_KEY",
        "",
        lambda: compiled(
            content(interpolate(lit("k"), "translate")),
            RenderRequest(context={"_templiqx_translations": {"en": {}}}),
            [],
        ),
    ),
    ("TQX_OUTPUT_SCHEMA", "/output", lambda: validate_output({"type": "object"}, [])),
    (
        "TQX_RENDER_TOO_LARGE",
        "",
        lambda: render(
            {
                "kind": "for_each",
                "collection": lit([0] * 9),
                "item": "x",
                "body": [{"kind": "text", "value": "y" * 1_000_000}],
            }
        ),
    ),
    (
        "TQX_FUEL_EXHAUSTED",
        "",
        lambda: render(
            {
                "kind": "for_each",
                "collection": ref("inputs.xs"),
                "item": "x",
                "body": [
                    {"kind": "for_each", "collection": ref("inputs.xs"), "item": "y", "body": []}
                ],
            },
            RenderRequest(inputs={"xs": list(range(1100))}),
        ),
    ),
    (
        "TQX_FUEL_EXHAUSTED",
        "/messages/0/content",
        lambda: validate_contract(
            content(
                {
                    "kind": "for_each",
                    "collection": lit(list(range(1001))),
                    "item": "x",
                    "body": [
                        {
                            "kind": "for_each",
                            "collection": lit(list(range(1000))),
                            "item": "y",
                            "body": [],
                        }
                    ],
                }
            )
        ),
    ),
    ("TQX_CANCELLED", "", lambda: render(TEXT, fuel=Fuel(cancel=_cancelled()))),
    # tools
    ("TQX_TOOL_NAME_INVALID", "/tools/0/name", lambda: validate_contract(tooled(tool(name="a b")))),
    (
        "TQX_TOOL_NAME_DUPLICATE",
        "/tools/1/name",
        lambda: validate_contract(tooled(LOOKUP, LOOKUP)),
    ),
    (
        "TQX_TOOL_DESCRIPTION_EMPTY",
        "/tools/0/description",
        lambda: validate_contract(tooled(tool(description=" "))),
    ),
    (
        "TQX_TOOL_SCHEMA_INVALID",
        "/tools/0/arguments",
        lambda: validate_contract(tooled(tool(arguments={"type": "object", "properties": []}))),
    ),
    (
        "TQX_TOOL_ARGUMENTS_TYPE",
        "/tools/0/arguments/type",
        lambda: validate_contract(tooled(tool(arguments={"type": "string"}))),
    ),
    ("TQX_TOOL_CHOICE_INVALID", "/tool_choice", lambda: validate_contract(tooled(tool_choice="x"))),
    (
        "TQX_TOOL_OUTPUT_RESERVED",
        "/output_schema/properties/tool_calls",
        lambda: validate_contract(
            tooled(
                output_schema={"type": "object", "properties": {"tool_calls": {"type": "string"}}}
            )
        ),
    ),
    (
        "TQX_TOOL_CONTRACT_REF_UNRESOLVED",
        "/tools/0/arguments",
        lambda: validate_contract(
            tooled(tool(arguments={"$ref": "tool_contract:lookup", "fingerprint": "sha256:a"}))
        ),
    ),
    ("TQX_TOOL_CALL_SHAPE", "/output/tool_calls", lambda: answered({"tool_calls": []})),
    (
        "TQX_TOOL_CALL_UNDECLARED",
        "/output/tool_calls/0/name",
        lambda: answered(calls({"id": "c1", "name": "drop_table", "arguments": {}})),
    ),
    (
        "TQX_TOOL_CALL_ARGUMENTS",
        "/output/tool_calls/0/arguments",
        lambda: answered(calls({"id": "c1", "name": "lookup", "arguments": {}})),
    ),
    (
        "TQX_TOOL_CALL_CHOICE",
        "/output/tool_calls",
        lambda: answered(
            calls({"id": "c1", "name": "lookup", "arguments": {"email": "a@b"}}),
            tool_choice="none",
        ),
    ),
    ("TQX_TOOL_CALL_REQUIRED", "/output", lambda: answered({}, tool_choice="required")),
]


@pytest.mark.parametrize(
    ("code", "pointer", "scenario"),
    SCENARIOS,
    ids=[f"{code}@{pointer}" for code, pointer, _ in SCENARIOS],
)
def test_scenario_produces_code_with_error_severity_and_pointer(
    code: str, pointer: str | None, scenario: Callable[[], list[Diagnostic]]
) -> None:
    diagnostics = scenario()
    found = [d for d in diagnostics if d.code == code]
    assert found, f"{code} not produced: {[d.code for d in diagnostics]}"
    assert (found[0].severity, found[0].json_pointer) == ("error", pointer)
    assert found[0].message
    # every core diagnostic says how to fix it; parse errors carry their own, more specific help
    assert found[0].help, f"{code} has no fix hint"
    if code != "TQX_PARSE_YAML":
        assert found[0].help == CORE_CODES[code]


def test_every_catalogued_code_has_a_scenario() -> None:
    assert {code for code, _, _ in SCENARIOS} == set(CORE_CODES)


def test_every_code_the_source_mentions_is_catalogued() -> None:
    mentioned: set[str] = set()
    for path in [*SRC.glob("*.py"), ANSWER_RULE]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value.startswith("TQX_")
                and node.value.isupper()
            ):
                mentioned.add(node.value)
    assert mentioned == set(CORE_CODES)


def test_hints_are_single_lines() -> None:
    for code, hint in CORE_CODES.items():
        assert code.startswith("TQX_")
        assert hint
        assert "\n" not in hint
        assert hint.endswith(".")
    assert list(CORE_CODES) == sorted(CORE_CODES)
