"""The route table against the catalog and against the reference's wire (http.md §2).

The table is what every other part is derived from; these tests hold it to both sources:
each catalog parameter travels in exactly one place, and each operation sits at the
reference's method and path.
"""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from templiqx_application import CATALOG, OPERATION_NAMES
from templiqx_http import ROUTES, http_call
from templiqx_http.routes import ROUTES_BY_OPERATION

# http.md §2, written out by hand: (method, path after /operations/v1) per catalog operation.
REFERENCE = {
    "catalog": ("GET", "/catalog"),
    "discover_packages": ("GET", "/packages"),
    "create_package": ("POST", "/packages"),
    "update_package": ("PATCH", "/packages/{package}"),
    "delete_package": ("DELETE", "/packages/{package}"),
    "validate_package": ("POST", "/packages/{package}/validate"),
    "test_package": ("POST", "/packages/{package}/test"),
    "export_package_identity": ("GET", "/packages/{package}/identity"),
    "sign_package": ("POST", "/packages/{package}/sign"),
    "verify_package_trust": ("POST", "/packages/{package}/verify-trust"),
    "list_evals": ("GET", "/packages/{package}/evals"),
    "run_eval": ("POST", "/packages/{package}/evals/run"),
    "inspect_contract": ("GET", "/packages/{package}/contracts/{contract}"),
    "put_contract": ("PUT", "/packages/{package}/contracts/{contract}"),
    "delete_contract": ("DELETE", "/packages/{package}/contracts/{contract}"),
    "validate_contract": ("POST", "/packages/{package}/contracts/{contract}/validate"),
    "compile_contract": ("POST", "/packages/{package}/contracts/{contract}/compile"),
    "render_contract": ("POST", "/packages/{package}/contracts/{contract}/render"),
    "execute_contract": ("POST", "/packages/{package}/contracts/{contract}/execute"),
    "diff_contract": ("POST", "/packages/{package}/contracts/{contract}/diff"),
    "explain_contract": ("GET", "/packages/{package}/contracts/{contract}/explain"),
    "list_workspace_artifacts": ("GET", "/artifacts"),
    "read_artifact": ("GET", "/artifacts/{artifact}"),
    "delete_workspace_artifact": ("DELETE", "/artifacts/{artifact}"),
}
JSON_BODIES = {
    "create_package": ({"name", "version"}, {"name", "version"}),
    "update_package": ({"version", "description"}, set()),
    "test_package": ({"capabilities"}, set()),
    "sign_package": ({"key_id"}, {"key_id"}),
    "verify_package_trust": ({"strict"}, set()),
    "compile_contract": ({"render", "capabilities"}, set()),
    "render_contract": ({"render", "capabilities"}, set()),
    "execute_contract": ({"render", "capabilities", "fixture_output", "stream"}, set()),
    "run_eval": ({"contract", "fixture_id", "capabilities"}, {"contract", "fixture_id"}),
    "diff_contract": ({"right_package", "right_contract"}, {"right_package", "right_contract"}),
}
"""http.md §2 and §14: the 10 JSON bodies, their members and the required ones."""
IF_MATCH = {
    "update_package": "required",
    "delete_package": "required",
    "sign_package": "required",
    "delete_contract": "required",
    "delete_workspace_artifact": "required",
    "put_contract": "optional",
}


def test_one_route_per_catalog_operation_in_catalog_order() -> None:
    assert [route.operation for route in ROUTES] == list(OPERATION_NAMES)
    assert set(REFERENCE) == set(OPERATION_NAMES)


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.operation)
def test_route_is_the_references(route: Any) -> None:
    assert (route.method, route.openapi_path.removeprefix("/operations/v1")) == REFERENCE[
        route.operation
    ]
    assert route.if_match == IF_MATCH.get(route.operation, "none")
    if route.operation in JSON_BODIES:
        assert route.body_kind == "json"
        members = set(route.body) | ({"render"} if route.render else set())
        assert members == JSON_BODIES[route.operation][0]
    else:
        assert route.body_kind == ("text" if route.operation == "put_contract" else "none")


@pytest.mark.parametrize("spec", CATALOG, ids=lambda spec: spec.name)
def test_every_catalog_parameter_travels_in_exactly_one_place(spec: Any) -> None:
    route = ROUTES_BY_OPERATION[spec.name]
    places: list[str] = [
        *route.path_parameters.values(),
        *route.query,
        *route.body,
        *route.render,
        *(["expected_fingerprint"] if route.if_match != "none" else []),
        *([route.text] if route.text else []),
    ]
    assert sorted(places) == sorted(p.name for p in spec.parameters)
    assert len(places) == len(set(places))


def test_http_call_builds_the_reference_request() -> None:
    call = http_call(
        "compile_contract",
        {"package": "w", "contract": "c", "inputs": {"a": 1}, "capabilities": ["text"]},
    )
    assert (call.method, call.path) == ("POST", "/operations/v1/packages/w/contracts/c/compile")
    assert call.headers == {"Content-Type": "application/json"}
    assert call.body == b'{"capabilities": ["text"], "render": {"inputs": {"a": 1}}}'
    read = http_call("read_artifact", {"package": "w", "path": "out/a b.txt"})
    assert read.path == "/operations/v1/artifacts/out/a%20b.txt?package=w"
    delete = http_call("delete_package", {"package": "p", "expected_fingerprint": "ab"})
    assert delete.headers == {"If-Match": '"ab"'}
    assert http_call("catalog", {}).path == "/operations/v1/catalog?view=full"
    assert http_call("catalog", {"view": "names"}).path == "/operations/v1/catalog?view=names"
    put = http_call("put_contract", {"package": "p", "contract": "c", "source": "id: c\n"})
    assert (put.method, put.body, put.headers) == (
        "PUT",
        b"id: c\n",
        {"Content-Type": "application/yaml"},
    )
    with pytest.raises(ValueError, match="takes no argument 'bogus'"):
        http_call("catalog", {"bogus": 1})


def test_no_route_answers_405_and_each_names_its_operation(client: TestClient) -> None:
    """The reference's route smoke test: every route reaches its own operation."""
    for route in ROUTES:
        path = route.openapi_path.format(package="nope", contract="nope", artifact="x.txt")
        response = client.request(route.method, path, headers={"If-Match": '"x"'})
        assert response.status_code != 405, route.operation
        assert response.json()["operation"] == route.operation


def test_reference_only_routes_are_unknown(client: TestClient) -> None:
    for method, path in (
        ("POST", "/operations/v1/legacy/migrate"),
        ("POST", "/operations/v1/documents/render"),
        ("POST", "/operations/v1/documents/inspect"),
        ("POST", "/operations/v1/packages/welcome/quality/proposals:assess"),
    ):
        response = client.request(method, path, json={})
        assert response.status_code == 404, path
