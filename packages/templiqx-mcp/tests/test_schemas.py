"""The generated tool schemas: strict inputs, one envelope output schema."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from templiqx_application import CATALOG
from templiqx_contracts import AdapterDescriptor, Complete, Delta, Diagnostic, OperationEnvelope
from templiqx_mcp import ENVELOPE_SCHEMA, input_schema
from templiqx_mcp.tools import ToolSet


def _objects(schema: Any, path: str = "#") -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(schema, dict):
        if "properties" in schema:
            found.append((path, schema))
        for key, value in schema.items():
            found.extend(_objects(value, f"{path}/{key}"))
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found.extend(_objects(value, f"{path}/{index}"))
    return found


@pytest.mark.parametrize("spec", CATALOG, ids=lambda spec: spec.name)
def test_input_schema_lists_exactly_the_parameters_and_rejects_others(spec: Any) -> None:
    schema = input_schema(spec)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]) == [p.name for p in spec.parameters]
    assert schema["required"] == [p.name for p in spec.parameters if p.required]
    for path, node in _objects(schema):
        assert node.get("additionalProperties") is False, path
    for parameter in spec.parameters:
        prop = schema["properties"][parameter.name]
        assert prop["description"] == parameter.description
        if parameter.required:
            assert "default" not in prop
        else:
            assert prop["default"] == parameter.default
        if parameter.type == "object":
            assert prop["additionalProperties"] is True  # a free map of the contract's names
    jsonschema.Draft202012Validator.check_schema(schema)


def test_input_schema_validates_like_the_binder() -> None:
    spec = next(s for s in CATALOG if s.name == "execute_contract")
    validator = jsonschema.Draft202012Validator(input_schema(spec))
    good = {"package": "p", "contract": "c", "inputs": {"x": 1}, "fixture_output": None}
    assert list(validator.iter_errors(good)) == []
    assert list(validator.iter_errors({**good, "bogus": 1}))
    assert list(validator.iter_errors({"package": "p"}))
    assert list(validator.iter_errors({**good, "stream": "yes"}))


def test_tools_are_the_catalog_sorted_by_name() -> None:
    tools = ToolSet(service=None)  # type: ignore[arg-type]  # listing never calls the service
    assert [t.name for t in tools.tools] == sorted(spec.name for spec in CATALOG)
    summaries = {spec.name: spec.summary for spec in CATALOG}
    for tool in tools.tools:
        assert tool.description == summaries[tool.name]
        assert tool.output_schema == ENVELOPE_SCHEMA


def _envelopes() -> list[OperationEnvelope]:
    receipt: dict[str, Any] = {
        "adapter": {"id": "a", "version": "1", "capabilities": ["text"]},
        "request_fingerprint": "r",
        "output_fingerprint": "o",
        "output": {"x": [1, 2.5, None]},
        "output_schema_valid": True,
    }
    adapter = AdapterDescriptor(id="a", version="1", capabilities=["text"])
    complete = Complete(**{**receipt, "adapter": adapter})
    return [
        OperationEnvelope.build("catalog", result=[{"name": "catalog"}]),
        OperationEnvelope.build(
            "validate_contract",
            diagnostics=[
                Diagnostic.error("TQX_NOT_FOUND", "not found: x", "/contract", help="fix it")
            ],
        ),
        OperationEnvelope.build(
            "execute_contract",
            result=receipt,
            fingerprints={"request": "r", "output": "o"},
            stream_events=[Delta(text="he"), complete],
        ),
    ]


@pytest.mark.parametrize("envelope", _envelopes(), ids=lambda e: e.operation)
def test_envelope_schema_accepts_envelopes(envelope: OperationEnvelope) -> None:
    jsonschema.Draft202012Validator.check_schema(ENVELOPE_SCHEMA)
    jsonschema.validate(envelope.to_builtins(), ENVELOPE_SCHEMA)


def test_envelope_schema_rejects_unknown_keys_and_bad_events() -> None:
    data = _envelopes()[2].to_builtins()
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "extra": 1}, ENVELOPE_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "stream_events": [{"kind": "Bogus"}]}, ENVELOPE_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({k: v for k, v in data.items() if k != "ok"}, ENVELOPE_SCHEMA)
