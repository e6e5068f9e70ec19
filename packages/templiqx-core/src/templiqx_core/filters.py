"""The eight interpolation filters. Each takes a JSON value and returns a string.

Filters have no arguments; the locale comes from ``context.locale`` and translations from
``context._templiqx_translations`` (with ``context.fallback_locale``). Failures raise
:class:`RenderError` carrying a diagnostic with pointer ``""``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from templiqx_contracts import CanonicalJSONError, Filter, canonical_json
from templiqx_core import codes
from templiqx_core.locale import (
    currency_symbol,
    locale_family,
    number_separators,
    translation_candidates,
)

__all__ = ["WHITE_SPACE", "RenderError", "apply_filter", "display", "json_text"]

TRANSLATIONS_KEY: Final = "_templiqx_translations"

WHITE_SPACE: Final = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
"""The Unicode ``White_Space`` property (what ``trim`` removes; ``str.strip()`` removes more)."""


class RenderError(Exception):
    """A rendering failure; compilation returns its diagnostic alone."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.diagnostic = codes.problem(code, message, "")


_encode_sorted: Final = msgspec.json.Encoder(order="sorted").encode
_encode_msgpack: Final = msgspec.msgpack.Encoder().encode
# msgpack refuses integers outside 64 bits and writes every float as float64 (marker 0xcb).
# Without that byte there is no float, and msgspec's sorted JSON is already canonical; the
# byte inside a string is a false alarm that only costs the exact check.
_FLOAT64: Final = b"\xcb"
_U64_MAX: Final = (1 << 64) - 1
_I64_MIN: Final = -(1 << 63)


def _prints_exactly(value: Any) -> bool:
    """Whether msgspec's sorted output of ``value`` is already its canonical JSON: every float
    finite and below 1e16 in magnitude, every integer 64-bit, every key a string."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if not _I64_MIN <= item <= _U64_MAX:
                return False
        elif kind is float:
            if not abs(item) < 1e16:
                return False
        elif kind is list:
            stack.extend(item)
        elif kind is dict:
            if any(type(key) is not str for key in item):
                return False
            stack.extend(item.values())
        else:
            return False
    return True


def _canonical_text(value: Any) -> str:
    try:
        return canonical_json(value).decode("utf-8")
    except (CanonicalJSONError, TypeError, ValueError, OverflowError) as exc:
        raise RenderError(codes.VALUE_NOT_JSON, f"value cannot be rendered as JSON: {exc}") from exc


def json_text(value: Any) -> str:
    """Compact canonical JSON text of a value (sorted keys, reference float layout)."""
    try:
        out = _encode_sorted(value)
        packed = _encode_msgpack(value)
    except (TypeError, ValueError, OverflowError):
        return _canonical_text(value)
    if _FLOAT64 not in packed or _prints_exactly(value):
        return out.decode("utf-8")
    return _canonical_text(value)


def display(value: Any) -> str:
    """The display form: strings as they are, ``null`` as ``""``, everything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json_text(value)


def _format_date(value: Any, locale: str) -> str:
    if not isinstance(value, str):
        raise RenderError(codes.FILTER_INPUT, "format_date expects an ISO 'YYYY-MM-DD' string")
    parts = value.split("-")
    if (
        len(parts) != 3
        or [len(part) for part in parts] != [4, 2, 2]
        or not all(part.isascii() and part.isdigit() for part in parts)
    ):
        raise RenderError(
            codes.FILTER_INPUT, f"format_date could not parse '{value}' as 'YYYY-MM-DD'"
        )
    year, month, day = parts
    family = locale_family(locale)
    if family == "nl":
        return f"{day}-{month}-{year}"
    if family == "de":
        return f"{day}.{month}.{year}"
    if family == "en-us":
        return f"{month}/{day}/{year}"
    return f"{year}-{month}-{day}"


def _format_number(value: Any, locale: str, filter_name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RenderError(codes.FILTER_INPUT, f"{filter_name} expects a numeric value")
    try:
        number = float(value)
    except OverflowError as exc:
        raise RenderError(
            codes.VALUE_NOT_JSON, f"{filter_name} input {value} is outside the 64-bit range"
        ) from exc
    if not math.isfinite(number):
        raise RenderError(codes.VALUE_NOT_JSON, f"{filter_name} input is not a finite number")
    group, decimal = number_separators(locale)
    negative = math.copysign(1.0, number) < 0 and number != 0.0
    integer_part, _, fraction = format(abs(number), ".2f").partition(".")
    head = len(integer_part) % 3 or 3
    groups = [integer_part[:head]]
    groups.extend(integer_part[i : i + 3] for i in range(head, len(integer_part), 3))
    return ("-" if negative else "") + group.join(groups) + decimal + fraction


def _translate(value: Any, locale: str, context: Mapping[str, Any]) -> str:
    if not isinstance(value, str):
        raise RenderError(codes.FILTER_INPUT, "translate expects a string translation key")
    bundles = context.get(TRANSLATIONS_KEY)
    if not isinstance(bundles, dict):
        raise RenderError(
            codes.TRANSLATION_MISSING, "no translation bundles were loaded for this package"
        )
    fallback = context.get("fallback_locale")
    for candidate in translation_candidates(locale, fallback if isinstance(fallback, str) else ""):
        bundle = bundles.get(candidate)
        if isinstance(bundle, dict):
            text = bundle.get(value)
            if isinstance(text, str):
                return text
    raise RenderError(codes.TRANSLATION_KEY, f"missing translation key '{value}'")


def apply_filter(name: Filter, value: Any, locale: str, context: Mapping[str, Any]) -> str:
    """Apply one filter to ``value`` (``locale`` and ``context`` come from the request root)."""
    if name == "trim":
        return display(value).strip(WHITE_SPACE)
    if name == "lower":
        return display(value).lower()
    if name == "upper":
        return display(value).upper()
    if name == "json":
        return json_text(value)
    if name == "format_date":
        return _format_date(value, locale)
    if name == "format_number":
        return _format_number(value, locale, "format_number")
    if name == "format_currency":
        return currency_symbol(locale) + _format_number(value, locale, "format_currency")
    if name == "translate":
        return _translate(value, locale, context)
    raise RenderError(codes.FILTER_INPUT, f"unknown filter '{name}'")
