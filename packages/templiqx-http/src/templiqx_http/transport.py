"""From an HTTP request to the catalog's arguments, and the transport's own failures.

What a request carries is decoded here, before the service sees it, so a malformed request is
the reference's ``TQX_HTTP_*`` envelope (400) rather than a catalog argument diagnostic (422):

* **If-Match** is checked first (a missing required one wins over a bad body): the value is
  used verbatim after stripping ``"`` from both ends; an empty value counts as absent.
* **Query strings**, on the routes that read one (``catalog``, the artifact routes), are strict:
  an unknown or repeated parameter, or a missing required one, is refused. Other routes ignore
  any query string, as the reference does.
* **JSON bodies** need ``Content-Type: application/json`` (or ``application/<x>+json``), must be
  one JSON object with only the route's members (``render`` only ``inputs`` and ``context``),
  read as every surface reads JSON (:func:`~templiqx_contracts.decode_json`: the reference's
  number rules, no ``NaN``), with no key named twice and its values and keys counted before it
  is decoded (:data:`MAX_BODY_NODES`); each member is checked against its catalog parameter's
  type. A large body is decoded and checked on a worker thread (:data:`OFF_LOOP_BYTES`).
  ``null`` means "not given" where the catalog's default is ``null``.
* **Text bodies** (``put_contract``) are read as UTF-8 whatever the content type.
* **Every body** is bounded (:attr:`~templiqx_http.HttpSettings.max_body_bytes`): a declared
  ``Content-Length`` beyond it is refused before anything is read, and a body that grows beyond
  it while being read is refused at that point (413).

Transport failures are envelopes for the route's operation with one error diagnostic at
pointer ``/``, no result and no fingerprints; :class:`TransportError` carries the status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import parse_qsl

from starlette.types import Receive

from templiqx_application import MAX_ARGUMENT_NODES, bind_arguments
from templiqx_contracts import (
    Diagnostic,
    JSONDecodeError,
    OperationEnvelope,
    decode_json,
    quote_input,
)
from templiqx_http.codes import HTTP_STATUS
from templiqx_http.routes import OperationRoute

__all__ = [
    "MAX_BODY_NODES",
    "OFF_LOOP_BYTES",
    "ClientGoneError",
    "TransportError",
    "decode_arguments",
    "failure_envelope",
    "read_body",
]

MAX_BODY_NODES: Final = 3 * MAX_ARGUMENT_NODES + 64
"""Most values and keys a JSON body may hold: its three free-JSON members (``inputs``,
``context``, ``fixture_output``) at :data:`~templiqx_application.MAX_ARGUMENT_NODES` each, and
the rest. Each argument is held to its own limit when it is bound."""
OFF_LOOP_BYTES: Final = 65_536
"""A body this large is decoded and checked on a worker thread, not on the event loop."""
BAD_REQUEST: Final = "TQX_HTTP_JSON"
IF_MATCH_REQUIRED: Final = "TQX_HTTP_IF_MATCH_REQUIRED"


class ClientGoneError(Exception):
    """The client disconnected while its request body was being read."""


class TransportError(Exception):
    """A request refused by the transport: its code (which decides the status, see
    :data:`~templiqx_http.codes.HTTP_STATUS`), message, help and extra headers."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        pointer: str = "/",
        help: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = HTTP_STATUS[code]
        self.code = code
        self.message = message
        self.pointer = pointer
        self.help = help
        self.headers = dict(headers or {})

    def envelope(self, operation: str) -> OperationEnvelope:
        return failure_envelope(operation, self.code, self.message, self.pointer, self.help)


def failure_envelope(
    operation: str, code: str, message: str, pointer: str = "/", help: str | None = None
) -> OperationEnvelope:
    """The envelope of a transport failure: one error diagnostic, no result, no fingerprints."""
    diagnostic = Diagnostic.error(code, message, pointer, help=help)
    return OperationEnvelope.build(operation, diagnostics=[diagnostic])


def _bad(message: str, *, help: str | None = None, pointer: str = "/") -> TransportError:
    return TransportError(BAD_REQUEST, message, pointer=pointer, help=help)


def too_large(limit: int) -> TransportError:
    return TransportError(
        "TQX_HTTP_BODY_TOO_LARGE",
        f"request body exceeds the {limit}-byte limit",
        help="send less (a contract source, inputs and context fit in the limit), or raise "
        "the server's body limit (--max-body-bytes / TEMPLIQX_HTTP_MAX_BODY_BYTES)",
    )


async def read_body(receive: Receive, limit: int, declared: int | None) -> bytes:
    """The request body, at most ``limit`` bytes (413 beyond, before reading what is left)."""
    if declared is not None and declared > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGoneError
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                raise too_large(limit)
            chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def if_match(value: str | None) -> str | None:
    """The token of an ``If-Match`` header: ``"`` stripped from both ends, empty is absent."""
    if value is None:
        return None
    token = value.strip().strip('"')
    return token or None


def parse_json(body: bytes) -> Any:
    """Strict JSON as every surface reads it (:func:`~templiqx_contracts.decode_json`: the
    reference's number rules, no ``NaN``, no lone surrogates), plus: UTF-8, no key named twice
    in an object, and at most :data:`MAX_BODY_NODES` values and keys, counted before decoding
    (a value per node is what decoding costs)."""
    if not body.strip():
        raise _bad(
            "Failed to parse the request body as JSON: the body is empty",
            help='send a JSON object, at least "{}"',
        )
    try:
        return decode_json(
            body,
            max_nodes=MAX_BODY_NODES,
            limit_name="MAX_ARGUMENT_NODES for each argument",
            unique_keys=True,
        )
    except JSONDecodeError as problem:
        raise _bad(f"Failed to parse the request body as JSON: {problem}") from None


def _is_json(content_type: str | None) -> bool:
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    kind, _, subtype = media.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


def _members(route: OperationRoute) -> str:
    names = [*route.body, *(["render"] if route.render else [])]
    return ", ".join(names) if names else "none"


def _body_arguments(route: OperationRoute, document: Any) -> dict[str, Any]:
    if not isinstance(document, dict):
        raise _bad(
            f"the request body must be a JSON object, not {_json_kind(document)}",
            help=f"{route.operation} takes an object with the members: {_members(route)}",
        )
    arguments: dict[str, Any] = {}
    for key, value in document.items():
        if key == "render" and route.render:
            arguments.update(_render_arguments(route, value))
        elif key in route.body:
            arguments[key] = value
        else:
            raise _bad(
                f"unknown field {quote_input(key)} in the request body",
                help=f"{route.operation} takes: {_members(route)}",
            )
    return arguments


def _render_arguments(route: OperationRoute, value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _bad(f"field 'render' must be a JSON object, not {_json_kind(value)}")
    for key in value:
        if key not in route.render:
            raise _bad(
                f"unknown field {quote_input(key)} in 'render'",
                help=f"'render' takes: {', '.join(route.render)}",
            )
    return dict(value)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _query_arguments(route: OperationRoute, query_string: bytes) -> dict[str, Any]:
    try:
        pairs = parse_qsl(
            query_string.decode("latin-1"),
            keep_blank_values=True,
            strict_parsing=False,
            encoding="utf-8",
            errors="strict",
        )
    except UnicodeDecodeError:
        raise _bad("the query string is not valid UTF-8") from None
    arguments: dict[str, Any] = {}
    for name, value in pairs:
        if name not in route.query:
            raise _bad(
                f"unknown query parameter {quote_input(name)}",
                help=f"{route.operation} reads: {', '.join(route.query)}",
            )
        if name in arguments:
            raise _bad(f"query parameter {quote_input(name)} is given more than once")
        arguments[name] = value
    return arguments


def decode_arguments(
    route: OperationRoute,
    *,
    path_parameters: Mapping[str, str],
    query_string: bytes,
    if_match_header: str | None,
    content_type: str | None,
    body: bytes | None,
    allow_workspace: bool,
) -> dict[str, Any]:
    """The bound catalog arguments of a request (``TransportError`` when it is malformed).

    ``body`` is ``None`` for a route that reads none; the route's If-Match rule and query
    rules are applied first, then the body's.
    """
    arguments: dict[str, Any] = {}
    token = if_match(if_match_header)
    if route.if_match == "required" and token is None:
        raise TransportError(
            IF_MATCH_REQUIRED,
            "If-Match is required for this mutation",
            pointer="/headers/if-match",
            help="send the current fingerprint in If-Match: " + _if_match_source(route.operation),
        )
    if route.if_match != "none" and token is not None:
        arguments["expected_fingerprint"] = token
    for placeholder, name in route.path_parameters.items():
        arguments[name] = path_parameters[placeholder]
    if route.query:
        query = _query_arguments(route, query_string)
        if query.get("workspace") is not None and not allow_workspace:
            raise TransportError(
                "TQX_HTTP_WORKSPACE_DISABLED",
                "the workspace override is disabled on this server",
                pointer="/query/workspace",
                help="leave out the workspace parameter to use the server's workspace; an "
                "operator may enable the override (--allow-workspace-override), confined to "
                "the folders it names",
            )
        arguments.update(query)
    for name, value in route.http_defaults.items():
        arguments.setdefault(name, value)
    if route.body_kind == "json":
        if not _is_json(content_type):
            raise _bad(
                "Expected request with `Content-Type: application/json`",
                help="send the body as JSON with Content-Type: application/json",
            )
        assert body is not None
        arguments.update(_body_arguments(route, parse_json(body)))
    elif route.body_kind == "text" and route.text is not None:
        assert body is not None
        try:
            arguments[route.text] = body.decode("utf-8")
        except UnicodeDecodeError:
            raise _bad("the request body is not valid UTF-8 text") from None
    bound, problems = bind_arguments(route.spec, arguments)
    if problems:
        first = problems[0]
        raise _bad(first.message, help=first.help, pointer=_pointer(route, first))
    return bound


def _pointer(route: OperationRoute, diagnostic: Diagnostic) -> str:
    """Where a bound argument came from in the request (``/render/inputs``, ``/query/view``)."""
    name = (diagnostic.json_pointer or "/").removeprefix("/")
    place = route.placements().get(name)
    if place == "render":
        return f"/render/{name}"
    if place == "query":
        return f"/query/{name}"
    if place == "body":
        return f"/{name}"
    return "/"


def _if_match_source(operation: str) -> str:
    if operation in ("delete_contract", "put_contract"):
        return "fingerprints.contract of inspect_contract or of the contract's last write"
    if operation == "delete_workspace_artifact":
        return "fingerprints.artifact of read_artifact"
    return (
        "fingerprints.package of the package's last write, or fingerprints.manifest of "
        "export_package_identity"
    )
