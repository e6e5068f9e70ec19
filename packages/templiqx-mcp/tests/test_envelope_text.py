"""``envelope_text`` is byte for byte the compact, key-sorted ``json.dumps`` of the envelope."""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import templiqx_mcp.tools
from templiqx_contracts import Diagnostic, OperationEnvelope
from templiqx_mcp import envelope_text


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


EDGE_FLOATS = [
    0.0,
    -0.0,
    1e-4,
    9.999999999999999e-5,
    1e-5,
    1.5e-7,
    5e-324,
    0.1,
    1 / 3,
    123.456,
    1e15,
    9999999999999998.0,
    1e16,
    1.5e16,
    1e22,
    1.7976931348623157e308,
    math.nan,
    math.inf,
    -math.inf,
]

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(EDGE_FLOATS)
    | st.floats(min_value=-1e-3, max_value=1e-3)
    | st.text()
    | st.text(alphabet=st.characters(max_codepoint=0x20) | st.sampled_from('"\\/\u2028é€'))
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(JSON)
def test_envelope_text_is_json_dumps(data: Any) -> None:
    assert envelope_text(data) == _dumps(data)


def test_every_edge_float_and_its_negative() -> None:
    for value in EDGE_FLOATS:
        for data in (value, -value, [value], {"x": value, "a": [1, value, "s"]}):
            assert envelope_text(data) == _dumps(data), value


def test_a_marker_byte_inside_a_string_or_integer_is_harmless() -> None:
    # 0xcb is msgpack's float64 marker; inside other data it is only a false alarm.
    hidden = struct.unpack(">q", b"\x00\xcb\x7f\xf0\x00\x00\x00\x01")[0]
    for data in ({"n": hidden, "s": "\u02cb" * 9}, ["\xcb" * 20, 0xCB, -0x35]):
        assert envelope_text(data) == _dumps(data)


def test_what_msgspec_refuses_is_left_to_json() -> None:
    assert envelope_text({1: "a", 2: "b"}) == '{"1":"a","2":"b"}'
    assert envelope_text({"big": 10**30}) == '{"big":1000000000000000000000000000000}'
    assert envelope_text([math.nan, math.inf]) == "[NaN,Infinity]"
    assert envelope_text({"s": "\ud800"}) == _dumps({"s": "\ud800"})


def test_envelopes_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    envelope = OperationEnvelope(
        api_version="templiqx.dev/v1",
        operation="compile_contract",
        ok=False,
        result={"temperature": 0.2, "max_tokens": 800, "text": "Grüße\n", "nested": [1.5, None]},
        diagnostics=[Diagnostic(code="TQX_X", severity="error", message="m")],
        fingerprints={"request": "ab" * 32},
    )
    data = envelope.to_builtins()
    expected = _dumps(data)
    _refusing_json_dumps(monkeypatch)
    assert envelope_text(data) == expected


def _refusing_json_dumps(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("json.dumps was used")

    monkeypatch.setattr(templiqx_mcp.tools.json, "dumps", refuse)


@pytest.mark.parametrize(
    "data",
    [
        {"big": 1e16, "s": "1e5 e7 \\", "more": [1.5e300, -2e17, 1.7976931348623157e308]},
        [203, 1e20],  # msgpack 92 cc cb cb 44 ..: the integer's cb, then the float's
        {"e1": "x\\", "k": [0xCB, 3.0e22, '"e5"']},
        [0.0, -0.0, 1e-4, 9999999999999998.0, 123.5],
    ],
)
def test_large_floats_keep_the_fast_path(monkeypatch: pytest.MonkeyPatch, data: Any) -> None:
    expected = _dumps(data)
    _refusing_json_dumps(monkeypatch)
    assert envelope_text(data) == expected


@pytest.mark.parametrize("data", [[203, 1e-5], {"x": [1, 5e-324]}, [1e20, math.nan]])
def test_small_and_non_finite_floats_are_written_by_json(data: Any) -> None:
    assert envelope_text(data) == _dumps(data)
