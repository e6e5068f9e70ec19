"""The API docs page: Swagger UI from assets inside the wheel, no network needed.

``GET /swagger-ui`` redirects to ``/swagger-ui/``, which serves the page; the page loads
``/operations/v1/openapi.json`` (relative to itself, so a host may mount the app under a
prefix). The assets are the ``swagger-ui-dist`` files listed in :data:`ASSETS`, read from the
package once and served with a long cache lifetime; the page itself is sent with a Content
Security Policy that allows nothing from other origins.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Final

from starlette.types import Receive, Scope, Send

__all__ = ["ASSETS", "SWAGGER_UI_VERSION", "DocsPage"]

SWAGGER_UI_VERSION: Final = "5.35.0"

ASSETS: Final[dict[str, str]] = {
    "index.html": "text/html; charset=utf-8",
    "templiqx-initializer.js": "text/javascript; charset=utf-8",
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
    "favicon-16x16.png": "image/png",
    "LICENSE": "text/plain; charset=utf-8",
    "NOTICE": "text/plain; charset=utf-8",
    "swagger-ui-bundle.js.LICENSE.txt": "text/plain; charset=utf-8",
}
"""The files served under ``/swagger-ui/`` and their media types."""

_CSP: Final = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'self'"
)


@functools.cache
def asset(name: str) -> bytes:
    """One asset's bytes (``KeyError`` for a name not in :data:`ASSETS`)."""
    if name not in ASSETS:
        raise KeyError(name)
    return resources.files("templiqx_http").joinpath("swagger_ui", name).read_bytes()


class DocsPage:
    """``/swagger-ui`` (a redirect), ``/swagger-ui/`` (the page) and its assets."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        name = scope.get("path_params", {}).get("asset")
        if name is None:  # /swagger-ui without its slash
            location = scope.get("root_path", "") + "/swagger-ui/"
            await _send(send, 307, b"", [(b"location", location.encode("latin-1"))])
            return
        name = name or "index.html"
        if name not in ASSETS:
            await _send(send, 404, b"", [])
            return
        headers = [(b"content-type", ASSETS[name].encode("ascii"))]
        if name == "index.html":
            headers += [
                (b"content-security-policy", _CSP.encode("ascii")),
                (b"cache-control", b"no-cache"),
            ]
        else:
            headers.append((b"cache-control", b"public, max-age=86400"))
        headers.append((b"x-content-type-options", b"nosniff"))
        await _send(send, 200, asset(name), headers)


async def _send(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
