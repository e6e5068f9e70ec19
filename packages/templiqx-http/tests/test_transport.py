"""Decoding requests (http.md §3, §5): the reference's transport failures and what we add.

Every refusal here is an envelope for the route's operation with one error diagnostic and no
result or fingerprints, and the status the reference gives it (or ours, for what it lacks).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from templiqx_http import HttpSettings

ClientFactory = Callable[..., TestClient]
COMPILE = "/operations/v1/packages/welcome/contracts/onboarding-summary/compile"
SCENARIO = Path(__file__).resolve().parents[3] / "fixtures/packages/welcome/scenarios/stream-vip"


def _one(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    envelope: dict[str, Any] = response.json()
    assert envelope["ok"] is False
    assert "result" not in envelope
    assert envelope["fingerprints"] == {}
    (diagnostic,) = envelope["diagnostics"]
    assert diagnostic["code"] == code, diagnostic
    return diagnostic


_JSON = {"content-type": "application/json"}


@pytest.mark.parametrize(
    ("content", "headers", "fragment"),
    [
        (b"{", {"content-type": "application/json"}, "Failed to parse the request body as JSON"),
        (b"", {"content-type": "application/json"}, "the body is empty"),
        (b"{}", {"content-type": "text/plain"}, "application/json"),
        (b"{}", {}, "application/json"),
        (b"[]", {"content-type": "application/json"}, "must be a JSON object, not an array"),
        (b'{"bogus": 1}', {"content-type": "application/json"}, "'bogus'"),
        (b'{"render": {"extra": 1}}', {"content-type": "application/json"}, "'extra'"),
        (b'{"render": []}', {"content-type": "application/json"}, "'render' must be"),
        (b'{"capabilities": "text"}', {"content-type": "application/json"}, "capabilities"),
        (b'{"capabilities": null}', {"content-type": "application/json"}, "not null"),
        (b'{"a": 1, "a": 2}', {"content-type": "application/json"}, "names the key 'a' twice"),
        (b'{"render": {"inputs": {"x": 1, "x": 1}}}', _JSON, "names the key 'x' twice"),
        (b'{"render": {"inputs": {"n": ' + b"7" * 5000 + b"}}}", _JSON, "is out of range"),
        (b'{"render": {"inputs": {"n": 1e999}}}', _JSON, "number 1e999 is out of range"),
        (b'{"render": {"inputs": {"s": "\\ud800"}}}', _JSON, "unpaired UTF-16 surrogate"),
        (b'{"render": {"inputs": NaN}}', {"content-type": "application/json"}, "NaN"),
        (b"\xff{}", {"content-type": "application/json"}, "not valid UTF-8"),
        (b"[" * 5000, {"content-type": "application/json"}, "nested too deeply"),
    ],
)
def test_a_bad_json_body_is_tqx_http_json_400(
    client: TestClient, content: bytes, headers: dict[str, str], fragment: str
) -> None:
    diagnostic = _one(client.post(COMPILE, content=content, headers=headers), 400, "TQX_HTTP_JSON")
    assert fragment in diagnostic["message"] + diagnostic.get("help", "")


def test_vendor_json_media_types_are_json(client: TestClient) -> None:
    response = client.post(
        COMPILE, content=b"{}", headers={"content-type": "application/vnd.x+json; charset=utf-8"}
    )
    assert response.json()["diagnostics"][0]["code"] != "TQX_HTTP_JSON"


def test_a_missing_required_member_and_a_wrong_type_are_400_naming_the_field(
    client: TestClient,
) -> None:
    diagnostic = _one(
        client.post("/operations/v1/packages", json={"name": "x"}), 400, "TQX_HTTP_JSON"
    )
    assert "version" in diagnostic["message"]
    diagnostic = _one(
        client.post("/operations/v1/packages/welcome/verify-trust", json={"strict": "yes"}),
        400,
        "TQX_HTTP_JSON",
    )
    assert "strict" in diagnostic["message"]
    assert diagnostic["json_pointer"] == "/strict"


def test_null_means_not_given_where_the_default_is_null(client: TestClient) -> None:
    update = client.patch(
        "/operations/v1/packages/welcome",
        json={"version": None, "description": None},
        headers={"If-Match": "x"},
    )
    assert update.json()["diagnostics"][0]["code"] == "TQX_PACKAGE_UPDATE_EMPTY"
    assert update.status_code == 422
    execute = client.post(
        "/operations/v1/packages/welcome/contracts/onboarding-summary/execute",
        json={"fixture_output": None, "render": None},
    )
    assert execute.json()["diagnostics"][0]["code"] == "TQX_VALUE_REQUIRED"


def test_a_json_route_needs_a_body(client: TestClient) -> None:
    _one(
        client.post(
            "/operations/v1/packages/welcome/test", headers={"content-type": "application/json"}
        ),
        400,
        "TQX_HTTP_JSON",
    )
    assert client.post("/operations/v1/packages/welcome/test", json={}).status_code == 200


def test_a_route_without_body_ignores_whatever_is_sent(client: TestClient) -> None:
    response = client.post(
        "/operations/v1/packages/welcome/validate",
        content=b"not json at all",
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 200


def test_if_match_is_checked_before_the_body_and_stripped_of_quotes(
    client: TestClient,
) -> None:
    diagnostic = _one(
        client.post("/operations/v1/packages/welcome/sign", content=b"{not json"),
        400,
        "TQX_HTTP_IF_MATCH_REQUIRED",
    )
    assert diagnostic["message"] == "If-Match is required for this mutation"
    assert diagnostic["json_pointer"] == "/headers/if-match"
    empty = client.delete("/operations/v1/packages/welcome", headers={"If-Match": '""'})
    _one(empty, 400, "TQX_HTTP_IF_MATCH_REQUIRED")
    stale = client.delete("/operations/v1/packages/welcome", headers={"If-Match": '"deadbeef"'})
    diagnostic = _one(stale, 409, "TQX_CAS_CONFLICT")
    assert "deadbeef" in diagnostic["message"]


def test_artifact_queries_are_strict(client: TestClient) -> None:
    listed = client.get("/operations/v1/artifacts", params={"package": "welcome"})
    assert listed.status_code == 200
    assert listed.json()["result"] == [{"path": "notes.txt", "size": 12}]
    for query, fragment in (
        ("", "package"),
        ("?package=welcome&bogus=1", "'bogus'"),
        ("?package=welcome&package=other", "more than once"),
    ):
        diagnostic = _one(client.get("/operations/v1/artifacts" + query), 400, "TQX_HTTP_JSON")
        assert fragment in diagnostic["message"], query
    read = client.get("/operations/v1/artifacts/notes.txt", params={"package": "welcome"})
    assert read.json()["result"]["content"] == "parity-proof"
    other = client.get("/operations/v1/packages/welcome/identity?anything=goes")
    assert other.status_code == 200  # routes without a query ignore one, as the reference


def test_an_encoded_traversal_reaches_the_service_and_is_refused(client: TestClient) -> None:
    response = client.get(
        "/operations/v1/artifacts/..%2f..%2fetc%2fpasswd", params={"package": "welcome"}
    )
    _one(response, 400, "TQX_PATH_INVALID")


@pytest.mark.parametrize("name", ["a%0Ab", "a%0Db", "%0A", "out%2Fline%0Abreak.txt"])
def test_any_character_in_an_artifact_path_reaches_the_route(client: TestClient, name: str) -> None:
    """The artifact wildcard takes every character, as the reference's does: a decoded line
    break (found by schemathesis) is the service's to judge, answered with an envelope, not a
    routing miss's bare text 404."""
    for method, headers in (("GET", {}), ("DELETE", {"If-Match": "0" * 64})):
        response = client.request(
            method, f"/operations/v1/artifacts/{name}?package=welcome", headers=headers
        )
        assert response.headers["content-type"] == "application/json", (method, response.text)
        operation = "read_artifact" if method == "GET" else "delete_workspace_artifact"
        assert response.json()["operation"] == operation
        assert response.status_code == 404
        assert response.json()["diagnostics"][0]["code"] == "TQX_NOT_FOUND"


def test_the_workspace_override_is_off_unless_enabled(client_for: ClientFactory, root: Any) -> None:
    query = {"package": "welcome", "workspace": "/"}
    diagnostic = _one(
        client_for().get("/operations/v1/artifacts", params=query),
        403,
        "TQX_HTTP_WORKSPACE_DISABLED",
    )
    assert diagnostic["json_pointer"] == "/query/workspace"
    enabled = client_for(HttpSettings(allow_workspace_override=True))
    confined = enabled.get("/operations/v1/artifacts", params=query)
    assert confined.status_code == 400  # passed on: the service confines it to the workspace
    assert confined.json()["diagnostics"][0]["code"] == "TQX_PATH_INVALID"
    workspace = str(root / ".templiqx-workspace")
    inside = enabled.get("/operations/v1/artifacts", params={**query, "workspace": workspace})
    assert inside.status_code == 200


def test_put_reads_the_body_as_utf8_text_whatever_its_type(client: TestClient) -> None:
    path = "/operations/v1/packages/welcome/contracts/hello"
    bad = client.put(path, content=b"id: hello\n\xff", headers={"content-type": "text/plain"})
    diagnostic = _one(bad, 400, "TQX_HTTP_JSON")
    assert "UTF-8" in diagnostic["message"]
    broken = client.put(path, content=b"id: [", headers={"content-type": "application/json"})
    assert broken.status_code == 422
    assert broken.json()["diagnostics"][0]["code"].startswith("TQX_PARSE")


def test_body_limit_is_413_before_the_rest_is_read(client_for: ClientFactory) -> None:
    client = client_for(HttpSettings(max_body_bytes=64))
    declared = client.post(COMPILE, content=b"{" + b" " * 100 + b"}", headers=_json())
    diagnostic = _one(declared, 413, "TQX_HTTP_BODY_TOO_LARGE")
    assert "64-byte limit" in diagnostic["message"]

    def chunks() -> Any:  # no Content-Length: counted while read
        yield b'{"render": {"inputs": {"a": "'
        yield b"x" * 100
        yield b'"}}}'

    _one(client.post(COMPILE, content=chunks(), headers=_json()), 413, "TQX_HTTP_BODY_TOO_LARGE")
    small = client.post(COMPILE, content=b"{}", headers=_json())
    assert small.status_code not in (400, 413)  # decoded and passed on to the service


def _json() -> dict[str, str]:
    return {"content-type": "application/json"}


def test_values_are_counted_before_decoding_and_a_large_body_is_decoded_off_the_loop(
    client_for: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    import templiqx_http.operations as operations
    from templiqx_application import MAX_ARGUMENT_NODES
    from templiqx_http.transport import MAX_BODY_NODES

    threads: list[str] = []
    original = operations.decode_arguments

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(operations, "decode_arguments", recording)
    client = client_for(HttpSettings(max_body_bytes=8 << 20))

    def body(zeros: int) -> bytes:
        return b'{"render": {"inputs": {"x": [' + b",".join([b"0"] * zeros) + b"]}}}"

    flood = _one(
        client.post(COMPILE, content=body(MAX_BODY_NODES), headers=_json()), 400, "TQX_HTTP_JSON"
    )
    assert "more than the" in flood["message"]
    assert "MAX_ARGUMENT_NODES" in flood["message"]
    one_argument = client.post(COMPILE, content=body(MAX_ARGUMENT_NODES + 10), headers=_json())
    diagnostic = _one(one_argument, 400, "TQX_HTTP_JSON")
    assert "'inputs'" in diagnostic["message"]
    assert "MAX_ARGUMENT_NODES" in diagnostic["message"]
    assert diagnostic["json_pointer"] == "/render/inputs"
    small = client.post(COMPILE, content=b"{}", headers=_json())
    assert small.status_code not in (400, 413)
    loop, off = threads[-1], threads[:-1]
    assert len(off) == 2, threads
    assert loop not in off, threads


def test_routing_misses_are_bare_404_and_405(client: TestClient) -> None:
    assert client.get("/operations/v1/nothing").status_code == 404
    assert client.get("/operations/v1/catalog/").status_code == 404  # no slash normalisation
    wrong = client.put("/operations/v1/packages")
    assert wrong.status_code == 405
    assert set(wrong.headers["allow"].replace(" ", "").split(",")) == {"GET", "HEAD", "POST"}
    assert client.options("/operations/v1/catalog").status_code == 405
    head = client.head("/operations/v1/catalog")
    assert head.status_code == 200
    assert head.content == b""


def test_request_ids_are_echoed_or_made(client: TestClient) -> None:
    given = client.get("/operations/v1/catalog", headers={"X-Request-Id": "abc-123"})
    assert given.headers["x-request-id"] == "abc-123"
    made = [client.get("/healthz").headers["x-request-id"] for _ in range(2)]
    assert all(value.startswith("tqx-") for value in made)
    assert made[0] != made[1]
    long = client.get("/healthz", headers={"X-Request-Id": "x" * 129})
    assert long.headers["x-request-id"].startswith("tqx-")
    assert client.get("/operations/v1/nothing").headers["x-request-id"].startswith("tqx-")


def test_the_catalog_route_answers_names_unless_asked_for_full(client: TestClient) -> None:
    names = client.get("/operations/v1/catalog").json()
    assert names["result"][:3] == ["catalog", "discover_packages", "create_package"]
    full = client.get("/operations/v1/catalog", params={"view": "full"}).json()
    assert [spec["name"] for spec in full["result"]] == names["result"]
    _one(client.get("/operations/v1/catalog?view=all"), 400, "TQX_HTTP_JSON")


def test_identical_requests_give_byte_identical_bodies(client: TestClient) -> None:
    body = {"render": json.loads((SCENARIO / "request.json").read_text())}
    first = client.post(COMPILE, json={**body, "capabilities": ["structured_output"]}).content
    for _ in range(2):
        again = client.post(COMPILE, json={**body, "capabilities": ["structured_output"]})
        assert again.content == first


def test_reserved_context_keys_are_refused_as_by_the_python_api(client: TestClient) -> None:
    service = client.app.state.templiqx.service  # type: ignore[attr-defined]
    values = json.loads((SCENARIO / "request.json").read_text(encoding="utf-8"))
    capabilities = ["structured_output"]
    arguments = {"package": "welcome", "contract": "onboarding-summary"}
    statuses = {}
    for key in ("_templiqx_x", "_templiqx_authorized_merge"):
        context = {**values["context"], key: {"role": "admin"}}
        body = {"render": {**values, "context": context}, "capabilities": capabilities}
        response = client.post(COMPILE, json=body)
        direct = service.invoke(
            "compile_contract",
            {**arguments, **values, "context": context, "capabilities": capabilities},
        )
        assert response.json() == json.loads(json.dumps(direct.to_builtins()))
        statuses[key] = (response.status_code, response.json()["diagnostics"])
    status, diagnostics = statuses["_templiqx_x"]
    assert status == 422
    assert diagnostics[0]["code"] == "TQX_CONTEXT_RESERVED"
    assert diagnostics[0]["json_pointer"].startswith("/context")
