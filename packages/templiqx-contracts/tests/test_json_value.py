"""decode_json: its two readers (msgspec, and json.loads for ``-0`` and long digit runs) agree.

A document goes through ``json.loads`` when it holds a ``-0`` or a run of 19+ digits, through
msgspec otherwise. Whatever the path, a lone surrogate escape is refused and a number beyond
float range is a clean ``JSONDecodeError`` (never ``OverflowError`` or a bare ``ValueError``).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from templiqx_contracts import JSONDecodeError, decode_json

# Appended to a document, each of these sends it down one path or the other.
_MSGSPEC_PATH = "0"
_EXACT_PATH = "-0"

LONE_SURROGATES = [
    r'"\ud800"',
    r'"\udfff"',
    r'"a\ud83d"',  # a high half at the end
    r'"\ude00\ud83d"',  # halves in the wrong order
    r'"\ud83dx"',  # a high half followed by a character
    r'"\ud83d\u0041"',  # a high half followed by another escape
    r'{"\udc00": 1}',  # in a member name
    r'["ok", {"k": ["\uDBFF"]}]',  # upper-case hex, nested
]


@pytest.mark.parametrize("document", LONE_SURROGATES)
@pytest.mark.parametrize("path", [_MSGSPEC_PATH, _EXACT_PATH])
def test_a_lone_surrogate_is_refused_on_both_paths(document: str, path: str) -> None:
    with pytest.raises(msgspec.DecodeError):  # msgspec's own verdict, the rule we follow
        msgspec.json.decode(f"[{document}, {_MSGSPEC_PATH}]")
    with pytest.raises(JSONDecodeError):
        decode_json(f"[{document}, {path}]")


@pytest.mark.parametrize("path", [_MSGSPEC_PATH, _EXACT_PATH])
def test_paired_surrogates_and_look_alikes_are_read_on_both_paths(path: str) -> None:
    document = r'["\ud83d\ude00", "\\ud800", "\\\ud83d\ude00", {"\uD83D\uDE00": 1}]'
    value = decode_json(f"[{document}, {path}]")
    assert value[0] == ["😀", "\\ud800", "\\😀", {"😀": 1}]
    assert value[0] == json.loads(document)


@pytest.mark.parametrize(
    "number",
    [
        "1" * 400,
        "-" + "9" * 309,
        "9" * 5000,  # beyond the interpreter's digit limit for int()
        "1e400",
        "-1e400",
        "1" * 400 + ".5",
    ],
)
@pytest.mark.parametrize("path", [_MSGSPEC_PATH, _EXACT_PATH])
def test_a_number_beyond_float_range_is_a_clean_error(number: str, path: str) -> None:
    with pytest.raises(JSONDecodeError, match="out of range"):
        decode_json(f"[{number}, {path}]")


def test_big_integers_within_float_range_become_floats() -> None:
    assert decode_json("1" + "0" * 308) == 1e308
    assert decode_json("-" + "1" + "0" * 30) == -1e30
    assert decode_json("[18446744073709551616, -0]") == [float(1 << 64), -0.0]


def test_the_error_shows_a_long_number_shortened() -> None:
    with pytest.raises(JSONDecodeError) as caught:
        decode_json("9" * 5000)
    assert str(caught.value) == "number 999999999999...999999 (5000 characters) is out of range"


_strings = st.text(alphabet=st.characters(codec="utf-8"), max_size=6)
_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 63), (1 << 64) - 1) | _strings,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(_strings, children, max_size=4)
    ),
    max_leaves=12,
)


@given(_values, st.sampled_from(["\\ud800", "\\udc00", "\\udbff"]), st.booleans())
def test_any_document_with_a_lone_surrogate_fails_alike_on_both_paths(
    value: Any, escape: str, exact: bool
) -> None:
    text = json.dumps([value, f"@{escape}@"]).replace(f"\\\\{escape[1:]}", escape)
    tail = _EXACT_PATH if exact else _MSGSPEC_PATH
    document = f"[{text}, {tail}]"
    with pytest.raises(msgspec.DecodeError):
        msgspec.json.decode(document)
    with pytest.raises(JSONDecodeError):
        decode_json(document)


@given(_values)
def test_any_valid_document_reads_alike_on_both_paths(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=True)  # every non-ASCII character as \u escapes
    plain = decode_json(f"[{text}, {_MSGSPEC_PATH}]")
    exact = decode_json(f"[{text}, {_EXACT_PATH}]")
    assert plain[0] == exact[0] == value


# --- counting values before decoding (issue #29) ---------------------------------------------

import json as _json  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from templiqx_contracts import json_node_estimate  # noqa: E402
from templiqx_contracts import json_value as _json_value  # noqa: E402

_TRICKY = st.text(alphabet=',:[]{}"\\ab\n\u00e9\U0001f600', max_size=12)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | _TRICKY,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TRICKY, inner, max_size=4),
    max_leaves=30,
)


def _values_and_keys(value: object) -> int:
    if isinstance(value, dict):
        return 1 + sum(1 + _values_and_keys(item) for item in value.values())
    if isinstance(value, list):
        return 1 + sum(_values_and_keys(item) for item in value)
    return 1


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.integers(1, 9))
def test_the_estimate_counts_outside_strings_in_any_chunking(value: object, chunk: int) -> None:
    text = _json.dumps(value)
    exact = 1 + _json_value._punctuation(_json_value._STRING.sub(b"", text.encode()))
    original = _json_value._CHUNK
    _json_value._CHUNK = chunk
    try:
        assert json_node_estimate(text, 0) == exact  # limit 0: always the exact count
    finally:
        _json_value._CHUNK = original
    # values and keys, give or take one per container
    containers = text.count("{") + text.count("[")  # an upper bound (strings may hold some)
    assert abs(exact - _values_and_keys(value)) <= containers + 1


def test_a_document_with_too_many_values_is_refused_before_decoding() -> None:
    many = "[" + ",".join(["{}"] * 1000) + "]"
    assert json_node_estimate(many, 10) == 1001  # the list and its thousand maps
    with pytest.raises(JSONDecodeError, match="MAX_ARGUMENT_NODES"):
        decode_json(many, max_nodes=1000)
    assert len(decode_json(many, max_nodes=1001)) == 1000
    text = _json.dumps({"csv": ",".join(["x"] * 5000)})  # punctuation inside a string
    assert json_node_estimate(text, 100) == 2
