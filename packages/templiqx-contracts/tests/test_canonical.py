from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from templiqx_contracts import (
    CanonicalJSONError,
    JSONDecodeError,
    canonical_json,
    decode_json,
    fingerprint,
    fingerprint_bytes,
    format_float,
)


@pytest.mark.parametrize(
    ("value", "digest"),
    [
        ({"b": 2, "a": 1}, "43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777"),
        ({"a": 1, "b": 2}, "43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777"),
        (None, "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b"),
        ({"ok": True}, "4062edaf750fb8074e7e83e0c9028c94e32468a8b6f1614774328ef045150f93"),
    ],
)
def test_pinned_digests(value: Any, digest: str) -> None:
    assert fingerprint(value) == digest


@pytest.mark.parametrize(
    ("name", "digest"),
    [
        ("bli-61-output.json", "66d6c3fbb03611b4b22deabbe9ef669e5ad69f59c1e90be4dee92d9c3a5188de"),
        ("bli-62-output.json", "54eae956be0ca2f14a0afc83294c656ebe7c1ee6358387094262faa4d46c8084"),
    ],
)
def test_reference_eval_outputs(reference: Path, name: str, digest: str) -> None:
    value = decode_json((reference / "crm3" / "evals" / name).read_bytes())
    assert fingerprint(value) == digest


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (100.0, "100.0"),
        (0.00001, "0.00001"),
        (0.000025, "0.000025"),
        (1e-6, "1e-6"),
        (1.5e-7, "1.5e-7"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e+16"),
        (1.2345678901234568e20, "1.2345678901234568e+20"),
        (5e-324, "5e-324"),
        (1e-323, "1e-323"),
        (1.2e-322, "1.2e-322"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (-1.7976931348623157e308, "-1.7976931348623157e+308"),
        (2.220446049250313e-16, "2.220446049250313e-16"),
        (544431068535091.6, "544431068535091.6"),
        (9061488000000000.0, "9061488000000000.0"),
        (3.439070283483335e35, "3.439070283483335e+35"),
        (6.62607015e-34, "6.62607015e-34"),
        (-4.932096661796888e-226, "-4.932096661796888e-226"),
        (6.606854224493745e-17, "6.606854224493745e-17"),
        (6.079537928711555e61, "6.079537928711555e+61"),
        (3.0, "3.0"),
        (3.1, "3.1"),
        (-1.5, "-1.5"),
        (0.5, "0.5"),
        (0.21, "0.21"),
        (1234.5, "1234.5"),
    ],
)
def test_float_layout(value: float, text: str) -> None:
    assert format_float(value) == text
    assert canonical_json(value) == text.encode()
    assert canonical_json([value]) == f"[{text}]".encode()
    assert canonical_json({"x": value}) == f'{{"x":{text}}}'.encode()


def test_integer_and_float_identity() -> None:
    assert canonical_json(0) == b"0"
    assert canonical_json(0.0) == b"0.0"
    assert fingerprint(0) != fingerprint(0.0)
    assert fingerprint({"t": 1}) != fingerprint({"t": 1.0})
    assert canonical_json(True) == b"true"
    assert canonical_json(-9223372036854775808) == b"-9223372036854775808"
    assert canonical_json(18446744073709551615) == b"18446744073709551615"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_are_refused(bad: float) -> None:
    for value in (bad, [1, bad], {"a": {"b": bad}}, {"a": None, "b": bad}):
        with pytest.raises(CanonicalJSONError, match="NaN and infinities"):
            canonical_json(value)


def test_out_of_range_integers_are_refused() -> None:
    for value in (1 << 64, -(1 << 63) - 1, [{"a": 1 << 70}]):
        with pytest.raises(CanonicalJSONError, match="64-bit"):
            canonical_json(value)


def test_unsupported_types_are_refused() -> None:
    with pytest.raises(CanonicalJSONError):
        canonical_json(object())
    with pytest.raises(CanonicalJSONError):
        canonical_json({"a": [object()]})


@pytest.mark.parametrize(
    ("text", "encoded"),
    [
        ("\x00\x01\x1f", '"\\u0000\\u0001\\u001f"'),
        ("\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'),
        ('"', '"\\""'),
        ("\\", '"\\\\"'),
        ("/", '"/"'),
        ("\x7f", '"\x7f"'),
        ("\u2028\u2029", '"\u2028\u2029"'),
        ("é€😀", '"é€😀"'),
    ],
)
def test_string_escaping(text: str, encoded: str) -> None:
    assert canonical_json(text) == encoded.encode("utf-8")
    assert canonical_json({text: text}) == f"{{{encoded}:{encoded}}}".encode()


def test_keys_sorted_by_code_point_at_every_depth() -> None:
    value = {"b": {"z": 1, "a": [{"y": 1, "x": 2}]}, "a": 0, "B": 1, "é": 2, "~": 3}
    assert (
        canonical_json(value) == b'{"B":1,"a":0,"b":{"a":[{"x":2,"y":1}],"z":1},"~":3,"\xc3\xa9":2}'
    )


def test_exponent_text_inside_strings_is_untouched() -> None:
    assert canonical_json({"v": "1e5", "n": 1e16}) == b'{"n":1e+16,"v":"1e5"}'


def test_fingerprint_bytes() -> None:
    assert fingerprint_bytes(b"abc") == hashlib.sha256(b"abc").hexdigest()


def test_decode_json_keeps_reference_number_rules() -> None:
    assert decode_json(b"[1, 1.0, -0, 1e3]") == [1, 1.0, -0.0, 1000.0]
    value = decode_json(b"[1, 1.0, -0, 1e3]")
    assert [type(x) for x in value] == [int, float, float, float]
    assert math.copysign(1.0, value[2]) == -1.0
    assert decode_json(b"18446744073709551616") == float(1 << 64)
    assert decode_json(b"18446744073709551615") == (1 << 64) - 1
    assert decode_json('{"s": "-0"}') == {"s": "-0"}
    for bad in (b"NaN", b"1e400", b"[Infinity]", b"{", b"\xff"):
        with pytest.raises(ValueError):  # noqa: PT011 - the message varies by cause
            decode_json(bad)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


@given(json_values)
def test_canonical_bytes_round_trip(value: Any) -> None:
    encoded = canonical_json(value)
    assert _same(json.loads(encoded), value) or _same(decode_json(encoded), value)
    assert _same(msgspec.json.decode(encoded), value)


@given(st.dictionaries(st.text(max_size=6), json_values, max_size=8), st.randoms())
def test_key_order_never_changes_the_digest(value: dict[str, Any], rnd: Any) -> None:
    items = list(value.items())
    rnd.shuffle(items)
    assert fingerprint(dict(items)) == fingerprint(value)


@given(json_values)
def test_fast_path_writes_what_the_exact_writer_writes(value: Any) -> None:
    from templiqx_contracts.canonical import _exact

    assert canonical_json(value) == _exact(value)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        # 0xcb bytes that are not float markers: an int16 payload and a UTF-8 lead byte.
        ({"a": -1333, "b": "\u02c8x"}, '{"a":-1333,"b":"\u02c8x"}'),
        ([-1333, 1e16, "\u02c8"], '[-1333,1e+16,"\u02c8"]'),
        ([-1333, 2.5], "[-1333,2.5]"),
        # Around the switch to exponent notation, inside containers.
        (
            [999999999999999.9, -1e15, 9999999999999998.0],
            "[999999999999999.9,-1000000000000000.0,9999999999999998.0]",
        ),
        ({"x": [1.0, {"y": -1e16}]}, '{"x":[1.0,{"y":-1e+16}]}'),
        (["4e6", "1e+16", 1e-7], '["4e6","1e+16",1e-7]'),
    ],
)
def test_float_markers_and_false_alarms(value: Any, text: str) -> None:
    assert canonical_json(value) == text.encode("utf-8")


def test_non_finite_floats_are_refused_beside_false_alarms() -> None:
    for bad in (math.nan, -math.inf):
        with pytest.raises(CanonicalJSONError, match="NaN and infinities"):
            canonical_json({"a": -1333, "b": [1.5, bad]})


@pytest.mark.parametrize(
    "document",
    [
        b"[" * 10_000 + b"]" * 10_000,
        b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
        b"[" * 10_000 + b"-0" + b"]" * 10_000,  # the exact (json module) path
    ],
)
def test_decode_json_refuses_deep_nesting_without_recursion_error(document: bytes) -> None:
    # Regression (issue #9 R7): a 10,000-deep document escaped as RecursionError.
    with pytest.raises(JSONDecodeError, match="nested too deeply"):
        decode_json(document)
