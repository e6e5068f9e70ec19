"""Declared tools: reading, static validation, tool-contract references, compilation, answers."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from templiqx_contracts import (
    CompiledInteraction,
    Contract,
    Diagnostic,
    NamedToolChoice,
    RenderRequest,
    ToolContractRef,
    ToolSpec,
    canonical_json,
    declared_tools,
    fingerprint,
)
from templiqx_core import (
    compile_interaction,
    diff_contracts,
    explain_contract,
    output_valid,
    parse_contract,
    resolve_tool_contract_refs,
    validate_contract,
    validate_tool_answer,
)

LOOKUP_ARGUMENTS = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "minLength": 3},
        "since": {"type": "string", "format": "date"},
    },
    "required": ["email"],
    "additionalProperties": False,
}
TICKET_ARGUMENTS = {
    "type": "object",
    "properties": {
        "subject": {"type": "string"},
        "priority": {"type": "string", "enum": ["low", "high"]},
    },
    "required": ["subject", "priority"],
    "additionalProperties": False,
}
LOOKUP = {
    "name": "lookup_account",
    "description": "Find a customer account by email.",
    "arguments": LOOKUP_ARGUMENTS,
}
TICKET = {
    "name": "open_ticket",
    "description": "Open a support ticket.",
    "arguments": TICKET_ARGUMENTS,
}

YAML = """\
api_version: templiqx/v1alpha1
id: support
version: 1.0.0
messages:
  - role: user
    content: [{kind: text, value: Help me}]
output_schema: {type: string}
"""

TOOLS_YAML = """\
tools:
  - name: lookup_account
    description: Find a customer account by email.
    arguments:
      type: object
      properties:
        email: {type: string, minLength: 3}
        since: {type: string, format: date}
      required: [email]
      additionalProperties: false
  - name: open_ticket
    description: Open a support ticket.
    arguments:
      type: object
      properties:
        subject: {type: string}
        priority: {type: string, enum: [low, high]}
      required: [subject, priority]
      additionalProperties: false
"""


def contract(*tools: dict[str, Any], **more: Any) -> Contract:
    data: dict[str, Any] = {
        "api_version": "templiqx/v1alpha1",
        "id": "support",
        "version": "1.0.0",
        "messages": [{"role": "user", "content": [{"kind": "text", "value": "Help me"}]}],
        "output_schema": {"type": "string"},
    }
    if tools:
        data["tools"] = [copy.deepcopy(tool) for tool in tools]
    data.update(more)
    return msgspec.convert(data, Contract)


def parse(text: str) -> Contract:
    parsed, diagnostics = parse_contract(text)
    assert diagnostics == []
    assert parsed is not None
    return parsed


def codes_at(diagnostics: list[Diagnostic]) -> list[tuple[str, str | None]]:
    return [(d.code, d.json_pointer) for d in diagnostics]


def compiled(subject: Contract) -> CompiledInteraction:
    interaction, diagnostics = compile_interaction(subject, RenderRequest(), [])
    assert diagnostics == []
    assert interaction is not None
    return interaction


# --- reading --------------------------------------------------------------------------------


def test_yaml_declares_tools_choice_and_parallel_calls() -> None:
    extra = "tool_choice: {tool: open_ticket}\nparallel_tool_calls: false\n"
    parsed = parse(YAML + TOOLS_YAML + extra)
    assert [tool.name for tool in declared_tools(parsed)] == ["lookup_account", "open_ticket"]
    assert parsed.tools == [ToolSpec(**LOOKUP), ToolSpec(**TICKET)]
    assert parsed.tool_choice == NamedToolChoice(tool="open_ticket")
    assert parsed.parallel_tool_calls is False
    assert validate_contract(parsed) == []


@pytest.mark.parametrize(
    ("extra", "code", "fragment"),
    [
        (
            "tools:\n  - name: a\n    description: d\n",
            "TQX_PARSE_MISSING_FIELD",
            "missing field `arguments` in a tool",
        ),
        (
            "tools:\n  - {name: a, description: d, arguments: {type: object}, strict: true}\n",
            "TQX_PARSE_YAML",
            "unknown field `strict` in a tool",
        ),
        (
            "tool_choice: {tool: a, mode: x}\n",
            "TQX_PARSE_YAML",
            "unknown field `mode` in a named tool choice",
        ),
        ("tools: {a: 1}\n", "TQX_PARSE_WRONG_TYPE", "expected a list of tools"),
        ("parallel_tool_calls: yes\n", "TQX_PARSE_WRONG_TYPE", "expected a boolean"),
    ],
)
def test_yaml_rejects_malformed_tool_declarations(extra: str, code: str, fragment: str) -> None:
    parsed, diagnostics = parse_contract(YAML + extra)
    assert parsed is None
    assert codes_at(diagnostics) == [(code, None)]
    assert fragment in diagnostics[0].message


def test_without_tools_nothing_is_serialized_and_fingerprints_stay() -> None:
    plain = parse(YAML)
    empty = parse(YAML + "tools: []\n")
    assert empty.tools is msgspec.UNSET
    assert canonical_json(empty) == canonical_json(plain)
    assert b"tool" not in canonical_json(plain)
    interaction = compiled(plain)
    assert b"tool" not in canonical_json(interaction)
    assert fingerprint(compiled(empty)) == fingerprint(interaction)
    assert b"tools" not in msgspec.json.encode(explain_contract(plain))


# --- static validation ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "a b", "café", "x" * 65, "get.weather", "tool/1", "\u0661"])
def test_bad_tool_names(name: str) -> None:
    diagnostics = validate_contract(contract({**LOOKUP, "name": name}))
    assert codes_at(diagnostics) == [("TQX_TOOL_NAME_INVALID", "/tools/0/name")]
    assert f"tool name '{name}' must be 1 to 64 ASCII letters" in diagnostics[0].message
    assert diagnostics[0].help


@pytest.mark.parametrize("name", ["a", "x" * 64, "get_weather-2", "A_B-c"])
def test_good_tool_names(name: str) -> None:
    assert validate_contract(contract({**LOOKUP, "name": name})) == []


def test_duplicate_tool_names_point_at_the_repeat() -> None:
    diagnostics = validate_contract(contract(LOOKUP, TICKET, {**TICKET, "description": "again"}))
    assert codes_at(diagnostics) == [("TQX_TOOL_NAME_DUPLICATE", "/tools/2/name")]
    assert diagnostics[0].message == (
        "tool 'open_ticket' is declared more than once (first at /tools/1)"
    )


def test_blank_description() -> None:
    diagnostics = validate_contract(contract({**LOOKUP, "description": "  "}))
    assert codes_at(diagnostics) == [("TQX_TOOL_DESCRIPTION_EMPTY", "/tools/0/description")]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            {"type": "object", "properties": {"q": {"type": "string", "pattern": "^a"}}},
            [("TQX_SCHEMA_KEYWORD_UNSUPPORTED", "/tools/0/arguments/properties/q/pattern")],
        ),
        (
            {"type": "object", "properties": []},
            [("TQX_TOOL_SCHEMA_INVALID", "/tools/0/arguments")],
        ),
        (
            {"type": "string"},
            [("TQX_TOOL_ARGUMENTS_TYPE", "/tools/0/arguments/type")],
        ),
        (
            {"type": "object", "required": ["q"], "properties": {}},
            [("TQX_SCHEMA_REQUIRED_UNKNOWN", "/tools/0/arguments/required")],
        ),
        (
            {"type": "array"},
            [
                ("TQX_SCHEMA_ITEMS_REQUIRED", "/tools/0/arguments/items"),
                ("TQX_TOOL_ARGUMENTS_TYPE", "/tools/0/arguments/type"),
            ],
        ),
        (True, [("TQX_SCHEMA_BOUNDED_SUBSET", "/tools/0/arguments")]),
    ],
)
def test_bad_argument_schemas(arguments: Any, expected: list[tuple[str, str]]) -> None:
    diagnostics = validate_contract(contract({**LOOKUP, "arguments": arguments}))
    assert codes_at(diagnostics) == expected


def test_tool_diagnostics_come_last_in_declaration_order() -> None:
    diagnostics = validate_contract(
        contract(
            {**LOOKUP, "name": "bad name", "arguments": {"type": "string"}},
            {**TICKET, "description": ""},
            api_version="v0",
        )
    )
    assert codes_at(diagnostics) == [
        ("TQX_API_VERSION", "/api_version"),
        ("TQX_TOOL_NAME_INVALID", "/tools/0/name"),
        ("TQX_TOOL_ARGUMENTS_TYPE", "/tools/0/arguments/type"),
        ("TQX_TOOL_DESCRIPTION_EMPTY", "/tools/1/description"),
    ]


@pytest.mark.parametrize(
    ("more", "expected"),
    [
        ({"tool_choice": "always"}, [("TQX_TOOL_CHOICE_INVALID", "/tool_choice")]),
        ({"tool_choice": {"tool": "refund"}}, [("TQX_TOOL_CHOICE_INVALID", "/tool_choice/tool")]),
        ({"tool_choice": "required", "parallel_tool_calls": False}, []),
        ({"tool_choice": "none"}, []),
        ({"tool_choice": {"tool": "lookup_account"}}, []),
    ],
)
def test_tool_choice(more: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert codes_at(validate_contract(contract(LOOKUP, **more))) == expected


def test_tool_settings_need_tools() -> None:
    diagnostics = validate_contract(contract(tool_choice="auto", parallel_tool_calls=True))
    assert codes_at(diagnostics) == [
        ("TQX_TOOL_CHOICE_INVALID", "/tool_choice"),
        ("TQX_TOOL_CHOICE_INVALID", "/parallel_tool_calls"),
    ]


def test_output_schema_may_not_claim_the_tool_calls_member() -> None:
    schema = {"type": "object", "properties": {"tool_calls": {"type": "string"}}}
    assert validate_contract(contract(output_schema=schema)) == []
    diagnostics = validate_contract(contract(LOOKUP, output_schema=schema))
    assert codes_at(diagnostics) == [
        ("TQX_TOOL_OUTPUT_RESERVED", "/output_schema/properties/tool_calls")
    ]


# --- tool-contract references ---------------------------------------------------------------

TABLE = {"lookup": ToolContractRef(fingerprint="sha256:v1", schema=LOOKUP_ARGUMENTS)}


def stub(name: str = "lookup", **more: Any) -> dict[str, Any]:
    return {"$ref": f"tool_contract:{name}", **more}


def test_tool_arguments_resolve_from_the_manifest_table() -> None:
    subject = contract({**LOOKUP, "arguments": stub(fingerprint="sha256:v1")}, TICKET)
    assert resolve_tool_contract_refs(subject, TABLE) == []
    assert declared_tools(subject)[0].arguments == LOOKUP_ARGUMENTS
    assert validate_contract(subject) == []
    declared_tools(subject)[0].arguments["required"].append("other")
    assert TABLE["lookup"].schema["required"] == ["email"]  # inlined as a copy


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            stub("refunds", fingerprint="sha256:v1"),
            "tool 'lookup_account' references unknown tool_contract 'refunds'",
        ),
        (
            stub(fingerprint="sha256:v0"),
            "tool 'lookup_account' pins fingerprint 'sha256:v0' but tool_contract 'lookup' has "
            "'sha256:v1'",
        ),
        (
            stub(),
            "tool 'lookup_account' references tool_contract 'lookup' without a fingerprint pin",
        ),
        (
            stub(fingerprint=1),
            "tool 'lookup_account' references tool_contract 'lookup' without a fingerprint pin",
        ),
    ],
)
def test_unresolvable_tool_references_fail_closed(arguments: Any, message: str) -> None:
    subject = contract(TICKET, {**LOOKUP, "arguments": arguments})
    before = canonical_json(subject)
    diagnostics = resolve_tool_contract_refs(subject, TABLE)
    assert codes_at(diagnostics) == [("TQX_TOOL_CONTRACT_REF_UNRESOLVED", "/tools/1/arguments")]
    assert diagnostics[0].message == message
    assert canonical_json(subject) == before  # all or nothing


def test_a_bad_extension_reference_keeps_good_tool_references_unresolved() -> None:
    subject = contract(
        {**LOOKUP, "arguments": stub(fingerprint="sha256:v1")},
        extensions={
            "vendor.x": {"capability": "c", "schema": stub("nope", fingerprint="f"), "value": 1}
        },
    )
    diagnostics = resolve_tool_contract_refs(subject, TABLE)
    assert codes_at(diagnostics) == [
        ("TQX_TOOL_CONTRACT_REF_UNRESOLVED", "/extensions/vendor.x/schema")
    ]
    assert declared_tools(subject)[0].arguments == stub(fingerprint="sha256:v1")


def test_an_unresolved_reference_is_named_by_validation() -> None:
    diagnostics = validate_contract(contract({**LOOKUP, "arguments": stub(fingerprint="x")}))
    assert codes_at(diagnostics) == [("TQX_TOOL_CONTRACT_REF_UNRESOLVED", "/tools/0/arguments")]
    assert "tool_contract 'lookup', which was not resolved" in diagnostics[0].message


# --- compilation, explain, diff -------------------------------------------------------------


def test_compiled_interaction_carries_tools_with_defaults() -> None:
    interaction = compiled(contract(LOOKUP, TICKET))
    assert interaction.tools == [ToolSpec(**LOOKUP), ToolSpec(**TICKET)]
    assert interaction.tool_choice == "auto"
    assert interaction.parallel_tool_calls is True
    assert interaction.required_capabilities == []
    wire = msgspec.to_builtins(interaction)
    assert wire["tools"][0] == LOOKUP
    assert (wire["tool_choice"], wire["parallel_tool_calls"]) == ("auto", True)
    again = msgspec.json.decode(msgspec.json.encode(interaction), type=CompiledInteraction)
    assert again == interaction


def test_compiled_interaction_keeps_explicit_settings() -> None:
    interaction = compiled(
        contract(LOOKUP, tool_choice={"tool": "lookup_account"}, parallel_tool_calls=False)
    )
    assert interaction.tool_choice == NamedToolChoice(tool="lookup_account")
    assert interaction.parallel_tool_calls is False


def test_invalid_tools_stop_compilation() -> None:
    interaction, diagnostics = compile_interaction(
        contract({**LOOKUP, "name": "no spaces"}), RenderRequest(), []
    )
    assert interaction is None
    assert codes_at(diagnostics) == [("TQX_TOOL_NAME_INVALID", "/tools/0/name")]


def test_explain_lists_the_tools_in_order() -> None:
    explanation = explain_contract(contract(TICKET, LOOKUP))
    assert explanation.tools == ["open_ticket", "lookup_account"]


def test_diff_names_changed_tool_fields() -> None:
    left = contract(LOOKUP)
    assert diff_contracts(left, contract(LOOKUP)).changes == []
    right = contract(LOOKUP, TICKET, tool_choice="required")
    assert diff_contracts(left, right).changes == ["tools", "tool_choice"]
    assert diff_contracts(contract(), left).changes == ["tools"]


# --- answers --------------------------------------------------------------------------------


def call(name: str, arguments: Any, call_id: Any = "call_1") -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def answer(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(calls)}


GOOD_LOOKUP = call("lookup_account", {"email": "ada@example.com", "since": "2026-01-31"})
GOOD_TICKET = call("open_ticket", {"subject": "Refund", "priority": "high"}, "call_2")


def judged(output: Any, **more: Any) -> list[Diagnostic] | None:
    return validate_tool_answer(compiled(contract(LOOKUP, TICKET, **more)), output)


def test_a_valid_tool_call_answer() -> None:
    output = answer(GOOD_LOOKUP, GOOD_TICKET)
    assert judged(output) == []
    assert output_valid(compiled(contract(LOOKUP, TICKET)), output) is True


def test_plain_answers_are_left_to_the_output_schema() -> None:
    interaction = compiled(contract(LOOKUP, TICKET))
    assert validate_tool_answer(interaction, "Here is your answer.") is None
    assert output_valid(interaction, "Here is your answer.") is True
    assert output_valid(interaction, {"answer": 1}) is False  # the output schema says string
    # a tool-free interaction never judges tool calls
    assert validate_tool_answer(compiled(contract()), answer(GOOD_LOOKUP)) is None
    assert output_valid(compiled(contract()), answer(GOOD_LOOKUP)) is False
    # an object with tool_calls beside other members is a plain answer
    assert validate_tool_answer(interaction, {"tool_calls": [], "text": "x"}) is None


def test_an_undeclared_tool() -> None:
    diagnostics = judged(answer(GOOD_LOOKUP, call("delete_account", {"email": "x"}, "call_9")))
    assert diagnostics is not None
    assert codes_at(diagnostics) == [("TQX_TOOL_CALL_UNDECLARED", "/output/tool_calls/1/name")]
    assert diagnostics[0].message == (
        "tool call 1 names 'delete_account', which the contract does not declare "
        "(declared: lookup_account, open_ticket)"
    )
    assert diagnostics[0].help


def test_schema_invalid_arguments_give_one_diagnostic_per_violation() -> None:
    diagnostics = judged(
        answer(
            GOOD_TICKET,
            call("lookup_account", {"email": "a", "since": "2026-02-30", "extra": True}),
        )
    )
    assert diagnostics is not None
    assert [d.code for d in diagnostics] == ["TQX_TOOL_CALL_ARGUMENTS"] * 3
    pointers = [d.json_pointer for d in diagnostics]
    assert pointers.count("/output/tool_calls/1/arguments") == 2
    assert "/output/tool_calls/1/arguments/since" in pointers
    messages = " | ".join(d.message for d in diagnostics)
    assert "tool call 1 ('lookup_account') arguments: " in messages
    assert "shorter than 3 character" in messages
    assert "'extra' was unexpected" in messages
    assert "value is not a valid date" in messages


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ({"tool_calls": []}, [("TQX_TOOL_CALL_SHAPE", "/output/tool_calls")]),
        ({"tool_calls": {"name": "x"}}, [("TQX_TOOL_CALL_SHAPE", "/output/tool_calls")]),
        (answer("lookup_account"), [("TQX_TOOL_CALL_SHAPE", "/output/tool_calls/0")]),
        (
            answer({"name": "lookup_account"}),
            [("TQX_TOOL_CALL_SHAPE", "/output/tool_calls/0/arguments")],
        ),
        (
            answer({"id": 7, "arguments": {}}),
            [
                ("TQX_TOOL_CALL_SHAPE", "/output/tool_calls/0/id"),
                ("TQX_TOOL_CALL_SHAPE", "/output/tool_calls/0/name"),
            ],
        ),
        (
            answer({**GOOD_LOOKUP, "type": "function"}),
            [("TQX_TOOL_CALL_SHAPE", "/output/tool_calls/0")],
        ),
        (answer({**GOOD_LOOKUP, "id": None}), []),
        (answer({k: v for k, v in GOOD_LOOKUP.items() if k != "id"}), []),
    ],
)
def test_malformed_answers(output: Any, expected: list[tuple[str, str]]) -> None:
    diagnostics = judged(output)
    assert diagnostics is not None
    assert codes_at(diagnostics) == expected


@pytest.mark.parametrize(
    ("more", "output", "expected"),
    [
        (
            {"tool_choice": "none"},
            answer(GOOD_LOOKUP),
            [("TQX_TOOL_CALL_CHOICE", "/output/tool_calls")],
        ),
        (
            {"tool_choice": {"tool": "open_ticket"}},
            answer(GOOD_LOOKUP),
            [("TQX_TOOL_CALL_CHOICE", "/output/tool_calls/0/name")],
        ),
        ({"tool_choice": {"tool": "open_ticket"}}, answer(GOOD_TICKET), []),
        (
            {"parallel_tool_calls": False},
            answer(GOOD_LOOKUP, GOOD_TICKET),
            [("TQX_TOOL_CALL_CHOICE", "/output/tool_calls/1")],
        ),
        ({"parallel_tool_calls": False}, answer(GOOD_TICKET), []),
        ({"tool_choice": "required"}, "plain text", [("TQX_TOOL_CALL_REQUIRED", "/output")]),
        ({"tool_choice": {"tool": "open_ticket"}}, "text", [("TQX_TOOL_CALL_REQUIRED", "/output")]),
        ({"tool_choice": "required"}, answer(GOOD_LOOKUP), []),
    ],
)
def test_tool_choice_and_parallel_calls_are_enforced(
    more: dict[str, Any], output: Any, expected: list[tuple[str, str]]
) -> None:
    diagnostics = judged(output, **more)
    assert diagnostics is not None
    assert codes_at(diagnostics) == expected
    assert output_valid(compiled(contract(LOOKUP, TICKET, **more)), output) is (not expected)


def test_none_choice_leaves_plain_answers_to_the_output_schema() -> None:
    assert judged("fine", tool_choice="none") is None
