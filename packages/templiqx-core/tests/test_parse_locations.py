"""Every parse failure has a line and column, also those found outside the YAML parser: an
empty document, and the refusals of a render request written as JSON (unknown field, wrong
type, number out of range, too deep). The size limit and alias budget are in test_yaml_limits."""

from __future__ import annotations

import pytest

from templiqx_contracts import Diagnostic
from templiqx_core import parse_contract, parse_render_request
from templiqx_core.limits import MAX_NESTING_DEPTH


def located(diagnostics: list[Diagnostic]) -> tuple[int, int]:
    assert len(diagnostics) == 1
    diagnostic = diagnostics[0]
    assert diagnostic.code.startswith("TQX_PARSE_")
    assert diagnostic.span is not None, diagnostic.message
    where = (diagnostic.span.line, diagnostic.span.column)
    # one location per diagnostic: the span's, not repeated in the message (issue #28)
    assert f"line {where[0]} column {where[1]}" not in diagnostic.message
    return where


@pytest.mark.parametrize(
    ("source", "where"),
    [("", (1, 1)), ("# only\n# comments\n", (3, 1)), ("\n\n  \n", (4, 1))],
)
def test_an_empty_document_is_located_where_the_input_ends(
    source: str, where: tuple[int, int]
) -> None:
    assert located(parse_contract(source)[1]) == where


@pytest.mark.parametrize(
    ("source", "where", "words"),
    [
        ('{"inputs": {}, "extra": 1}', (1, 16), "unknown field `extra`"),
        # the same name inside a string value is not the member
        ('{"inputs": {"x": "\\"extra\\": 1"}, "extra": 2}', (1, 35), "unknown field `extra`"),
        ('{\n  "inputs": [1, 2]\n}', (2, 13), "inputs: expected a JSON object"),
        ('\ufeff{"context": 3}', (1, 13), "context: expected a JSON object"),
        ('{"inputs": {"a": "1e400", "b": 1e400}}', (1, 32), "number `1e400` is out of range"),
        (
            '{"inputs":\n' + "[" * 200 + "]" * 200 + "}",
            (2, MAX_NESTING_DEPTH),
            "MAX_NESTING_DEPTH",
        ),
    ],
)
def test_json_request_refusals_are_located(source: str, where: tuple[int, int], words: str) -> None:
    _, diagnostics = parse_render_request(source)
    assert words in diagnostics[0].message
    assert located(diagnostics) == where
