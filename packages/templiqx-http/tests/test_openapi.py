"""The OpenAPI document: valid 3.1, and routes == document == catalog (http.md §14).

The reference's drift test, against the port's router, document and catalog:

1. the (method, path) pairs the router serves, minus the meta routes, equal the document's,
   minus the same; 24 remain;
2. the document's operationIds outside the meta paths, in snake_case, are unique and equal the
   catalog;
3. each route's operationId, in snake_case, is the operation its endpoint runs;
4. each JSON body's documented schema has exactly the body's members as properties, and its
   required members as ``required``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from openapi_spec_validator import validate
from starlette.routing import Route
from starlette.testclient import TestClient

from templiqx_application import OPERATION_NAMES
from templiqx_http import ROUTES, openapi_document, openapi_json, openapi_yaml
from templiqx_http.openapi import META_OPERATION_IDS
from templiqx_http.operations import OperationEndpoint, PathEndpoint

UNDOCUMENTED = {"/healthz", "/readyz", "/swagger-ui", "/swagger-ui/{asset:path}"}
"""Served but not in the document, as in the reference."""
UNDOCUMENTED |= {"/", "/playground", "/playground/{asset:path}"}  # pages for people (#30)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _served(client: TestClient) -> dict[tuple[str, str], Any]:
    served: dict[tuple[str, str], Any] = {}
    for route in client.app.router.routes:  # type: ignore[attr-defined]
        assert isinstance(route, Route)
        path = route.path.replace(":path}", "}")
        if route.path in UNDOCUMENTED:
            continue
        endpoint = route.endpoint
        for method in sorted((route.methods or set()) - {"HEAD"}):
            target = endpoint.endpoints[method] if isinstance(endpoint, PathEndpoint) else None
            served[(method, path)] = target
    return served


def _documented() -> dict[tuple[str, str], str]:
    document = openapi_document()
    return {
        (method.upper(), path): operation["operationId"]
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }


def test_the_document_is_valid_openapi_3_1() -> None:
    document = openapi_document()
    assert document["openapi"] == "3.1.0"
    assert document["info"]["title"] == "Templiqx Operations API"
    validate(json.loads(openapi_json()))


def test_routes_document_and_catalog_agree(client: TestClient) -> None:
    served = _served(client)
    documented = _documented()
    meta = set(META_OPERATION_IDS)
    assert set(served) - meta == set(documented) - meta  # 1
    assert len(set(served) - meta) == 24
    operation_ids = [documented[key] for key in sorted(set(documented) - meta)]
    assert len(operation_ids) == len(set(operation_ids))  # 2
    assert sorted(_snake(name) for name in operation_ids) == sorted(OPERATION_NAMES)
    for key in set(served) - meta:  # 3
        endpoint = served[key]
        assert isinstance(endpoint, OperationEndpoint)
        assert endpoint.route.operation == _snake(documented[key])
    for key, operation_id in META_OPERATION_IDS.items():
        assert documented[key] == operation_id


def test_each_json_body_is_documented_closed_with_its_required_members() -> None:
    document = openapi_document()
    bodies = 0
    for route in ROUTES:
        operation = document["paths"][route.openapi_path][route.method.lower()]
        if route.body_kind != "json":
            content = operation.get("requestBody", {}).get("content", {})
            assert "application/json" not in content, route.operation
            continue
        bodies += 1
        ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        schema = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
        members = set(route.body) | ({"render"} if route.render else set())
        assert set(schema["properties"]) == members, route.operation
        required = {p.name for p in route.spec.parameters if p.required and p.name in route.body}
        assert set(schema.get("required", [])) == required, route.operation
        assert schema["additionalProperties"] is False
        if route.render:
            assert schema["properties"]["render"]["additionalProperties"] is False
    assert bodies == 10


def test_the_reference_conventions_hold() -> None:
    document = openapi_document()
    refs = re.findall(r'"\$ref": "([^"]+)"', json.dumps(document))
    for ref in set(refs):
        assert ref.startswith("#/components/"), ref
        node: Any = document
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]
    for path, item in document["paths"].items():
        assert path.startswith("/operations/v1/"), path
        for method, operation in item.items():
            assert any(
                (status.startswith("2") and "application/json" in response.get("content", {}))
                or (status.startswith("2") and "application/yaml" in response.get("content", {}))
                for status, response in operation["responses"].items()
            ), (method, path)
            if method != "get":
                assert isinstance(operation["x-templiqx-idempotent"], bool)
                assert operation["x-templiqx-idempotency"] in (
                    "safe",
                    "idempotent",
                    "cas-idempotent",
                    "create-once",
                    "caller-defined",
                )
    execute = document["paths"]["/operations/v1/packages/{package}/contracts/{contract}/execute"]
    streamed = execute["post"]["responses"]["200"]["content"]["text/event-stream"]
    assert set(streamed["x-templiqx-events"]) == {
        "Delta",
        "ToolCallDelta",
        "Complete",
        "Failed",
        "partial",
        "envelope",
    }
    assert "`Complete` is the runtime's terminal event" in execute["post"]["description"]


def test_served_as_json_and_yaml_with_the_mount_point_as_server(client_for: Any) -> None:
    client = client_for()
    as_json = client.get("/operations/v1/openapi.json")
    as_yaml = client.get("/operations/v1/openapi.yaml")
    assert as_json.headers["content-type"] == "application/json"
    assert as_yaml.headers["content-type"] == "application/yaml"
    assert as_yaml.text.startswith("openapi: 3.1.0\n")
    assert as_json.json() == yaml.safe_load(as_yaml.text) == openapi_document()
    assert as_json.content == openapi_json()
    assert as_yaml.content == openapi_yaml()
    assert "/operations/v1/catalog" in as_json.json()["paths"]

    from starlette.applications import Starlette
    from starlette.routing import Mount

    host = Starlette(routes=[Mount("/templiqx", app=client.app)])
    mounted = TestClient(host).get("/templiqx/operations/v1/openapi.json")
    assert mounted.json()["servers"] == [{"url": "/templiqx"}]
    assert TestClient(host).get("/templiqx/operations/v1/catalog").status_code == 200
