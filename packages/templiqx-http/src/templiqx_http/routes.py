"""The reference's routes, one per catalog operation, and where each parameter travels.

Every operation of :data:`~templiqx_application.CATALOG` has one :class:`OperationRoute`: its
method and path under :data:`BASE_PATH` (the reference's, DECISIONS 24) and, for each of the
operation's parameters, the part of the request that carries it — a path segment, the query
string, the ``If-Match`` header, a member of the JSON body (``inputs`` and ``context`` nested
under ``render``, as the reference nests them), or the whole body as text (``put_contract``'s
YAML source). Everything else — decoding, the OpenAPI document, the reference-style client
(:func:`http_call`) — is derived from this table and the catalog, and a test holds the table to
the catalog: every parameter has exactly one place, every operation exactly one route.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import quote, urlencode

from templiqx_application import CATALOG, OperationSpec, operation_spec

__all__ = [
    "BASE_PATH",
    "ROUTES",
    "ROUTES_BY_OPERATION",
    "HttpCall",
    "OperationRoute",
    "http_call",
    "path_pattern",
]

BASE_PATH: Final = "/operations/v1"
"""Every operation route lives under this prefix (a breaking change would need ``/v2``)."""

Body = Literal["none", "json", "text"]
IfMatch = Literal["none", "required", "optional"]


@dataclass(frozen=True)
class OperationRoute:
    """Where one catalog operation answers over HTTP, and where its parameters come from.

    ``path`` is relative to :data:`BASE_PATH`; ``{name}`` is one path segment, ``{name:path}``
    the rest of the path (``/`` included). ``path_parameters`` maps a path placeholder to the
    catalog parameter it fills; ``query`` lists the catalog parameters read from the query
    string (strictly: any other query parameter is refused on a route that reads one); the
    JSON body's members are ``body`` (same names as the catalog) and, nested in an object
    ``render``, ``render`` (``inputs``, ``context``). ``if_match`` fills ``expected_fingerprint``;
    ``text`` names the parameter a ``text`` body fills. ``http_defaults`` are the values this
    surface passes when the request leaves a parameter out (only ``catalog``'s ``view``:
    ``names``, as the reference answers).
    """

    operation: str
    method: str
    path: str
    body_kind: Body = "none"
    path_parameters: Mapping[str, str] = field(default_factory=dict)
    query: tuple[str, ...] = ()
    body: tuple[str, ...] = ()
    render: tuple[str, ...] = ()
    if_match: IfMatch = "none"
    text: str | None = None
    http_defaults: Mapping[str, Any] = field(default_factory=dict)
    idempotency: str = "safe"
    """The reference's ``x-templiqx-idempotency``: safe, idempotent, cas-idempotent,
    create-once or caller-defined."""

    @property
    def spec(self) -> OperationSpec:
        spec = operation_spec(self.operation)
        assert spec is not None, self.operation
        return spec

    @property
    def full_path(self) -> str:
        """The path with :data:`BASE_PATH`, in Starlette's syntax (``{artifact:path}``)."""
        return BASE_PATH + self.path

    @property
    def openapi_path(self) -> str:
        """The path with :data:`BASE_PATH`, in OpenAPI's syntax (``{artifact}``)."""
        return BASE_PATH + self.path.replace(":path}", "}")

    @property
    def operation_id(self) -> str:
        """The catalog name in lowerCamelCase (``compile_contract`` -> ``compileContract``)."""
        head, *rest = self.operation.split("_")
        return head + "".join(word.capitalize() for word in rest)

    def placements(self) -> dict[str, str]:
        """Catalog parameter -> where it travels (``path``, ``query``, ``body``, ``render``,
        ``if-match``, ``text``); a parameter listed twice appears once, under its last place."""
        places: dict[str, str] = {}
        for name in self.path_parameters.values():
            places[name] = "path"
        for name in self.query:
            places[name] = "query"
        for name in self.body:
            places[name] = "body"
        for name in self.render:
            places[name] = "render"
        if self.if_match != "none":
            places["expected_fingerprint"] = "if-match"
        if self.text is not None:
            places[self.text] = "text"
        return places


_PKG = "/packages/{package}"
_CONTRACT = _PKG + "/contracts/{contract}"
_P = {"package": "package"}
_PC = {"package": "package", "contract": "contract"}

ROUTES: tuple[OperationRoute, ...] = (
    OperationRoute(
        "catalog",
        "GET",
        "/catalog",
        query=("view",),
        http_defaults={"view": "names"},
    ),
    OperationRoute("discover_packages", "GET", "/packages"),
    OperationRoute(
        "create_package",
        "POST",
        "/packages",
        body_kind="json",
        body=("name", "version"),
        idempotency="create-once",
    ),
    OperationRoute(
        "update_package",
        "PATCH",
        _PKG,
        body_kind="json",
        path_parameters=_P,
        body=("version", "description"),
        if_match="required",
        idempotency="cas-idempotent",
    ),
    OperationRoute(
        "delete_package",
        "DELETE",
        _PKG,
        path_parameters=_P,
        if_match="required",
        idempotency="cas-idempotent",
    ),
    OperationRoute("export_package_identity", "GET", _PKG + "/identity", path_parameters=_P),
    OperationRoute(
        "sign_package",
        "POST",
        _PKG + "/sign",
        body_kind="json",
        path_parameters=_P,
        body=("key_id",),
        if_match="required",
        idempotency="cas-idempotent",
    ),
    OperationRoute(
        "verify_package_trust",
        "POST",
        _PKG + "/verify-trust",
        body_kind="json",
        path_parameters=_P,
        body=("strict",),
    ),
    OperationRoute("inspect_contract", "GET", _CONTRACT, path_parameters=_PC),
    OperationRoute(
        "put_contract",
        "PUT",
        _CONTRACT,
        body_kind="text",
        path_parameters=_PC,
        text="source",
        if_match="optional",
        idempotency="cas-idempotent",
    ),
    OperationRoute(
        "delete_contract",
        "DELETE",
        _CONTRACT,
        path_parameters=_PC,
        if_match="required",
        idempotency="cas-idempotent",
    ),
    OperationRoute("validate_contract", "POST", _CONTRACT + "/validate", path_parameters=_PC),
    OperationRoute("validate_package", "POST", _PKG + "/validate", path_parameters=_P),
    OperationRoute(
        "compile_contract",
        "POST",
        _CONTRACT + "/compile",
        body_kind="json",
        path_parameters=_PC,
        body=("capabilities",),
        render=("inputs", "context"),
    ),
    OperationRoute(
        "render_contract",
        "POST",
        _CONTRACT + "/render",
        body_kind="json",
        path_parameters=_PC,
        body=("capabilities",),
        render=("inputs", "context"),
    ),
    OperationRoute(
        "execute_contract",
        "POST",
        _CONTRACT + "/execute",
        body_kind="json",
        path_parameters=_PC,
        body=("capabilities", "fixture_output", "stream"),
        render=("inputs", "context"),
        idempotency="caller-defined",
    ),
    OperationRoute(
        "list_workspace_artifacts",
        "GET",
        "/artifacts",
        query=("package", "workspace", "prefix"),
    ),
    OperationRoute(
        "read_artifact",
        "GET",
        "/artifacts/{artifact:path}",
        path_parameters={"artifact": "path"},
        query=("package", "workspace"),
    ),
    OperationRoute(
        "delete_workspace_artifact",
        "DELETE",
        "/artifacts/{artifact:path}",
        path_parameters={"artifact": "path"},
        query=("package", "workspace"),
        if_match="required",
        idempotency="cas-idempotent",
    ),
    OperationRoute(
        "test_package",
        "POST",
        _PKG + "/test",
        body_kind="json",
        path_parameters=_P,
        body=("capabilities",),
    ),
    OperationRoute("list_evals", "GET", _PKG + "/evals", path_parameters=_P),
    OperationRoute(
        "run_eval",
        "POST",
        _PKG + "/evals/run",
        body_kind="json",
        path_parameters=_P,
        body=("contract", "fixture_id", "capabilities"),
    ),
    OperationRoute(
        "diff_contract",
        "POST",
        _CONTRACT + "/diff",
        body_kind="json",
        path_parameters={"package": "left_package", "contract": "left_contract"},
        body=("right_package", "right_contract"),
    ),
    OperationRoute(
        "explain_contract",
        "GET",
        _CONTRACT + "/explain",
        path_parameters=_PC,
    ),
)
"""One route per catalog operation, in catalog order."""

ROUTES_BY_OPERATION: Final[dict[str, OperationRoute]] = {r.operation: r for r in ROUTES}

assert [r.operation for r in ROUTES] == [s.name for s in CATALOG], "one route per operation"


def path_pattern(route: OperationRoute) -> str:
    """The route's full path for Starlette's router."""
    return route.full_path


@dataclass(frozen=True)
class HttpCall:
    """One request as a client sends it: what :func:`http_call` builds."""

    method: str
    path: str
    """Path and query string, percent-encoded, under :data:`BASE_PATH`."""
    headers: dict[str, str]
    body: bytes | None


def http_call(operation: str, arguments: Mapping[str, Any]) -> HttpCall:
    """The request that makes the catalog call ``operation(**arguments)`` over HTTP.

    It gives the same envelope as ``service.invoke(operation, arguments)``: a parameter whose
    default differs on HTTP (``catalog``'s ``view``) is sent with the catalog's default when
    ``arguments`` leaves it out. Raises ``KeyError`` for an unknown operation and
    ``ValueError`` for an argument this operation does not take.
    """
    route = ROUTES_BY_OPERATION[operation]
    places = route.placements()
    unknown = sorted(set(arguments) - set(places))
    if unknown:
        raise ValueError(f"{operation} takes no argument {unknown[0]!r}")
    given = dict(arguments)
    for name in route.http_defaults:
        if name not in given:
            parameter = next(p for p in route.spec.parameters if p.name == name)
            given[name] = parameter.default
    path = route.path
    for placeholder, name in route.path_parameters.items():
        whole = "{" + placeholder + ":path}" in path
        encoded = quote(str(given[name]), safe="/" if whole else "")
        path = path.replace("{" + placeholder + (":path}" if whole else "}"), encoded)
    query = [(n, given[n]) for n in route.query if n in given and given[n] is not None]
    headers: dict[str, str] = {}
    if given.get("expected_fingerprint") is not None and route.if_match != "none":
        headers["If-Match"] = f'"{given["expected_fingerprint"]}"'
    body: bytes | None = None
    if route.body_kind == "json":
        document: dict[str, Any] = {n: given[n] for n in route.body if n in given}
        render = {n: given[n] for n in route.render if n in given}
        if render:
            document["render"] = render
        body = json.dumps(document, ensure_ascii=False).encode("utf-8")
        headers["Content-Type"] = "application/json"
    elif route.body_kind == "text" and route.text is not None:
        body = str(given[route.text]).encode("utf-8")
        headers["Content-Type"] = "application/yaml"
    target = BASE_PATH + path + (("?" + urlencode(query)) if query else "")
    return HttpCall(route.method, target, headers, body)
