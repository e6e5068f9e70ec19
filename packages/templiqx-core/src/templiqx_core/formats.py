"""The ``date`` and ``date-time`` string formats, asserted by the core (never by the engine).

``date`` is ``YYYY-MM-DD`` with a real Gregorian calendar day. ``date-time`` is a date, an
uppercase ``T``, ``HH:MM:SS`` (no leap second), optional ``.`` + fraction digits, and a zone
``Z`` or ``±HH:MM``. Every numeric part must be ASCII digits: unlike the reference, a ``+`` sign
inside a part (``2026-+1-01``) is rejected.
"""

from __future__ import annotations

import re
from typing import Any

from templiqx_contracts import Diagnostic

__all__ = ["FormatPlan", "format_plan", "is_date", "is_date_time", "validate_formats"]

_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")


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


class FormatPlan:
    """The parts of a schema the format walk visits: only subtrees that assert a format."""

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

    def run(self, value: Any, pointer: str, code: str, out: list[Diagnostic]) -> None:
        """Report every date/date-time failure of ``value`` (pointers follow the instance)."""
        check = self.check
        if check is not None and isinstance(value, str):
            valid = is_date(value) if check == "date" else is_date_time(value)
            if not valid:
                out.append(Diagnostic.error(code, f"value is not a valid {check}", pointer))
        if self.properties and isinstance(value, dict):
            for name in sorted(self.properties):
                if name in value:
                    self.properties[name].run(value[name], f"{pointer}/{name}", code, out)
        items = self.items
        if items is not None and isinstance(value, list):
            for index, element in enumerate(value):
                items.run(element, f"{pointer}/{index}", code, out)


def format_plan(schema: Any) -> FormatPlan | None:
    """The format walk of ``schema``, or ``None`` when no ``date``/``date-time`` is asserted.

    Only ``format``, ``properties`` and ``items`` are followed, as in the reference.
    """
    if not isinstance(schema, dict):
        return None
    fmt = schema.get("format")
    check = fmt if fmt in ("date", "date-time") else None
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


def validate_formats(
    schema: Any, value: Any, pointer: str, code: str, out: list[Diagnostic]
) -> None:
    """Walk ``value`` along ``schema`` and report every ``date``/``date-time`` failure.

    The walk follows ``properties`` (for the object's present keys, in sorted order) and
    ``items``; the pointer of each failure is the instance location (``P/{name}``, ``P/{j}``).
    """
    plan = format_plan(schema)
    if plan is not None:
        plan.run(value, pointer, code, out)
