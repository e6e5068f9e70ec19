"""Suggestions for misspelt names: edit distance and the closeness threshold."""

from __future__ import annotations

import pytest

from templiqx_core.suggest import closest, did_you_mean, edit_distance, name_list


@pytest.mark.parametrize(
    ("left", "right", "distance"),
    [
        ("", "", 0),
        ("abc", "", 3),
        ("kitten", "sitting", 3),
        ("mesages", "messages", 1),
        ("strng", "string", 1),
        ("tpye", "type", 1),  # a swap of neighbours is one edit
        ("ca", "abc", 3),
    ],
)
def test_edit_distance(left: str, right: str, distance: int) -> None:
    assert edit_distance(left, right) == distance
    assert edit_distance(right, left) == distance


def test_edit_distance_stops_early_beyond_a_limit() -> None:
    assert edit_distance("a" * 50, "b" * 50, limit=2) == 3
    assert edit_distance("short", "a much longer word", limit=1) == 2


@pytest.mark.parametrize(
    ("word", "candidates", "expected"),
    [
        ("mesages", ["api_version", "messages", "output_schema"], "messages"),
        ("txt", ["text", "interpolate", "when", "for_each"], "text"),
        ("uper", ["trim", "lower", "upper", "json"], "upper"),
        ("outputschema", ["output_schema", "inputs"], "output_schema"),
        ("nickname", ["name"], None),  # a different word, not a misspelling
        ("ab", ["xy"], None),
        ("messages", ["messages"], None),  # the word itself is never suggested
        ("lowr", ["lower", "lowe"], "lower"),  # ties go to the first candidate
    ],
)
def test_closest(word: str, candidates: list[str], expected: str | None) -> None:
    assert closest(word, candidates) == expected


def test_did_you_mean_and_name_list() -> None:
    assert did_you_mean("strng", ["string"]) == "; did you mean `string`?"
    assert did_you_mean("zzz", ["string"]) == ""
    assert name_list([]) == "none"
    assert name_list(["a", "b"]) == "'a', 'b'"
    many = name_list([f"n{i}" for i in range(25)])
    assert many.endswith("'n19' and 5 more")
    assert "(300 characters)" in name_list(["x" * 300])
