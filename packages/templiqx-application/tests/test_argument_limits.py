"""Argument size and depth limits (regressions found by the reliability suite, issue #9 R7)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from templiqx_application import (
    CATALOG,
    MAX_ARGUMENT_BYTES,
    MAX_ARGUMENT_DEPTH,
    bind_arguments,
    operation_spec,
)
from templiqx_core.limits import MAX_DOCUMENT_BYTES

HUGE = 100 * 1024 * 1024


def _problems(operation: str, arguments: dict[str, Any]) -> list[tuple[str, str, str]]:
    spec = operation_spec(operation)
    assert spec is not None
    _, diagnostics = bind_arguments(spec, arguments)
    return [(d.code, d.json_pointer or "", d.message) for d in diagnostics]


def test_the_limits_are_documented_constants() -> None:
    assert MAX_ARGUMENT_BYTES == MAX_DOCUMENT_BYTES == 8 * 1024 * 1024
    assert MAX_ARGUMENT_DEPTH == 256


def _nested(levels: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


def test_depth_limit_is_exact_and_named() -> None:
    at_limit = {"package": "p", "contract": "c", "inputs": _nested(MAX_ARGUMENT_DEPTH)}
    assert _problems("compile_contract", at_limit) == []
    too_deep = {"package": "p", "contract": "c", "inputs": _nested(10_000)}
    [(code, pointer, message)] = _problems("compile_contract", too_deep)
    assert (code, pointer) == ("TQX_ARGUMENT_INVALID", "/inputs")
    assert "nested more than 256 levels deep (MAX_ARGUMENT_DEPTH)" in message
    assert len(message) < 300


@pytest.mark.parametrize(
    ("operation", "arguments", "name"),
    [
        ("compile_contract", {"inputs": {"x": "y" * HUGE}}, "inputs"),
        ("render_contract", {"context": {"x": ["y" * (HUGE // 4)] * 4}}, "context"),
        ("execute_contract", {"fixture_output": "z" * HUGE}, "fixture_output"),
        (
            "execute_contract",
            {"fixture_output": ["\u00e9" * (MAX_ARGUMENT_BYTES // 2)]},
            "fixture_output",
        ),
        ("put_contract", {"source": "a: " + "x" * HUGE}, "source"),
        ("put_contract", {"expected_fingerprint": "f" * HUGE}, "expected_fingerprint"),
        ("compile_contract", {"capabilities": ["c" * (HUGE // 8)] * 8}, "capabilities"),
    ],
)
def test_huge_arguments_are_refused_fast(
    operation: str, arguments: dict[str, Any], name: str
) -> None:
    base = {"package": "p", "contract": "c", "source": "id: c\n"}
    spec = operation_spec(operation)
    assert spec is not None
    given = {k: v for k, v in base.items() if any(p.name == k for p in spec.parameters)}
    started = time.perf_counter()
    problems = _problems(operation, {**given, **arguments})
    assert time.perf_counter() - started < 0.5
    assert problems == [
        (
            "TQX_ARGUMENT_INVALID",
            f"/{name}",
            f"argument '{name}' is larger than the {MAX_ARGUMENT_BYTES}-byte limit "
            "(MAX_ARGUMENT_BYTES); pass less data",
        )
    ]


def test_an_argument_just_below_the_limit_is_accepted() -> None:
    value = {"x": "y" * (MAX_ARGUMENT_BYTES - 100)}
    assert _problems("compile_contract", {"package": "p", "contract": "c", "inputs": value}) == []


def test_every_catalog_parameter_is_bounded() -> None:
    for spec in CATALOG:
        for parameter in spec.parameters:
            if parameter.type == "boolean":
                continue
            value: Any = {
                "string": "s" * (MAX_ARGUMENT_BYTES + 1),
                "string_list": ["s" * (MAX_ARGUMENT_BYTES + 1)],
                "object": {"k": "s" * (MAX_ARGUMENT_BYTES + 1)},
                "json": "s" * (MAX_ARGUMENT_BYTES + 1),
            }[parameter.type]
            spec_problems = [
                problem
                for problem in _problems(spec.name, {parameter.name: value})
                if problem[1] == f"/{parameter.name}"
            ]
            assert spec_problems, (spec.name, parameter.name)
            assert "(MAX_ARGUMENT_BYTES)" in spec_problems[0][2]
