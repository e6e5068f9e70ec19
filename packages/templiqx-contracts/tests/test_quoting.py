"""quote_input: the one bound on user input echoed in diagnostic messages."""

from __future__ import annotations

from templiqx_contracts import QUOTE_LIMIT, quote_input


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
