"""JSON Schemas generated from the catalog: one strict input schema per tool, one output schema.

Every object schema that lists ``properties`` also says ``"additionalProperties": false``, so a
client sees exactly the arguments the service accepts. The two free-form maps of the catalog
(parameters of type ``object``, e.g. ``inputs`` and ``context``) are open by design — their keys
are the contract's own input names, checked by the contract's schemas — and say so explicitly
with ``"additionalProperties": true``.
"""

from __future__ import annotations

import copy
from typing import Any

from templiqx_application.catalog import OperationSpec, ParameterSpec

__all__ = ["ENVELOPE_SCHEMA", "input_schema", "parameter_schema"]

_DRAFT = "https://json-schema.org/draft/2020-12/schema"


def parameter_schema(parameter: ParameterSpec) -> dict[str, Any]:
    """The JSON Schema of one parameter (its type, description and default)."""
    nullable = not parameter.required and parameter.default is None
    schema: dict[str, Any]
    if parameter.type == "string":
        schema = {"type": ["string", "null"] if nullable else "string"}
    elif parameter.type == "boolean":
        schema = {"type": ["boolean", "null"] if nullable else "boolean"}
    elif parameter.type == "string_list":
        schema = {"type": ["array", "null"] if nullable else "array", "items": {"type": "string"}}
    elif parameter.type == "object":
        schema = {"type": ["object", "null"] if nullable else "object"}
        schema["additionalProperties"] = True
    else:  # "json": any JSON value, null included
        schema = {}
    schema["description"] = parameter.description
    if not parameter.required:
        schema["default"] = copy.deepcopy(parameter.default)
    return schema


def input_schema(spec: OperationSpec) -> dict[str, Any]:
    """The tool input schema of an operation: its parameters, nothing else."""
    return {
        "$schema": _DRAFT,
        "type": "object",
        "properties": {p.name: parameter_schema(p) for p in spec.parameters},
        "required": [p.name for p in spec.parameters if p.required],
        "additionalProperties": False,
    }


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_STRING = {"type": "string"}
_COUNT = {"type": "integer", "minimum": 0}

_SPAN = _object(
    {"line": _COUNT, "column": _COUNT, "end_line": _COUNT, "end_column": _COUNT},
    ["line", "column", "end_line", "end_column"],
)

_DIAGNOSTIC = _object(
    {
        "code": {"type": "string", "description": "Stable TQX_* code."},
        "severity": {"enum": ["error", "warning", "info"]},
        "message": _STRING,
        "file": _STRING,
        "json_pointer": _STRING,
        "span": _SPAN,
        "help": _STRING,
    },
    ["code", "severity", "message"],
)

_ADAPTER = _object(
    {"id": _STRING, "version": _STRING, "capabilities": {"type": "array", "items": _STRING}},
    ["id", "version", "capabilities"],
)


def _event(kind: str, properties: dict[str, Any]) -> dict[str, Any]:
    return _object({"kind": {"const": kind}, **properties}, ["kind", *properties])


_STREAM_EVENT = {
    "oneOf": [
        _event("Delta", {"text": _STRING}),
        _event("ToolCallDelta", {"name": _STRING, "arguments_fragment": _STRING}),
        _event(
            "Complete",
            {
                "adapter": _ADAPTER,
                "request_fingerprint": _STRING,
                "output_fingerprint": _STRING,
                "output": {},
                "output_schema_valid": {"type": "boolean"},
            },
        ),
        _event("Failed", {"code": _STRING, "message": _STRING}),
    ]
}

ENVELOPE_SCHEMA: dict[str, Any] = {
    "$schema": _DRAFT,
    **_object(
        {
            "api_version": _STRING,
            "operation": {"type": "string", "description": "The catalog operation's name."},
            "ok": {"type": "boolean", "description": "True iff no diagnostic is an error."},
            "result": {"description": "The operation's result; absent when there is none."},
            "diagnostics": {"type": "array", "items": _DIAGNOSTIC},
            "fingerprints": {"type": "object", "additionalProperties": _STRING},
            "stream_events": {
                "type": "array",
                "items": _STREAM_EVENT,
                "description": "Every stream event of a streamed execute_contract, in order.",
            },
            "usage": {
                **_object(
                    {"prompt_tokens": _COUNT, "completion_tokens": _COUNT, "total_tokens": _COUNT},
                    ["prompt_tokens", "completion_tokens", "total_tokens"],
                ),
                "description": "Tokens the model execution cost, when the runtime reports them.",
            },
        },
        ["api_version", "operation", "ok", "diagnostics", "fingerprints"],
    ),
}
"""The output schema shared by every tool: the operation envelope."""
