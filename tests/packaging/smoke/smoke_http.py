"""templiqx-http installed alone: the ASGI app answers, with its document and docs page.

No server and no HTTP client are installed with it: the app is called as ASGI directly. A
service needs a store only for operations that read packages; the catalog reads none.
"""

import asyncio
import json
from typing import Any

from templiqx_application import OPERATION_NAMES, TempliqxService
from templiqx_http import create_app, openapi_document


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


async def call(app: Any, method: str, path: str) -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    await app(scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], body


app = create_app(TempliqxService(store=None, workspace=None))  # type: ignore[arg-type]
status, body = asyncio.run(call(app, "GET", "/operations/v1/catalog"))
check(status == 200 and json.loads(body)["result"] == list(OPERATION_NAMES), f"catalog: {body!r}")
status, body = asyncio.run(call(app, "GET", "/operations/v1/openapi.yaml"))
check(status == 200 and body.startswith(b"openapi: 3.1.0"), "the YAML document")
check(len(openapi_document()["paths"]) > 20, "the document's paths")
status, body = asyncio.run(call(app, "GET", "/swagger-ui/swagger-ui-bundle.js"))
check(status == 200 and len(body) > 1_000_000, "the docs page's assets are in the wheel")
status, body = asyncio.run(call(app, "GET", "/swagger-ui/LICENSE"))
check(status == 200 and b"Apache License" in body, "the vendored license")
print("ok")
