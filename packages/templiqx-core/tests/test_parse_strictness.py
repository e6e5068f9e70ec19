"""Strictness: unknown fields, kinds, filters and roles are TQX_PARSE_* errors."""

from __future__ import annotations

import msgspec
import pytest

from templiqx_contracts import Diagnostic, SourceSpan
from templiqx_core.parse import PARSE_CODES, parse_contract

# The core.md §7.1 fixture `typed` (written here in our own words).
TYPED = """\
api_version: templiqx/v1alpha1
id: typed
version: 1.0.0
inputs:
  people:
    required: true
    schema: {type: array, items: {type: string}}
context:
  enabled:
    required: true
    schema: {type: boolean}
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


def only_error(source: str, file: str | None = "typed.yaml") -> Diagnostic:
    contract, diagnostics = parse_contract(source, file)
    assert contract is None
    assert len(diagnostics) == 1, diagnostics
    diagnostic = diagnostics[0]
    assert (diagnostic.code, diagnostic.help) in PARSE_CODES.values()
    assert diagnostic.code.startswith("TQX_PARSE_")
    assert diagnostic.severity == "error"
    assert diagnostic.json_pointer is None
    assert diagnostic.file == file
    return diagnostic


def mutate(old: str, new: str) -> str:
    assert TYPED.count(old) == 1, old
    return TYPED.replace(old, new)


def test_the_typed_fixture_parses() -> None:
    contract, diagnostics = parse_contract(TYPED, "typed.yaml")
    assert diagnostics == []
    assert contract is not None
    assert contract.messages[0].role == "user"


def test_unknown_top_level_field_is_rejected_with_the_file_label() -> None:
    diagnostic = only_error(TYPED + "unknown: true\n")
    assert diagnostic.file == "typed.yaml"
    assert "unknown field `unknown`" in diagnostic.message
    assert "`api_version`" in diagnostic.message
    assert diagnostic.span == SourceSpan(line=35, column=1, end_line=35, end_column=8)
    assert "line 35" not in diagnostic.message, "the location is the span's, said once"


def test_diagnostic_json_omits_the_pointer() -> None:
    diagnostic = only_error(TYPED + "unknown: true\n", None)
    data = msgspec.json.decode(msgspec.json.encode(diagnostic))
    assert set(data) == {"code", "severity", "message", "span", "help"}


@pytest.mark.parametrize(
    ("old", "new", "fragment", "line"),
    [
        (
            "            item: person\n",
            "            item: person\n            colour: red\n",
            "unknown field `colour` in a `for_each` node; expected one of `kind`, `collection`",
            22,
        ),
        (
            "        condition: {kind: ref, path: context.enabled}",
            "        condition: {kind: ref, path: context.enabled, default: x}",
            "unknown field `default` in a `ref` expression",
            17,
        ),
        (
            "    schema: {type: boolean}",
            "    schema: {type: boolean}\n    colour: red",
            "unknown field `colour` in a field declaration",
            12,
        ),
        (
            "  - role: user\n",
            "  - role: user\n    colour: red\n",
            "unknown field `colour` in a message template; expected one of `role`, `content`",
            15,
        ),
        (
            "          - kind: text\n",
            "          - kind: paragraph\n",
            "unknown kind `paragraph` for a content node",
            28,
        ),
        (
            "        condition: {kind: ref, path: context.enabled}",
            "        condition: {kind: reference, path: context.enabled}",
            "unknown kind `reference` for an expression",
            17,
        ),
        ("filters: [upper]", "filters: [upper, title]", "unknown filter `title`", 26),
        ("filters: [upper]", "filters: [Upper]", "unknown filter `Upper`", 26),
        ("  - role: user", "  - role: human", "unknown role `human`", 14),
        ("  - role: user", "  - role: USER", "unknown role `USER`", 14),
        (
            "            value: disabled\n",
            "            value: disabled\n            kind: text\n",
            "duplicate field `kind`",
            30,
        ),
        (
            "          - kind: text\n",
            "          - type: text\n",
            "missing field `kind` in a content node",
            28,
        ),
        (
            "            item: person\n",
            "",
            "missing field `item` in a `for_each` node",
            19,
        ),
        (
            "  - role: user\n    content:\n",
            "  - role: user\n    contents:\n",
            "unknown field `contents`",
            15,
        ),
    ],
)
def test_strict_fields_kinds_filters_and_roles(
    old: str, new: str, fragment: str, line: int
) -> None:
    diagnostic = only_error(mutate(old, new))
    assert fragment in diagnostic.message
    assert diagnostic.span is not None
    assert diagnostic.span.line == line


def test_missing_required_top_level_fields() -> None:
    diagnostic = only_error(mutate("id: typed\n", ""))
    assert "missing field `id` in a contract" in diagnostic.message
    diagnostic = only_error(TYPED.split("output_schema:")[0])
    assert "missing field `output_schema`" in diagnostic.message


def test_structs_must_be_mappings() -> None:
    diagnostic = only_error("[1, 2]\n")
    assert "expected a contract" in diagnostic.message
    diagnostic = only_error(mutate("    schema: {type: boolean}", "    - schema"))
    assert diagnostic.span is not None


def test_error_messages_name_the_path() -> None:
    diagnostic = only_error(mutate("filters: [upper]", "filters: [upper, title]"))
    assert diagnostic.message.startswith(
        "messages[0].content[0].then[0].body[0].filters[1]: unknown filter `title`"
    )


HEAD = "api_version: templiqx/v1alpha1\nid: typed\nversion: 1.0.0\n"


@pytest.mark.parametrize(
    ("source", "help_key"),
    [
        (HEAD + "bogus: 1\n", "unknown_field"),
        (HEAD + "version: [1.0\n", "syntax"),
        (HEAD + "inputs:\n\tx: 1\n", "tab"),
        (b"id: \xff\n", "encoding"),
        ("", "syntax"),
        (HEAD + "---\nid: b\n", "syntax"),
        (HEAD + "capabilities: 3\n", "schema"),
        (HEAD + "id: again\n", "duplicate_key"),
        ("api_version: templiqx/v1alpha1\n", "missing_field"),
        (HEAD + "messages:\n  - role: user\n    content:\n      - kind: nope\n", "unknown_kind"),
        (HEAD + "messages:\n  - role: usr\n    content: []\n", "unknown_role"),
        (
            HEAD + "messages:\n  - role: user\n    content:\n      - kind: interpolate\n"
            "        expression: {kind: ref, path: x}\n        filters: [uper]\n",
            "unknown_filter",
        ),
        (HEAD + "description: !!python/object:os.system x\n", "tag"),
        (HEAD + "inputs: {<<: *a}\n", "syntax"),
        (HEAD + "messages:\n  - <<: {role: user}\n    content: []\n", "merge_key"),
        ("x: " + "[" * 200 + "]" * 200 + "\n", "limit"),
    ],
)
def test_the_code_and_help_fit_the_kind_of_error(source: str | bytes, help_key: str) -> None:
    """Only an unknown field gets the spec'd "unknown fields are rejected" help."""
    _, diagnostics = parse_contract(source, "c.yaml")
    diagnostic = diagnostics[0]  # the case's own problem (a short contract also lacks fields)
    assert (diagnostic.code, diagnostic.help) == PARSE_CODES[help_key], diagnostic.message
    if help_key != "unknown_field":
        assert "unknown fields are rejected" not in (diagnostic.help or "")
