"""A contract's YAML source over HTTP: read it, and validate an edit without saving it.

Two variants of existing operation routes, chosen by the media type (what an editor — the
playground — needs, and what the reference's routes cannot give: ``inspect_contract`` answers
the loaded contract, not its text, and ``validate_contract`` checks only what is saved):

* ``GET …/contracts/{contract}`` with ``Accept: application/yaml`` answers the stored text
  (``200 application/yaml; charset=utf-8``) with its compare-and-swap token as ``ETag`` (the
  ``If-Match`` that ``PUT`` takes) — also when the contract does not load, so its diagnostics
  can be shown where they are (``X-Templiqx-Diagnostics: <n>`` counts them; the JSON route
  gives them). A contract that cannot be read at all is ``inspect_contract``'s JSON envelope
  with its status.
* ``POST …/contracts/{contract}/validate`` with a body of ``Content-Type: application/yaml``
  validates that text as if it were saved as the contract — includes, partials and tool
  contracts resolved in the package — and writes nothing: ``validate_contract``'s envelope.

Both run behind the same token, limits and deadline as the route's operation; a client that
sends neither media type gets the reference's answer, unchanged.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Final

from starlette.types import Receive, Scope, Send

from templiqx_http.middleware import OK_KEY
from templiqx_http.transport import TransportError, read_body

if TYPE_CHECKING:
    from templiqx_http.operations import OperationEndpoint

__all__ = ["YAML_MEDIA", "serve_source", "source_variant"]

YAML_MEDIA: Final = "application/yaml"
_YAML_TYPES: Final = frozenset({"application/yaml", "application/x-yaml", "text/yaml"})


def _media(value: str | None) -> set[str]:
    if not value:
        return set()
    return {item.split(";")[0].strip().lower() for item in value.split(",")}


def source_variant(
    operation: str, method: str, accept: str | None, content_type: str | None
) -> str | None:
    """``"read"``, ``"validate"`` or ``None`` (the route's ordinary operation)."""
    if operation == "inspect_contract" and method in ("GET", "HEAD"):
        wanted = _media(accept)
        if wanted & _YAML_TYPES and "application/json" not in wanted:
            return "read"
    if operation == "validate_contract" and _media(content_type) & _YAML_TYPES:
        return "validate"
    return None


async def serve_source(
    endpoint: OperationEndpoint, variant: str, scope: Scope, receive: Receive, send: Send
) -> None:
    """Answer a ``read`` or ``validate`` variant (the caller holds auth, admission, deadline)."""
    service = endpoint.service
    names = scope.get("path_params", {})
    package, contract = str(names.get("package", "")), str(names.get("contract", ""))
    if variant == "read":
        envelope, text = await asyncio.to_thread(service.contract_text, package, contract)
        if text is None:
            await endpoint.respond(scope, send, envelope)
            return
        scope[OK_KEY] = envelope.ok
        body = b"" if scope.get("method") == "HEAD" else text.encode("utf-8")
        token = envelope.fingerprints.get("contract")
        headers = [
            (b"content-type", b"application/yaml; charset=utf-8"),
            (b"content-length", str(len(text.encode("utf-8"))).encode()),
            (b"cache-control", b"no-store"),
            (b"x-templiqx-diagnostics", str(len(envelope.diagnostics)).encode()),
        ]
        if token is not None:
            headers.append((b"etag", f'"{token}"'.encode("ascii")))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    declared = None
    for key, value in scope.get("headers", ()):
        if key == b"content-length" and value.isdigit():
            declared = int(value)
    raw = await read_body(receive, endpoint.settings.max_body_bytes, declared)
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TransportError(
            "TQX_HTTP_JSON",
            "the request body is not valid UTF-8 text",
            help="send the contract's YAML source as UTF-8",
        ) from None
    envelope = await asyncio.to_thread(service.validate_contract_source, package, contract, source)
    await endpoint.respond(scope, send, envelope)
