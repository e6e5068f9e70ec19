"""The generated tool schemas: strict, portable inputs; one typed output schema per tool."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from templiqx_application import CATALOG
from templiqx_contracts import AdapterDescriptor, Complete, Delta, Diagnostic, OperationEnvelope
from templiqx_mcp import ENVELOPE_SCHEMA, input_schema, output_schema
from templiqx_mcp.schemas import RESULT_TYPES
from templiqx_mcp.tools import ToolSet
from templiqx_ports import LIVE_RUNTIME, OFFLINE_RUNTIME, RuntimeReach


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
        if parameter.required or parameter.default is None:
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


def _portable(schema: Any, path: str = "#") -> None:
    """One ``type`` string per node, no ``$ref``, no ``null`` anywhere but inside ``anyOf``."""
    if isinstance(schema, dict):
        assert "$ref" not in schema, path
        if "type" in schema:
            assert isinstance(schema["type"], str), path
            assert schema["type"] != "null" or path.endswith(tuple(f"anyOf/{i}" for i in range(9)))
        assert schema.get("default", 0) is not None, path
        for key, value in schema.items():
            _portable(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            _portable(value, f"{path}/{index}")


@pytest.mark.parametrize("spec", CATALOG, ids=lambda spec: spec.name)
def test_input_schemas_stay_in_the_portable_subset(spec: Any) -> None:
    _portable(input_schema(spec))


def test_any_json_is_typed_without_a_type_array() -> None:
    spec = next(s for s in CATALOG if s.name == "execute_contract")
    fixture = input_schema(spec)["properties"]["fixture_output"]
    assert sorted(option["type"] for option in fixture["anyOf"]) == [
        "array",
        "boolean",
        "null",
        "number",
        "object",
        "string",
    ]


def test_tools_are_the_catalog_sorted_by_name() -> None:
    tools = ToolSet(service=None)  # type: ignore[arg-type]  # listing never calls the service
    assert [t.name for t in tools.tools] == sorted(spec.name for spec in CATALOG)
    summaries = {spec.name: spec.summary for spec in CATALOG}
    for tool in tools.tools:
        assert tool.description is not None
        assert tool.description.startswith(summaries[tool.name])
        assert tool.output_schema == output_schema(tool.name)
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
    execute = next(t for t in tools.tools if t.name == "execute_contract")
    assert execute.description is not None
    assert "notifications/progress" in execute.description
    assert "progressToken" in execute.input_schema["properties"]["stream"]["description"]


@pytest.mark.parametrize("reach", [LIVE_RUNTIME, OFFLINE_RUNTIME], ids=["live", "offline"])
def test_execute_follows_the_runtime_reach(reach: RuntimeReach) -> None:
    """A live runtime's execute_contract is neither read-only nor closed-world (issue #28)."""
    tools = ToolSet(service=None, reach=reach)  # type: ignore[arg-type]
    specs = {spec.name: spec for spec in CATALOG}
    for tool in tools.tools:
        hints = tool.annotations
        assert hints is not None
        spec = specs[tool.name]
        executes = tool.name == "execute_contract"
        assert hints.open_world_hint is (executes and reach.live)
        assert hints.read_only_hint is (spec.read_only and not (executes and reach.live))
        assert hints.destructive_hint is spec.destructive
        assert hints.idempotent_hint is spec.idempotent
        assert tool.description is not None
        assert ("calls a live model" in tool.description) is (executes and reach.live)
        assert ("cost money" in tool.description) is (executes and reach.paid)


def test_every_operation_has_a_typed_result() -> None:
    assert set(RESULT_TYPES) == {spec.name for spec in CATALOG}
    for spec in CATALOG:
        result = output_schema(spec.name)["properties"]["result"]
        assert set(result) - {"description"}, f"{spec.name}: result is unconstrained"
    assert "result" in ENVELOPE_SCHEMA["properties"]


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
    if envelope.operation != "catalog":  # its sample result is not a real catalog
        jsonschema.validate(envelope.to_builtins(), output_schema(envelope.operation))


def test_output_schemas_reject_a_mistyped_result() -> None:
    data = _envelopes()[2].to_builtins()
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "result": {"output": 1}}, output_schema("execute_contract"))
    evals = OperationEnvelope.build("list_evals", result=[{"contract_id": "c"}]).to_builtins()
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(evals, output_schema("list_evals"))


def test_envelope_schema_rejects_unknown_keys_and_bad_events() -> None:
    data = _envelopes()[2].to_builtins()
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "extra": 1}, ENVELOPE_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "stream_events": [{"kind": "Bogus"}]}, ENVELOPE_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({k: v for k, v in data.items() if k != "ok"}, ENVELOPE_SCHEMA)


def test_catalog_view_is_an_enum_and_both_views_match_the_output_schema(
    tmp_path: Any,
) -> None:
    from templiqx_application import catalog_envelope

    spec = next(spec for spec in CATALOG if spec.name == "catalog")
    view = input_schema(spec)["properties"]["view"]
    assert view["enum"] == ["full", "names"]
    assert view["default"] == "full"
    schema = output_schema("catalog")
    for arguments in ({}, {"view": "names"}, {"view": "full"}):
        jsonschema.validate(catalog_envelope(arguments).to_builtins(), schema)
