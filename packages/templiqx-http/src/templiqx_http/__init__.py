"""templiqx-http: the reference's operations API over HTTP, as an ASGI application.

``create_app(service)`` returns a Starlette application serving every catalog operation at the
reference's route (``/operations/v1/...``), with the reference's bodies, headers, status
mapping and transport errors, so the reference's HTTP clients work unchanged; it adds live
Server-Sent Events for ``execute_contract``, bearer-token auth, body, deadline and concurrency
limits, readiness reasons, an OpenAPI 3.1 document generated from the catalog and an API docs
page served from inside the wheel. It depends on no server: run it with
``templiqx-http-server`` (templiqx-http-server), with any ASGI server, or mount it in a host.

The building blocks are public: :func:`status_for` (envelope -> HTTP status), the SSE
encoders (:func:`stream_event_sse`, :func:`partial_sse`, :func:`envelope_sse`,
:func:`sse_event`), the route table
(:data:`ROUTES`) and :func:`http_call` (the request for a catalog call).
"""

from templiqx_http.app import TempliqxHttp, create_app
from templiqx_http.meta import ReadinessCheck
from templiqx_http.openapi import openapi_document, openapi_json, openapi_yaml
from templiqx_http.routes import BASE_PATH, ROUTES, HttpCall, OperationRoute, http_call
from templiqx_http.settings import HttpSettings
from templiqx_http.sse import (
    ENVELOPE_EVENT,
    PARTIAL_EVENT,
    SSE_HEADERS,
    SseDecoder,
    SseMessage,
    envelope_sse,
    partial_sse,
    partial_value,
    rebuild_envelope,
    sse_comment,
    sse_event,
    stream_event_sse,
)
from templiqx_http.status import status_for, status_for_codes

__version__ = "0.2.0"

__all__ = [
    "BASE_PATH",
    "ENVELOPE_EVENT",
    "PARTIAL_EVENT",
    "ROUTES",
    "SSE_HEADERS",
    "HttpCall",
    "HttpSettings",
    "OperationRoute",
    "ReadinessCheck",
    "SseDecoder",
    "SseMessage",
    "TempliqxHttp",
    "__version__",
    "create_app",
    "envelope_sse",
    "http_call",
    "openapi_document",
    "openapi_json",
    "openapi_yaml",
    "partial_sse",
    "partial_value",
    "rebuild_envelope",
    "sse_comment",
    "sse_event",
    "status_for",
    "status_for_codes",
    "stream_event_sse",
]
