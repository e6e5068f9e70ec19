"""The eight filters and the locale families (core.md §3.6, §7.2 and the derived examples)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from templiqx_contracts import Contract, Diagnostic, Filter, RenderRequest
from templiqx_core import compile_interaction, render_messages
from templiqx_core.filters import WHITE_SPACE
from templiqx_core.locale import (
    currency_symbol,
    locale_family,
    number_separators,
    translation_candidates,
)

BUNDLES = {"en": {"greeting": "Hello"}, "nl": {"greeting": "Hallo"}}


def filter_contract(filter_name: str, path: str) -> Contract:
    """The §7.2 fixture: optional amount/day/key inputs, context locale, one interpolation."""
    return msgspec.convert(
        {
            "api_version": "templiqx/v1alpha1",
            "id": "filters",
            "version": "1.0.0",
            "inputs": {
                "amount": {"schema": {"type": "number"}},
                "day": {"schema": {"type": "string"}},
                "key": {"schema": {"type": "string"}},
            },
            "context": {
                "locale": {"schema": {"type": "string"}},
                "fallback_locale": {"schema": {"type": "string"}},
            },
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "kind": "interpolate",
                            "expression": {"kind": "ref", "path": path},
                            "filters": [filter_name],
                        }
                    ],
                }
            ],
            "output_schema": {"type": "object"},
        },
        Contract,
    )


def run(
    filter_name: str, path: str, inputs: dict[str, Any], context: dict[str, Any]
) -> tuple[str | None, list[Diagnostic]]:
    compiled, diagnostics = compile_interaction(
        filter_contract(filter_name, path), RenderRequest(inputs=inputs, context=context), []
    )
    return (compiled.messages[0].content if compiled else None), diagnostics


def rendered(filter_name: str, path: str, value: Any, locale: str) -> str:
    text, diagnostics = run(filter_name, path, {path.split(".")[1]: value}, {"locale": locale})
    assert diagnostics == []
    assert text is not None
    return text


def failure(text: str | None, diagnostics: list[Diagnostic]) -> Diagnostic:
    assert text is None
    assert len(diagnostics) == 1
    assert diagnostics[0].severity == "error"
    assert diagnostics[0].json_pointer == ""
    return diagnostics[0]


# --- the ten pinned cases -------------------------------------------------------------------


def test_1_format_date_matches_nl_nl_fixture() -> None:
    assert rendered("format_date", "inputs.day", "2026-07-12", "nl-NL") == "12-07-2026"


@pytest.mark.parametrize(
    ("locale", "expected"),
    [("de-DE", "12.07.2026"), ("en-US", "07/12/2026"), ("", "2026-07-12")],
)
def test_2_format_date_families_differ(locale: str, expected: str) -> None:
    assert rendered("format_date", "inputs.day", "2026-07-12", locale) == expected


@pytest.mark.parametrize(
    ("locale", "expected"), [("nl-NL", "1.234.567,50"), ("en-US", "1,234,567.50")]
)
def test_3_format_number_groups_per_locale(locale: str, expected: str) -> None:
    assert rendered("format_number", "inputs.amount", 1234567.5, locale) == expected


def test_4_invalid_date_input_fails_with_stable_diagnostic() -> None:
    diagnostic = failure(*run("format_date", "inputs.day", {"day": "not-a-date"}, {}))
    assert diagnostic.code == "TQX_FILTER_INPUT"
    assert diagnostic.message == "format_date could not parse 'not-a-date' as 'YYYY-MM-DD'"


def test_5_format_number_rejects_non_numeric_input() -> None:
    text, diagnostics = run("format_number", "inputs.amount", {"amount": "abc"}, {})
    assert text is None
    assert [(d.code, d.json_pointer) for d in diagnostics] == [
        ("TQX_VALUE_SCHEMA", "/inputs/amount")
    ]
    assert diagnostics[0].message == '"abc" is not of type "number"'


@pytest.mark.parametrize(("locale", "expected"), [("nl-NL", "€42,50"), ("en-US", "$42.50")])
def test_6_format_currency_prefixes_locale_symbol(locale: str, expected: str) -> None:
    assert rendered("format_currency", "inputs.amount", 42.5, locale) == expected


def test_7_translate_resolves_locale_with_fallback() -> None:
    text, diagnostics = run(
        "translate",
        "inputs.key",
        {"key": "greeting"},
        {"locale": "nl", "_templiqx_translations": BUNDLES},
    )
    assert diagnostics == []
    assert text == "Hallo"


def test_8_translate_normalizes_locale_tags_before_fallback() -> None:
    text, diagnostics = run(
        "translate",
        "inputs.key",
        {"key": "greeting"},
        {"locale": "nl-NL", "_templiqx_translations": {"nl": {"greeting": "Hallo"}}},
    )
    assert diagnostics == []
    assert text == "Hallo"


@pytest.mark.parametrize("locale", ["fr-FR", "it-IT"])
def test_9_format_currency_uses_euro_symbol_for_eurozone_locales(locale: str) -> None:
    assert rendered("format_currency", "inputs.amount", 42.5, locale) == "€42.50"


def test_10_translate_missing_key_fails_closed() -> None:
    diagnostic = failure(
        *run(
            "translate",
            "inputs.key",
            {"key": "missing"},
            {"locale": "en", "_templiqx_translations": {"en": {"greeting": "Hello"}}},
        )
    )
    assert diagnostic.code == "TQX_TRANSLATION_KEY"
    assert diagnostic.message == "missing translation key 'missing'"


# --- derived examples (core.md §3.6) --------------------------------------------------------


@pytest.mark.parametrize(
    ("filter_name", "value", "locale", "expected"),
    [
        ("format_number", 0.125, "en", "0.12"),
        ("format_number", -0.001, "en", "-0.00"),
        ("format_number", -0.0, "nl", "0,00"),
        ("format_number", 1234567, "en-US", "1,234,567.00"),
        ("format_number", 1e21, "en-US", "1,000,000,000,000,000,000,000.00"),
        ("format_number", 0.5, "de", "0,50"),
        ("format_number", 999.995, "en", "1,000.00"),
        ("format_number", 100, "en", "100.00"),
        ("format_number", 1000, "en", "1,000.00"),
        ("format_currency", -1234.5, "nl", "€-1.234,50"),
        ("format_currency", 42.5, "pt-BR", "€42.50"),
        ("format_currency", 42.5, "es-MX", "€42.50"),
        ("format_currency", 42.5, "en-GB", "$42.50"),
        ("format_currency", 3, "DE-de", "€3,00"),
    ],
)
def test_derived_number_and_currency_outputs(
    filter_name: str, value: float, locale: str, expected: str
) -> None:
    assert rendered(filter_name, "inputs.amount", value, locale) == expected


@pytest.mark.parametrize(
    ("locale", "expected"),
    [
        ("nld", "12-07-2026"),
        ("dev", "12.07.2026"),
        ("en_us", "07/12/2026"),
        ("EN-US-x", "07/12/2026"),
        ("en", "2026-07-12"),
        ("en-GB", "2026-07-12"),
        ("fr-FR", "2026-07-12"),
    ],
)
def test_locale_families_are_ascii_case_insensitive_prefixes(locale: str, expected: str) -> None:
    assert rendered("format_date", "inputs.day", "2026-07-12", locale) == expected


def test_format_date_does_no_calendar_check() -> None:
    assert rendered("format_date", "inputs.day", "2026-13-45", "nl") == "45-13-2026"


@pytest.mark.parametrize(
    "raw", ["2026-7-12", "2026-07-1a", "20260712", "2026-07-12-01", "+026-07-12"]
)
def test_format_date_rejects_other_shapes(raw: str) -> None:
    diagnostic = failure(*run("format_date", "inputs.day", {"day": raw}, {}))
    assert diagnostic.code == "TQX_FILTER_INPUT"


def test_format_date_rejects_a_non_string() -> None:
    diagnostic = failure(*run("format_date", "inputs.amount", {"amount": 3}, {}))
    assert diagnostic.code == "TQX_FILTER_INPUT"
    assert diagnostic.message == "format_date expects an ISO 'YYYY-MM-DD' string"


@pytest.mark.parametrize("filter_name", ["format_number", "format_currency"])
def test_number_filters_reject_a_string_at_render(filter_name: Filter) -> None:
    diagnostic = failure(*run(filter_name, "inputs.day", {"day": "12"}, {}))
    assert diagnostic.code == "TQX_FILTER_INPUT"
    assert diagnostic.message == f"{filter_name} expects a numeric value"


def test_translate_rejects_a_non_string_key() -> None:
    diagnostic = failure(
        *run("translate", "inputs.amount", {"amount": 1}, {"_templiqx_translations": BUNDLES})
    )
    assert diagnostic.code == "TQX_FILTER_INPUT"
    assert diagnostic.message == "translate expects a string translation key"


def test_translate_without_bundles_is_translation_missing() -> None:
    diagnostic = failure(*run("translate", "inputs.key", {"key": "greeting"}, {"locale": "nl"}))
    assert diagnostic.code == "TQX_TRANSLATION_MISSING"
    assert diagnostic.message == "no translation bundles were loaded for this package"


def test_translate_uses_fallback_then_english_and_skips_non_strings() -> None:
    bundles = {
        "fr": {"greeting": 42},
        "de": {"greeting": "Hallo (de)"},
        "en": {"greeting": "Hello", "only_en": "English"},
    }
    context = {"locale": "fr-FR", "fallback_locale": "de_DE", "_templiqx_translations": bundles}
    text, _ = run("translate", "inputs.key", {"key": "greeting"}, context)
    assert text == "Hallo (de)"
    text, _ = run("translate", "inputs.key", {"key": "only_en"}, context)
    assert text == "English"
    text, _ = run(
        "translate", "inputs.key", {"key": "greeting"}, {"_templiqx_translations": bundles}
    )
    assert text == "Hello"


def test_translate_locale_matching_is_case_sensitive() -> None:
    context = {"locale": "NL", "_templiqx_translations": {"nl": {"greeting": "Hallo"}}}
    diagnostic = failure(*run("translate", "inputs.key", {"key": "greeting"}, context))
    assert diagnostic.code == "TQX_TRANSLATION_KEY"


def test_translation_candidates_order() -> None:
    assert translation_candidates("nl-NL", "de_DE") == ["nl-NL", "nl", "de_DE", "de", "en"]
    assert translation_candidates("", "") == ["en"]
    assert translation_candidates("en-US", "en") == ["en-US", "en"]


def test_locale_helpers() -> None:
    assert locale_family("NL-be") == "nl"
    assert locale_family("de_AT") == "de"
    assert locale_family("en-us") == "en-us"
    assert locale_family("en") == "iso"
    assert number_separators("nl") == (".", ",")
    assert number_separators("fr") == (",", ".")
    assert currency_symbol("IT-it") == "€"
    assert currency_symbol("ja") == "$"


# --- text filters, json and display ------------------------------------------------------------


def test_trim_removes_unicode_white_space_only() -> None:
    value = "\u3000\u00a0 Ryan\t\u2029\u0085"
    assert rendered("trim", "inputs.day", value, "") == "Ryan"
    kept = "\x1c Ryan \x1f"
    assert rendered("trim", "inputs.day", kept, "") == kept  # str.strip() would remove these
    assert kept.strip() == "Ryan"
    assert "\x1c" not in WHITE_SPACE
    assert "\u200b" not in WHITE_SPACE


def test_upper_and_lower_use_full_case_mapping() -> None:
    assert rendered("upper", "inputs.day", "straße", "") == "STRASSE"
    assert rendered("lower", "inputs.day", "ÀÉÎ", "") == "àéî"


def test_json_filter_quotes_strings_and_prints_numbers_canonically() -> None:
    assert rendered("json", "inputs.day", 'a "b"', "") == '"a \\"b\\""'
    assert rendered("json", "inputs.amount", 1e16, "") == "1e+16"
    assert rendered("json", "inputs.amount", 0.00001, "") == "0.00001"
    assert rendered("json", "inputs.amount", 2.0, "") == "2.0"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(12, "12"), (12.0, "12.0"), (0.21, "0.21"), (1e-7, "1e-7"), (-0.0, "-0.0")],
)
def test_numbers_display_in_canonical_json_form(value: float, expected: str) -> None:
    contract = msgspec.convert(
        {
            "api_version": "templiqx/v1alpha1",
            "id": "display",
            "version": "1.0.0",
            "inputs": {"n": {"schema": {"type": "number"}, "required": True}},
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"kind": "interpolate", "expression": {"kind": "ref", "path": "inputs.n"}}
                    ],
                }
            ],
            "output_schema": {"type": "object"},
        },
        Contract,
    )
    compiled, diagnostics = compile_interaction(contract, RenderRequest(inputs={"n": value}), [])
    assert diagnostics == []
    assert compiled is not None
    assert compiled.messages[0].content == expected


def test_filters_chain_left_to_right_and_every_filter_returns_a_string() -> None:
    contract = filter_contract("json", "inputs.day")
    node = contract.messages[0].content[0]
    node.filters = ["trim", "json", "upper"]  # type: ignore[union-attr]
    messages, diagnostics = render_messages(contract, RenderRequest(inputs={"day": " ab "}))
    assert diagnostics == []
    assert messages is not None
    assert messages[0].content == '"AB"'
    node.filters = ["format_number", "format_number"]  # type: ignore[union-attr]
    messages, diagnostics = render_messages(contract, RenderRequest(inputs={"day": 1}))
    assert messages is None
    assert [d.code for d in diagnostics] == ["TQX_FILTER_INPUT"]
