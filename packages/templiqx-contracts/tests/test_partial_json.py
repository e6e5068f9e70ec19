"""The incremental JSON reader: monotone partial values, the exact final value, exact offsets.

The malformed-input properties compare the reader with an independent oracle written here: a
plain recursive-descent scan of the whole text that names the first character no JSON document
can continue with. The oracle itself is cross-checked against ``decode_json``.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import tracemalloc
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from templiqx_contracts import (
    MISSING,
    JSONDecodeError,
    PartialJSON,
    PartialJSONError,
    decode_json,
)

# --- strict comparisons ------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    """Equal with JSON types kept apart (1 is not 1.0 nor True; -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (a == b and math.copysign(1.0, a) == math.copysign(1.0, b)) or a != a == b != b
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _extends(old: Any, new: Any) -> bool:
    """Whether ``new`` is a prefix-extension of ``old`` (members/items added, strings grown)."""
    if old is MISSING:
        return True
    if type(old) is not type(new):
        return False
    if isinstance(old, str):
        return new.startswith(old)
    if isinstance(old, dict):
        keys = list(new)
        return keys[: len(old)] == list(old) and all(_extends(old[k], new[k]) for k in old)
    if isinstance(old, list):
        return len(old) <= len(new) and all(
            _extends(x, y) for x, y in zip(old, new[: len(old)], strict=True)
        )
    return _same(old, new)


def _shown_parts_are_final(shown: Any, final: Any, partial_strings: bool) -> bool:
    """Numbers and literals shown are final; array items are complete (bar a growing string)."""
    if isinstance(shown, dict):
        return isinstance(final, dict) and all(
            k in final and _shown_parts_are_final(v, final[k], partial_strings)
            for k, v in shown.items()
        )
    if isinstance(shown, list):
        if not isinstance(final, list) or len(shown) > len(final):
            return False
        for index, item in enumerate(shown):
            last = index == len(shown) - 1
            if partial_strings and last and isinstance(item, str):
                if not (isinstance(final[index], str) and final[index].startswith(item)):
                    return False
            elif not _same(item, final[index]):
                return False
        return True
    if isinstance(shown, str):
        return isinstance(final, str) and (
            final.startswith(shown) if partial_strings else shown == final
        )
    return _same(shown, final)


def _at(value: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _all_paths(value: Any, path: tuple[str | int, ...] = ()) -> set[tuple[str | int, ...]]:
    paths = {path}
    if isinstance(value, dict):
        for key, item in value.items():
            paths |= _all_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            paths |= _all_paths(item, (*path, index))
    return paths


# --- documents and splits ----------------------------------------------------------------

json_documents = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 70), max_value=1 << 70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=40,
)


@st.composite
def serialized(draw: st.DrawFn) -> str:
    document = draw(json_documents)
    indent = draw(st.sampled_from([None, None, 0, 2]))
    separators = draw(st.sampled_from([None, (",", ":"), (" , ", " : ")]))
    text = json.dumps(
        document,
        ensure_ascii=draw(st.booleans()),
        indent=indent,
        separators=separators,
    )
    return draw(st.sampled_from(["", " ", "\n\t"])) + text + draw(st.sampled_from(["", " \r\n"]))


@st.composite
def split(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.sets(st.integers(min_value=1, max_value=max(1, len(text) - 1)))))
    bounds = [0, *(c for c in cuts if c < len(text)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


# --- the value properties ----------------------------------------------------------------


def _read(fragments: list[str], partial_strings: bool) -> None:
    whole = "".join(fragments)
    final = decode_json(whole)
    reader = PartialJSON(partial_strings=partial_strings)
    previous: Any = MISSING
    for fragment in fragments:
        update = reader.feed(fragment)
        shown = copy.deepcopy(update.value)
        assert _extends(previous, shown), (previous, shown)
        assert shown is MISSING or _shown_parts_are_final(shown, final, partial_strings)
        for path in update.completed:
            assert path in update.complete_paths
        previous = shown
    end = reader.finish()
    assert end.done
    assert reader.done
    assert _same(reader.value, final)
    assert _extends(previous, reader.value)
    assert set(reader.complete_paths) == _all_paths(final)
    assert _same(reader.value, json.loads(whole)) or _needs_reference_rules(whole)


def _needs_reference_rules(text: str) -> bool:
    """``-0`` and integers beyond 64 bits, which ``decode_json`` reads as floats."""
    original = json.loads(text)
    return not _same(original, decode_json(text))


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), serialized(), st.booleans())
@example(None, '{"a": [1, {"b": "x\\u00e9\\ud83d\\ude00"}, -0, 1.5e3]}', True)
@example(None, '[["a", "b"], "cd", {"e": [true, false, null]}]', True)
@example(None, "123", False)
@example(None, ' "\\\\\\"" ', True)
def test_partial_values_grow_monotonically_to_the_decoded_value(
    data: Any, text: str, partial_strings: bool
) -> None:
    fragments = [text] if data is None else data.draw(split(text))
    _read(fragments, partial_strings)


# No deadline: each example deep-copies the value after every character, which a loaded
# machine can stretch past hypothesis's 200 ms default; the test asserts values, not time.
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(serialized(), st.booleans())
def test_one_character_at_a_time(text: str, partial_strings: bool) -> None:
    _read(list(text), partial_strings)


def test_partial_strings_grow_in_objects_and_as_the_last_array_item() -> None:
    reader = PartialJSON(partial_strings=True)
    assert reader.feed('{"title": "Quar').value == {"title": "Quar"}
    assert reader.feed('terly", "lines": ["one", "tw').value == {
        "title": "Quarterly",
        "lines": ["one", "tw"],
    }
    update = reader.feed('o"]}')
    assert update.value == {"title": "Quarterly", "lines": ["one", "two"]}
    assert update.completed == (("lines", 1), ("lines",), ())
    assert update.done


def test_without_partial_strings_arrays_show_complete_items_only() -> None:
    reader = PartialJSON()
    assert reader.feed('{"n": [1, 22').value == {"n": [1]}
    assert reader.feed(', {"a": 1').value == {"n": [1, 22]}
    assert reader.feed("}, tr").value == {"n": [1, 22, {"a": 1}]}
    assert reader.feed("ue").value == {"n": [1, 22, {"a": 1}, True]}
    assert reader.growing is None
    assert reader.growing_text() is None


def test_growing_text_is_available_without_showing_it() -> None:
    reader = PartialJSON()
    update = reader.feed('{"status": "act')
    assert update.value == {}
    assert update.growing == ("status",)
    assert update.growing_text() == "act"
    reader.feed("i\\u00e9\\ud83d\\ude00\\n")
    assert reader.growing_text() == "actié😀\n"
    assert reader.growing_length() == len("actié😀\n")
    reader.feed('"}')
    assert reader.growing_length() == 0


def test_a_top_level_number_completes_at_the_end_of_input() -> None:
    reader = PartialJSON()
    assert reader.feed("12").value is MISSING
    assert not reader.done
    assert reader.finish().value == 12
    assert PartialJSON().feed("12 ").done


def test_events_cover_hidden_array_items() -> None:
    reader = PartialJSON(events=True)
    update = reader.feed('[{"a": "x", "b": 1')
    assert update.value == []
    assert [(e.kind, e.path, e.value) for e in update.events] == [
        ("start", (), "array"),
        ("start", (0,), "object"),
        ("key", (0, "a"), "a"),
        ("start", (0, "a"), "string"),
        ("complete", (0, "a"), "x"),
        ("key", (0, "b"), "b"),
        ("start", (0, "b"), "number"),
    ]
    assert PartialJSON().feed("[1,").events == ()


def test_a_repeated_member_name_keeps_the_last_value_like_decode_json() -> None:
    reader = PartialJSON()
    reader.feed('{"a": 1, "a": [2]}')
    assert reader.value == decode_json('{"a": 1, "a": [2]}') == {"a": [2]}


# --- bounds ------------------------------------------------------------------------------


def test_max_bytes_is_enforced_on_utf8_bytes() -> None:
    reader = PartialJSON(max_bytes=8)
    reader.feed('["é')  # 4 bytes
    with pytest.raises(PartialJSONError, match="8-byte limit") as caught:
        reader.feed('éé"]')  # 4 + 6 bytes
    assert caught.value.offset == 8
    with pytest.raises(PartialJSONError):
        reader.feed("")  # the reader stays failed


def test_max_depth_is_enforced() -> None:
    reader = PartialJSON(max_depth=3)
    reader.feed("[[[1]]]")
    with pytest.raises(PartialJSONError, match="deeper than 3") as caught:
        PartialJSON(max_depth=3).feed('{"a": [[[')
    assert caught.value.offset == 8


def test_deep_documents_do_not_recurse() -> None:
    # Far deeper than the interpreter's recursion limit: the reader keeps its own stack.
    reader = PartialJSON(max_depth=5_000)
    for _ in range(5_000):
        reader.feed("[")
    reader.feed("]" * 5_000)
    assert reader.done


def test_a_long_token_in_tiny_fragments_is_held_compactly() -> None:
    """A string (or number) arriving a few characters at a time is kept in few pieces, not one
    object per fragment: memory stays close to the text's own size."""
    for opening, closing in (('{"text": "', '"}'), ("[0.", "]")):
        reader = PartialJSON(max_bytes=None)
        reader.feed(opening)
        tracemalloc.start()
        try:
            for number in range(200_000):
                reader.feed(f"{number % 10_000:04}")  # a new str object each time, as deltas are
            held, _peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert held < 3 * 800_000  # one str object per fragment would be ~12 MB
        reader.feed(closing)
        assert reader.done


def test_long_strings_in_small_pieces_stay_linear() -> None:
    reader = PartialJSON(partial_strings=True, max_bytes=None)
    reader.feed('{"text": "')
    for _ in range(20_000):
        reader.feed("abcde")
        assert len(reader.value["text"]) % 5 == 0
    reader.feed('"}')
    assert reader.value == {"text": "abcde" * 20_000}


# --- malformed input ---------------------------------------------------------------------


class _StopError(Exception):
    def __init__(self, at: int) -> None:
        self.at = at


def first_bad_index(text: str) -> int | None:
    """The index of the first character no JSON document can continue with.

    ``len(text)`` when the text is the beginning of a document but ends early; ``None`` when
    it is a whole document. Escapes follow ``decode_json``: a ``\\u`` high surrogate must be
    followed at once by a ``\\u`` low surrogate, and a low surrogate cannot stand alone.
    """
    n = len(text)

    def at(i: int) -> str:
        if i >= n:
            raise _StopError(n)
        return text[i]

    def space(i: int) -> int:
        while i < n and text[i] in " \t\n\r":
            i += 1
        return i

    def digits(i: int) -> int:
        if at(i) not in "0123456789":
            raise _StopError(i)
        while i < n and text[i] in "0123456789":
            i += 1
        return i

    def number(i: int) -> int:
        if text[i] == "-":
            i += 1
        if at(i) == "0":
            i += 1
        elif at(i) in "123456789":
            i = digits(i)
        else:
            raise _StopError(i)
        if i < n and text[i] == ".":
            i = digits(i + 1)
        if i < n and text[i] in "eE":
            i += 1
            if at(i) in "+-":
                i += 1
            i = digits(i)
        return i

    def unicode_escape(i: int, after_high: bool) -> tuple[int, int]:
        """Read the four hex digits at ``i``; return the code and the index after them."""
        hexdigits = "0123456789abcdefABCDEF"
        for k in range(4):
            char = at(i + k)
            if char not in hexdigits:
                raise _StopError(i + k)
            if k == 0 and after_high and char not in "dD":
                raise _StopError(i)
            if k == 1 and text[i] in "dD":
                is_low = char in "cdefCDEF"
                if after_high != is_low:
                    raise _StopError(i + 1)
        return int(text[i : i + 4], 16), i + 4

    def string(i: int) -> int:
        i += 1
        while True:
            char = at(i)
            if char == '"':
                return i + 1
            if char < " ":
                raise _StopError(i)
            if char != "\\":
                i += 1
                continue
            kind = at(i + 1)
            if kind in '"\\/bfnrt':
                i += 2
                continue
            if kind != "u":
                raise _StopError(i + 1)
            code, i = unicode_escape(i + 2, after_high=False)
            if 0xD800 <= code <= 0xDBFF:
                if at(i) != "\\":
                    raise _StopError(i)
                if at(i + 1) != "u":
                    raise _StopError(i + 1)
                _, i = unicode_escape(i + 2, after_high=True)

    def value(i: int) -> int:
        i = space(i)
        char = at(i)
        if char == "{" or char == "[":
            close = "}" if char == "{" else "]"
            i = space(i + 1)
            if at(i) == close:
                return i + 1
            while True:
                if char == "{":
                    if at(i) != '"':
                        raise _StopError(i)
                    i = space(string(i))
                    if at(i) != ":":
                        raise _StopError(i)
                    i += 1
                i = space(value(i))
                if at(i) == close:
                    return i + 1
                if at(i) != ",":
                    raise _StopError(i)
                i = space(i + 1)
        if char == '"':
            return string(i)
        if char == "-" or char in "0123456789":
            return number(i)
        for word in ("true", "false", "null"):
            if char == word[0]:
                for k, letter in enumerate(word):
                    if at(i + k) != letter:
                        raise _StopError(i + k)
                return i + len(word)
        raise _StopError(i)

    try:
        end = space(value(0))
    except _StopError as stop:
        return stop.at
    return None if end == n else end


def _reader_offset(fragments: list[str]) -> int | None:
    reader = PartialJSON(max_bytes=None)
    try:
        for fragment in fragments:
            reader.feed(fragment)
        reader.finish()
    except PartialJSONError as error:
        return error.offset
    return None


def _byte_offset(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8", "surrogatepass"))


_JUNK = list('{}[]:,"\\ -+.0129eEtfnxuü\x00\x1f\n')


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), serialized(), st.sampled_from(["replace", "insert", "delete", "truncate"]))
@example(None, "[1,]", "none")
@example(None, '{"a" 1}', "none")
@example(None, "-a", "none")
@example(None, "1.e5", "none")
@example(None, '"\\ud800x"', "none")
@example(None, '"\\udc00"', "none")
@example(None, '"\\ud800\\u0041"', "none")
@example(None, '{"a":1}}', "none")
@example(None, '"ab', "none")
@example(None, "tru", "none")
def test_malformed_input_is_rejected_at_the_first_impossible_byte(
    data: Any, text: str, how: str
) -> None:
    if data is not None:
        index = data.draw(st.integers(min_value=0, max_value=len(text)))
        junk = data.draw(st.sampled_from(_JUNK))
        if how == "replace" and index < len(text):
            text = text[:index] + junk + text[index + 1 :]
        elif how == "insert":
            text = text[:index] + junk + text[index:]
        elif how == "delete" and index < len(text):
            text = text[:index] + text[index + 1 :]
        elif how == "truncate":
            text = text[:index]
    expected = first_bad_index(text)
    try:
        msgspec.json.decode(text)  # decode_json's reader, with its escape rules
        valid = True
    except msgspec.DecodeError:
        valid = False
    if expected is None:
        assume(valid)  # a number out of range is the only other way to fail
    else:
        assert not valid, text  # the oracle agrees with msgspec on validity
    fragments = [text] if data is None else data.draw(split(text))
    offset = _reader_offset(fragments)
    assert offset == (None if expected is None else _byte_offset(text, expected)), text


@pytest.mark.parametrize(
    ("text", "index"),
    [
        ("[1.,2]", 3),
        ("1.", 2),
        ("[-]", 2),
        ("-", 1),
        ("[1e]", 3),
        ("[1e+]", 4),
        ("0.e1", 2),
        ("[01]", 2),
        ("[1.5.2]", 4),
        ("[1-2]", 2),
        ("+1", 0),
        ("[.5]", 1),
        ('{"a":}', 5),
        ('{"a",1}', 4),
        ("{,}", 1),
        ('["a",]', 5),
        ('"\\u12g4"', 5),
        ('"\\ud800\\ud800"', 10),
        ('"\\ud800\\"', 8),
        ('"\\ud800"', 7),
        ("[true false]", 6),
        ("nulL", 3),
        ("[] []", 3),
        ('"tab\there"', 4),
        ("", 0),
        ("   ", 3),
        ("[[[]]", 5),
    ],
)
def test_known_malformed_documents(text: str, index: int) -> None:
    assert first_bad_index(text) == index
    expected = _byte_offset(text, index)
    assert _reader_offset([text]) == expected
    assert _reader_offset(list(text)) == expected


def test_numbers_out_of_range_are_reported_at_their_first_byte() -> None:
    for text, offset in (('{"a": 1e400}', 6), ("[1, -2e999]", 4), ('["é", 1e999]', 7)):
        assert _reader_offset(list(text)) == offset
        assert _reader_offset([text]) == offset


def test_errors_name_the_problem_and_carry_the_runtime_code() -> None:
    with pytest.raises(PartialJSONError) as caught:
        PartialJSON().feed('{"a": tru}')
    error = caught.value
    assert error.offset == 9
    assert error.code == "TQX_RUNTIME_INVALID_RESPONSE"
    assert "'}' cannot continue 'true'" in str(error)
    assert isinstance(error, JSONDecodeError)
    reader = PartialJSON()
    reader.feed('{"a": "b')
    with pytest.raises(PartialJSONError, match="ends early, inside a string"):
        reader.finish()
    reader = PartialJSON()
    reader.feed(" \n")
    with pytest.raises(PartialJSONError, match="ended before any JSON value") as ended:
        reader.finish()
    assert ended.value.offset == 2
