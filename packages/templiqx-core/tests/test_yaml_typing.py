"""The YAML typing table (core.md §1.1): scalars, tags, keys, documents, direct vs buffered."""

from __future__ import annotations

import math
from typing import Any

import pytest

from templiqx_contracts import (
    Contract,
    Diagnostic,
    InterpolateNode,
    LiteralExpr,
    TextNode,
    WhenNode,
)
from templiqx_core.parse import (
    PARSE_CODES,
    parse_contract,
    parse_json_value,
    parse_translation_bundle,
)

U64_MAX = (1 << 64) - 1
I64_MIN = -(1 << 63)
U128_MAX = (1 << 128) - 1


def value_of(source: str | bytes) -> Any:
    value, diagnostics = parse_json_value(source)
    assert diagnostics == [], diagnostics
    return value


def error_of(source: str | bytes, file: str | None = None) -> Diagnostic:
    value, diagnostics = parse_json_value(source, file)
    assert value is None
    assert len(diagnostics) == 1, diagnostics
    return assert_parse_error(diagnostics[0], file)


def assert_parse_error(diagnostic: Diagnostic, file: str | None = None) -> Diagnostic:
    assert (diagnostic.code, diagnostic.help) in PARSE_CODES.values()
    assert diagnostic.code.startswith("TQX_PARSE_")
    assert diagnostic.severity == "error"
    assert diagnostic.json_pointer is None
    assert diagnostic.file == file
    if diagnostic.span is not None:
        assert diagnostic.span.end_line == diagnostic.span.line
        assert diagnostic.span.end_column >= diagnostic.span.column
    return diagnostic


def where(diagnostic: Diagnostic) -> tuple[int, int]:
    assert diagnostic.span is not None, diagnostic
    return diagnostic.span.line, diagnostic.span.column


def same(left: Any, right: Any) -> bool:
    """Equality that also tells int from float and bool from int (and -0.0 from 0.0)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, float):
        return left == right and math.copysign(1, left) == math.copysign(1, right)
    if isinstance(left, list):
        return len(left) == len(right) and all(map(same, left, right))
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same(left[k], right[k]) for k in left)
    return bool(left == right)


# --- plain scalars ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # YAML 1.1 words stay strings
        ("yes", "yes"),
        ("no", "no"),
        ("on", "on"),
        ("off", "off"),
        ("y", "y"),
        # dates and times are strings
        ("2026-07-12", "2026-07-12"),
        ("2026-07-12T10:00:00Z", "2026-07-12T10:00:00Z"),
        ("1:20", "1:20"),
        # null
        ("~", None),
        ("null", None),
        ("Null", None),
        ("NULL", None),
        ("nULL", "nULL"),
        # booleans
        ("true", True),
        ("True", True),
        ("TRUE", True),
        ("false", False),
        ("FALSE", False),
        ("tRUE", "tRUE"),
        # integers
        ("0", 0),
        ("42", 42),
        ("+42", 42),
        ("-42", -42),
        ("-0", 0),
        ("0o17", 15),
        ("-0o17", -15),
        ("0x10", 16),
        ("0xFF", 255),
        ("+0x10", 16),
        ("-0x10", -16),
        ("0b101", 5),
        ("-0b101", -5),
        ("0X10", "0X10"),
        ("0O17", "0O17"),
        ("0x", "0x"),
        ("0xg", "0xg"),
        ("0x-1", "0x-1"),
        ("+-5", "+-5"),
        ("1_000", "1_000"),
        ("0x1_0", "0x1_0"),
        # leading zeros: digits but not a number
        ("007", "007"),
        ("-01", "-01"),
        ("+00", "+00"),
        ("00", "00"),
        # 64-bit and 128-bit ranges
        (str(U64_MAX), U64_MAX),
        (str(I64_MIN), I64_MIN),
        ("-0x8000000000000000", I64_MIN),
        (str(U128_MAX + 1), float(U128_MAX + 1)),
        ("1" * 41, float("1" * 41)),
        ("-" + "9" * 40, -float("9" * 40)),
        ("0x" + "f" * 33, "0x" + "f" * 33),
        ("1" * 400, "1" * 400),
        # floats
        ("1e5", 100000.0),
        ("1E5", 100000.0),
        ("1e-3", 0.001),
        ("-2.5e+10", -25000000000.0),
        ("1.5", 1.5),
        ("1.0", 1.0),
        ("0.0", 0.0),
        ("-0.0", -0.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("00.5", 0.5),
        ("+1.5", 1.5),
        ("1e-400", 0.0),
        ("1e400", "1e400"),
        ("-1e400", "-1e400"),
        ("1e", "1e"),
        (".", "."),
        ("1.2.3", "1.2.3"),
        # infinities and NaN become null; the bare words stay strings
        (".inf", None),
        (".Inf", None),
        ("+.INF", None),
        ("-.inf", None),
        (".nan", None),
        (".NaN", None),
        ("-.nan", "-.nan"),
        ("inf", "inf"),
        ("nan", "nan"),
        ("infinity", "infinity"),
        # other text
        ("hello world", "hello world"),
        ("${customFields.x}", "${customFields.x}"),
    ],
)
def test_plain_scalar_typing(text: str, expected: Any) -> None:
    assert same(value_of(f"value: {text}\n"), {"value": expected})


@pytest.mark.parametrize(
    "text",
    [
        str(U64_MAX + 1),
        str(U128_MAX),
        "-9223372036854775809",
        "-0x8000000000000001",
        "0x" + "f" * 17,
    ],
)
def test_integers_beyond_64_bits_inside_128_bits_are_out_of_range(text: str) -> None:
    diagnostic = error_of(f"a: 1\nvalue: {text}\n")
    assert "out of range" in diagnostic.message
    assert where(diagnostic) == (2, 8)


def test_empty_plain_scalar_is_null_in_a_json_value() -> None:
    assert value_of("value:\n") == {"value": None}
    assert value_of("- a\n-\n- b\n") == ["a", None, "b"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("'1'", "1"),
        ('"1.5"', "1.5"),
        ("'true'", "true"),
        ('"~"', "~"),
        ("''", ""),
        ('"null"', "null"),
        ("|\n  007\n", "007\n"),
        (">-\n  yes\n", "yes"),
        ('"tab\\there"', "tab\there"),
        ("'it''s'", "it's"),
    ],
)
def test_quoted_and_block_scalars_are_strings(text: str, expected: str) -> None:
    assert value_of(f"value: {text}") == {"value": expected}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("!!str 1", "1"),
        ("!!str true", "true"),
        ("!!str ~", "~"),
        ('!!int "5"', 5),
        ("!!int 0x10", 16),
        ("!!float 5", 5.0),
        ("!!float '2.5'", 2.5),
        ("!!float .inf", None),
        ("!!bool 'true'", True),
        ("!!bool FALSE", False),
        ("!!null ~", None),
        ("!!null ''", None),
    ],
)
def test_standard_tags_force_the_type(text: str, expected: Any) -> None:
    assert same(value_of(f"value: {text}\n"), {"value": expected})


@pytest.mark.parametrize(
    "text",
    [
        "!!int abc",
        "!!int 007",
        "!!int 1.0",
        "!!float 1e400",
        "!!float x",
        "!!bool yes",
        "!!null nothing",
        "!!binary aGk=",
        "!!timestamp 2026-07-12",
        "!foo x",
        "! x",
        "!foo [1]",
        "!!map [1]",
        "!!seq {a: 1}",
    ],
)
def test_bad_or_custom_tags_are_errors_in_json_values(text: str) -> None:
    diagnostic = error_of(f"value: {text}\n")
    assert where(diagnostic) == (1, 8)
    assert "tag" in diagnostic.message


def test_standard_collection_tags_are_accepted() -> None:
    assert value_of("!!map {a: !!seq [1]}") == {"a": [1]}


# --- keys ---------------------------------------------------------------------------------


def test_free_json_map_keys_are_raw_text() -> None:
    assert value_of("{1: a, 1.0: b, 0x10: c, ~: d, true: e, '2': f, !!int 3: g, '': h}") == {
        "1": "a",
        "1.0": "b",
        "0x10": "c",
        "~": "d",
        "true": "e",
        "2": "f",
        "3": "g",
        "": "h",
    }
    assert value_of("outer:\n  007: [x]\n") == {"outer": {"007": ["x"]}}


def test_translation_bundle_keys_are_raw_text_and_values_json() -> None:
    bundle, diagnostics = parse_translation_bundle("greeting.title: Hallo\n1: een\nn: 2\n")
    assert diagnostics == []
    assert bundle == {"greeting.title": "Hallo", "1": "een", "n": 2}


def test_complex_keys_are_errors() -> None:
    diagnostic = error_of("a: 1\n? [x, y]\n: 2\n")
    assert "complex keys" in diagnostic.message
    assert where(diagnostic) == (2, 3)
    assert "complex keys" in error_of("{{a: 1}: 2}").message


def test_merge_key_is_an_ordinary_key() -> None:
    assert value_of("base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n") == {
        "base": {"x": 1},
        "derived": {"<<": {"x": 1}, "y": 2},
    }


@pytest.mark.parametrize(
    ("source", "position"),
    [
        ("a: 1\nb: 2\na: 3\n", (3, 1)),
        ("{'a': 1, a: 2}", (1, 10)),
        ("outer:\n  1: x\n  '1': y\n", (3, 3)),
        ("[{k: 1, k: 2}]", (1, 9)),
    ],
)
def test_duplicate_keys_in_free_maps_are_errors(source: str, position: tuple[int, int]) -> None:
    diagnostic = error_of(source)
    assert "duplicate key" in diagnostic.message
    assert where(diagnostic) == position


def test_anchors_and_aliases_expand_by_value() -> None:
    value = value_of("a: &x {k: [1, 2.0]}\nb: *x\nc: &s text\nd: *s\n")
    assert same(value, {"a": {"k": [1, 2.0]}, "b": {"k": [1, 2.0]}, "c": "text", "d": "text"})
    assert value["a"] is not value["b"]  # expanded copies, not shared objects


def test_redefined_anchor_refers_to_the_latest_definition() -> None:
    assert value_of("a: &x 1\nb: &x 2\nc: *x\n") == {"a": 1, "b": 2, "c": 2}


def test_unknown_and_recursive_aliases_are_errors() -> None:
    assert "unknown anchor" in error_of("a: *nowhere\n").message
    diagnostic = error_of("a: &loop [1, *loop]\n")
    assert "recursive alias" in diagnostic.message
    assert where(diagnostic) == (1, 14)


# --- documents and syntax -----------------------------------------------------------------


def test_zero_documents_is_an_error() -> None:
    for source in ("", "# only a comment\n", "\n\n"):
        diagnostic = error_of(source, "empty.yaml")
        assert "no YAML document" in diagnostic.message


def test_an_explicit_empty_document_is_null() -> None:
    assert value_of("---\n...\n") is None


def test_a_second_document_is_an_error() -> None:
    diagnostic = error_of("a: 1\n---\nb: 2\n", "two.yaml")
    assert "more than one YAML document" in diagnostic.message
    assert where(diagnostic) == (2, 1)


def test_tabs_in_indentation_are_errors_with_location() -> None:
    diagnostic = error_of("a:\n\tb: 1\n", "tabs.yaml")
    assert where(diagnostic) == (2, 1)
    assert "cannot start any token" in diagnostic.message
    assert "use spaces" in diagnostic.message


def test_bad_indentation_is_an_error_with_location() -> None:
    diagnostic = error_of("a:\n  b: 1\n c: 2\n")
    assert diagnostic.span is not None
    assert diagnostic.span.line == 3


def test_non_utf8_bytes_are_an_error() -> None:
    diagnostic = error_of(b"a: 1\nb: caf\xe9\n", "latin1.yaml")
    assert "not valid UTF-8" in diagnostic.message
    assert where(diagnostic) == (2, 7)


def test_utf16_bytes_are_an_error() -> None:
    diagnostic = error_of("a: 1\n".encode("utf-16"))
    assert "not valid UTF-8" in diagnostic.message


def test_utf8_bom_is_accepted() -> None:
    assert value_of(b"\xef\xbb\xbfa: 1\n") == {"a": 1}
    assert value_of("\ufeffa: 1\n") == {"a": 1}


def test_control_characters_are_an_error_with_location() -> None:
    diagnostic = error_of("a: 1\nb: x\x07y\n")
    assert where(diagnostic) == (2, 5)
    assert "U+0007" in diagnostic.message


def test_unpaired_surrogates_in_text_are_an_error() -> None:
    diagnostic = error_of("a: \ud800\n")
    assert "surrogate" in diagnostic.message
    assert where(diagnostic) == (1, 4)


def test_json_text_is_yaml() -> None:
    assert same(
        value_of('{"a": [1, 2.5, true, null, "x"], "b": {"c": -1}}'),
        {"a": [1, 2.5, True, None, "x"], "b": {"c": -1}},
    )


# --- contract positions: direct vs buffered ------------------------------------------------

CONTRACT = """\
api_version: templiqx/v1alpha1
id: typing
version: 1.0.0
messages:
  - role: user
    content:
      - kind: text
        value: hi
output_schema: {type: object}
"""


def contract(
    extra: str = "", replace: dict[str, str] | None = None
) -> tuple[Contract | None, list[Diagnostic]]:
    source = CONTRACT + extra
    for old, new in (replace or {}).items():
        assert old in source
        source = source.replace(old, new, 1)
    return parse_contract(source, "typing.yaml")


def ok(extra: str = "", replace: dict[str, str] | None = None) -> Contract:
    parsed, diagnostics = contract(extra, replace)
    assert diagnostics == [], diagnostics
    assert parsed is not None
    return parsed


def bad(extra: str = "", replace: dict[str, str] | None = None) -> Diagnostic:
    parsed, diagnostics = contract(extra, replace)
    assert parsed is None
    assert len(diagnostics) == 1, diagnostics
    return assert_parse_error(diagnostics[0], "typing.yaml")


def with_node(node_yaml: str) -> str:
    """The contract with its single text node replaced by ``node_yaml`` (indented 6)."""
    first, *rest = node_yaml.strip("\n").splitlines()
    body = "\n".join(["      - " + first] + ["        " + line for line in rest])
    return CONTRACT.replace("      - kind: text\n        value: hi", body)


def node_result(node_yaml: str) -> tuple[Contract | None, list[Diagnostic]]:
    return parse_contract(with_node(node_yaml), "typing.yaml")


def test_direct_string_positions_take_the_raw_text() -> None:
    parsed = ok("description: ~\n", {"version: 1.0.0": "version: 1.0", "id: typing": "id: 123"})
    assert parsed.version == "1.0"
    assert parsed.id == "123"
    assert parsed.description == "~"
    assert ok("description: null\n").description == "null"
    assert ok("description:\n").description == ""
    assert ok("description: 2026-07-12\n").description == "2026-07-12"
    assert ok("description: !!int 5\n").description == "5"
    assert ok("provenance: {a: 1, b: true, c: ~, 0x10: '1'}\n").provenance == {
        "a": "1",
        "b": "true",
        "c": "~",
        "0x10": "1",
    }


def test_collections_where_a_string_is_expected_are_errors() -> None:
    diagnostic = bad("description: [a]\n")
    assert where(diagnostic) == (10, 14)
    assert "expected a string" in diagnostic.message
    assert "provenance.a" in bad("provenance: {a: {b: c}}\n").message


def test_empty_plain_scalar_is_an_empty_collection_in_direct_positions() -> None:
    parsed = ok("capabilities:\ninputs:\nruntime_policy:\nevals:\n")
    assert parsed.capabilities == []
    assert parsed.inputs == {}
    assert parsed.runtime_policy == {}
    assert parsed.evals == []


@pytest.mark.parametrize("value", ["~", "null", "''", "x", "1"])
def test_non_empty_scalar_for_a_collection_is_an_error(value: str) -> None:
    diagnostic = bad(f"inputs: {value}\n")
    assert where(diagnostic) == (10, 9)


def test_required_booleans_accept_only_plain_true_and_false() -> None:
    field = "inputs:\n  n:\n    schema: {{type: string}}\n    required: {}\n"
    for word, expected in (("true", True), ("True", True), ("FALSE", False)):
        assert (
            ok(field.format(word).replace("{{", "{").replace("}}", "}")).inputs["n"].required
            is expected
        )
    for word in ('"true"', "yes", "1", "~", "''"):
        diagnostic = bad(field.format(word).replace("{{", "{").replace("}}", "}"))
        assert where(diagnostic) == (13, 15)
        assert "expected a boolean" in diagnostic.message


def test_runtime_policy_keeps_number_identity_and_raw_keys() -> None:
    parsed = ok("runtime_policy: {temperature: 0, top_p: 1.0, 1: x, seed: 0x10}\n")
    assert same(parsed.runtime_policy, {"temperature": 0, "top_p": 1.0, "1": "x", "seed": 16})


def test_eval_fake_output_empty_is_null() -> None:
    parsed = ok("evals:\n  - id: 1\n    fake_output:\n")
    assert parsed.evals[0].id == "1"
    assert parsed.evals[0].fake_output is None
    assert parsed.evals[0].inputs == {}


@pytest.mark.parametrize(
    ("node", "position"),
    [
        ("kind: text\nvalue: 123", (8, 16)),
        ("kind: text\nvalue: true", (8, 16)),
        ("kind: text\nvalue: 1.5", (8, 16)),
        ("kind: text\nvalue: ~", (8, 16)),
        ("kind: text\nvalue:", (8, 15)),
        ("kind: text\nvalue: !!int '5'", (8, 16)),
        ("kind: text\nvalue: !custom x", (8, 16)),
        ("kind: for_each\ncollection: {kind: ref, path: inputs.x}\nitem: 1\nbody: []", (9, 15)),
        (
            "kind: for_each\ncollection: {kind: ref, path: inputs.x}\nitem: i\nbody: []\n"
            "separator: 0",
            (11, 20),
        ),
        ("kind: interpolate\nexpression: {kind: ref, path: 1}", (8, 39)),
        ("kind: component\nname: c\nwith: {1: {kind: ref, path: inputs.x}}", (9, 16)),
        ("kind: interpolate\nexpression: {kind: ref, path: x}\nfilters:", (9, 17)),
        ("kind: when\ncondition: {kind: literal, value: true}\nthen: []\nelse:", (10, 14)),
        ("kind: include\npath: p.yaml\nfrom_dependency: 5", (9, 26)),
        ("kind: text\n0: x", (8, 9)),
        ("kind: interpolate\nexpression: {kind: literal, value: {1: x}}", (8, 45)),
    ],
)
def test_buffered_positions_accept_only_scalars_resolving_to_strings(
    node: str, position: tuple[int, int]
) -> None:
    parsed, diagnostics = node_result(node)
    assert parsed is None
    assert len(diagnostics) == 1
    diagnostic = assert_parse_error(diagnostics[0], "typing.yaml")
    assert where(diagnostic) == position


def test_buffered_strings_that_resolve_to_strings_are_fine() -> None:
    parsed, diagnostics = node_result(
        "kind: when\n"
        "condition: {kind: literal, value: true}\n"
        "then:\n"
        "  - {kind: text, value: '123'}\n"
        "  - {kind: text, value: 2026-07-12}\n"
        "  - {kind: text, value: !!str 5}\n"
        "  - {kind: text, value: 1e400}\n"
        "  - {value: yes, kind: text}\n"
        '  - \'kind\': "text"\n    "value": |\n      block\n'
        "  - {kind: include, path: p.yaml, from_dependency: ~}\n"
        "  - {kind: include, path: p.yaml, from_dependency: }\n"
    )
    assert diagnostics == []
    assert parsed is not None
    node = parsed.messages[0].content[0]
    assert isinstance(node, WhenNode)
    assert node.else_ == []
    texts = [item.value for item in node.then if isinstance(item, TextNode)]
    assert texts == ["123", "2026-07-12", "5", "1e400", "yes", "block\n"]
    assert [getattr(item, "from_dependency", "-") for item in node.then[-2:]] == [None, None]


def test_literal_values_keep_json_typing() -> None:
    parsed, diagnostics = node_result(
        "kind: interpolate\n"
        "expression: {kind: literal, value: {a: 1, b: 1.0, c: '1', d: ~, e: [.inf], 'f': 0o7}}"
    )
    assert diagnostics == []
    assert parsed is not None
    node = parsed.messages[0].content[0]
    assert isinstance(node, InterpolateNode)
    assert isinstance(node.expression, LiteralExpr)
    assert same(node.expression.value, {"a": 1, "b": 1.0, "c": "1", "d": None, "e": [None], "f": 7})
    empty, diagnostics = node_result("kind: interpolate\nexpression: {kind: literal, value: }")
    assert diagnostics == []
    assert empty is not None
    literal = empty.messages[0].content[0]
    assert isinstance(literal, InterpolateNode)
    assert literal.expression == LiteralExpr(value=None)


def test_component_definitions_are_buffered() -> None:
    typed = (
        "components:\n  c:\n    parameters:\n      p:\n        schema: {{type: string}}\n"
        "        description: {}\n    content: []\n"
    )
    assert ok(typed.format("'5'").replace("{{", "{").replace("}}", "}")).components["c"]
    diagnostic = bad(typed.format("5").replace("{{", "{").replace("}}", "}"))
    assert where(diagnostic) == (15, 22)
    diagnostic = bad("components:\n  c:\n    parameters:\n      1: {schema: {}}\n    content: []\n")
    assert where(diagnostic) == (13, 7)
    diagnostic = bad("components:\n  c:\n    content:\n")
    assert where(diagnostic) == (12, 13)


def test_duplicate_fields_in_structs_are_errors() -> None:
    diagnostic = bad("id: again\n")
    assert "duplicate field `id`" in diagnostic.message
    assert where(diagnostic) == (10, 1)
    parsed, diagnostics = node_result("kind: text\nvalue: a\nvalue: b")
    assert parsed is None
    assert where(diagnostics[0]) == (9, 9)
    parsed, diagnostics = node_result("kind: text\nvalue: a\nkind: text")
    assert parsed is None
    assert "duplicate field `kind`" in diagnostics[0].message


def test_duplicate_keys_in_contract_maps_are_errors() -> None:
    diagnostic = bad("runtime_policy:\n  temperature: 0\n  temperature: 1\n")
    assert "duplicate key `temperature`" in diagnostic.message
    assert where(diagnostic) == (12, 3)
    diagnostic = bad("output_schema: {type: object}\n")
    assert "duplicate field `output_schema`" in diagnostic.message


def test_merge_key_in_a_struct_is_reported_once_without_follow_on_errors() -> None:
    """YAML 1.2 has no merge: ``<<`` in a struct is one TQX_PARSE_MERGE_KEY, and the fields it
    was meant to bring are not also reported missing (issue #28)."""
    parsed, diagnostics = contract("defaults: &d {description: x}\n<<: *d\n")
    assert parsed is None
    assert ["unknown field `defaults`" in diagnostics[0].message, len(diagnostics)] == [True, 2]
    assert diagnostics[1].code == "TQX_PARSE_MERGE_KEY"
    assert "the merge key `<<` is not supported" in diagnostics[1].message
    parsed, diagnostics = parse_contract("base: &b {description: x}\n" + CONTRACT)
    assert parsed is None
    assert "unknown field `base`" in diagnostics[0].message
    parsed, diagnostics = contract("inputs:\n  n:\n    <<: {schema: {}}\n")
    assert [d.code for d in diagnostics] == ["TQX_PARSE_MERGE_KEY"]
    assert diagnostics[0].span is not None
    assert diagnostics[0].span.column == 5  # at the `<<` key
