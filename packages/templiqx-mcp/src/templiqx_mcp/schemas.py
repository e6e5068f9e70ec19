"""JSON Schemas generated from the catalog: one strict input schema and one output schema per tool.

**Inputs** are written in the part of JSON Schema that every client we know accepts, because
hosts hand them to models whose function-calling dialects are subsets (some reject ``type``
arrays such as ``["string", "null"]``, some reject ``$ref``): one ``type`` per parameter, no
``$ref``, no ``null``. An optional parameter is simply not ``required``; the service still
accepts an explicit ``null`` for one whose default is ``null``, but the schema does not
advertise it. ``json`` parameters (``fixture_output``: any JSON value) are an ``anyOf`` of the
six JSON types, so they are typed without a type array. Every object that lists
``properties`` says ``"additionalProperties": false``, so a client sees exactly the arguments
the service accepts; the two free maps (``inputs``, ``context``: the contract's own names) say
``"additionalProperties": true``.

**Outputs** are the operation envelope with ``result`` typed for each operation, generated from
the result's msgspec types (so they follow the DTOs exactly). They are read by client
libraries, which validate results against them, not by models, so they use the whole of draft
2020-12: ``$defs``/``$ref`` (contracts are recursive) and ``anyOf`` with ``null`` where a field
really can be ``null``. Titles and docstrings are left out to keep ``tools/list`` small.
"""

from __future__ import annotations

import copy
import functools
from typing import Any, Final

import msgspec

from templiqx_application.catalog import OperationSpec, ParameterSpec
from templiqx_application.results import RESULT_TYPES, STREAMING
from templiqx_contracts import OperationEnvelope

__all__ = [
    "ENVELOPE_SCHEMA",
    "RESULT_TYPES",
    "input_schema",
    "output_schema",
    "parameter_schema",
]

_DRAFT = "https://json-schema.org/draft/2020-12/schema"


_ANY_JSON: Final = [
    {"type": "object"},
    {"type": "array"},
    {"type": "string"},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "null"},
]


def parameter_schema(parameter: ParameterSpec) -> dict[str, Any]:
    """The JSON Schema of one parameter: one type, its description and a non-null default."""
    schema: dict[str, Any]
    if parameter.type == "string":
        schema = {"type": "string"}
        if isinstance(parameter.choices, list):
            schema["enum"] = list(parameter.choices)
    elif parameter.type == "boolean":
        schema = {"type": "boolean"}
    elif parameter.type == "string_list":
        schema = {"type": "array", "items": {"type": "string"}}
    elif parameter.type == "object":
        schema = {"type": "object", "additionalProperties": True}
    else:  # "json": any JSON value
        schema = {"anyOf": copy.deepcopy(_ANY_JSON)}
    schema["description"] = parameter.description
    if not parameter.required and parameter.default is not None:
        schema["default"] = copy.deepcopy(parameter.default)
    return schema


def input_schema(spec: OperationSpec, notes: dict[str, str] | None = None) -> dict[str, Any]:
    """The tool input schema of an operation: its parameters, nothing else.

    ``notes`` adds a sentence to a parameter's description (what it means on this surface).
    """
    properties = {p.name: parameter_schema(p) for p in spec.parameters}
    for name, note in (notes or {}).items():
        properties[name]["description"] += f" {note}"
    return {
        "$schema": _DRAFT,
        "type": "object",
        "properties": properties,
        "required": [p.name for p in spec.parameters if p.required],
        "additionalProperties": False,
    }


_ANNOTATIONS = frozenset({"default", "description", "title", "examples"})
_SCHEMA_MAPS = frozenset({"properties", "$defs"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_VALUES = frozenset({"items", "additionalProperties", "not"})


def _lean(schema: Any, *, top: bool = False) -> Any:
    """A generated schema without titles, docstrings and OpenAPI's ``discriminator``, and with
    "any JSON value" spelled out (``{}`` becomes the ``anyOf`` of the JSON types, which
    schema linters accept as a deliberate choice rather than a missing type)."""
    if not isinstance(schema, dict):
        return schema
    if not set(schema) - _ANNOTATIONS:  # no validation keyword: any value
        return {**schema, "anyOf": copy.deepcopy(_ANY_JSON)}
    dropped = {"discriminator"} | ({"title", "description"} if top else set())
    lean: dict[str, Any] = {}
    for key, value in schema.items():
        if key in dropped:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            lean[key] = {name: _lean(item) for name, item in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            lean[key] = [_lean(item) for item in value]
        elif key in _SCHEMA_VALUES and isinstance(value, dict):
            lean[key] = _lean(value)
        else:
            lean[key] = value  # a keyword's value: default, enum, const, required, ...
    return lean


@functools.cache
def _components() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The generated schemas of the envelope and of every result type, sharing ``$defs``."""
    types = [OperationEnvelope, *RESULT_TYPES.values()]
    roots, definitions = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
    defs = {name: _lean(body, top=True) for name, body in definitions.items()}
    return defs, [_lean(root) for root in roots]


def _refs(node: Any, found: set[str], defs: dict[str, Any]) -> None:
    """Add every definition ``node`` refers to, directly or not, to ``found``."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name not in found:
                found.add(name)
                _refs(defs[name], found, defs)
        for value in node.values():
            _refs(value, found, defs)
    elif isinstance(node, list):
        for item in node:
            _refs(item, found, defs)


def _envelope(result: dict[str, Any], *, streams: bool = True) -> dict[str, Any]:
    """The envelope schema with ``result``; ``stream_events`` only for an operation that
    streams (the envelope leaves it out when it is empty)."""
    defs, _ = _components()
    envelope = copy.deepcopy(defs["OperationEnvelope"])
    if not streams:
        del envelope["properties"]["stream_events"]
    envelope["properties"]["result"] = {
        **result,
        "description": "The operation's result; absent when there is none.",
    }
    envelope["properties"]["fingerprints"]["description"] = (
        "SHA-256 fingerprints by name (manifest, package_identity, contract, ...)."
    )
    if streams:
        envelope["properties"]["stream_events"]["description"] = (
            "Every stream event of a streamed execute_contract, in order."
        )
    used: set[str] = set()
    _refs(envelope, used, defs)
    schema = {"$schema": _DRAFT, **envelope}
    if used:
        schema["$defs"] = {name: copy.deepcopy(defs[name]) for name in sorted(used)}
    if streams and "Complete" in schema.get("$defs", {}):
        _complete_may_leave_out_output(schema["$defs"]["Complete"])
    return schema


def _complete_may_leave_out_output(complete: dict[str, Any]) -> None:
    """A tool result's ``Complete`` event may leave out a large output, which is the result's
    (``output_omitted``: :mod:`templiqx_mcp.results`)."""
    complete["required"] = [name for name in complete["required"] if name != "output"]
    complete["properties"]["output_omitted"] = {
        "const": True,
        "description": "The output is left out of this event: it is result.output (sent once "
        "when it is large).",
    }


@functools.cache
def _output_schema(name: str) -> dict[str, Any]:
    _, roots = _components()
    index = list(RESULT_TYPES).index(name)
    return _envelope(roots[index + 1], streams=name in STREAMING)


def output_schema(name: str) -> dict[str, Any]:
    """The output schema of the tool ``name``: the envelope with its typed ``result``.

    An operation without a listed result type gets the envelope with any ``result``.
    """
    if name in RESULT_TYPES:
        return copy.deepcopy(_output_schema(name))
    return _envelope({})


ENVELOPE_SCHEMA: dict[str, Any] = _envelope({})
"""The envelope with an unconstrained ``result``: what every tool's output schema refines."""
