"""Every problem of a contract in one run, each located in the text (issue #19 item 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from templiqx_contracts import Diagnostic, ToolContractRef
from templiqx_core import ContractSource, SourceMap, parse_contract, validate_contract

REPO = Path(__file__).resolve().parents[3]
# The newcomer's contract of issue #19 (`mesages`, `txt`, no output_schema, `strng`), from the
# corpus of broken contracts; its first line says what to expect.
FOUR_ERRORS = (REPO / "fixtures/diagnostics/broken/contracts/four-errors.yaml").read_text("utf-8")


def where(diagnostic: Diagnostic) -> tuple[int, int, int]:
    assert diagnostic.span is not None, diagnostic
    assert diagnostic.span.end_line == diagnostic.span.line
    return diagnostic.span.line, diagnostic.span.column, diagnostic.span.end_column


def everything(text: str) -> list[Diagnostic]:
    source = ContractSource(text, "c.yaml")
    assert source.contract is None
    return source.diagnostics + source.problems_beyond_parsing()


def test_the_four_error_contract_reports_all_four_in_one_run() -> None:
    found = everything(FOUR_ERRORS)
    assert [(d.code, where(d)) for d in found] == [
        ("TQX_PARSE_YAML", (9, 1, 8)),  # `mesages`
        ("TQX_PARSE_UNKNOWN_KIND", (12, 15, 18)),  # `txt`
        ("TQX_PARSE_MISSING_FIELD", (2, 1, 1)),  # no output_schema: a point at the mapping
        ("TQX_SCHEMA_TYPE_UNSUPPORTED", (7, 20, 25)),  # `strng`
    ]
    assert "unknown field `mesages` in a contract (did you mean `messages`?)" in found[0].message
    assert "unknown kind `txt` for a content node (did you mean `text`?)" in found[1].message
    assert "missing field `output_schema`" in found[2].message
    assert found[3].message == "schema type 'strng' is unsupported; did you mean 'string'?"
    assert all(d.file == "c.yaml" and d.help for d in found)
    # the misspelt `mesages` was read as `messages`: `messages` is not also reported missing
    assert not any("missing field `messages`" in d.message for d in found)


def test_parse_contract_reports_every_independent_parse_problem() -> None:
    text = """\
api_version: templiqx/v1alpha1
id: many
version: 1.0.0
colour: red
inputs:
  a: {schema: {type: string}, requird: true}
  b: {required: true}
messages:
  - role: usr
    content:
      - {kind: interpolate, expression: {kind: ref, path: inputs.a}, filters: [uper, trim]}
      - {kind: text, value: 5}
      - {kind: when, condition: {kind: refx, path: inputs.a}, then: []}
output_schema: {type: string}
"""
    contract, diagnostics = parse_contract(text, "c.yaml")
    assert contract is None
    messages = [d.message for d in diagnostics]
    expected = [
        "unknown field `colour` in a contract",
        "inputs.a: unknown field `requird` in a field declaration (did you mean `required`?)",
        "inputs.b: missing field `schema` in a field declaration",
        "messages[0].role: unknown role `usr` (did you mean `user`?)",
        "messages[0].content[0].filters[0]: unknown filter `uper` (did you mean `upper`?)",
        "messages[0].content[1].value: expected a string, found an integer `5`",
        "messages[0].content[2].condition.kind: unknown kind `refx` for an expression "
        "(did you mean `ref`?)",
    ]
    assert len(messages) == len(expected), messages
    for message, start in zip(messages, expected, strict=True):
        assert message.startswith(start), message
    assert [where(d) for d in diagnostics] == [
        (4, 1, 7),  # colour
        (6, 31, 38),  # requird
        (7, 6, 6),  # a point at the declaration that lacks `schema`
        (9, 11, 14),  # usr
        (11, 80, 84),  # uper
        (12, 29, 30),  # 5
        (13, 40, 44),  # refx
    ]


def test_text_that_is_not_yaml_is_one_problem() -> None:
    contract, diagnostics = parse_contract("a: [\n", "c.yaml")
    assert contract is None
    assert len(diagnostics) == 1
    assert ContractSource("a: [\n").problems_beyond_parsing() == []
    assert ContractSource("- just\n- a list\n").problems_beyond_parsing() == []


def test_static_problems_of_what_parsed_are_reported_without_their_consequences() -> None:
    text = """\
api_version: templiqx/v1alpha1
id: partial
version: 1.0.0
inputs:
  flag: {schema: {type: boolean}}
mesages:
  - role: user
    content:
      - kind: when
        condition: {kind: nott, value: {kind: ref, path: inputs.flag}}
        then:
          - {kind: interpolate, expression: {kind: ref, path: inputs.flg}}
      - {kind: for_each, collection: {kind: literal, value: [1]}, item: "bad item", body: []}
output_schema: {type: string, minLength: 3, maxLength: 1}
"""
    found = everything(text)
    assert [(d.code, d.json_pointer) for d in found] == [
        ("TQX_PARSE_YAML", None),  # `mesages`
        ("TQX_PARSE_UNKNOWN_KIND", None),  # `nott`; its `when` is not also "not boolean"
        ("TQX_SCHEMA_IMPOSSIBLE_BOUNDS", "/output_schema"),
        ("TQX_REF_UNKNOWN", "/messages/0/content/0/then/0/expression"),
        ("TQX_LOCAL_INVALID", "/messages/0/content/1/item"),
    ]
    assert [where(d) for d in found[2:]] == [(14, 1, 14), (12, 63, 73), (13, 73, 83)]
    assert "did you mean 'inputs.flag'?" in found[3].message


def test_missing_fields_do_not_come_back_as_static_problems() -> None:
    text = "api_version: templiqx/v1alpha1\nid: x\nversion: '1'\n"
    found = everything(text)
    # messages and output_schema are missing: no TQX_MESSAGES_EMPTY or schema problems for
    # them, but the version that is there is still checked
    assert [d.code for d in found] == [
        "TQX_PARSE_MISSING_FIELD",
        "TQX_PARSE_MISSING_FIELD",
        "TQX_VERSION_INVALID",
    ]
    assert where(found[2]) == (3, 10, 13)


def test_tool_contract_references_are_resolved_before_the_static_checks() -> None:
    text = """\
api_version: templiqx/v1alpha1
id: tools
version: 1.0.0
colour: red
messages: [{role: user, content: []}]
output_schema: {type: string}
extensions:
  vendor.tool:
    capability: tools
    schema: {$ref: "tool_contract:search", fingerprint: "sha256:a"}
    value: {q: x}
"""
    table = {
        "search": ToolContractRef(
            fingerprint="sha256:a",
            schema={"type": "object", "properties": {"q": {"type": "string"}}},
        )
    }
    assert [d.code for d in everything(text)][1:] == [
        "TQX_EXTENSION_SCHEMA_INVALID",
        "TQX_SCHEMA_KEYWORD_UNSUPPORTED",
        "TQX_SCHEMA_KEYWORD_UNSUPPORTED",
        "TQX_SCHEMA_TYPE_REQUIRED",
    ]
    source = ContractSource(text, "c.yaml")
    assert source.problems_beyond_parsing(table) == []
    unresolved = source.problems_beyond_parsing({"other": table["search"]})
    assert [d.code for d in unresolved] == ["TQX_TOOL_CONTRACT_REF_UNRESOLVED"]
    assert where(unresolved[0])[:2] == (10, 5)


def test_a_contract_broken_everywhere_still_reads_on() -> None:
    # every field of every kind fails: the placeholders keep the partial contract checkable
    text = """\
api_version: [x]
id: {a: 1}
version: [1]
description: [x]
inputs: 3
context: {x: 3}
capabilities: {a: 1}
messages: [3, {role: [x], content: 3}, {role: user, content: [3, {kind: 4}, {kind: when}]}]
output_schema: !custom x
runtime_policy: 3
extensions: {v.x: 3, v.y: {capability: [1], schema: !!binary x, value: !x y}}
components: {a: 3, b: [{kind: component, name: [1], with: 3}], c: {parameters: 3, content: 3}}
provenance: [1]
evals: [3, {id: [1], inputs: 3, context: 3, fake_output: !x x}]
"""
    found = everything(text)
    parse_problems = [d for d in found if d.code.startswith("TQX_PARSE_")]
    assert len(parse_problems) >= 25
    assert all(d.span is not None for d in found)


@pytest.mark.parametrize(
    ("pointer", "expected"),
    [
        ("/id", (2, 5, 10)),  # a scalar value: the value
        ("/inputs/customer", (5, 3, 11)),  # a block mapping: its key
        ("/inputs/customer/schema/properties/a~b/c", (8, 9, 14)),  # a key containing `/`
        ("/messages/0/content/1/expression", (14, 59, 69)),  # a reference: its path
        ("/messages/0/content/1/filters", (14, 72, 79)),
        ("/messages/0/content/1", (14, 9, 88)),  # a flow mapping: to the end of the line
        ("/components/card/0/expression", (20, 59, 62)),  # a typed component's body
        ("/components/card/parameters/who/schema", (18, 24, 30)),
        ("/inputs/nope", (4, 1, 7)),  # not in the text: the deepest key reached
        ("/output_schema/type", (15, 23, 29)),
    ],
)
def test_pointers_are_located_in_the_text(pointer: str, expected: tuple[int, int, int]) -> None:
    text = """\
api_version: templiqx/v1alpha1
id: typed
version: 1.0.0
inputs:
  customer:
    schema:
      properties:
        a~b/c: {type: string}
      type: object
messages:
  - role: user
    content:
      - {kind: text, value: "Hi "}
      - {kind: interpolate, expression: {kind: ref, path: "inputs.x"}, filters: [trim]}
output_schema: {type: object, type2: string}
components:
  card:
    parameters: {who: {schema: {type: string}}}
    content:
      - {kind: interpolate, expression: {kind: ref, path: who}}
"""
    span = SourceMap(text).span(pointer)
    assert span is not None
    assert (span.line, span.column, span.end_column) == expected


def test_pointers_that_leave_the_text_are_not_located() -> None:
    text = "messages:\n  - content:\n      - {kind: include, path: p.yaml}\n      - x\n"
    source = SourceMap(text)
    assert source.span("") is None
    assert source.span("/nowhere") is None  # nothing of it is in the text
    # after a spliced include, an index of the expanded content is not this file's index
    span = source.span("/messages/0/content/1")
    assert span is not None
    assert (span.line, span.column) == (2, 5)
    assert SourceMap("a: [\n").span("/a") is None


def test_a_manifest_list_entry_is_located_by_its_value() -> None:
    text = "contracts:\n  - welcome\n  - partials/x.yaml\n"
    span = SourceMap(text).span("/contracts/partials/x.yaml")
    assert span is not None
    assert (span.line, span.column, span.end_column) == (3, 5, 20)


def test_located_diagnostics_of_a_valid_contract() -> None:
    text = FOUR_ERRORS.replace("mesages", "messages").replace("txt", "text")
    text = text.replace("strng", "string") + "output_schema: {type: string, enum: [1]}\n"
    source = ContractSource(text, "c.yaml")
    assert source.contract is not None
    assert source.diagnostics == []
    located = source.locate(validate_contract(source.contract))
    assert [(d.code, d.file, where(d)) for d in located] == [
        ("TQX_SCHEMA_ENUM_IMPOSSIBLE", "c.yaml", (14, 31, 35)),
        ("TQX_SCHEMA_ENUM_IMPOSSIBLE", "c.yaml", (14, 1, 14)),
    ]
