"""The ``date`` and ``date-time`` string formats and the format walk over a JSON Schema.

No JSON Schema engine asserts ``format`` in templiqx; these two formats are checked here, by one
grammar shared by the core (value and output validation) and by every runtime adapter that
reports ``output_schema_valid`` (adapters may not import the core).

``date`` is ``YYYY-MM-DD`` naming a real Gregorian day (year 0 is a leap year). ``date-time`` is
a date, an uppercase ``T``, ``HH:MM:SS`` (no leap second), optionally ``.`` and one or more
fraction digits, then the zone ``Z`` or ``±HH:MM``. Every numeric part is ASCII digits only:
unlike the reference, a ``+`` sign inside a part (``2026-+1-01``) is rejected.

The walk follows only ``format``, ``properties`` and ``items`` (as the reference does): a string
is checked against its schema's ``date``/``date-time`` format (other formats are accepted), an
object's present properties are visited in sorted order, and every element of an array is visited
against ``items``. Pointers name the instance location (``/name``, ``/0``), unescaped.
"""

from __future__ import annotations

import re
from typing import Any, Final, NamedTuple

__all__ = [
    "CHECKED_FORMATS",
    "FormatPlan",
    "FormatViolation",
    "format_plan",
    "format_violations",
    "formats_hold",
    "is_date",
    "is_date_time",
]

CHECKED_FORMATS: Final = ("date", "date-time")
"""The only ``format`` values that are asserted; any other format is accepted unchecked."""

_DAYS_IN_MONTH: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_DATE: Final = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")


def _digits(text: str) -> int | None:
    if text and text.isascii() and text.isdigit():
        return int(text)
    return None


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def is_date(text: str) -> bool:
    """Whether ``text`` is a valid ``YYYY-MM-DD`` calendar date.

    >>> is_date("2024-02-29"), is_date("2026-02-30"), is_date("2026-7-01")
    (True, False, False)
    """
    match = _DATE.fullmatch(text)
    if match is None:
        return False
    year, month, day = int(match[1]), int(match[2]), int(match[3])
    if not 1 <= month <= 12:
        return False
    last = 29 if month == 2 and _is_leap(year) else _DAYS_IN_MONTH[month - 1]
    return 1 <= day <= last


def _is_zone(text: str) -> bool:
    if text == "Z":
        return True
    if len(text) != 6 or text[0] not in "+-" or text[3] != ":":
        return False
    hours, minutes = _digits(text[1:3]), _digits(text[4:6])
    return hours is not None and minutes is not None and hours <= 23 and minutes <= 59


def is_date_time(text: str) -> bool:
    """Whether ``text`` is an RFC 3339 date-time (uppercase ``T``/``Z``, zone required).

    >>> is_date_time("2026-07-11T10:00:00Z"), is_date_time("2026-07-11 10:00:00")
    (True, False)
    """
    if len(text) < 20 or not text.isascii() or not is_date(text[:10]) or text[10] != "T":
        return False
    time = text[11:]
    if len(time) < 9 or time[2] != ":" or time[5] != ":":
        return False
    hour, minute, second = _digits(time[0:2]), _digits(time[3:5]), _digits(time[6:8])
    if hour is None or minute is None or second is None:
        return False
    if hour > 23 or minute > 59 or second > 59:
        return False
    rest = time[8:]
    if rest.startswith("."):
        end = 1
        while end < len(rest) and "0" <= rest[end] <= "9":
            end += 1
        if end == 1:
            return False
        rest = rest[end:]
    return _is_zone(rest)


class FormatViolation(NamedTuple):
    """One string that fails its format: where it is (relative to the walk's start) and which."""

    pointer: str
    format: str


class FormatPlan:
    """The format walk of one schema, reduced to the subtrees that assert a checked format.

    Build it once with :func:`format_plan` and run it on many values.
    """

    __slots__ = ("check", "items", "properties")

    def __init__(
        self,
        check: str | None,
        properties: dict[str, FormatPlan],
        items: FormatPlan | None,
    ) -> None:
        self.check = check
        self.properties = properties
        self.items = items

    def violations(self, value: Any, pointer: str = "") -> list[FormatViolation]:
        """Every format failure in ``value``, in walk order; pointers start with ``pointer``."""
        out: list[FormatViolation] = []
        self._collect(value, pointer, out)
        return out

    def holds(self, value: Any) -> bool:
        """Whether every checked string in ``value`` is valid (stops at the first failure)."""
        check = self.check
        if check is not None and isinstance(value, str) and not _valid(check, value):
            return False
        properties = self.properties
        if properties and isinstance(value, dict):
            for name, plan in properties.items():
                if name in value and not plan.holds(value[name]):
                    return False
        items = self.items
        if items is not None and isinstance(value, list):
            return all(items.holds(element) for element in value)
        return True

    def _collect(self, value: Any, pointer: str, out: list[FormatViolation]) -> None:
        check = self.check
        if check is not None and isinstance(value, str) and not _valid(check, value):
            out.append(FormatViolation(pointer, check))
        properties = self.properties
        if properties and isinstance(value, dict):
            for name in sorted(properties):
                if name in value:
                    properties[name]._collect(value[name], f"{pointer}/{name}", out)
        items = self.items
        if items is not None and isinstance(value, list):
            for index, element in enumerate(value):
                items._collect(element, f"{pointer}/{index}", out)


def _valid(check: str, text: str) -> bool:
    return is_date(text) if check == "date" else is_date_time(text)


def format_plan(schema: Any) -> FormatPlan | None:
    """The format walk of ``schema``, or ``None`` when it asserts no ``date``/``date-time``.

    Anything that is not an object (a boolean schema, a malformed keyword) asserts nothing.
    """
    if not isinstance(schema, dict):
        return None
    fmt = schema.get("format")
    check = fmt if isinstance(fmt, str) and fmt in CHECKED_FORMATS else None
    properties: dict[str, FormatPlan] = {}
    declared = schema.get("properties")
    if isinstance(declared, dict):
        for name, subschema in declared.items():
            plan = format_plan(subschema)
            if plan is not None and isinstance(name, str):
                properties[name] = plan
    items = format_plan(schema["items"]) if "items" in schema else None
    if check is None and not properties and items is None:
        return None
    return FormatPlan(check, properties, items)


def format_violations(schema: Any, value: Any, pointer: str = "") -> list[FormatViolation]:
    """Walk ``value`` along ``schema``; every ``date``/``date-time`` failure, in walk order.

    >>> schema = {"properties": {"on": {"format": "date"}}}
    >>> format_violations(schema, {"on": "2026-02-30"}, "/output")
    [FormatViolation(pointer='/output/on', format='date')]
    """
    plan = format_plan(schema)
    return [] if plan is None else plan.violations(value, pointer)


def formats_hold(schema: Any, value: Any) -> bool:
    """Whether ``value`` has no ``date``/``date-time`` failure along ``schema``."""
    plan = format_plan(schema)
    return plan is None or plan.holds(value)
