"""The YAML reader types scalars by the YAML 1.2 core schema, as the reference reads YAML."""

from __future__ import annotations

from typing import Any

import pytest

from templiqx_mock.yaml_reader import YAMLReadError, read_yaml


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", None),
        ("~", None),
        ("null", None),
        ("Null", None),
        ("NULL", None),
        ("true", True),
        ("True", True),
        ("TRUE", True),
        ("false", False),
        ("FALSE", False),
        ("yes", "yes"),
        ("no", "no"),
        ("on", "on"),
        ("off", "off"),
        ("tRUE", "tRUE"),
        ("0", 0),
        ("-0", 0),
        ("12", 12),
        ("+12", 12),
        ("-12", -12),
        ("007", "007"),
        ("-01", "-01"),
        ("00", "00"),
        ("0x1F", 31),
        ("-0x10", -16),
        ("0o17", 15),
        ("0b101", 5),
        ("0X1F", "0X1F"),
        ("0o8", "0o8"),
        ("1_000", "1_000"),
        ("1:20", "1:20"),
        ("18446744073709551615", 18446744073709551615),
        ("-9223372036854775808", -9223372036854775808),
        ("1.5", 1.5),
        (".5", 0.5),
        ("5.", 5.0),
        ("1e5", 100000.0),
        ("1E-3", 0.001),
        ("-2.5e+10", -2.5e10),
        ("00.5", 0.5),
        ("1.0", 1.0),
        ("1e400", "1e400"),
        ("inf", "inf"),
        ("nan", "nan"),
        ("infinity", "infinity"),
        ("2026-07-12", "2026-07-12"),
        ("2026-07-12T10:00:00Z", "2026-07-12T10:00:00Z"),
        ("hello world", "hello world"),
        ("'007'", "007"),
        ('"true"', "true"),
        ("'~'", "~"),
        ("!!str 12", "12"),
        ("!!int 12", 12),
        ("!!float 12", 12.0),
        ("!!float 1.5", 1.5),
        ("!!bool true", True),
        ("!!null ~", None),
        ("1" * 40, float("1" * 40)),
    ],
)
def test_scalars_follow_the_core_schema(text: str, expected: Any) -> None:
    value = read_yaml(f"v: {text}\n")["v"]
    assert value == expected
    assert type(value) is type(expected)


def test_block_scalars_are_strings() -> None:
    assert read_yaml("v: |\n  12\n  true\n") == {"v": "12\ntrue\n"}
    assert read_yaml("v: >-\n  12\n") == {"v": "12"}


def test_keys_are_raw_scalar_text() -> None:
    assert read_yaml("1: a\n1.0: b\n0x10: c\n~: d\ntrue: e\n") == {
        "1": "a",
        "1.0": "b",
        "0x10": "c",
        "~": "d",
        "true": "e",
    }


def test_merge_keys_are_ordinary_keys() -> None:
    assert read_yaml("base: &b {x: 1}\nderived:\n  <<: *b\n") == {
        "base": {"x": 1},
        "derived": {"<<": {"x": 1}},
    }


def test_aliases_expand_by_value() -> None:
    assert read_yaml("a: &x [1, {k: v}]\nb: *x\n") == {"a": [1, {"k": "v"}], "b": [1, {"k": "v"}]}


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ("a: 1\na: 2\n", "duplicate key 'a' at line 2 column 1"),
        ("outer:\n  k: 1\n  k: 2\n", "duplicate key 'k' at line 3 column 3"),
        ("? [a]\n: 1\n", "mapping keys must be scalars at line 1 column 3"),
        ("v: .inf\n", "non-finite number .inf"),
        ("v: -.Inf\n", "non-finite number -.Inf"),
        ("v: .NaN\n", "non-finite number .NaN"),
        ("v: 340282366920938463463374607431768211455\n", "JSON number out of range"),
        ("v: -170141183460469231731687303715884105728\n", "JSON number out of range"),
        ("v: !custom x\n", "unsupported YAML tag !custom"),
        ("v: !!int abc\n", "invalid value 'abc' for tag tag:yaml.org,2002:int"),
        ("v: !!bool yes\n", "invalid value 'yes'"),
        ("v: !!set {a: 1}\n", "unsupported YAML tag tag:yaml.org,2002:set"),
        ("a: [1\n", "line"),
        ("a: 1\n---\nb: 2\n", "expected a single document"),
        ("# only a comment\n", "the document is empty"),
        ("a: *nowhere\n", "undefined alias"),
    ],
)
def test_errors_name_the_problem_and_place(document: str, expected: str) -> None:
    with pytest.raises(YAMLReadError) as caught:
        read_yaml(document)
    assert expected in str(caught.value)


def test_deep_nesting_is_refused() -> None:
    with pytest.raises(YAMLReadError, match="recursion limit exceeded"):
        read_yaml("v: " + "[" * 200 + "]" * 200 + "\n")
    assert read_yaml("v: " + "[" * 100 + "]" * 100 + "\n") is not None


def test_alias_bombs_are_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        prev = f"*a{level - 1}"
        lines.append(f"a{level}: &a{level} [{', '.join([prev] * 10)}]")
    with pytest.raises(YAMLReadError, match="repetition limit exceeded"):
        read_yaml("\n".join(lines) + "\n")


def test_recursive_alias_is_refused() -> None:
    with pytest.raises(YAMLReadError):
        read_yaml("a: &x [*x]\n")
