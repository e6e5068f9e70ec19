"""quote_input: the one bound on user input echoed in diagnostic messages."""

from __future__ import annotations

import msgspec

from templiqx_contracts import (
    DIAGNOSTIC_TEXT_LIMIT,
    QUOTE_LIMIT,
    Diagnostic,
    bound_text,
    elide,
    quote_input,
)


def test_short_values_are_quoted_whole() -> None:
    assert quote_input("welcome") == "'welcome'"
    assert quote_input("") == "''"


def test_control_characters_and_quotes_are_escaped() -> None:
    assert quote_input("a\nb\tc\x00'") == "'a\\nb\\tc\\x00\\''"


def test_long_values_are_cut_and_say_how_long_they_were() -> None:
    value = "x" * 5_000_000
    quoted = quote_input(value)
    assert quoted == "'" + "x" * QUOTE_LIMIT + "…' (5000000 characters)"
    assert len(quoted) < 200


def test_the_limit_counts_characters_not_escapes() -> None:
    value = "\n" * (QUOTE_LIMIT + 1)
    quoted = quote_input(value)
    assert quoted.startswith("'" + "\\n" * QUOTE_LIMIT + "…'")
    assert quoted.endswith(f"({QUOTE_LIMIT + 1} characters)")


def test_a_foreign_message_keeps_its_start_and_its_end() -> None:
    message = '"' + "y" * 5_000_000 + '" is not one of 1 or 2'
    shown = elide(message)
    assert shown.startswith('"' + "y" * (QUOTE_LIMIT - 1) + "…")
    assert shown.endswith('" is not one of 1 or 2')
    assert f"({len(message) - 2 * QUOTE_LIMIT} characters cut)" in shown
    assert len(shown) < 2 * QUOTE_LIMIT + 40
    assert elide("short") == "short"


def test_every_diagnostic_text_field_is_bounded_however_it_is_built() -> None:
    huge = "z" * 5_000_000
    built = Diagnostic.error("TQX_X", huge, "/" + huge, help=huge, file=huge)
    decoded = msgspec.json.decode(
        msgspec.json.encode({"code": "TQX_X", "severity": "error", "message": huge, "help": huge}),
        type=Diagnostic,
    )
    for diagnostic in (built, decoded):
        for text in (diagnostic.message, diagnostic.help, diagnostic.file, diagnostic.json_pointer):
            if text is not None:
                assert len(text) <= DIAGNOSTIC_TEXT_LIMIT + 30
                assert text.endswith(f"… ({len(huge) + text.startswith('/')} characters)")
    exact = "a" * DIAGNOSTIC_TEXT_LIMIT
    assert Diagnostic.error("TQX_X", exact).message == exact
    assert bound_text(exact + "b") == exact + "… (1001 characters)"
