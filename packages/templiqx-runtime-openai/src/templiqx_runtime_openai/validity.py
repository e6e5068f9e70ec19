"""``output_schema_valid``: does an output satisfy the contract's output schema?

The answer must agree with the application's own check (DECISIONS 8), which is the core's
bounded validation: the schema compiles in jsonschema-rs (draft from ``$schema``, Draft 2020-12
by default, no network), the engine accepts the value with ``format`` not asserted, and the
``date``/``date-time`` formats hold along ``properties`` and ``items``. Adapters may not import
the core, so this module re-states that rule with the same engine (jsonschema-rs) and its own
small format checks. A schema that does not compile makes every output invalid; nothing here
ever raises.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Final

import jsonschema_rs
import msgspec

__all__ = ["is_date", "is_date_time", "output_schema_valid"]

_DAYS: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_CACHE_SIZE: Final = 256
_key: Final = msgspec.msgpack.Encoder().encode


def _number(text: str) -> int | None:
    return int(text) if text and text.isascii() and text.isdigit() else None


def is_date(text: str) -> bool:
    """``YYYY-MM-DD`` naming a real Gregorian day (ASCII digits only)."""
    if len(text) != 10 or text[4] != "-" or text[7] != "-":
        return False
    year, month, day = _number(text[:4]), _number(text[5:7]), _number(text[8:])
    if year is None or month is None or day is None or not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= day <= (29 if month == 2 and leap else _DAYS[month - 1])


def _is_offset(text: str) -> bool:
    if text == "Z":
        return True
    if len(text) != 6 or text[0] not in "+-" or text[3] != ":":
        return False
    hours, minutes = _number(text[1:3]), _number(text[4:])
    return hours is not None and minutes is not None and hours <= 23 and minutes <= 59


def is_date_time(text: str) -> bool:
    """RFC 3339 ``YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)``, uppercase ``T``/``Z``."""
    if len(text) < 20 or not text.isascii() or not is_date(text[:10]) or text[10] != "T":
        return False
    clock = text[11:]
    if len(clock) < 9 or clock[2] != ":" or clock[5] != ":":
        return False
    hour, minute, second = _number(clock[:2]), _number(clock[3:5]), _number(clock[6:8])
    if hour is None or minute is None or second is None:
        return False
    if hour > 23 or minute > 59 or second > 59:
        return False
    zone = clock[8:]
    if zone.startswith("."):
        digits = len(zone) - len(zone[1:].lstrip("0123456789")) - 1
        if digits == 0:
            return False
        zone = zone[1 + digits :]
    return _is_offset(zone)


def _formats_hold(schema: Any, value: Any) -> bool:
    if not isinstance(schema, dict):
        return True
    fmt = schema.get("format")
    if (
        isinstance(value, str)
        and fmt in ("date", "date-time")
        and not (is_date(value) if fmt == "date" else is_date_time(value))
    ):
        return False
    properties = schema.get("properties")
    if isinstance(properties, dict) and isinstance(value, dict):
        for name, subschema in properties.items():
            if name in value and not _formats_hold(subschema, value[name]):
                return False
    if "items" in schema and isinstance(value, list):
        items = schema["items"]
        return all(_formats_hold(items, element) for element in value)
    return True


class _Compiled:
    __slots__ = ("validator",)

    def __init__(self, validator: Any) -> None:
        self.validator = validator


_cache: OrderedDict[bytes, _Compiled] = OrderedDict()
_lock = threading.Lock()


def _compile(schema: Any) -> _Compiled:
    try:
        validator = jsonschema_rs.validator_for(schema, validate_formats=False, offline=True)
    except Exception:  # any compile problem means "no output is valid"
        validator = None
    return _Compiled(validator)


def _compiled(schema: Any) -> _Compiled:
    try:
        key = _key(schema)
    except (TypeError, ValueError, OverflowError):
        return _compile(schema)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    built = _compile(schema)
    with _lock:
        _cache[key] = built
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return built


def output_schema_valid(schema: Any, output: Any) -> bool:
    """Whether ``output`` satisfies ``schema`` under the bounded rules (never raises)."""
    validator = _compiled(schema).validator
    if validator is None:
        return False
    try:
        if not validator.is_valid(output):
            return False
    except Exception:  # a value the engine cannot read is not valid output
        return False
    return _formats_hold(schema, output)
