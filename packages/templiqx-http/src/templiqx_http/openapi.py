"""The OpenAPI 3.1 document of the HTTP surface, generated from the catalog and the routes.

Nothing is written by hand per operation: each route of :data:`~templiqx_http.ROUTES` becomes
an operation whose ``operationId`` is the catalog name in lowerCamelCase, whose summary and
description are the catalog's, whose parameters and closed request body follow from where the
route carries each catalog parameter, and whose responses are the envelope with the operation's
typed ``result`` (generated from the result DTOs, as MCP's output schemas are). Every non-GET
operation says ``x-templiqx-idempotent`` and ``x-templiqx-idempotency``, as the reference's
document does. ``execute_contract`` also documents its ``text/event-stream`` answer.

The document is served as JSON and YAML (:func:`openapi_json`, :func:`openapi_yaml`); a test
holds routes == document == catalog.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any, Final

import msgspec
import yaml

from templiqx_application.catalog import ParameterSpec
from templiqx_application.results import RESULT_TYPES, STREAMING
from templiqx_contracts import API_VERSION, OperationEnvelope, PartialChange
from templiqx_http.routes import BASE_PATH, ROUTES, OperationRoute

__all__ = [
    "DOCUMENT_VERSION",
    "META_OPERATION_IDS",
    "openapi_document",
    "openapi_json",
    "openapi_yaml",
]

DOCUMENT_VERSION: Final = "0.2.0"
TITLE: Final = "Templiqx Operations API"

META_OPERATION_IDS: Final[dict[tuple[str, str], str]] = {
    ("GET", BASE_PATH + "/health/live"): "getOperationsV1Liveness",
    ("GET", BASE_PATH + "/health/ready"): "getOperationsV1Readiness",
    ("GET", BASE_PATH + "/openapi.yaml"): "getOperationsV1OpenApiYaml",
    ("GET", BASE_PATH + "/openapi.json"): "getOperationsV1OpenApi",
}
"""The documented routes that are not operations (the reference's names)."""

_REF = "#/components/schemas/{name}"
_NAME_PATTERN: Final = "^[A-Za-z0-9_.-]+$"
"""Package and contract names (the service refuses others with TQX_PATH_INVALID, 400)."""
_FAILURES: Final = {
    "400": "The request is malformed (TQX_HTTP_*), or the service found an argument invalid.",
    "401": "The server requires a bearer token and the request has none or a wrong one.",
    "404": "A package, contract, artifact or fixture does not exist (TQX_NOT_FOUND).",
    "409": "A compare-and-swap token is stale, or the package already exists.",
    "422": "The service refused the call (the envelope's diagnostics say why and what to do).",
    "500": "An unexpected failure (TQX_INTERNAL): a bug worth reporting.",
    "501": "A capability the contract needs is not offered (…_UNSUPPORTED).",
    "503": "The server is at its concurrency limit, or a package lock stayed taken; retry "
    "after Retry-After seconds.",
    "504": "The request ran past the server's deadline; its work was cancelled.",
}
_TAGS: Final = {
    "catalog": "catalog",
    "discover_packages": "packages",
    "create_package": "packages",
    "update_package": "packages",
    "delete_package": "packages",
    "export_package_identity": "trust",
    "sign_package": "trust",
    "verify_package_trust": "trust",
    "validate_package": "packages",
    "list_workspace_artifacts": "artifacts",
    "read_artifact": "artifacts",
    "delete_workspace_artifact": "artifacts",
    "test_package": "evals",
    "list_evals": "evals",
    "run_eval": "evals",
    "execute_contract": "execution",
    "compile_contract": "execution",
    "render_contract": "execution",
}
_STREAM_DESCRIPTION = """\
With `Accept: text/event-stream` the execution streams live as Server-Sent Events: one event \
per stream event as the runtime emits it (`event:` its `kind` — `Delta`, `ToolCallDelta`, \
`Complete`, `Failed`; `data:` its JSON) — for a structured answer each followed by a \
`partial` event whose data is what it changed in the answer so far (incremental changes: \
apply them all, in order, to get the answer) — then one `envelope` event whose data is this \
operation's envelope without `stream_events`. The stream events plus the envelope event are \
exactly the envelope the same call answers as JSON with `stream: true`. `Complete` is the \
runtime's terminal event (the model answered); whether the call succeeded is the envelope's \
`ok`, decided after it (the answer is checked against the output schema: `TQX_OUTPUT_SCHEMA`). \
A call refused before any model call is an ordinary JSON answer with its 4xx status. A client \
that disconnects cancels the model call."""


_SOURCE_DESCRIPTION = """\
With `Accept: application/yaml` the answer is the contract's stored YAML text, its \
compare-and-swap token as `ETag` (the `If-Match` of a `PUT`), also when the contract does not \
load (`X-Templiqx-Diagnostics` counts its problems); a contract that cannot be read is the JSON \
envelope."""

_EDIT_DESCRIPTION = """\
With a `Content-Type: application/yaml` body, that text is validated as if it were saved as \
the contract (includes, partials and tool contracts resolved in the package); nothing is \
written."""


def _pascal(name: str) -> str:
    return "".join(word.capitalize() for word in name.split("_"))


def _lean(schema: Any) -> Any:
    """A generated schema without OpenAPI 3.0's ``discriminator`` (3.1 validators ignore it,
    linters flag the mapping) and with the docstrings' reStructuredText as it is."""
    if isinstance(schema, dict):
        return {key: _lean(value) for key, value in schema.items() if key != "discriminator"}
    if isinstance(schema, list):
        return [_lean(item) for item in schema]
    return schema


@functools.cache
def _components() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    types = [OperationEnvelope, list[PartialChange], *RESULT_TYPES.values()]
    roots, definitions = msgspec.json.schema_components(types, ref_template=_REF)
    return {k: _lean(v) for k, v in definitions.items()}, [_lean(r) for r in roots]


def _parameter_schema(parameter: ParameterSpec, *, nullable: bool) -> dict[str, Any]:
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
        schema = {"type": "object"}
    else:
        schema = {}
    if nullable and parameter.type != "json" and "type" in schema:
        schema["type"] = [schema["type"], "null"]
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
    schema["description"] = parameter.description
    if not parameter.required and parameter.default is not None:
        schema["default"] = copy.deepcopy(parameter.default)
    return schema


def _nullable(parameter: ParameterSpec) -> bool:
    """``null`` means "not given" for an optional parameter whose default is ``null``."""
    return not parameter.required and parameter.default is None


def _request_schema(route: OperationRoute) -> dict[str, Any]:
    spec = {p.name: p for p in route.spec.parameters}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name in route.body:
        parameter = spec[name]
        properties[name] = _parameter_schema(parameter, nullable=_nullable(parameter))
        if parameter.required:
            required.append(name)
    if route.render:
        properties["render"] = {
            "type": ["object", "null"],
            "description": "The values the contract is rendered with.",
            "properties": {
                name: _parameter_schema(spec[name], nullable=False) for name in route.render
            },
            "additionalProperties": False,
        }
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


def _envelope_schema(name: str, result: dict[str, Any]) -> dict[str, Any]:
    definitions, _ = _components()
    envelope: dict[str, Any] = copy.deepcopy(definitions["OperationEnvelope"])
    envelope.pop("title", None)
    envelope["description"] = f"The envelope of {name}."
    envelope["properties"]["result"] = {
        **result,
        "description": "The operation's result; absent when there is none.",
    }
    if name not in STREAMING:
        del envelope["properties"]["stream_events"]
    return envelope


def _parameters(route: OperationRoute) -> list[dict[str, Any]]:
    spec = {p.name: p for p in route.spec.parameters}
    found: list[dict[str, Any]] = []
    for placeholder, name in route.path_parameters.items():
        description = spec[name].description
        if placeholder == "artifact":
            description += " The rest of the path; it may contain '/'."
        schema: dict[str, Any] = {"type": "string", "minLength": 1}
        if placeholder != "artifact":
            schema["pattern"] = _NAME_PATTERN
        found.append(
            {
                "name": placeholder,
                "in": "path",
                "required": True,
                "schema": schema,
                "description": description,
            }
        )
    for name in route.query:
        parameter = spec[name]
        schema = _parameter_schema(parameter, nullable=False)
        description = schema.pop("description")
        if name in route.http_defaults:
            schema["default"] = route.http_defaults[name]
            description += f" Default here: {route.http_defaults[name]}."
        if name == "workspace":
            description += (
                " Disabled unless the server enables the override (403 "
                "TQX_HTTP_WORKSPACE_DISABLED), and then confined to the folders it names."
            )
        found.append(
            {
                "name": name,
                "in": "query",
                "required": parameter.required,
                "schema": schema,
                "description": description,
            }
        )
    if route.if_match != "none":
        found.append({"$ref": "#/components/parameters/IfMatch" + _pascal(route.if_match)})
    found.append({"$ref": "#/components/parameters/XRequestId"})
    found.append({"$ref": "#/components/parameters/XTenantId"})
    return found


def _operation(route: OperationRoute, envelope_ref: str) -> dict[str, Any]:
    spec = route.spec
    envelope = {"schema": {"$ref": envelope_ref}}
    responses: dict[str, Any] = {
        "200": {
            "description": "The operation succeeded (`ok` is true).",
            "headers": {"X-Request-Id": {"$ref": "#/components/headers/XRequestId"}},
            "content": {"application/json": envelope},
        }
    }
    description = spec.summary
    if route.operation == "execute_contract":
        responses["200"]["content"]["text/event-stream"] = {
            "schema": {"type": "string"},
            "x-templiqx-events": {
                kind: {"$ref": _REF.format(name=kind)}
                for kind in ("Delta", "ToolCallDelta", "Complete", "Failed")
            }
            | {
                "partial": {"$ref": _REF.format(name="PartialChanges")},
                "envelope": {"$ref": envelope_ref},
            },
        }
        description += "\n\n" + _STREAM_DESCRIPTION
    if route.operation == "inspect_contract":  # templiqx_http.sources
        responses["200"]["content"]["application/yaml"] = {"schema": {"type": "string"}}
        description += "\n\n" + _SOURCE_DESCRIPTION
    if route.operation == "validate_contract":
        description += "\n\n" + _EDIT_DESCRIPTION
    failures = dict(_FAILURES)
    if route.body_kind != "none" or route.operation == "validate_contract":
        failures["413"] = "The request body is larger than the server's limit."
    if "workspace" in route.query:
        failures["403"] = "The workspace override is disabled on this server."
    for status in sorted(failures):
        responses[status] = {
            "description": failures[status],
            "headers": {"X-Request-Id": {"$ref": "#/components/headers/XRequestId"}},
            "content": {"application/json": envelope},
        }
        if status == "503":
            responses[status]["headers"]["Retry-After"] = {
                "$ref": "#/components/headers/RetryAfter"
            }
        if status == "401":
            responses[status]["headers"]["WWW-Authenticate"] = {
                "schema": {"type": "string"},
                "description": 'Bearer realm="templiqx"',
            }
    operation: dict[str, Any] = {
        "operationId": route.operation_id,
        "summary": spec.display_title,
        "description": description,
        "tags": [_TAGS.get(route.operation, "contracts")],
        "parameters": _parameters(route),
    }
    if route.body_kind == "json":
        operation["requestBody"] = {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {"$ref": _REF.format(name=_pascal(route.operation) + "Request")}
                }
            },
        }
    elif route.operation == "validate_contract":
        operation["requestBody"] = {
            "required": False,
            "description": "An edit to validate instead of the saved contract (nothing is "
            "written).",
            "content": {"application/yaml": {"schema": {"type": "string"}}},
        }
    elif route.body_kind == "text":
        text = {"schema": {"type": "string"}}
        operation["requestBody"] = {
            "required": True,
            "description": "The contract's YAML source (read as UTF-8 whatever the type).",
            "content": {"application/yaml": text, "text/plain": text},
        }
    operation["responses"] = responses
    if route.method != "GET":
        operation["x-templiqx-idempotent"] = spec.idempotent
        operation["x-templiqx-idempotency"] = route.idempotency
    return operation


def _health_operation(operation_id: str, ready: bool) -> dict[str, Any]:
    ok = {"schema": {"$ref": _REF.format(name="HealthStatus")}}
    responses: dict[str, Any] = {
        "200": {
            "description": "Ready to take traffic." if ready else "The process is alive.",
            "content": {"application/json": ok},
        }
    }
    if ready:
        responses["503"] = {
            "description": "Not ready: the reasons say what to fix (an unreadable packages "
            "root, incomplete runtime settings), or the server is draining.",
            "content": {"application/json": ok},
        }
    return {
        "operationId": operation_id,
        "summary": "Readiness" if ready else "Liveness",
        "tags": ["meta"],
        "security": [],
        "responses": responses,
    }


def _document_operation(operation_id: str, media: str) -> dict[str, Any]:
    return {
        "operationId": operation_id,
        "summary": f"This document ({media})",
        "tags": ["meta"],
        "security": [],
        "responses": {
            "200": {
                "description": "The OpenAPI document.",
                "content": {media: {"schema": {"type": "object"} if "json" in media else {}}},
            }
        },
    }


_HEALTH_STATUS: Final = {
    "type": "object",
    "properties": {
        "status": {"enum": ["ok", "ready", "not_ready"]},
        "api_version": {"type": "string"},
        "reasons": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Why the server is not ready (only with not_ready).",
        },
        "request_id": {"type": "string"},
    },
    "required": ["status", "api_version"],
}


@functools.cache
def openapi_document() -> dict[str, Any]:
    """The document, as plain JSON data (build it once; copy it to change it)."""
    definitions, roots = _components()
    schemas: dict[str, Any] = {
        name: body for name, body in definitions.items() if name != "OperationEnvelope"
    }
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        index = list(RESULT_TYPES).index(route.operation)
        envelope_name = _pascal(route.operation) + "Envelope"
        schemas[envelope_name] = _envelope_schema(route.operation, roots[index + 2])
        if route.body_kind == "json":
            schemas[_pascal(route.operation) + "Request"] = _request_schema(route)
        methods = paths.setdefault(route.openapi_path, {})
        methods[route.method.lower()] = _operation(route, _REF.format(name=envelope_name))
    schemas["PartialChanges"] = {
        **roots[1],
        "description": "What one stream event changed in the structured answer so far, in "
        "order: apply every partial event's changes to nothing to get the answer so far.",
    }
    schemas["HealthStatus"] = _HEALTH_STATUS
    for (_, path), operation_id in META_OPERATION_IDS.items():
        if path.endswith("live"):
            operation = _health_operation(operation_id, ready=False)
        elif path.endswith("ready"):
            operation = _health_operation(operation_id, ready=True)
        else:
            media = "application/json" if path.endswith("json") else "application/yaml"
            operation = _document_operation(operation_id, media)
        paths[path] = {"get": operation}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": TITLE,
            "version": DOCUMENT_VERSION,
            "description": (
                "Every templiqx operation over HTTP: the envelope each answers is the one the "
                "Python API, the CLI and MCP answer for the same call. Success is 200; any "
                "other status carries an envelope whose diagnostics say what went wrong and "
                f"what to do. Envelopes have api_version {API_VERSION}."
            ),
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "servers": [{"url": "/"}],
        "security": [{}, {"bearerAuth": []}],
        "tags": [
            {"name": name}
            for name in (
                "catalog",
                "packages",
                "contracts",
                "execution",
                "evals",
                "artifacts",
                "trust",
                "meta",
            )
        ],
        "paths": paths,
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "parameters": {
                "XRequestId": {
                    "name": "X-Request-Id",
                    "in": "header",
                    "required": False,
                    "schema": {"type": "string"},
                    "description": "Echoed on the response when it is 1 to 128 printable "
                    "ASCII characters; otherwise (or when absent) the server makes one.",
                },
                "XTenantId": {
                    "name": "X-Tenant-Id",
                    "in": "header",
                    "required": False,
                    "schema": {"type": "string"},
                    "description": "Accepted and ignored (as by the reference).",
                },
                "IfMatchRequired": {
                    "name": "If-Match",
                    "in": "header",
                    "required": True,
                    "schema": {"type": "string", "pattern": '[^"\\s]'},
                    "description": "The current fingerprint (the compare-and-swap token); "
                    "quotes around it are stripped.",
                },
                "IfMatchOptional": {
                    "name": "If-Match",
                    "in": "header",
                    "required": False,
                    "schema": {"type": "string"},
                    "description": "The current fingerprint, required to replace an existing "
                    "contract; leave it out to create one.",
                },
            },
            "headers": {
                "XRequestId": {
                    "schema": {"type": "string"},
                    "description": "The request's id (the client's, or one the server made).",
                },
                "RetryAfter": {
                    "schema": {"type": "integer"},
                    "description": "Seconds to wait before retrying.",
                },
            },
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "Required on operation routes when the server has a token.",
                }
            },
        },
    }


@functools.cache
def openapi_json() -> bytes:
    """The document as JSON."""
    return json.dumps(openapi_document(), ensure_ascii=False, separators=(",", ":")).encode()


@functools.cache
def openapi_yaml() -> bytes:
    """The document as YAML (it starts with ``openapi: 3.1.0``)."""
    text = yaml.safe_dump(
        openapi_document(), sort_keys=False, allow_unicode=True, width=100, default_flow_style=False
    )
    return text.encode("utf-8")
