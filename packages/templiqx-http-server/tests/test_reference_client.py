"""A client written only from the reference's API description works unchanged.

Everything this client knows comes from the reference's operator guide and document as
summarised in http.md: the environment names a deployment sets, the routes, JSON bodies with
``render`` nesting the values, ``If-Match`` carrying ``fingerprints.package`` back, the YAML
body of ``PUT``, a UUID ``X-Request-Id`` on every request (as the generated clients send),
status 200 for success and the envelope on every answer. It uses nothing of templiqx.
"""

from __future__ import annotations

import http.client
import json
import uuid
from pathlib import Path
from typing import Any

GREETING = """api_version: templiqx/v1alpha1
id: greeting
version: 1.0.0
description: Greets someone.
inputs:
  name:
    required: true
    schema: {type: string, minLength: 1}
capabilities: [structured_output]
messages:
  - role: user
    content:
      - kind: text
        value: "Greet "
      - kind: interpolate
        expression: {kind: ref, path: inputs.name}
output_schema:
  type: object
  additionalProperties: false
  required: [greeting]
  properties:
    greeting: {type: string}
"""


class ReferenceClient:
    """The smallest useful client of the Templiqx Operations API (v1)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port

    def call(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        text_body: str | None = None,
        if_match: str | None = None,
    ) -> tuple[int, dict[str, Any]]:
        headers = {"X-Request-Id": str(uuid.uuid4()), "Accept": "application/json"}
        body: bytes | None = None
        if json_body is not None:
            body = json.dumps(json_body).encode()
            headers["Content-Type"] = "application/json"
        if text_body is not None:
            body = text_body.encode()
            headers["Content-Type"] = "application/yaml"
        if if_match is not None:
            headers["If-Match"] = f'"{if_match}"'
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            connection.request(method, "/operations/v1" + path, body=body, headers=headers)
            response = connection.getresponse()
            data = json.loads(response.read())
            assert response.getheader("X-Request-Id") == headers["X-Request-Id"]
            return response.status, data
        finally:
            connection.close()


def test_the_reference_client_works_unchanged(harness: Any, tmp_path: Path) -> None:
    root = tmp_path / "data"
    root.mkdir()
    env = {
        "TEMPLIQX_HTTP_ADDR": "127.0.0.1:0",
        "TEMPLIQX_ROOT": str(root),
        "TEMPLIQX_WORKSPACE": str(tmp_path / "workspace"),
        "TEMPLIQX_RUNTIME_MODE": "deterministic-fake",
    }
    server = harness.start(env=env)
    try:
        port = int(server.wait_for("listening")["port"])
        client = ReferenceClient("127.0.0.1", port)

        status, ready = client.call("GET", "/health/ready")
        assert (status, ready) == (200, {"status": "ready", "api_version": "templiqx/v1alpha1"})
        status, catalog = client.call("GET", "/catalog")
        assert status == 200
        assert "compile_contract" in catalog["result"]
        assert all(isinstance(name, str) for name in catalog["result"])

        status, created = client.call(
            "POST", "/packages", json_body={"name": "demo", "version": "0.1.0"}
        )
        assert (status, created["ok"]) == (200, True)
        token = created["fingerprints"]["package"]

        status, updated = client.call(
            "PATCH",
            "/packages/demo",
            json_body={"description": "A demo"},
            if_match=token,
        )
        assert status == 200, updated
        assert updated["result"]["description"] == "A demo"
        assert updated["fingerprints"]["package"] != token

        status, put = client.call("PUT", "/packages/demo/contracts/greeting", text_body=GREETING)
        assert status == 200, put
        assert put["fingerprints"]["contract"]

        values = {"render": {"inputs": {"name": "Ada"}}, "capabilities": ["structured_output"]}
        status, compiled = client.call(
            "POST", "/packages/demo/contracts/greeting/compile", json_body=values
        )
        assert status == 200, compiled
        assert compiled["result"]["messages"] == [{"role": "user", "content": "Greet Ada"}]
        assert compiled["fingerprints"]["compiled_interaction"]

        status, executed = client.call(
            "POST",
            "/packages/demo/contracts/greeting/execute",
            json_body={**values, "fixture_output": {"greeting": "Hello, Ada!"}},
        )
        assert status == 200, executed
        assert executed["result"]["output"] == {"greeting": "Hello, Ada!"}
        assert set(executed["fingerprints"]) == {"request", "output"}

        status, streamed = client.call(
            "POST",
            "/packages/demo/contracts/greeting/execute",
            json_body={**values, "fixture_output": {"greeting": "Hi"}, "stream": True},
        )
        assert status == 200
        assert streamed["stream_events"][-1]["kind"] == "Complete"

        status, missing = client.call("GET", "/packages/missing/contracts/greeting")
        assert status == 404
        assert missing["ok"] is False
        assert missing["diagnostics"][0]["code"] == "TQX_NOT_FOUND"
    finally:
        assert server.stop() == 0


def test_what_generated_clients_send_is_understood(harness: Any, tmp_path: Path) -> None:
    """The reference's SDKs (Python, Go, TypeScript, Rust, .NET) are generated from its
    document; their HTTP stacks add what the hand-written client above does not: a charset on
    the JSON media type (.NET's ``StringContent``), a generator ``User-Agent``, the declared
    ``X-Tenant-Id``, ``If-Match`` passed verbatim without quotes, chunked request bodies
    (Go and Rust when a body's length is not known up front), ``Expect: 100-continue`` and
    ``Accept-Encoding: gzip``, and every call on one kept-alive connection. The same journey
    works, with the same answers, spoken that way."""
    root = tmp_path / "data"
    root.mkdir()
    server = harness.start(env={"TEMPLIQX_HTTP_ADDR": "127.0.0.1:0", "TEMPLIQX_ROOT": str(root)})
    connection: http.client.HTTPConnection | None = None
    try:
        port = int(server.wait_for("listening")["port"])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        common = {
            "User-Agent": "OpenAPI-Generator/1.0.0-alpha.2/csharp",
            "Accept": "application/json",
            "Accept-Encoding": "gzip, deflate",
            "X-Tenant-Id": "tenant-a",
        }

        def call(
            method: str,
            path: str,
            body: bytes | None = None,
            *,
            media: str = "application/json; charset=utf-8",
            chunked: bool = False,
            **extra: str,
        ) -> tuple[int, dict[str, Any]]:
            assert connection is not None
            headers = {**common, "X-Request-Id": str(uuid.uuid4()), **extra}
            if body is not None:
                headers["Content-Type"] = media
            if chunked and body is not None:
                half = len(body) // 2
                connection.request(
                    method,
                    "/operations/v1" + path,
                    body=iter([body[:half], body[half:]]),
                    headers=headers,
                    encode_chunked=True,
                )
            else:
                connection.request(method, "/operations/v1" + path, body=body, headers=headers)
            response = connection.getresponse()
            raw = response.read()
            assert response.getheader("Content-Encoding") is None  # plain JSON, whatever asked
            assert response.getheader("X-Request-Id") == headers["X-Request-Id"]
            return response.status, json.loads(raw)

        status, created = call(
            "POST", "/packages", json.dumps({"name": "demo", "version": "0.1.0"}).encode()
        )
        assert (status, created["ok"]) == (200, True), created
        token = created["fingerprints"]["package"]
        status, updated = call(
            "PATCH",
            "/packages/demo",
            json.dumps({"version": None, "description": "A demo"}).encode(),
            chunked=True,
            **{"If-Match": token},  # verbatim, no quotes
        )
        assert status == 200, updated
        assert updated["result"]["description"] == "A demo"
        status, put = call(
            "PUT",
            "/packages/demo/contracts/greeting",
            GREETING.encode(),
            media="application/yaml; charset=utf-8",
            chunked=True,
        )
        assert status == 200, put
        values = {"render": {"inputs": {"name": "Ada"}}, "capabilities": ["structured_output"]}
        body = json.dumps({**values, "fixture_output": {"greeting": "Hello, Ada!"}}).encode()
        status, executed = call(
            "POST",
            "/packages/demo/contracts/greeting/execute",
            body,
            Expect="100-continue",
        )
        assert status == 200, executed
        assert executed["result"]["output"] == {"greeting": "Hello, Ada!"}
        status, missing = call("GET", "/packages/missing/identity")
        assert (status, missing["diagnostics"][0]["code"]) == (404, "TQX_NOT_FOUND")
        status, conflict = call(
            "DELETE", "/packages/demo", **{"If-Match": token}
        )  # the token before the update: stale
        assert (status, conflict["diagnostics"][0]["code"]) == (409, "TQX_CAS_CONFLICT")
    finally:
        if connection is not None:
            connection.close()
        assert server.stop() == 0
