"""The canonical-JSON fast path against the exact writer, on documents built to fool it.

Each property compares the fast path with an independent oracle: ``_exact`` (the slow,
reference-faithful writer) for the bytes, a tiny msgpack tokenizer written here for the float
markers, and a character-by-character JSON scan for "outside strings".
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from templiqx_contracts import CanonicalJSONError, canonical_json, find_outside_strings
from templiqx_contracts.canonical import _exact
from templiqx_contracts.json_numbers import float_markers

# Integers whose msgpack bytes hold 0xcb (a float marker) followed by bytes that read as the
# start of a large or non-finite double: 203 is cc cb, -53 is d0 cb, 52095 is cd cb 7f, ...
_TRICKY_INTS = [203, -53, 127, -1, -3, -16, 240, 0xCB7F, 0xCBFF, -0x3481, 0xCB7FF000, 1 << 63]
_TRICKY_TEXT = ["\u02c8", "\u02ff", "1e16", "4e6", 'a"1e5', "\\", '\\"e1', "e9", "null", ""]
_SPECIAL_FLOATS = [
    1e16,
    -1e16,
    9999999999999998.0,
    1e15,
    1.7976931348623157e308,
    -2.5e300,
    5e-324,
    1e-7,
    0.00001,
    123.0,
    -0.0,
    0.0,
]

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(_TRICKY_INTS),
    st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1),
    st.integers(min_value=-300, max_value=300),
    st.sampled_from(_SPECIAL_FLOATS),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(_TRICKY_TEXT),
    st.text(max_size=12),
)
documents = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=8)
        | st.dictionaries(st.one_of(st.sampled_from(_TRICKY_TEXT), st.text(max_size=6)), children)
    ),
    max_leaves=40,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
@example([203, 127, -3, 1.5])
@example([203, -1, -1, None, 2.5])
@example({"e1": [-53, 0xCB7F, "\u02c8", 1e16, None]})
@example(['x"1e16', 1e16, "\\", 1e17])
def test_fast_path_writes_what_the_exact_writer_writes(value: Any) -> None:
    assert canonical_json(value) == _exact(value)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(documents, st.sampled_from([math.nan, math.inf, -math.inf]), st.randoms())
def test_a_non_finite_float_anywhere_is_refused(value: Any, bad: float, rnd: Any) -> None:
    holder = [value, bad] if rnd.random() < 0.5 else {"x": value, "y": [None, bad]}
    with pytest.raises(CanonicalJSONError, match="NaN and infinities"):
        canonical_json(holder)


def test_false_alarms_stay_on_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # Integers and strings whose bytes look like float markers must not reach the exact writer.
    import templiqx_contracts.canonical as canonical

    def refuse(value: Any) -> bytes:
        raise AssertionError("the exact writer was called")

    monkeypatch.setattr(canonical, "_exact", refuse)
    records = [
        {"n": 203, "m": [127, -3], "s": "\u02c8", "f": 2.5, "g": None, "k": [203, -1, -1]}
        for _ in range(50)
    ]
    assert canonical.canonical_json(records) == msgspec.json.encode(records, order="sorted")
    # A genuine large float is fixed in place, still without the exact writer.
    records[7]["f"] = 1e20
    assert b'"f":1e+20' in canonical.canonical_json(records)


# --- float_markers against a msgpack tokenizer written here ------------------------------


def _msgpack_float_offsets(data: bytes) -> list[int]:
    """Offsets of every float64 marker, by tokenizing the msgpack document byte by byte."""
    found: list[int] = []
    at = 0
    remaining = 1  # values still to read
    while remaining:
        head = data[at]
        remaining -= 1
        if head <= 0x7F or head >= 0xE0 or head in (0xC0, 0xC2, 0xC3):
            at += 1
        elif 0x80 <= head <= 0x8F:
            remaining += 2 * (head & 0x0F)
            at += 1
        elif 0x90 <= head <= 0x9F:
            remaining += head & 0x0F
            at += 1
        elif 0xA0 <= head <= 0xBF:
            at += 1 + (head & 0x1F)
        elif head == 0xCB:
            found.append(at)
            at += 9
        elif head == 0xCA:
            at += 5
        elif head in (0xCC, 0xD0):
            at += 2
        elif head in (0xCD, 0xD1):
            at += 3
        elif head in (0xCE, 0xD2):
            at += 5
        elif head in (0xCF, 0xD3):
            at += 9
        elif head in (0xD9, 0xC4):
            at += 2 + data[at + 1]
        elif head in (0xDA, 0xC5):
            at += 3 + int.from_bytes(data[at + 1 : at + 3], "big")
        elif head in (0xDB, 0xC6):
            at += 5 + int.from_bytes(data[at + 1 : at + 5], "big")
        elif head in (0xDC, 0xDE):
            count = int.from_bytes(data[at + 1 : at + 3], "big")
            remaining += count * (2 if head == 0xDE else 1)
            at += 3
        elif head in (0xDD, 0xDF):
            count = int.from_bytes(data[at + 1 : at + 5], "big")
            remaining += count * (2 if head == 0xDF else 1)
            at += 5
        else:
            raise AssertionError(f"unexpected msgpack byte {head:#x}")
    assert at == len(data)
    return found


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
@example([203, 1.5])
@example({"\u02c8": [-53, 1.5e300, 0xCB7F]})
@example(["x" * 203, 2.0])
@example(list(range(200, 210)) + [1e16] * 40)
def test_float_markers_are_exactly_the_float_values(value: Any) -> None:
    packed = msgspec.msgpack.encode(value)
    candidates = [at for at, byte in enumerate(packed) if byte == 0xCB]
    assert float_markers(packed, candidates) == _msgpack_float_offsets(packed)


def test_float_markers_read_the_right_doubles() -> None:
    value = {"a": [203, 1e300], "b": "\u02cb\u02cb", "c": -53, "d": 0.5}
    packed = msgspec.msgpack.encode(value)
    candidates = [at for at, byte in enumerate(packed) if byte == 0xCB]
    doubles = [
        struct.unpack_from(">d", packed, at + 1)[0] for at in float_markers(packed, candidates)
    ]
    assert doubles == [1e300, 0.5]
    assert float_markers(packed, []) == []


# --- find_outside_strings against a character-by-character scan --------------------------


def _outside_string_offsets(text: bytes) -> list[bool]:
    """For every offset, whether it lies outside all strings (quotes count as inside)."""
    outside: list[bool] = []
    in_string = escaped = False
    for byte in text:
        if in_string:
            outside.append(False)
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            outside.append(False)
            in_string = True
        else:
            outside.append(True)
    return outside


_EXPONENT = re.compile(rb"e[0-9]")


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
@example({'\\"e1': 1e16, "a\\": "e2", '"': [1e17, 'x\\\\"e3']})
def test_find_outside_strings_agrees_with_a_character_scan(value: Any) -> None:
    text = msgspec.json.encode(value)
    outside = _outside_string_offsets(text)
    expected = [m.start() for m in _EXPONENT.finditer(text) if outside[m.start()]]
    assert find_outside_strings(text, _EXPONENT) == expected
