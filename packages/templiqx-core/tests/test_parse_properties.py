"""Property: no parser ever raises; it succeeds or returns one located TQX_PARSE_YAML."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from templiqx_contracts import Diagnostic, RenderRequest, canonical_json
from templiqx_core import (
    compile_interaction,
    diff_contracts,
    explain_contract,
    validate_contract,
)
from templiqx_core.parse import (
    PARSE_CODES,
    parse_contract,
    parse_json_value,
    parse_lock,
    parse_manifest,
    parse_node_list,
    parse_render_request,
    parse_translation_bundle,
)

PARSERS: tuple[Callable[..., tuple[Any, list[Diagnostic]]], ...] = (
    parse_contract,
    parse_manifest,
    parse_lock,
    parse_translation_bundle,
    parse_node_list,
    parse_render_request,
    parse_json_value,
)

YAML_ALPHABET = "abkx019:-_[]{}&*!|>'\"#\n \t?,.~%@`\\eE+\u00e9\u2028\x00\x07\ufeff"

yaml_like = st.text(alphabet=YAML_ALPHABET, max_size=200)
words = st.sampled_from(
    [
        "kind: text\n",
        "value: ",
        "- ",
        "&a ",
        "*a",
        "!!str ",
        "!!int ",
        "<<: ",
        "---\n",
        "...\n",
        "{",
        "}",
        "[",
        "]",
        "  ",
        "\n",
        "0x10",
        "1e400",
        "18446744073709551616",
        "'q'",
        '"\\ud800"',
        "api_version: v\n",
        "inputs:\n",
        "messages:\n",
        "? ",
        ": ",
        "~",
        "\t",
    ]
)
yaml_words = st.lists(words, max_size=30).map("".join)


def check(parse: Callable[..., tuple[Any, list[Diagnostic]]], source: str | bytes) -> None:
    value, diagnostics = parse(source, "prop.yaml")
    if diagnostics:
        assert value is None
        for diagnostic in diagnostics:  # every independent problem, each located
            assert (diagnostic.code, diagnostic.help) in PARSE_CODES.values()
            assert diagnostic.severity == "error"
            assert diagnostic.json_pointer is None
            assert diagnostic.file == "prop.yaml"
            assert diagnostic.message
            assert diagnostic.span is not None, f"no line/column: {diagnostic.message}"
            assert diagnostic.span.line >= 1
            assert diagnostic.span.column >= 1
            assert diagnostic.span.end_line == diagnostic.span.line
            assert diagnostic.span.end_column >= diagnostic.span.column
    else:
        if parse is not parse_json_value:
            assert value is not None
        canonical_json(value)  # every parsed value can be fingerprinted


def through_later_steps(source: str | bytes) -> None:
    """A source that parses as a contract goes through every later step, which must answer with
    diagnostics too, never an exception."""
    contract, _ = parse_contract(source)
    if contract is None:
        return
    for diagnostic in validate_contract(contract):
        assert diagnostic.code.startswith("TQX_"), diagnostic
        assert diagnostic.severity == "error", diagnostic
    request = RenderRequest(inputs={}, context={})
    compiled, diagnostics = compile_interaction(contract, request, ["structured_output"])
    assert (compiled is None) == bool(diagnostics)
    assert all(d.code.startswith("TQX_") for d in diagnostics)
    explain_contract(contract)
    assert diff_contracts(contract, contract).equal


@settings(max_examples=150, deadline=None)
@given(source=st.one_of(st.text(max_size=300), st.binary(max_size=300), yaml_like, yaml_words))
def test_parsers_never_raise_on_arbitrary_input(source: str | bytes) -> None:
    for parse in PARSERS:
        check(parse, source)
    through_later_steps(source)


def _reference_sources() -> list[bytes]:
    root = Path(__file__).resolve().parents[3]
    paths = sorted((root / "fixtures" / "packages" / "welcome").rglob("*.yaml"))
    return [path.read_bytes() for path in paths]


mutation = st.tuples(
    st.sampled_from(["delete", "insert", "replace", "duplicate", "swap"]),
    st.integers(min_value=0, max_value=1 << 16),
    st.integers(min_value=0, max_value=40),
    st.one_of(yaml_like, yaml_words, st.binary(max_size=20)),
)


def mutate(source: bytes, edits: list[tuple[str, int, int, str | bytes]]) -> bytes:
    for action, start, length, text in edits:
        piece = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
        start %= len(source) + 1
        end = min(start + length, len(source))
        if action == "delete":
            source = source[:start] + source[end:]
        elif action == "insert":
            source = source[:start] + piece + source[start:]
        elif action == "replace":
            source = source[:start] + piece + source[end:]
        elif action == "duplicate":
            source = source[:end] + source[start:end] + source[end:]
        else:
            lines = source.split(b"\n")
            i, j = start % len(lines), (start + length) % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
            source = b"\n".join(lines)
    return source


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_parsers_never_raise_on_mutated_contracts(reference: Path, data: st.DataObject) -> None:
    corpus = [
        path.read_bytes()
        for pattern in ("crm3/contracts/*.yaml", "packages/*/contracts/*.yaml", "*/templiqx.yaml")
        for path in sorted(reference.glob(pattern))
    ] + _reference_sources()
    original = data.draw(st.sampled_from(corpus))
    edits = data.draw(st.lists(mutation, min_size=1, max_size=4))
    mutated = mutate(original, edits)
    as_text = data.draw(st.booleans())
    source: str | bytes = mutated.decode("utf-8", "replace") if as_text else mutated
    for parse in PARSERS:
        check(parse, source)
    through_later_steps(source)
