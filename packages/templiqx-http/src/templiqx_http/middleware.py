"""The outermost layer of every request: its id, and one JSON access-log line when it ends.

:class:`RequestContext` gives each request an id — the client's ``X-Request-Id`` when it sends
a usable one (1 to 128 printable ASCII characters), otherwise ``tqx-<n>`` from a process-wide
counter — echoes it on the response, and when the response ends writes one line to the
``templiqx_http.access`` logger::

    {"event":"request","request_id":"tqx-7","method":"POST","path":"/operations/v1/...",
     "operation":"compile_contract","status":200,"ok":true,"duration_ms":3.1,"client":"127.0.0.1"}

Never a body, a query string, a header value (other than the id the client chose to send) or
a secret. Other layers note what they learned in the ASGI scope: :data:`OPERATION_KEY` (the
catalog operation of the route) and :data:`OK_KEY` (the envelope's ``ok``).

It is plain ASGI (no per-request task or buffering), so streamed responses pass through
untouched, and it is the seam where a host adds its own layers after it (tracing, say):
``create_app(service, middleware=[...])``.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from typing import Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "ACCESS_LOGGER",
    "OK_KEY",
    "OPERATION_KEY",
    "REQUEST_ID_KEY",
    "RequestContext",
    "request_id_of",
]

ACCESS_LOGGER: Final = "templiqx_http.access"
REQUEST_ID_KEY: Final = "templiqx.request_id"
OPERATION_KEY: Final = "templiqx.operation"
OK_KEY: Final = "templiqx.ok"

_counter = itertools.count(1)
_HEADER = b"x-request-id"
_access = logging.getLogger(ACCESS_LOGGER)


def _usable(raw: bytes) -> str | None:
    if not 1 <= len(raw) <= 128 or not all(0x21 <= byte <= 0x7E for byte in raw):
        return None
    return raw.decode("ascii")


def request_id_of(scope: Scope) -> str:
    """The id :class:`RequestContext` gave the request (``""`` outside it)."""
    value = scope.get(REQUEST_ID_KEY, "")
    return value if isinstance(value, str) else ""


class RequestContext:
    """Request id in, request id out, one access-log line per HTTP request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = None
        for name, value in scope.get("headers", ()):
            if name == _HEADER:
                given = _usable(value)
                break
        request_id = given or f"tqx-{next(_counter)}"
        scope[REQUEST_ID_KEY] = request_id
        header = (_HEADER, request_id.encode("ascii"))
        status = 0
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [h for h in message.get("headers", ()) if h[0].lower() != _HEADER]
                message = {**message, "headers": [*headers, header]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            if _access.isEnabledFor(logging.INFO):
                _access.info(_line(scope, request_id, status, started))


def _line(scope: Scope, request_id: str, status: int, started: float) -> str:
    record: dict[str, object] = {
        "event": "request",
        "request_id": request_id,
        "method": scope.get("method", ""),
        "path": scope.get("path", ""),
    }
    operation = scope.get(OPERATION_KEY)
    if operation is not None:
        record["operation"] = operation
    record["status"] = status  # 0: the connection ended before a response started
    ok = scope.get(OK_KEY)
    if ok is not None:
        record["ok"] = ok
    record["duration_ms"] = round((time.perf_counter() - started) * 1000, 1)
    client = scope.get("client")
    if client:
        record["client"] = client[0]
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))
