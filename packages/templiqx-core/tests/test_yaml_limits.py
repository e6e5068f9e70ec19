"""Reliability limits: document size, nesting depth and the alias budget (issue #9, R7)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from templiqx_contracts import Diagnostic
from templiqx_core import limits
from templiqx_core.parse import (
    parse_contract,
    parse_json_value,
    parse_manifest,
    parse_render_request,
    parse_translation_bundle,
)

Parser = Callable[[Any], tuple[Any, list[Diagnostic]]]


def refused(parse: Parser, source: str | bytes) -> Diagnostic:
    value, diagnostics = parse(source)
    assert value is None
    assert len(diagnostics) == 1
    diagnostic = diagnostics[0]
    assert diagnostic.code == "TQX_PARSE_YAML"
    assert diagnostic.severity == "error"
    return diagnostic


def test_limits_are_documented_constants() -> None:
    assert limits.MAX_NESTING_DEPTH == 128
    assert limits.ALIAS_EXPANSION_FACTOR == 100
    assert limits.MAX_DOCUMENT_BYTES == 8 * 1024 * 1024
    assert limits.MAX_EXPANDED_NODES == 100_000
    assert limits.MAX_EXPANDED_BYTES == 16 * 1024 * 1024


# --- size --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def huge() -> bytes:
    return b"a: " + b"x" * (100 * 1024 * 1024)


@pytest.mark.parametrize("parse", [parse_contract, parse_json_value, parse_render_request])
@pytest.mark.parametrize("as_text", [False, True])
def test_a_100_mb_input_is_refused_before_parsing(
    parse: Parser, as_text: bool, huge: bytes
) -> None:
    source: str | bytes = huge.decode("ascii") if as_text else huge
    started = time.perf_counter()
    diagnostic = refused(parse, source)
    assert time.perf_counter() - started < 0.5  # refused without reading the content
    assert "MAX_DOCUMENT_BYTES" in diagnostic.message
    assert str(limits.MAX_DOCUMENT_BYTES) in diagnostic.message
    assert diagnostic.span is not None  # where the document crosses the limit
    assert diagnostic.span.line == 1
    assert diagnostic.span.column == limits.MAX_DOCUMENT_BYTES + 1


def test_the_size_limit_is_exact() -> None:
    at_limit = b"a: " + b"x" * (limits.MAX_DOCUMENT_BYTES - 4) + b"\n"
    assert len(at_limit) == limits.MAX_DOCUMENT_BYTES
    value, diagnostics = parse_json_value(at_limit)
    assert diagnostics == []
    assert len(value["a"]) == limits.MAX_DOCUMENT_BYTES - 4
    assert "MAX_DOCUMENT_BYTES" in refused(parse_json_value, at_limit + b" ").message


def test_the_size_limit_counts_utf8_bytes_of_text() -> None:
    text = "a: " + "é" * (limits.MAX_DOCUMENT_BYTES // 2)  # fewer characters than the limit
    assert len(text) < limits.MAX_DOCUMENT_BYTES
    assert "MAX_DOCUMENT_BYTES" in refused(parse_json_value, text).message


# --- depth -------------------------------------------------------------------------------


def test_10000_deep_flow_nesting_is_refused() -> None:
    diagnostic = refused(parse_json_value, "[" * 10_000 + "]" * 10_000)
    assert "MAX_NESTING_DEPTH" in diagnostic.message
    assert diagnostic.span is not None  # libyaml's own guard (1,000 flow levels) fires first
    diagnostic = refused(parse_json_value, "[" * 200 + "]" * 200)
    assert "MAX_NESTING_DEPTH" in diagnostic.message
    assert diagnostic.span is not None
    assert (diagnostic.span.line, diagnostic.span.column) == (1, 129)


def test_10000_deep_nesting_is_refused_by_every_reader() -> None:
    deep = "{a: " * 10_000 + "}" * 10_000
    for parse in (parse_contract, parse_manifest, parse_translation_bundle, parse_render_request):
        assert "MAX_NESTING_DEPTH" in refused(parse, deep).message


def test_10000_deep_json_request_is_refused() -> None:
    deep = '{"inputs": {"x": ' + "[" * 10_000 + "]" * 10_000 + "}}"
    assert "MAX_NESTING_DEPTH" in refused(parse_render_request, deep).message
    nested = '{"inputs": {"x": ' + "[" * 200 + "]" * 200 + "}}"
    assert "MAX_NESTING_DEPTH" in refused(parse_render_request, nested).message


def test_block_nesting_depth_limit_is_exact() -> None:
    def nested(levels: int) -> str:
        return "".join("  " * level + "k:\n" for level in range(levels - 1)) + (
            "  " * (levels - 1) + "k: v\n"
        )

    value, diagnostics = parse_json_value(nested(limits.MAX_NESTING_DEPTH))
    assert diagnostics == []
    depth = 0
    while isinstance(value, dict):
        value = value["k"]
        depth += 1
    assert depth == limits.MAX_NESTING_DEPTH
    diagnostic = refused(parse_json_value, nested(limits.MAX_NESTING_DEPTH + 1))
    assert "MAX_NESTING_DEPTH" in diagnostic.message


def test_aliases_count_towards_the_depth() -> None:
    deep = "[" * 100 + "]" * 100
    value, diagnostics = parse_json_value(f"a: &d {deep}\nb: *d\n")
    assert diagnostics == []
    assert value["a"] == value["b"]
    diagnostic = refused(parse_json_value, f"a: &d {deep}\nb: {'[' * 30}*d{']' * 30}\n")
    assert "MAX_NESTING_DEPTH" in diagnostic.message


# --- aliases -----------------------------------------------------------------------------


def laughs(levels: int, fan_out: int = 10) -> str:
    lines = ["l0: &l0 [" + ", ".join(["lol"] * fan_out) + "]"]
    for level in range(1, levels):
        aliases = ", ".join([f"*l{level - 1}"] * fan_out)
        lines.append(f"l{level}: &l{level} [{aliases}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("parse", [parse_json_value, parse_contract, parse_translation_bundle])
def test_billion_laughs_is_refused(parse: Parser) -> None:
    diagnostic = refused(parse, laughs(9))
    assert "MAX_EXPANDED_NODES" in diagnostic.message
    assert diagnostic.span is not None


def test_the_reference_alias_budget_is_enforced() -> None:
    # 5 levels of 9: ~66,000 expanded nodes (below the absolute cap), but 8,298 alias
    # expansions for 62 events: more than 100 per event, which the reference refuses.
    diagnostic = refused(parse_json_value, laughs(5, fan_out=9))
    assert "ALIAS_EXPANSION_FACTOR" in diagnostic.message
    assert diagnostic.span is not None  # a property of the whole document: its start
    assert (diagnostic.span.line, diagnostic.span.column) == (1, 1)
    value, diagnostics = parse_json_value(laughs(4))  # 1,230 expansions for 53 events
    assert diagnostics == []
    assert len(value["l3"][9][9][9]) == 10


def test_a_large_alias_fan_out_is_refused_by_the_absolute_cap() -> None:
    source = "a: &a [" + ", ".join(["x"] * 2000) + "]\nb: [" + ", ".join(["*a"] * 600) + "]\n"
    diagnostic = refused(parse_json_value, source)
    assert "MAX_EXPANDED_NODES" in diagnostic.message


def test_ordinary_alias_reuse_is_fine() -> None:
    source = "schema: &s {type: string}\nothers: [*s, *s, *s]\n"
    value, diagnostics = parse_json_value(source)
    assert diagnostics == []
    assert value["others"] == [{"type": "string"}] * 3


# --- expanded bytes ----------------------------------------------------------------------

MEGABYTE_STRING = "x" * 1_000_000


def string_bomb(aliases: int, *, key: str = "aliases") -> str:
    """One 1 MB string aliased ``aliases`` times: few nodes, far more text once expanded."""
    items = "".join("  - *s\n" for _ in range(aliases))
    return f"text: &s {MEGABYTE_STRING}\n{key}:\n{items}"


@pytest.mark.parametrize(
    "parse", [parse_json_value, parse_contract, parse_manifest, parse_translation_bundle]
)
def test_a_string_alias_bomb_is_refused_while_reading(parse: Parser) -> None:
    source = string_bomb(1000)  # 1 MB of YAML, 1 GB once expanded; well under the node budgets
    assert len(source) < limits.MAX_DOCUMENT_BYTES
    started = time.perf_counter()
    diagnostic = refused(parse, source)
    assert time.perf_counter() - started < 0.5
    assert "MAX_EXPANDED_BYTES" in diagnostic.message
    assert str(limits.MAX_EXPANDED_BYTES) in diagnostic.message
    assert diagnostic.span is not None
    # The alias that crosses the budget: the 17th (16 MiB is 16.7 copies of 1,000,000 bytes).
    assert (diagnostic.span.line, diagnostic.span.column) == (18, 5)


def test_the_expanded_byte_budget_is_exact() -> None:
    size = (limits.MAX_EXPANDED_BYTES - 4) // 4  # four copies plus the keys `aa` and `bb`
    at_budget = f"aa: &a {'x' * size}\nbb: [*a, *a, *a]\n"
    assert 4 * size + 4 == limits.MAX_EXPANDED_BYTES
    value, diagnostics = parse_json_value(at_budget)
    assert diagnostics == []
    assert len(value["bb"]) == 3
    diagnostic = refused(parse_json_value, at_budget.replace("x", "xx", 1))
    assert "MAX_EXPANDED_BYTES" in diagnostic.message


def test_the_expanded_byte_budget_counts_utf8_bytes() -> None:
    text = "é" * (limits.MAX_EXPANDED_BYTES // 8 + 1)  # a quarter of the budget in characters
    diagnostic = refused(parse_json_value, f"a: &a {text}\nb: [*a, *a, *a]\n")
    assert "MAX_EXPANDED_BYTES" in diagnostic.message


def test_aliased_collections_count_their_scalar_text() -> None:
    inner = "{" + ", ".join(f"k{i}: {'v' * 100_000}" for i in range(20)) + "}"  # ~2 MB
    source = f"a: &a {inner}\nb: [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    assert "MAX_EXPANDED_BYTES" in refused(parse_json_value, source).message
    value, diagnostics = parse_json_value(f"a: &a {inner}\nb: [*a, *a, *a]\n")
    assert diagnostics == []
    assert value["b"][2]["k19"] == "v" * 100_000


def test_a_document_without_aliases_never_reaches_the_byte_budget() -> None:
    at_limit = "a: " + "x" * (limits.MAX_DOCUMENT_BYTES - 4) + "\n"
    value, diagnostics = parse_json_value(at_limit)
    assert diagnostics == []
    assert len(value["a"]) == limits.MAX_DOCUMENT_BYTES - 4
