"""Incremental changes of a partial value (issue #26, DECISIONS 27; issue #29 item 5).

The property: for any JSON text split anywhere, applying every change the reader has
recorded so far to ``MISSING`` gives exactly ``copy.deepcopy(reader.value)`` after every feed
(type for type, member order included), the wire form round-trips, and each feed's changes cost
what is new, never the value so far.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from templiqx_contracts import (
    MISSING,
    PartialAppend,
    PartialChange,
    PartialChangeError,
    PartialJSON,
    PartialJSONError,
    PartialSet,
    apply_partial_changes,
    decode_json,
    decode_partial_changes,
    encode_partial_changes,
)


def same(a: Any, b: Any) -> bool:
    """Equal as JSON, type for type and member order included (-0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


# --- JSON texts with what dumps never writes: repeated names, odd escapes, number forms ----

_KEYS = st.sampled_from(['"a"', '"b"', '"a"', '"\\u0061"', '"\\u00e9t\\u00e9"', '"k\\"q"', '""'])
_NUMBERS = st.sampled_from(
    ["0", "-0", "12", "-7", "1.5", "1e15", "1E2", "-2.5e-3", "18446744073709551615", "1" * 25]
) | st.integers(min_value=-(1 << 70), max_value=1 << 70).map(str)
_ESCAPED = st.sampled_from(
    ["\\n", '\\"', "\\\\", "\\/", "\\b", "\\u00e9", "\\ud83d\\ude00", "\\u2028", "\\u0000"]
)


@st.composite
def json_strings(draw: st.DrawFn) -> str:
    parts = draw(
        st.lists(
            _ESCAPED
            | st.text(max_size=6).map(lambda t: json.dumps(t, ensure_ascii=False)[1:-1])
            | st.text(max_size=3).map(lambda t: json.dumps(t)[1:-1]),
            max_size=5,
        )
    )
    return '"' + "".join(parts) + '"'


_SPACE = st.sampled_from(["", "", " ", "\n  "])


def _array(children: list[str]) -> st.SearchStrategy[str]:
    return _SPACE.map(lambda space: "[" + space + ("," + space).join(children) + space + "]")


@st.composite
def _object(draw: st.DrawFn, children: list[str]) -> str:
    space = draw(_SPACE)
    members = [f"{draw(_KEYS)}{space}:{space}{child}" for child in children]
    return "{" + space + ("," + space).join(members) + space + "}"


json_texts = st.recursive(
    st.sampled_from(["null", "true", "false"]) | _NUMBERS | json_strings(),
    lambda children: st.lists(children, max_size=5).flatmap(
        lambda items: _array(items) | _object(items)
    ),
    max_leaves=30,
)


@st.composite
def split(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.sets(st.integers(min_value=1, max_value=max(1, len(text) - 1)))))
    bounds = [0, *(c for c in cuts if c < len(text)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def _check_reading(fragments: list[str], partial_strings: bool) -> list[PartialChange]:
    reader = PartialJSON(partial_strings=partial_strings, changes=True)
    everything: list[PartialChange] = []
    for fragment in fragments:
        update = reader.feed(fragment)
        assert update.changes == reader.changes
        everything.extend(update.changes)
        shown = copy.deepcopy(reader.value)
        assert same(apply_partial_changes(MISSING, everything), shown), (everything, shown)
        wire = decode_partial_changes(encode_partial_changes(everything))
        assert wire == everything
        assert same(apply_partial_changes(MISSING, wire), shown)
    end = reader.finish()
    everything.extend(end.changes)
    whole = "".join(fragments)
    assert same(apply_partial_changes(MISSING, everything), decode_json(whole))
    return everything


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), json_texts, st.booleans())
@example(None, '{"a": "x\\ud83d\\ude00y", "a": [1, {"b": "c"}], "a": -0}', True)
@example(None, '[["a", "b"], "cd", {"e": [true, false, null]}, 1e15]', True)
@example(None, '"\\u00e9\\ud83d\\ude00"', True)
@example(None, "-0", False)
def test_changes_applied_are_the_value_after_every_fragment(
    data: Any, text: str, partial_strings: bool
) -> None:
    fragments = [text] if data is None else data.draw(split(text))
    _check_reading(fragments, partial_strings)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_texts, st.booleans())
def test_one_character_at_a_time(text: str, partial_strings: bool) -> None:
    _check_reading(list(text), partial_strings)


def test_escapes_and_surrogate_pairs_split_anywhere() -> None:
    text = '{"t": "a\\u00e9\\ud83d\\ude00\\n\\"b"}'
    for cut_a, cut_b in itertools.combinations(range(1, len(text)), 2):
        changes = _check_reading([text[:cut_a], text[cut_a:cut_b], text[cut_b:]], True)
        assert apply_partial_changes(MISSING, changes) == {"t": 'aé😀\n"b'}


def test_what_each_kind_of_step_records() -> None:
    reader = PartialJSON(partial_strings=True, changes=True)
    assert reader.feed('{"title": "Q').changes == (
        PartialSet((), {}),
        PartialSet(("title",), "Q"),
    )
    assert reader.feed('3 plan", "items": [1, {"x": ').changes == (
        PartialAppend(("title",), "3 plan"),
        PartialSet(("items",), []),
        PartialSet(("items", 0), 1),
    )
    assert reader.feed('2}, "la').changes == (
        PartialSet(("items", 1), {"x": 2}),
        PartialSet(("items", 2), "la"),  # an array's last item shows while it grows
    )
    assert reader.feed('st"], "title": 7}').changes == (
        PartialAppend(("items", 2), "st"),
        PartialSet(("title",), 7),  # a repeated member name replaces the earlier value
    )
    assert reader.value == {"title": 7, "items": [1, {"x": 2}, "last"]}


def test_without_partial_strings_a_string_appears_whole() -> None:
    reader = PartialJSON(changes=True)
    assert reader.feed('["ab').changes == (PartialSet((), []),)
    assert reader.feed('c", 4').changes == (PartialSet((0,), "abc"),)
    assert reader.feed("]").changes == (PartialSet((1,), 4),)


def test_a_top_level_number_is_set_at_finish() -> None:
    reader = PartialJSON(changes=True)
    assert reader.feed("12").changes == ()
    assert reader.finish().changes == (PartialSet((), 12),)


def test_a_malformed_feed_keeps_the_changes_before_the_bad_byte() -> None:
    reader = PartialJSON(partial_strings=True, changes=True)
    reader.feed('{"a": [1, ')
    with pytest.raises(PartialJSONError):
        reader.feed('2, 3}, "b": "x')
    assert reader.changes == (PartialSet(("a", 1), 2), PartialSet(("a", 2), 3))
    value = apply_partial_changes(MISSING, [PartialSet((), {}), PartialSet(("a",), [1])])
    assert apply_partial_changes(value, reader.changes) == reader.value
    with pytest.raises(PartialJSONError):
        reader.feed("]")
    assert reader.changes == ()


def test_a_string_cut_by_a_control_character_still_shows_what_came() -> None:
    reader = PartialJSON(partial_strings=True, changes=True)
    reader.feed('["ab')
    with pytest.raises(PartialJSONError):
        reader.feed("cd\x01")
    assert reader.changes == (PartialAppend((0,), "cd"),)
    assert reader.value == ["abcd"]


def test_no_changes_are_recorded_unless_asked() -> None:
    reader = PartialJSON(partial_strings=True)
    assert reader.feed('{"a": "b').changes == ()
    assert reader.changes == ()


def test_each_feed_costs_what_is_new() -> None:
    """Appending to a long string records only the new text, whatever the string's length."""
    reader = PartialJSON(partial_strings=True, changes=True, max_bytes=None)
    reader.feed('{"log": [{"text": "')  # hidden: inside an array item
    assert reader.feed("x" * 1000).changes == ()
    reader = PartialJSON(partial_strings=True, changes=True, max_bytes=None)
    reader.feed('{"text": "')
    sizes = set()
    for _ in range(20_000):
        (change,) = reader.feed("abcd").changes
        sizes.add(len(encode_partial_changes([change])))
    assert sizes == {len(b'[{"op":"append","path":["text"],"text":"abcd"}]')}
    assert len(reader.value["text"]) == 80_000


# --- applying and the wire --------------------------------------------------------------


def test_apply_copies_what_it_sets_and_joins_appends_once() -> None:
    item = {"x": [1]}
    value = apply_partial_changes(MISSING, [PartialSet((), []), PartialSet((0,), item)])
    item["x"].append(2)
    assert value == [{"x": [1]}]
    changes = [PartialSet((1,), "")] + [PartialAppend((1,), "ab")] * 50_000
    value = apply_partial_changes(value, changes)
    assert value[1] == "ab" * 50_000
    assert apply_partial_changes("a", [PartialAppend((), "b"), PartialAppend((), "c")]) == "abc"
    assert apply_partial_changes({"a": 1}, [PartialSet((), None)]) is None


@pytest.mark.parametrize(
    ("value", "change", "message"),
    [
        (MISSING, PartialSet(("a",), 1), "the root is not an object or an array"),
        ({}, PartialSet(("a", "b"), 1), "no value at /a to change"),
        ([], PartialSet((1,), 1), "/1 cannot be set"),
        ([], PartialSet(("a",), 1), "/a cannot be set"),
        ({"a": 1}, PartialAppend(("a",), "x"), "no string at /a to append to"),
        ({}, PartialAppend(("a",), "x"), "no string at /a to append to"),
        (["s"], PartialAppend((True,), "x"), "no string at /True to append to"),  # type: ignore[arg-type]
        (None, PartialAppend((), "x"), "the root is not a string to append to"),
    ],
)
def test_a_change_that_does_not_fit_is_refused(
    value: Any, change: PartialChange, message: str
) -> None:
    with pytest.raises(PartialChangeError, match=message):
        apply_partial_changes(value, [change])


def test_the_wire_form_is_compact_json_tagged_by_op() -> None:
    changes = [
        PartialSet((), {}),
        PartialSet(("items", 0), {"n": -0.0, "big": 18446744073709551615}),
        PartialAppend(("title",), 'é\n"'),
    ]
    wire = encode_partial_changes(changes)
    assert wire == (
        b'[{"op":"set","path":[],"value":{}},'
        b'{"op":"set","path":["items",0],"value":{"n":-0.0,"big":18446744073709551615}},'
        b'{"op":"append","path":["title"],"text":"\xc3\xa9\\n\\""}]'
    )
    assert decode_partial_changes(wire) == changes
    assert encode_partial_changes(iter(changes)) == wire
    assert json.loads(wire)[2] == {"op": "append", "path": ["title"], "text": 'é\n"'}


@pytest.mark.parametrize(
    "wire",
    [
        b'[{"op":"move","path":[]}]',
        b'[{"op":"set","path":[true],"value":1}]',
        b'[{"op":"append","path":[],"text":1}]',
        b'[{"op":"append","path":[],"text":"a","extra":1}]',
        b'{"op":"set","path":[],"value":1}',
    ],
)
def test_the_wire_form_refuses_anything_else(wire: bytes) -> None:
    with pytest.raises(msgspec.ValidationError):
        decode_partial_changes(wire)
