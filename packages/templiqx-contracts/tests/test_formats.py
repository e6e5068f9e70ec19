"""The shared ``date`` / ``date-time`` grammar (core.md §2.8) and the format walk."""

from __future__ import annotations

from typing import Any

import pytest

import templiqx_contracts
from templiqx_contracts import (
    CHECKED_FORMATS,
    FormatViolation,
    format_plan,
    format_violations,
    formats_hold,
    is_date,
    is_date_time,
)


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("2026-07-12", True),
        ("2024-02-29", True),
        ("2000-02-29", True),
        ("1900-02-29", False),
        ("0000-02-29", True),
        ("2026-02-30", False),
        ("2026-04-31", False),
        ("2026-13-01", False),
        ("2026-00-10", False),
        ("2026-12-00", False),
        ("2026-1-01", False),
        ("2026-7-012", False),
        ("2026/07/12", False),
        ("+026-07-12", False),
        ("2026-+1-01", False),
        ("\uff12026-07-12", False),
        ("2026-07-12 ", False),
        ("2026-07-12\n", False),
        ("", False),
    ],
)
def test_date_grammar(text: str, valid: bool) -> None:
    assert is_date(text) is valid


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("2026-07-11T10:00:00Z", True),
        ("2026-07-11T23:59:59+14:00", True),
        ("2026-07-11T23:59:59-23:59", True),
        ("2026-07-11T10:00:00.123456Z", True),
        ("2026-07-11T10:00:00.5-05:30", True),
        ("2026-07-11T10:00:00-00:00", True),
        ("2026-07-11 10:00:00Z", False),
        ("2026-07-11t10:00:00Z", False),
        ("2026-07-11T10:00:00z", False),
        ("2026-07-11T10:00:00", False),
        ("2026-07-11T24:00:00Z", False),
        ("2026-07-11T10:60:00Z", False),
        ("2026-07-11T10:00:60Z", False),
        ("2026-07-11T10:00:00.Z", False),
        ("2026-07-11T10:00:00+24:00", False),
        ("2026-07-11T10:00:00+05:60", False),
        ("2026-07-11T10:00:00+0500", False),
        ("2026-07-11T10:00:00+2:00", False),
        ("2026-07-11T1:00:00Z0", False),
        ("2026-02-30T10:00:00Z", False),
        ("2026-07-11T10:00:00.\uff15Z", False),
        ("2026-07-11T10:\uff100:00Z", False),
    ],
)
def test_date_time_grammar(text: str, valid: bool) -> None:
    assert is_date_time(text) is valid


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "when": {"type": "string", "format": "date"},
        "note": {"type": "string", "format": "email"},
        "events": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"at": {"type": "string", "format": "date-time"}},
            },
        },
        "b": {"format": "date"},
        "a": {"format": "date"},
    },
}


def test_the_walk_reports_instance_pointers_in_sorted_property_order() -> None:
    value = {
        "when": "2026-02-30",
        "note": "not an email",
        "events": [{"at": "2026-07-11T10:00:00Z"}, {"at": "2026-07-11 10:00:00"}, {}],
        "b": "x",
        "a": "y",
    }
    assert format_violations(SCHEMA, value, "/output") == [
        FormatViolation("/output/a", "date"),
        FormatViolation("/output/b", "date"),
        FormatViolation("/output/events/1/at", "date-time"),
        FormatViolation("/output/when", "date"),
    ]
    assert format_violations(SCHEMA, value)[0] == ("/a", "date")
    assert formats_hold(SCHEMA, value) is False
    valid = {"when": "2024-02-29", "events": [{"at": "2026-07-11T10:00:00.5+02:00"}]}
    assert format_violations(SCHEMA, valid) == []
    assert formats_hold(SCHEMA, valid) is True


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"format": "date"}, 20260712),  # only strings are checked
        ({"format": "date"}, None),
        ({"properties": {"d": {"format": "date"}}}, ["2026-02-30"]),  # properties need an object
        ({"items": {"format": "date"}}, {"0": "2026-02-30"}),  # items need an array
        ({"items": [{"format": "date"}]}, ["2026-02-30"]),  # tuple-form items are not walked
        ({"anyOf": [{"format": "date"}]}, "2026-02-30"),  # only format/properties/items
        ({"properties": []}, {"x": 1}),
        ({"format": ["date"]}, "2026-02-30"),
        (True, "2026-02-30"),
        (False, "2026-02-30"),
        ({"properties": {"d": {"format": "date"}}}, {"e": "2026-02-30"}),  # absent properties
    ],
)
def test_what_the_walk_does_not_check(schema: Any, value: Any) -> None:
    assert format_violations(schema, value) == []
    assert formats_hold(schema, value) is True


def test_plans_keep_only_subtrees_that_assert_a_checked_format() -> None:
    assert format_plan({"type": "object", "properties": {"n": {"format": "email"}}}) is None
    plan = format_plan(SCHEMA)
    assert plan is not None
    assert sorted(plan.properties) == ["a", "b", "events", "when"]
    assert plan.properties["events"].items is not None
    assert plan.holds({"when": "2026-07-12"}) is True
    assert plan.violations("not an object") == []
    nested = format_plan({"items": {"items": {"format": "date-time"}}})
    assert nested is not None
    assert nested.violations([[], ["2026-07-11T10:00:00Z", "nope"]], "/v") == [
        ("/v/1/1", "date-time")
    ]
    assert CHECKED_FORMATS == ("date", "date-time")


def test_exported_from_the_package() -> None:
    for name in ("is_date", "is_date_time", "format_plan", "format_violations", "formats_hold"):
        assert name in templiqx_contracts.__all__
