"""Locale families, separators, currency symbols and translation fallback candidates.

Locales are matched by ASCII-lowercased prefix (so ``nl``, ``nl-NL`` and ``nld`` are all the
``nl`` family). Only ``nl`` and ``de`` switch separators; the euro sign is used for ``nl``,
``de``, ``fr``, ``es``, ``it`` and ``pt`` locales.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

__all__ = [
    "LocaleFamily",
    "ascii_lower",
    "currency_symbol",
    "locale_family",
    "number_separators",
    "translation_candidates",
]

LocaleFamily: TypeAlias = Literal["nl", "de", "en-us", "iso"]

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_EURO_PREFIXES = ("nl", "de", "fr", "es", "it", "pt")


def ascii_lower(text: str) -> str:
    """Lowercase ASCII letters only (other characters are kept as they are)."""
    return text.translate(_ASCII_LOWER)


def locale_family(locale: str) -> LocaleFamily:
    """The date/number family of a locale: ``nl``, ``de``, ``en-us`` or ``iso``."""
    lowered = ascii_lower(locale)
    if lowered.startswith("nl"):
        return "nl"
    if lowered.startswith("de"):
        return "de"
    if lowered.startswith(("en-us", "en_us")):
        return "en-us"
    return "iso"


def number_separators(locale: str) -> tuple[str, str]:
    """``(group, decimal)`` separators: ``(".", ",")`` for nl/de, ``(",", ".")`` otherwise."""
    if locale_family(locale) in ("nl", "de"):
        return ".", ","
    return ",", "."


def currency_symbol(locale: str) -> str:
    """``€`` for eurozone-language locales, ``$`` otherwise."""
    return "€" if ascii_lower(locale).startswith(_EURO_PREFIXES) else "$"


def _primary_subtag(locale: str) -> str:
    for index, char in enumerate(locale):
        if char in "-_":
            return locale[:index]
    return locale


def translation_candidates(locale: str, fallback: str) -> list[str]:
    """Bundle names to try, in order: locale, its primary subtag, fallback, its subtag, ``en``.

    >>> translation_candidates("nl-NL", "de_DE")
    ['nl-NL', 'nl', 'de_DE', 'de', 'en']
    """
    candidates: list[str] = []
    for name in (locale, fallback, "en"):
        if not name:
            continue
        if name not in candidates:
            candidates.append(name)
        primary = _primary_subtag(name)
        if primary != name and primary not in candidates:
            candidates.append(primary)
    return candidates
