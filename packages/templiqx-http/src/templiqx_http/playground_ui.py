"""The contract playground: a page in the browser over the operations API, and the home page.

``GET /playground`` redirects to ``/playground/``, which serves the page; its scripts are plain
ES modules and its style one CSS file, all read from the package (``templiqx_http/playground``),
so the page works offline and needs no build step. The page calls only the operation routes
(relative to itself, so a host may mount the app under a prefix), with the bearer token the
user types in when the server asks for one (kept in the tab's memory). ``GET /`` is a small
page that links to the playground and the API docs.

Every response carries a Content Security Policy that allows nothing from other origins.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Final

from starlette.types import Receive, Scope, Send

__all__ = ["HOME_PAGE", "PLAYGROUND_ASSETS", "HomePage", "PlaygroundPage", "playground_asset"]

_MEDIA: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}

PLAYGROUND_ASSETS: Final[tuple[str, ...]] = (
    "index.html",
    "playground.css",
    "favicon.svg",
    "js/main.js",
    "js/api.js",
    "js/dom.js",
    "js/stream.js",
    "js/source.js",
    "js/form.js",
    "js/tree.js",
    "js/diff.js",
    "js/compile.js",
    "js/run.js",
    "js/copyas.js",
    "js/compare.js",
    "js/evals.js",
)
"""Every file the playground serves (paths under ``/playground/``)."""

_CSP: Final = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'self'"
)

HOME_PAGE: Final = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>templiqx</title>
<link rel="icon" href="playground/favicon.svg" type="image/svg+xml">
</head>
<body>
<main>
<h1>templiqx</h1>
<p>The templiqx operations API is served here, under <code>operations/v1</code>.</p>
<ul>
<li><a href="playground/">Contract playground</a>: browse contracts, fill their inputs,
compile, run them live, compare and run evals, in the browser.</li>
<li><a href="swagger-ui/">API docs</a>: every operation route, from the OpenAPI document
(<a href="operations/v1/openapi.json">JSON</a>, <a href="operations/v1/openapi.yaml">YAML</a>).</li>
</ul>
</main>
</body>
</html>
"""


@functools.cache
def playground_asset(name: str) -> bytes:
    """One playground file's bytes (``KeyError`` for a name not in the list)."""
    if name not in PLAYGROUND_ASSETS:
        raise KeyError(name)
    return resources.files("templiqx_http").joinpath("playground", *name.split("/")).read_bytes()


def _media(name: str) -> str:
    return _MEDIA[name[name.rindex(".") :]]


class PlaygroundPage:
    """``/playground`` (a redirect), ``/playground/`` (the page) and its files."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        name = scope.get("path_params", {}).get("asset")
        if name is None:  # /playground without its slash
            location = scope.get("root_path", "") + "/playground/"
            await _send(send, 307, b"", [(b"location", location.encode("latin-1"))])
            return
        name = name or "index.html"
        if name not in PLAYGROUND_ASSETS:
            await _send(send, 404, b"", [])
            return
        headers = [
            (b"content-type", _media(name).encode("ascii")),
            (b"content-security-policy", _CSP.encode("ascii")),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"),
            # the files change with the installed version: revalidate, never serve stale code
            (b"cache-control", b"no-cache"),
        ]
        body = b"" if scope.get("method") == "HEAD" else playground_asset(name)
        await _send(send, 200, body, headers, length=len(playground_asset(name)))


class HomePage:
    """``/``: links to the playground and the API docs."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        page = HOME_PAGE.encode("utf-8")
        headers = [
            (b"content-type", b"text/html; charset=utf-8"),
            (b"content-security-policy", _CSP.encode("ascii")),
            (b"x-content-type-options", b"nosniff"),
            (b"cache-control", b"no-cache"),
        ]
        body = b"" if scope.get("method") == "HEAD" else page
        await _send(send, 200, body, headers, length=len(page))


async def _send(
    send: Send,
    status: int,
    body: bytes,
    headers: list[tuple[bytes, bytes]],
    *,
    length: int | None = None,
) -> None:
    size = len(body) if length is None else length
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(size).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
