"""User input echoed in a diagnostic is quoted with one bound, whatever its size (issue #16)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from templiqx_application import TempliqxService
from templiqx_contracts import OperationEnvelope

HUGE = 5_000_000
SMALL_ENVELOPE = 2_000  # bytes of JSON: a few quoted values and the fixed text around them


@pytest.fixture
def service(
    scratch_root: Path,
    make_service: Callable[..., TempliqxService],
    write_pkg: Callable[..., Path],
    greeting: Callable[..., str],
) -> TempliqxService:
    write_pkg(scratch_root, "pkg", contracts={"hello": greeting()})
    return make_service(scratch_root)


def _small(envelope: OperationEnvelope) -> OperationEnvelope:
    assert not envelope.ok
    size = len(msgspec.json.encode(envelope))
    assert size < SMALL_ENVELOPE, size
    return envelope


def test_a_source_that_is_one_huge_string(service: TempliqxService) -> None:
    for source in ("x" * HUGE, '"' + "x" * HUGE + '"', "id: " + "x" * HUGE):
        _small(service.put_contract("pkg", "big", source))
    message = service.put_contract("pkg", "big", "x" * HUGE).diagnostics[0].message
    assert f"…' ({HUGE} characters)" in message


def test_a_value_the_schema_rejects(service: TempliqxService) -> None:
    envelope = _small(
        service.compile_contract(
            "pkg", "hello", inputs={"name": ["y" * HUGE]}, capabilities=["structured_output"]
        )
    )
    (diagnostic,) = envelope.diagnostics
    assert diagnostic.code == "TQX_VALUE_SCHEMA"
    assert diagnostic.message.endswith('is not of type "string"')


def test_names_of_values_arguments_fixtures_and_operations(service: TempliqxService) -> None:
    name = "n" * HUGE
    undeclared = service.compile_contract(
        "pkg", "hello", inputs={"name": "Ada", name: 1}, capabilities=["structured_output"]
    )
    assert [d.code for d in _small(undeclared).diagnostics] == ["TQX_VALUE_UNKNOWN"]
    unknown = _small(service.invoke("list_evals", {"package": "pkg", name: 1}))
    assert unknown.diagnostics[0].code == "TQX_ARGUMENT_UNKNOWN"
    fixture = _small(service.run_eval("pkg", "hello", name))
    assert fixture.diagnostics[0].code == "TQX_NOT_FOUND"
    operation = service.invoke(name, {})  # the envelope names what was asked for, as given
    assert len(operation.diagnostics[0].message) < 200
    for contract in (name, "a/" + name):
        assert _small(service.inspect_contract("pkg", contract)).diagnostics[0].code == (
            "TQX_PATH_INVALID"
        )
