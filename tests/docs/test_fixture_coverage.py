"""The project's example package covers the whole template language, as the docs promise.

``fixtures/packages/welcome`` is what the README's main job, the quick start and the docs'
examples run; it must keep using every node kind, every expression kind and every filter, and
keep a multi-delta streaming scenario, so that removing one from the example fails here rather
than silently thinning the documentation.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest

from templiqx_contracts import FILTER_NAMES
from templiqx_contracts.contract import Expr, Node
from templiqx_core import parse_contract, parse_node_list

WELCOME = Path(__file__).resolve().parents[2] / "fixtures" / "packages" / "welcome"


def _tags(union: Any) -> set[str]:
    return {msgspec.inspect.type_info(member).tag for member in typing.get_args(union)}


NODE_KINDS = _tags(Node)
EXPR_KINDS = _tags(Expr)


def _walk(value: Any, kinds: set[str], filters: set[str]) -> None:
    if isinstance(value, dict):
        if isinstance(value.get("kind"), str):
            kinds.add(value["kind"])
        for name in value.get("filters", []) if isinstance(value.get("filters"), list) else []:
            filters.add(name if isinstance(name, str) else str(name))
        for item in value.values():
            _walk(item, kinds, filters)
    elif isinstance(value, list):
        for item in value:
            _walk(item, kinds, filters)


def _used() -> tuple[set[str], set[str]]:
    kinds: set[str] = set()
    filters: set[str] = set()
    for path in sorted((WELCOME / "contracts").glob("*.yaml")):
        contract, diagnostics = parse_contract(path.read_text(encoding="utf-8"))
        assert contract is not None, [d.render() for d in diagnostics]
        _walk(msgspec.to_builtins(contract), kinds, filters)
    for path in sorted((WELCOME / "partials").glob("*.yaml")):
        nodes, diagnostics = parse_node_list(path.read_text(encoding="utf-8"))
        assert nodes is not None, [d.render() for d in diagnostics]
        _walk(msgspec.to_builtins(nodes), kinds, filters)
    return kinds, filters


def test_the_kinds_are_read_from_the_contract_model() -> None:
    assert {"text", "include", "interpolate", "when", "for_each", "component"} == NODE_KINDS
    assert {"ref", "literal", "equals", "not", "and", "or"} == EXPR_KINDS


@pytest.mark.parametrize("kind", sorted(NODE_KINDS | EXPR_KINDS))
def test_every_node_and_expression_kind_is_used(kind: str) -> None:
    kinds, _ = _used()
    assert kind in kinds, f"no contract or partial in {WELCOME} uses kind '{kind}'"


@pytest.mark.parametrize("name", FILTER_NAMES)
def test_every_filter_is_used(name: str) -> None:
    _, filters = _used()
    assert name in filters, f"no contract or partial in {WELCOME} uses the '{name}' filter"


def test_a_multi_delta_streaming_scenario_is_there() -> None:
    manifests = sorted((WELCOME / "scenarios").glob("*/manifest.json"))
    assert manifests, f"no scenario manifest under {WELCOME / 'scenarios'}"
    deltas = [
        sum(1 for event in json.loads(path.read_text())["events"] if event["kind"] == "delta")
        for path in manifests
    ]
    assert max(deltas) >= 2, deltas
