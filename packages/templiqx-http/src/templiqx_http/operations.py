"""The operation routes: authenticate, admit, decode, run on the service, answer.

One :class:`OperationEndpoint` serves one catalog operation. For each request it

1. checks the bearer token when the server has one (401 ``TQX_HTTP_UNAUTHORIZED``);
2. admits it under the concurrency limit, unless the server is draining (503
   ``TQX_HTTP_BUSY`` with ``Retry-After`` either way);
3. reads the body within the size limit (413) and decodes the arguments
   (:mod:`templiqx_http.transport`; 400/403);
4. runs the operation off the event loop (``service.ainvoke_bound``: the service's worker pool,
   or a natively async runtime awaited on the loop) under the request's deadline, with a cancel
   token that the deadline and a draining server set (504 ``TQX_HTTP_TRANSPORT``);
5. answers the envelope as compact JSON with the status of :func:`~templiqx_http.status_for`.

Steps 3 to 5 run in the caller's trace when the process traces (an OpenTelemetry SDK is set
up) and the request carries a W3C ``traceparent`` (and ``tracestate``, ``baggage``): the
operation's span, and its model calls', are children of the caller's span — JSON and streamed
executions alike (:func:`~templiqx_ports.telemetry.continued_trace`, as the MCP server does). A
server span an ASGI instrumentation opened is kept as their parent instead. Without an SDK the
headers are not even read.

``POST …/execute`` with ``Accept: text/event-stream`` goes to :mod:`templiqx_http.streaming`
after step 3 instead. :class:`Inflight` keeps the running calls' cancel tokens, so a draining
server can end them all.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Final

import msgspec
from starlette.types import ASGIApp, Receive, Scope, Send

from templiqx_application import TempliqxService
from templiqx_contracts import OperationEnvelope
from templiqx_http.middleware import OK_KEY, OPERATION_KEY
from templiqx_http.routes import OperationRoute
from templiqx_http.settings import HttpSettings
from templiqx_http.sources import serve_source, source_variant
from templiqx_http.status import RETRY_AFTER_S, status_for
from templiqx_http.streaming import stream_execution  # and the application's streams, at start
from templiqx_http.transport import (
    OFF_LOOP_BYTES,
    ClientGoneError,
    TransportError,
    decode_arguments,
    failure_envelope,
    read_body,
)
from templiqx_ports import telemetry
from templiqx_ports.telemetry import continued_trace

__all__ = ["Inflight", "OperationEndpoint", "PathEndpoint", "send_json"]

_encode = msgspec.json.encode
_JSON: Final = [(b"content-type", b"application/json")]
_TRACE_HEADERS: Final = frozenset(key.encode("ascii") for key in telemetry.TRACE_CONTEXT_KEYS)


class Inflight:
    """The operation calls being served: how many (the limit) and their cancel tokens."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._tokens: set[threading.Event] = set()
        self._callbacks: dict[threading.Event, Callable[[], object]] = {}
        self.draining = False

    @property
    def count(self) -> int:
        return len(self._tokens)

    def enter(self) -> threading.Event | None:
        """A cancel token for a new call, or ``None`` when the limit is reached."""
        if len(self._tokens) >= self.limit:
            return None
        token = threading.Event()
        if self.draining:
            token.set()
        self._tokens.add(token)
        return token

    def leave(self, token: threading.Event) -> None:
        self._tokens.discard(token)
        self._callbacks.pop(token, None)

    def on_cancel(self, token: threading.Event, callback: Callable[[], object]) -> None:
        """Also call ``callback`` when :meth:`cancel_all` sets ``token`` (a stream stops)."""
        self._callbacks[token] = callback

    def cancel_all(self) -> int:
        """Set every running call's cancel token (and those of calls admitted later)."""
        self.draining = True
        running = list(self._tokens)
        for token in running:
            token.set()
            callback = self._callbacks.get(token)
            if callback is not None:
                callback()
        return len(running)


async def send_json(
    send: Send, status: int, body: bytes, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """One complete JSON response."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*_JSON, (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def trace_carrier(scope: Scope) -> dict[str, str] | None:
    """The request's W3C trace-context headers (``None`` when nothing traces: not read then).

    A header sent more than once is combined with commas, as HTTP combines field lines: a
    repeated ``tracestate`` is one list, a repeated ``traceparent`` no valid one (a new trace).
    """
    if telemetry.tracer() is None:
        return None
    carrier: dict[str, str] = {}
    for key, value in scope.get("headers", ()):
        if key in _TRACE_HEADERS:
            name = key.decode("ascii")
            text = value.decode("latin-1")
            carrier[name] = f"{carrier[name]},{text}" if name in carrier else text
    return carrier


def _wants_events(scope: Scope) -> bool:
    accept = _header(scope, b"accept") or ""
    for item in accept.split(","):
        media, *params = (part.strip() for part in item.split(";"))
        if media.lower() == "text/event-stream":
            return not any(p.replace(" ", "") in ("q=0", "q=0.0", "q=0.00") for p in params)
    return False


class OperationEndpoint:
    """The ASGI app of one operation route (see the module docstring)."""

    def __init__(
        self,
        route: OperationRoute,
        service: TempliqxService,
        settings: HttpSettings,
        inflight: Inflight,
        runtime_check: Callable[[], Sequence[str]] | None = None,
    ) -> None:
        self.route = route
        self.service = service
        self.settings = settings
        self.inflight = inflight
        self.runtime_check = runtime_check
        token = settings.token
        self._expected = token.encode() if token is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        operation = self.route.operation
        scope[OPERATION_KEY] = operation
        try:
            self._authenticate(scope)
        except TransportError as failure:
            await self._fail(scope, send, failure)
            return
        if self.inflight.draining:  # new work goes to another replica, none is started here
            await self._fail(scope, send, _shutting_down())
            return
        token = self.inflight.enter()
        if token is None:
            await self._fail(scope, send, _busy(self.inflight.limit))
            return
        try:
            carrier = trace_carrier(scope)  # None unless this process traces
            if carrier is None:
                await self._serve(scope, receive, send, token)
            else:
                with continued_trace(carrier):  # the caller's traceparent, if it sent one
                    await self._serve(scope, receive, send, token)
        finally:
            self.inflight.leave(token)

    def _authenticate(self, scope: Scope) -> None:
        if self._expected is None:
            return
        # RFC 9110 §11.1: the scheme is case-insensitive ("bearer" is "Bearer"); the token is
        # compared in constant time, whatever the scheme said.
        scheme, _, credentials = (_header(scope, b"authorization") or "").strip().partition(" ")
        given = credentials.strip().encode("latin-1")
        matches = hmac.compare_digest(given, self._expected)
        if not (matches and scheme.lower() == "bearer"):
            raise TransportError(
                "TQX_HTTP_UNAUTHORIZED",
                "this server requires a bearer token",
                pointer="/headers/authorization",
                help="send Authorization: Bearer <token>, the token the server was started "
                "with (TEMPLIQX_HTTP_TOKEN)",
                headers={"www-authenticate": 'Bearer realm="templiqx"'},
            )

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, cancel: threading.Event
    ) -> None:
        route = self.route
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.request_timeout_s
        streams = route.operation == "execute_contract" and _wants_events(scope)
        variant = source_variant(
            route.operation,
            scope.get("method", ""),
            _header(scope, b"accept"),
            _header(scope, b"content-type"),
        )
        try:
            async with asyncio.timeout_at(deadline):
                if variant is not None:  # a contract's YAML text (templiqx_http.sources)
                    await serve_source(self, variant, scope, receive, send)
                    return
                body = await self._body(scope, receive)
                decode = functools.partial(
                    decode_arguments,
                    route,
                    path_parameters=scope.get("path_params", {}),
                    query_string=scope.get("query_string", b""),
                    if_match_header=_header(scope, b"if-match"),
                    content_type=_header(scope, b"content-type"),
                    body=body,
                    allow_workspace=self.settings.allow_workspace_override,
                )
                # decoding and checking walk every value: a large body never on the loop
                large = body is not None and len(body) >= OFF_LOOP_BYTES
                bound = await asyncio.to_thread(decode) if large else decode()
                if not streams:
                    envelope = await self.service.ainvoke_bound(
                        route.operation, bound, cancel=cancel
                    )
        except TransportError as failure:
            await self._fail(scope, send, failure)
            return
        except ClientGoneError:
            return
        except TimeoutError:
            cancel.set()
            await self.timed_out(scope, send)
            return
        if streams:  # the stream keeps the deadline itself: it ends in Failed, not in a 504
            await stream_execution(self, bound, scope, receive, send, cancel, deadline)
            return
        await self.respond(scope, send, envelope)

    async def _body(self, scope: Scope, receive: Receive) -> bytes | None:
        if self.route.body_kind == "none":
            return None
        if self.route.body_kind == "json":  # the reference checks the media type first
            content_type = _header(scope, b"content-type")
            if content_type is None or "json" not in content_type.lower():
                return b""  # decode_arguments refuses it with the reference's wording
        declared = _header(scope, b"content-length")
        size = int(declared) if declared is not None and declared.isdigit() else None
        return await read_body(receive, self.settings.max_body_bytes, size)

    async def respond(self, scope: Scope, send: Send, envelope: OperationEnvelope) -> None:
        """The envelope as JSON, with its status (and ``Retry-After`` for 503)."""
        scope[OK_KEY] = envelope.ok
        status = status_for(envelope)
        extra = [(b"retry-after", str(RETRY_AFTER_S).encode())] if status == 503 else []
        await send_json(send, status, _encode(envelope), extra)

    async def timed_out(self, scope: Scope, send: Send) -> None:
        """The 504 of a request past its deadline (its work was cancelled)."""
        await self._fail(scope, send, _timed_out(self.settings.request_timeout_s))

    async def _fail(self, scope: Scope, send: Send, failure: TransportError) -> None:
        scope[OK_KEY] = False
        envelope = failure.envelope(self.route.operation)
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in failure.headers.items()]
        await send_json(send, failure.status, _encode(envelope), headers)


def _busy(limit: int) -> TransportError:
    return TransportError(
        "TQX_HTTP_BUSY",
        f"the server is serving its limit of {limit} requests at once",
        help=f"retry after {RETRY_AFTER_S} s; an operator may raise the limit "
        "(--max-concurrent / TEMPLIQX_HTTP_MAX_CONCURRENT) or add replicas",
        headers={"retry-after": str(RETRY_AFTER_S)},
    )


def _shutting_down() -> TransportError:
    return TransportError(
        "TQX_HTTP_BUSY",
        "the server is shutting down and takes no new requests",
        help=f"retry after {RETRY_AFTER_S} s (another replica, or this server once restarted)",
        headers={"retry-after": str(RETRY_AFTER_S)},
    )


def _timed_out(seconds: float) -> TransportError:
    return TransportError(
        "TQX_HTTP_TRANSPORT",
        f"request timed out after {seconds:g} s; its work was cancelled",
        help="retry with less work, stream the execution (Accept: text/event-stream), or "
        "raise the server's deadline (--request-timeout / TEMPLIQX_HTTP_REQUEST_TIMEOUT_S)",
    )


class PathEndpoint:
    """Every operation route on one path, by method (``HEAD`` answers as ``GET``)."""

    def __init__(self, endpoints: dict[str, ASGIApp]) -> None:
        self.endpoints = dict(endpoints)
        if "GET" in self.endpoints:
            self.endpoints.setdefault("HEAD", self.endpoints["GET"])

    @property
    def methods(self) -> list[str]:
        return sorted(self.endpoints)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self.endpoints[scope["method"]]  # the router matched the method already
        await endpoint(scope, receive, send)


def transport_failure_envelope(operation: str, failure: TransportError) -> OperationEnvelope:
    """The envelope a transport failure answers (for hosts mapping failures themselves)."""
    return failure_envelope(operation, failure.code, failure.message, failure.pointer, failure.help)
