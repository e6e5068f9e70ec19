"""``create_app(service)``: the ASGI application of the operations API, on Starlette.

The stack, outermost first::

    RequestContext        request id in and out, one JSON access-log line per request
    CORS                  only when origins are configured
    <host middleware>     create_app(..., middleware=[...]): e.g. tracing
    router                the operation routes (auth, limits, decoding: templiqx_http.operations),
                          health, the OpenAPI document, the API docs page, <host routes>

Unknown paths are a bare 404, a known path with another method a 405 with ``Allow``.
A host mounts the whole application with one line (``host.mount("/templiqx", create_app(svc))``)
or serves it alone (``templiqx-http-server``). The application never imports a server.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import BaseRoute, Route

from templiqx_application import TempliqxService
from templiqx_http.docs_ui import DocsPage
from templiqx_http.meta import Document, Liveness, Readiness, ReadinessCheck
from templiqx_http.middleware import RequestContext
from templiqx_http.operations import Inflight, OperationEndpoint, PathEndpoint
from templiqx_http.playground_ui import HomePage, PlaygroundPage
from templiqx_http.routes import BASE_PATH, ROUTES
from templiqx_http.settings import HttpSettings

__all__ = ["TempliqxHttp", "create_app"]

_CORS_HEADERS = [
    "Authorization",
    "Content-Type",
    "If-Match",
    "X-Request-Id",
    "X-Tenant-Id",
    "Accept",
    "traceparent",
    "tracestate",
    "baggage",
]


class TempliqxHttp:
    """What the application holds, on ``app.state.templiqx``: its service, settings and the
    calls in flight (:meth:`drain` cancels them: what a server does on shutdown)."""

    def __init__(
        self,
        service: TempliqxService,
        settings: HttpSettings,
        runtime_check: ReadinessCheck | None = None,
    ) -> None:
        self.service = service
        self.settings = settings
        self.inflight = Inflight(settings.max_concurrent)
        self.runtime_check = runtime_check

    def drain(self) -> int:
        """Cancel every running operation call (each stream ends in ``Failed``); readiness
        answers 503 from now on. Returns how many calls were running."""
        return self.inflight.cancel_all()


def _operation_routes(state: TempliqxHttp) -> list[BaseRoute]:
    by_path: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        endpoint = OperationEndpoint(
            route, state.service, state.settings, state.inflight, state.runtime_check
        )
        by_path.setdefault(route.full_path, {})[route.method] = endpoint
    routes: list[BaseRoute] = []
    for path, endpoints in by_path.items():
        dispatcher = PathEndpoint(endpoints)
        served = Route(path, dispatcher, methods=dispatcher.methods)
        # Starlette's ``{name:path}`` is ``.*`` without DOTALL: a decoded newline in an artifact
        # path (``%0A``) missed the route and got a bare text 404. The reference's wildcard
        # takes any character; the service then judges the name and answers with an envelope.
        served.path_regex = re.compile(served.path_regex.pattern, re.DOTALL)
        routes.append(served)
    return routes


def create_app(
    service: TempliqxService,
    settings: HttpSettings | None = None,
    *,
    readiness: Sequence[ReadinessCheck] = (),
    runtime_check: ReadinessCheck | None = None,
    middleware: Sequence[Middleware] = (),
    routes: Sequence[BaseRoute] = (),
    playground: bool = True,
) -> Starlette:
    """The operations API over ``service`` (see the module docstring).

    ``readiness`` are checks the readiness routes run (each returns the reasons it finds);
    ``runtime_check`` returns why the service's runtime cannot call its model (its settings;
    none: it can) and runs before an execution streams: a streamed call that would fail on its
    settings is answered as JSON with its status, not as a 200 stream ending in ``Failed``.
    ``middleware`` and ``routes`` are a host's own, added inside the request context and beside
    the operation routes. ``playground`` serves the contract playground at ``/playground/``
    and a home page at ``/`` linking to it and the API docs (it calls only the operation
    routes). ``app.state.templiqx`` is the :class:`TempliqxHttp` it serves.
    """
    settings = settings if settings is not None else HttpSettings()
    state = TempliqxHttp(service, settings, runtime_check)
    live = Liveness()
    ready = Readiness(readiness, state.inflight)
    docs = DocsPage()
    table: list[BaseRoute] = [
        *_operation_routes(state),
        Route("/healthz", live, methods=["GET"]),
        Route(BASE_PATH + "/health/live", live, methods=["GET"]),
        Route("/readyz", ready, methods=["GET"]),
        Route(BASE_PATH + "/health/ready", ready, methods=["GET"]),
        Route(BASE_PATH + "/openapi.json", Document("json"), methods=["GET"]),
        Route(BASE_PATH + "/openapi.yaml", Document("yaml"), methods=["GET"]),
        Route("/swagger-ui", docs, methods=["GET"]),
        Route("/swagger-ui/{asset:path}", docs, methods=["GET"]),
    ]
    if playground:
        page = PlaygroundPage()
        table += [
            Route("/", HomePage(), methods=["GET"]),
            Route("/playground", page, methods=["GET"]),
            Route("/playground/{asset:path}", page, methods=["GET"]),
        ]
    table += [*routes]
    stack = [Middleware(RequestContext)]
    if settings.cors_origins:
        stack.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(settings.cors_origins),
                allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                allow_headers=_CORS_HEADERS,
                expose_headers=["X-Request-Id", "Retry-After", "WWW-Authenticate"],
                allow_credentials=False,
                max_age=600,
            )
        )
    stack.extend(middleware)
    app = Starlette(routes=table, middleware=stack)
    app.router.redirect_slashes = False  # the reference: /catalog/ is an unknown route
    app.state.templiqx = state
    return app
